#pragma once
/// @file solve/multigrid.hpp
/// Multigrid for the AR system: a hierarchy of ever coarser systems
/// (`solve/coarsening/`), the V-cycle that preconditions conjugate gradients
/// or solves by itself, and full multigrid, which solves from the coarsest level
/// up and gives a good approximation for the cost of about one and a half V-cycles.

#include <cmath>
#include <cstddef>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/simd/vector_ops.hpp"
#include "nonlocal/solve/coarsening/aggregation.hpp"
#include "nonlocal/solve/coarsening/grid_transfer.hpp"
#include "nonlocal/solve/coarsening/operator_dependent.hpp"

namespace nonlocal {

/// How the V-cycle damps its Jacobi sweeps (`multigrid_options`).
enum class smoother { chebyshev, jacobi };

/// How a level makes the next one (`solve/coarsening/`).
enum class coarsening {
    /// Black-box multigrid's interpolation, which follows the weights, and Galerkin
    /// coarse systems; levels whose stencil reaches further than one pixel aggregate
    /// until it does.
    operator_dependent,
    /// 2 x 2 blocks with piecewise-constant interpolation on every level.
    aggregation,
};

/// Parameters of the multigrid hierarchy and its cycles.
struct multigrid_options {
    /// Jacobi sweeps before and after the coarse correction on the finest level; each group
    /// runs in one pass over memory
    std::size_t smoothing_steps = 4;
    /// The same on the coarser levels, where fewer sweeps cost little in convergence for some
    /// systems and save work (the depth tasks' normalised model takes 2, see `depth_options`).
    std::size_t coarse_smoothing_steps = 4;
    /// chebyshev: the m sweeps are damped by 1 / theta_k, theta_k the roots of the degree-m
    /// Chebyshev polynomial on [lower, upper], so that together they damp the eigenvalues
    /// of S^-1 A in that interval as much as m sweeps can (a Chebyshev smoother). S holds half
    /// of each row's l1 norm, (a_ii + sum_j |a_ij|) / 2: the diagonal itself, less half the
    /// data term, for the graph Laplacian of a guide, and on every level a matrix for which
    /// upper = 2 bounds the spectrum of S^-1 A (Gershgorin), however the coarse systems
    /// turn out. jacobi: every sweep damped by `damping`.
    smoother kind = smoother::chebyshev;
    double lower = 0.1, upper = 2.0;   ///< chebyshev: the interval of S^-1 A's spectrum to damp
    double damping = 0.8;              ///< jacobi: the damping of every sweep
    coarsening transfer = coarsening::operator_dependent;
    double correction_scale = 1.0;     ///< aggregation: over-correction of the piecewise-constant prolongation
    std::size_t full_cycles = 1;       ///< V-cycles at each level of full multigrid (`multigrid::full`)
};

/// A multigrid hierarchy of an AR system: coarser levels down to at most 256
/// pixels (solved exactly), the transfers between them, and cycles over them.
/// The V-cycle smooths with damped Jacobi sweeps, the same before and after (they
/// are polynomials in S^-1 A, which commute, and restriction is the transpose of
/// interpolation), so the cycle is symmetric and can precondition CG.
template <class T = double, class Arch = default_arch>
class multigrid {
public:
    /// Throws `std::invalid_argument` unless smoothing_steps >= 1, coarse_smoothing_steps >= 1,
    /// 0 < lower < upper (finite), 0 < damping <= 2, correction_scale is finite and positive
    /// and full_cycles >= 1.
    explicit multigrid(const ar_system<T, Arch>& A, multigrid_options options = {})
        : options_(options), finest_(sweep_damping(options)),
          coarser_(sweep_damping(options, options.coarse_smoothing_steps)) {
        levels_.push_back(&A);
        while (levels_.back()->size() > 256) {
            const ar_system<T, Arch>& fine = *levels_.back();
            if (options.transfer == coarsening::operator_dependent && fine.reach() == 1)
                transfers_.push_back(std::make_unique<detail::operator_dependent_interpolation<T, Arch>>(fine));
            else
                transfers_.push_back(std::make_unique<detail::aggregation<T, Arch>>(fine, options.correction_scale));
            levels_.push_back(&transfers_.back()->coarse);
        }
        factor_coarsest();
        for (const ar_system<T, Arch>* level : levels_) {   // level 0's right-hand side and solution are the caller's
            work_.emplace_back(level->size());
            rhs_.emplace_back(level == levels_.front() ? 0 : level->size());
            solution_.emplace_back(level == levels_.front() ? 0 : level->size());
            inverse_smoothing_.push_back(inverse_smoothing_diagonal(*level));
        }
    }

    std::size_t levels() const noexcept { return levels_.size(); }
    /// The system at level `l` (0: the one the hierarchy was built for).
    const ar_system<T, Arch>& level(std::size_t l) const { return *levels_.at(l); }
    static constexpr const char* name = "multigrid";

    /// The damping of each of `steps` smoothing sweeps, in the order they run (before and after).
    static std::vector<double> sweep_damping(const multigrid_options& o, std::size_t steps) {
        // Without smoothing a V-cycle is a projection, not a preconditioner.
        detail::field_checks("multigrid_options")
            .need(o.smoothing_steps >= 1, "smoothing_steps", "at least 1", o.smoothing_steps)
            .need(o.coarse_smoothing_steps >= 1, "coarse_smoothing_steps", "at least 1", o.coarse_smoothing_steps)
            .need(std::isfinite(o.lower) && o.lower > 0 && o.lower < o.upper, "lower", "finite, above 0 and below upper",
                  o.lower)
            .need(std::isfinite(o.upper), "upper", "finite", o.upper)
            .need(o.damping > 0 && o.damping <= 2, "damping", "in (0, 2]", o.damping)
            .need(std::isfinite(o.correction_scale) && o.correction_scale > 0, "correction_scale", "finite and positive",
                  o.correction_scale)
            .need(o.full_cycles >= 1, "full_cycles", "at least 1", o.full_cycles)
            .check("multigrid");
        detail::require(steps >= 1, "multigrid", [&] { return "needs at least 1 smoothing step, got " + std::to_string(steps); });
        const std::size_t m = steps;
        std::vector<double> omega(m, o.damping);
        if (o.kind == smoother::chebyshev) {
            const double center = (o.upper + o.lower) / 2, half_width = (o.upper - o.lower) / 2;
            for (std::size_t k = 0; k < m; ++k)
                omega[k] = 1 / (center + half_width * std::cos(std::numbers::pi * double(2 * k + 1) / double(2 * m)));
        }
        return omega;
    }
    /// The damping of the finest level's sweeps.
    static std::vector<double> sweep_damping(const multigrid_options& o) { return sweep_damping(o, o.smoothing_steps); }

    /// S^-1 of a level, S the smoothing diagonal: s_i = (a_ii + sum_j |a_ij|) / 2 (0 where s_i is 0).
    static buffer<T> inverse_smoothing_diagonal(const ar_system<T, Arch>& A) {
        buffer<T> t(A.size());
        A.edge_sums([](auto w) { return xsimd::abs(w); }, [&](std::size_t i, auto sum) {
            kernel::lane_store(t.data(), i, simd::inverse_or_zero((kernel::lane_load(A.diagonal(), i, sum) + sum) / 2));
        });
        return t;
    }

    /// z = M^-1 r: one V-cycle from z = 0, its passes on the threads of `policy`. Not
    /// reentrant: one cycle at a time per object (its buffers are allocated once, with the
    /// hierarchy).
    template <execution_policy Ex>
    void operator()(Ex policy, std::span<const T> r, std::span<T> z) const {
        levels_.front()->require_size(r, "multigrid", "r");
        levels_.front()->require_size(z, "multigrid", "z");
        cycle(policy, 0, r.data(), z.data(), true);
    }
    /// The same on the calling thread.
    void operator()(std::span<const T> r, std::span<T> z) const { (*this)(execution::seq, r, z); }

    /// x = full multigrid's approximation of A^-1 b: b restricted to every level, the
    /// coarsest level solved exactly, then on each finer level the coarser solution
    /// interpolated and improved by `full_cycles` V-cycles. With operator-dependent
    /// interpolation the interpolated solutions already follow the guide's edges, so
    /// one cycle per level leaves little error for its cost (about 1.4 V-cycles).
    /// Not reentrant, like the V-cycle.
    template <execution_policy Ex>
    void full(Ex policy, std::span<const T> b, std::span<T> x) const {
        levels_.front()->require_size(b, "multigrid::full", "b");
        levels_.front()->require_size(x, "multigrid::full", "x");
        const std::size_t L = levels_.size();
        const auto rhs = [&](std::size_t l) { return l == 0 ? b.data() : rhs_[l].data(); };
        const auto solution = [&](std::size_t l) { return l == 0 ? x.data() : solution_[l].data(); };
        for (std::size_t l = 0; l + 1 < L; ++l) transfers_[l]->restrict_to(rhs(l), rhs_[l + 1].data());
        solve_coarsest(rhs(L - 1), solution(L - 1));
        for (std::size_t l = L - 1; l-- > 0;) {
            transfers_[l]->prolong(solution(l + 1), solution(l), false);
            for (std::size_t k = 0; k < options_.full_cycles; ++k) cycle(policy, l, rhs(l), solution(l), false);
        }
    }
    /// The same on the calling thread.
    void full(std::span<const T> b, std::span<T> x) const { full(execution::seq, b, x); }

private:
    /// Dense Cholesky factor of the coarsest A (positive definite once any alpha > 0;
    /// a tiny ridge keeps a level without data solvable).
    void factor_coarsest() {
        const ar_system<T, Arch>& c = *levels_.back();
        const std::size_t n = c.size();
        chol_.assign(n * n, 0.0);
        std::vector<T> e(n, 0.0), col(n);
        for (std::size_t j = 0; j < n; ++j) {
            e[j] = 1;
            c.apply(execution::seq, e.data(), col.data());
            e[j] = 0;
            for (std::size_t i = 0; i < n; ++i) chol_[i * n + j] = col[i];
        }
        double trace = 0;
        for (std::size_t i = 0; i < n; ++i) trace += chol_[i * n + i];
        for (std::size_t i = 0; i < n; ++i) chol_[i * n + i] += 1e-12 * trace / double(n);
        for (std::size_t j = 0; j < n; ++j) {
            double d = chol_[j * n + j];
            for (std::size_t k = 0; k < j; ++k) d -= chol_[j * n + k] * chol_[j * n + k];
            d = std::sqrt(std::max(d, 1e-300));
            chol_[j * n + j] = d;
            for (std::size_t i = j + 1; i < n; ++i) {
                double s = chol_[i * n + j];
                for (std::size_t k = 0; k < j; ++k) s -= chol_[i * n + k] * chol_[j * n + k];
                chol_[i * n + j] = s / d;
            }
        }
    }
    void solve_coarsest(const T* r, T* z) const {
        const std::size_t n = levels_.back()->size();
        std::vector<double> y(r, r + n);
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t k = 0; k < i; ++k) y[i] -= chol_[i * n + k] * y[k];
            y[i] /= chol_[i * n + i];
        }
        for (std::size_t i = n; i-- > 0;) {
            for (std::size_t k = i + 1; k < n; ++k) y[i] -= chol_[k * n + i] * y[k];
            y[i] /= chol_[i * n + i];
        }
        std::copy(y.begin(), y.end(), z);
    }

    /// The coarse correction of `level`: the residual restricted, one V-cycle on the next
    /// level from 0, and its interpolation added to `correction`.
    template <execution_policy Ex>
    void coarse_correction(Ex policy, std::size_t level, const T* residual, T* correction) const {
        T *rc = rhs_[level + 1].data(), *zc = solution_[level + 1].data();
        transfers_[level]->restrict_to(residual, rc);
        cycle(policy, level + 1, rc, zc, true);
        transfers_[level]->prolong(zc, correction, true);
    }

    /// One V-cycle on A x = b at `level`, from x = 0 (`from_zero`) or from the given x, in the
    /// buffers x and work_[level]. Pre-smoothing and the residual run in one pass over memory,
    /// each stage writing the buffer the stage before read (`sweeps`); from 0 the first sweep
    /// reads neither x nor the weights. Either way the residual lands in work for even m, in x
    /// for odd m, the smoothed x in the other buffer, and post-smoothing's m stages from it end in x.
    template <execution_policy Ex>
    void cycle(Ex policy, std::size_t level, const T* b, T* x, bool from_zero) const {
        const ar_system<T, Arch>& A = *levels_[level];
        if (level + 1 == levels_.size()) return solve_coarsest(b, x);
        T* work = work_[level].data();
        const T* s = inverse_smoothing_[level].data();
        const smoothing& smooth = level == 0 ? finest_ : coarser_;
        const std::size_t m = smooth.post.size();
        A.sweeps(policy, b, x, work, from_zero ? smooth.from_zero : smooth.from_x, s);
        T* smoothed = m % 2 ? work : x;
        coarse_correction(policy, level, m % 2 ? x : work, smoothed);
        A.sweeps(policy, b, smoothed, m % 2 ? x : work, smooth.post, s);   // all of post-smoothing in one pass
    }

    /// A level's smoothing of m sweeps (their damping `omega`), as the stages of its passes over
    /// memory: before the coarse correction the m sweeps and the residual, the first sweep from
    /// zero or from the given x; after it, the m sweeps.
    struct smoothing {
        std::vector<typename ar_system<T, Arch>::sweep_stage> from_zero, from_x, post;
        explicit smoothing(const std::vector<double>& omega) {
            for (double w : omega) post.push_back({w});
            from_x = post;
            from_x.push_back({0, true});
            from_zero = from_x;
            from_zero.front().from_zero = true;
        }
    };

    multigrid_options options_;
    smoothing finest_, coarser_;   // of level 0, of the levels below it
    std::vector<const ar_system<T, Arch>*> levels_;   // the caller's, then each transfer's coarse system
    std::vector<std::unique_ptr<const detail::grid_transfer<T, Arch>>> transfers_;   // level l to level l + 1
    std::vector<buffer<T>> inverse_smoothing_;   // S^-1 of each level
    std::vector<double> chol_;           // the coarsest level in double, whatever T
    // Per-level buffers of a cycle, allocated once: a multigrid object runs one cycle at a time.
    mutable std::vector<buffer<T>> work_, rhs_, solution_;
};

}  // namespace nonlocal
