#pragma once
/// @file solve/solvers.hpp
/// Solvers of the AR system A x = b: Jacobi, multi-colour SOR, preconditioned
/// conjugate gradients and a multigrid V-cycle (alone or as CG's
/// preconditioner). Each returns a report; non-convergence is reported in it,
/// never silent.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>
#include <numbers>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/solve/ar_system.hpp"

namespace nonlocal {

/// Stopping rule of the iterative solvers: |b - A x| <= tolerance |b|.
struct solve_options {
    double tolerance = 1e-4;
    std::size_t max_iterations = 1000;
};

/// What a solve did.
struct solve_report {
    std::string method;
    std::size_t iterations = 0;
    double relative_residual = 0;
    bool converged = false;
    double seconds = 0;
};

namespace detail {

/// sum of term(i) for i in [0, n), in double, in 8 independent partial sums: one chain
/// of dependent additions would cost an add latency (4 cycles) per element; 8 lanes of
/// partial sums vectorise and overlap. Inner products and norms accumulate this way
/// whatever the precision of the vectors.
template <class Term>
double partial_sums(std::size_t n, Term&& term) {
    constexpr std::size_t lanes = 8;
    double partial[lanes] = {};
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (std::size_t k = 0; k < lanes; ++k) partial[k] += term(i + k);
    double sum = 0;
    for (; i < n; ++i) sum += term(i);
    for (double p : partial) sum += p;
    return sum;
}
template <class T>
double dot(const T* a, const T* b, std::size_t n) {
    return partial_sums(n, [&](std::size_t i) { return double(a[i]) * double(b[i]); });
}
template <class T>
double norm(std::span<const T> a) { return std::sqrt(dot(a.data(), a.data(), a.size())); }

/// r = b - A x; returns |r|.
template <class T>
double residual(const ar_system<T>& A, std::span<const T> b, std::span<const T> x, buffer<T>& r) {
    A.residual(b.data(), x.data(), r.data());
    return norm<T>(r);
}

/// A solver's vectors: any contiguous array of T (`std::vector`, `buffer`, `std::span`);
/// written so that T is deduced from the system alone.
template <class T>
using vector_in = std::type_identity_t<std::span<const T>>;
template <class T>
using vector_out = std::type_identity_t<std::span<T>>;

template <class T>
void require_sizes(const ar_system<T>& A, std::span<const T> b, std::span<const T> x, std::string_view where) {
    A.require_size(x, where);
    A.require_size(b, where, "b");
}

class stopwatch {
public:
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

private:
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

/// The checks and the loop every iterative solver shares: |b - A x| / |b| before each
/// iteration, `step(x, r)` (r = b - A x) until the tolerance or the budget is reached.
template <class T, class Step>
solve_report iterate(const char* method, const ar_system<T>& A, std::span<const T> b, std::span<T> x,
                     const solve_options& options, Step&& step) {
    require_sizes<T>(A, b, x, method);
    const stopwatch clock;
    solve_report report{method};
    buffer<T> r(A.size());
    const double b_norm = norm(b);
    for (;;) {
        report.relative_residual = residual<T>(A, b, x, r) / b_norm;
        report.converged = report.relative_residual <= options.tolerance;
        if (report.converged || report.iterations == options.max_iterations) break;
        step(x, r);
        ++report.iterations;
    }
    report.seconds = clock.seconds();
    return report;
}
}  // namespace detail

/// Jacobi iterations on A x = b, each one normalised aggregate of the neighbours
/// plus the data term (`ar_system::jacobi_step` when b is the system's own),
/// computed in place from the residual the loop has already: x + D^-1 (b - A x)
/// = D^-1 (b + sum_j W_ij x_j).
template <class T>
solve_report jacobi(const ar_system<T>& A, detail::vector_in<T> b, detail::vector_out<T> x,
                    const solve_options& options = {}) {
    return detail::iterate<T>("jacobi", A, b, x, options, [&](std::span<T> xk, const buffer<T>& r) {
        for (std::size_t i = 0; i < xk.size(); ++i)
            if (A.diagonal[i] > 0) xk[i] += r[i] / A.diagonal[i];
    });
}
template <class T>
solve_report jacobi(const ar_system<T>& A, detail::vector_out<T> x, const solve_options& options = {}) {
    return jacobi(A, A.rhs, x, options);
}

/// Successive over-relaxation in (R + 1)^2 colours for a stencil of reach R
/// (row and column modulo R + 1; four colours for 4 or 8 neighbours): pixels of
/// one colour are never neighbours, so each colour updates in place
/// independently (red-black ordering generalised to wider stencils). omega = 1
/// is Gauss-Seidel.
template <class T>
solve_report sor(const ar_system<T>& A, detail::vector_in<T> b, detail::vector_out<T> x, double omega = 1.6,
                 const solve_options& options = {}) {
    detail::require(omega > 0 && omega < 2, "sor", [&] { return "omega must be in (0, 2), got " + std::to_string(omega); });
    const std::size_t H = A.height, W = A.width, period = A.reach() + 1;
    return detail::iterate<T>("sor", A, b, x, options, [&](std::span<T> xk, const buffer<T>&) {
        for (std::size_t colour = 0; colour < period * period; ++colour)
            for (std::size_t row = colour / period; row < H; row += period)
                for (std::size_t col = colour % period; col < W; col += period) {
                    const std::size_t i = row * W + col;
                    double s = b[i];
                    for (std::size_t o = 0; o < A.offsets.size(); ++o) {
                        const std::ptrdiff_t sh = A.shift(o);
                        if (i + sh < A.size() && A.weights[o][i] != 0) s += A.weights[o][i] * xk[i + sh];
                        if (std::ptrdiff_t(i) - sh >= 0 && A.weights[o][i - sh] != 0) s += A.weights[o][i - sh] * xk[i - sh];
                    }
                    if (A.diagonal[i] > 0) xk[i] += omega * (s / A.diagonal[i] - xk[i]);
                }
    });
}
template <class T>
solve_report sor(const ar_system<T>& A, detail::vector_out<T> x, double omega = 1.6, const solve_options& options = {}) {
    return sor(A, A.rhs, x, omega, options);
}

/// The diagonal (Jacobi) preconditioner: z = D^-1 r.
template <class T = double>
struct jacobi_preconditioner {
    const ar_system<T>* A;
    explicit jacobi_preconditioner(const ar_system<T>& system) : A(&system) {}
    void operator()(std::span<const T> r, std::span<T> z) const {
        A->require_size(r, "jacobi_preconditioner", "r");
        A->require_size(z, "jacobi_preconditioner", "z");
        for (std::size_t i = 0; i < r.size(); ++i) z[i] = A->diagonal[i] > 0 ? r[i] / A->diagonal[i] : r[i];
    }
    static constexpr const char* name = "jacobi";
};

/// How the V-cycle damps its Jacobi sweeps (`multigrid_options`).
enum class smoother { chebyshev, jacobi };

/// Parameters of the multigrid V-cycle.
struct multigrid_options {
    /// Jacobi sweeps before and after the coarse correction; each group runs in one pass over memory
    std::size_t smoothing_steps = 4;
    /// chebyshev: the m sweeps are damped by 1 / theta_k, theta_k the roots of the degree-m
    /// Chebyshev polynomial on [lower, upper], so that together they damp the eigenvalues
    /// of D^-1 A in that interval as much as m sweeps can (a Chebyshev smoother; upper = 2
    /// bounds the spectrum of a Laplacian plus a non-negative diagonal, by Gershgorin).
    /// jacobi: every sweep damped by `damping`.
    smoother kind = smoother::chebyshev;
    double lower = 0.1, upper = 2.0;   ///< chebyshev: the interval of D^-1 A's spectrum to damp
    double damping = 0.8;              ///< jacobi: the damping of every sweep
    double correction_scale = 1.0;     ///< over-correction of the piecewise-constant prolongation
};

/// Aggregation multigrid: each coarse pixel is a 2 x 2 block of fine ones, and the
/// coarse system is P^T A P with P piecewise constant: the weights of the fine
/// edges that cross between two blocks add up into their coarse edge, the alphas
/// of a block add up, so every level is again an AR system on a stencil. A
/// V-cycle smooths with damped Jacobi sweeps (the same sweeps before and after: they
/// are polynomials in D^-1 A, which commute, so the cycle is symmetric and can
/// precondition CG) and solves the coarsest level (at most 256 pixels) exactly.
template <class T = double>
class multigrid {
public:
    /// Throws `std::invalid_argument` unless smoothing_steps >= 1, 0 < lower < upper (finite),
    /// 0 < damping <= 2 and correction_scale is finite and positive.
    explicit multigrid(const ar_system<T>& A, multigrid_options options = {})
        : options_(options), damping_(sweep_damping(options)) {
        for (std::size_t k = 1; k < damping_.size(); ++k) pre_smoothing_.push_back({damping_[k]});
        pre_smoothing_.push_back({0, true});
        for (double omega : damping_) post_smoothing_.push_back({omega});
        levels_.push_back(&A);
        while (levels_.back()->size() > 256 && levels_.back()->height > 1 && levels_.back()->width > 1) {
            owned_.push_back(std::make_unique<ar_system<T>>(coarsen(*levels_.back())));
            levels_.push_back(owned_.back().get());
        }
        factor_coarsest();
        for (const ar_system<T>* level : levels_) {
            work_.emplace_back(level->size());
            rhs_.emplace_back(level->size());
            solution_.emplace_back(level->size());
        }
    }

    std::size_t levels() const noexcept { return levels_.size(); }
    static constexpr const char* name = "multigrid";

    /// The damping of each smoothing sweep, in the order they run (before and after).
    static std::vector<double> sweep_damping(const multigrid_options& o) {
        detail::require(o.smoothing_steps >= 1 && std::isfinite(o.lower) && std::isfinite(o.upper) && o.lower > 0 &&
                            o.lower < o.upper &&
                            o.damping > 0 && o.damping <= 2 && std::isfinite(o.correction_scale) &&
                            o.correction_scale > 0,
                        "multigrid", [&] {
                            return "needs smoothing_steps >= 1 (without smoothing a V-cycle is a projection, not a "
                                   "preconditioner), 0 < lower < upper (finite), 0 < damping <= 2 and correction_scale > 0, "
                                   "got smoothing_steps = " + std::to_string(o.smoothing_steps) +
                                   ", lower = " + std::to_string(o.lower) + ", upper = " + std::to_string(o.upper) +
                                   ", damping = " + std::to_string(o.damping) +
                                   ", correction_scale = " + std::to_string(o.correction_scale);
                        });
        const std::size_t m = o.smoothing_steps;
        std::vector<double> omega(m, o.damping);
        if (o.kind == smoother::chebyshev) {
            const double centre = (o.upper + o.lower) / 2, half_width = (o.upper - o.lower) / 2;
            for (std::size_t k = 0; k < m; ++k)
                omega[k] = 1 / (centre + half_width * std::cos(std::numbers::pi * double(2 * k + 1) / double(2 * m)));
        }
        return omega;
    }

    /// z = M^-1 r: one V-cycle from z = 0. Not reentrant: one cycle at a time per object
    /// (its buffers are allocated once, with the hierarchy).
    void operator()(std::span<const T> r, std::span<T> z) const {
        levels_.front()->require_size(r, "multigrid", "r");
        levels_.front()->require_size(z, "multigrid", "z");
        cycle(0, r.data(), z.data());
    }

private:
    /// The 2 x 2 aggregate of `f`: a fine edge of reach R joins blocks at most
    /// ceil(R / 2) apart, so the coarse stencil is the square of that radius. A fine
    /// edge (dy, dx) from an even column joins blocks (dy', floor(dx / 2)) apart, from
    /// an odd column (dy', floor((dx + 1) / 2)), dy' fixed by the row: each row of fine
    /// weights adds into two coarse directions, without divisions.
    static ar_system<T> coarsen(const ar_system<T>& f) {
        const std::size_t H = (f.height + 1) / 2, W = (f.width + 1) / 2, n = H * W;
        buffer<T> alpha(n, T(0));
        for (std::size_t r = 0; r < f.height; ++r)
            for (std::size_t c = 0; c < f.width; ++c) alpha[(r / 2) * W + c / 2] += f.alpha[r * f.width + c];
        const grid_stencil stencil{H, W, 8, std::max<std::size_t>(1, (f.reach() + 1) / 2)};
        const auto dirs = stencil.forward_offsets();
        // Direction index of a forward (dy, dx), dy in [0, R], dx in [-R, R].
        const auto R = std::ptrdiff_t(stencil.radius);
        std::vector<std::size_t> index(std::size_t((R + 1) * (2 * R + 1)), dirs.size());
        for (std::size_t d = 0; d < dirs.size(); ++d) index[std::size_t(dirs[d].dy * (2 * R + 1) + dirs[d].dx + R)] = d;
        const auto floor_half = [](std::ptrdiff_t v) { return v >= 0 ? v / 2 : -((1 - v) / 2); };
        std::vector<buffer<T>> weights(dirs.size(), buffer<T>(n, T(0)));
        for (std::size_t o = 0; o < f.offsets.size(); ++o) {
            const auto [dy, dx] = f.offsets[o];
            const auto [c0, c1] = ar_system<T>::columns_inside(dx, f.width);
            for (std::size_t r = 0; r + std::size_t(dy) < f.height; ++r) {
                const std::ptrdiff_t block_dy = std::ptrdiff_t((r + std::size_t(dy)) / 2 - r / 2);
                const T* w = f.weights[o].data() + r * f.width;
                for (std::size_t parity = 0; parity < 2; ++parity) {
                    const std::ptrdiff_t block_dx = floor_half(dx + std::ptrdiff_t(parity));
                    if (block_dy == 0 && block_dx == 0) continue;   // inside one block
                    // A backward pair of blocks (same row, dx < 0) is stored from the left block.
                    const bool backward = block_dy == 0 && block_dx < 0;
                    const std::ptrdiff_t from = backward ? block_dx : 0;
                    T* to = weights[index[std::size_t(block_dy * (2 * R + 1) + (backward ? -block_dx : block_dx) + R)]].data() +
                            (r / 2) * W;
                    for (std::size_t c = c0 + (c0 % 2 != parity); c < c1; c += 2)
                        to[std::ptrdiff_t(c / 2) + from] += w[c];
                }
            }
        }
        ar_system<T> coarse_system(H, W, dirs, std::move(weights), std::move(alpha), buffer<T>(n, T(0)));
        coarse_system.threads = f.threads;
        return coarse_system;
    }

    /// Dense Cholesky factor of the coarsest A (positive definite once any alpha > 0;
    /// a tiny ridge keeps a level without data solvable).
    void factor_coarsest() {
        const ar_system<T>& c = *levels_.back();
        const std::size_t n = c.size();
        chol_.assign(n * n, 0.0);
        std::vector<T> e(n, 0.0), col(n);
        for (std::size_t j = 0; j < n; ++j) {
            e[j] = 1;
            c.apply(e.data(), col.data());
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

    /// z = omega D^-1 r: the first sweep from z = 0, without a product, in batches.
    static void sweep_from_zero(const ar_system<T>& A, const T* r, T* z, double damping) {
        using batch = xsimd::batch<T>;
        const T omega = T(damping);
        std::size_t i = 0;
        for (; i + batch::size <= A.size(); i += batch::size) {
            const batch d = batch::load_unaligned(&A.diagonal[i]);
            xsimd::select(d > batch(T(0)), batch(omega) * batch::load_unaligned(&r[i]) / d, batch(T(0)))
                .store_unaligned(&z[i]);
        }
        for (; i < A.size(); ++i) z[i] = A.diagonal[i] > 0 ? omega * r[i] / A.diagonal[i] : T(0);
    }

    /// z = one V-cycle on A z = r from z = 0 at `level`, in the buffers z and work_[level].
    void cycle(std::size_t level, const T* r, T* z) const {
        const ar_system<T>& A = *levels_[level];
        if (level + 1 == levels_.size()) return solve_coarsest(r, z);
        T* work = work_[level].data();
        // Pre-smoothing from 0: its first sweep, without a product, into work; the other
        // m - 1 sweeps and the residual in one pass over memory, each stage writing the
        // buffer the stage before read (`sweeps`: z, work, z, ...). The residual lands in
        // work for even m, in z for odd m, the smoothed correction in the other buffer;
        // post-smoothing's m stages from the correction then end in z either way.
        const std::size_t m = options_.smoothing_steps;
        sweep_from_zero(A, r, work, damping_[0]);
        A.sweeps(r, work, z, pre_smoothing_);
        T* correction = m % 2 ? work : z;
        const T* residual = m % 2 ? z : work;
        const ar_system<T>& C = *levels_[level + 1];
        T *rc = rhs_[level + 1].data(), *zc = solution_[level + 1].data();
        for (std::size_t row = 0; row < A.height; row += 2) {   // restrict: sum the residual over each block
            const T* top = &residual[row * A.width];
            const T* bottom = row + 1 < A.height ? top + A.width : nullptr;
            T* cr = &rc[(row / 2) * C.width];
            const std::size_t pairs = A.width / 2;   // blocks two columns wide; an odd last column alone
            if (bottom)
                for (std::size_t col = 0; col < pairs; ++col)
                    cr[col] = (top[2 * col] + top[2 * col + 1]) + (bottom[2 * col] + bottom[2 * col + 1]);
            else
                for (std::size_t col = 0; col < pairs; ++col) cr[col] = top[2 * col] + top[2 * col + 1];
            if (A.width % 2) cr[pairs] = top[A.width - 1] + (bottom ? bottom[A.width - 1] : T(0));
        }
        cycle(level + 1, rc, zc);
        const T scale = T(options_.correction_scale);
        for (std::size_t row = 0; row < A.height; ++row) {   // prolong: constant over each block
            T* zr = &correction[row * A.width];
            const T* cr = &zc[(row / 2) * C.width];
            const std::size_t pairs = A.width / 2;
            for (std::size_t col = 0; col < pairs; ++col) {
                const T correction = scale * cr[col];
                zr[2 * col] += correction;
                zr[2 * col + 1] += correction;
            }
            if (A.width % 2) zr[A.width - 1] += scale * cr[pairs];
        }
        // Post-smoothing: all its sweeps in one pass over memory.
        A.sweeps(r, correction, m % 2 ? z : work, post_smoothing_);
    }

    multigrid_options options_;
    std::vector<double> damping_;   // of each sweep
    // The stages of one pass over memory: sweeps 1..m-1 and the residual before the coarse
    // correction, sweeps 0..m-1 after.
    std::vector<typename ar_system<T>::sweep_stage> pre_smoothing_, post_smoothing_;
    std::vector<const ar_system<T>*> levels_;
    std::vector<std::unique_ptr<ar_system<T>>> owned_;
    std::vector<double> chol_;   // the coarsest level in double, whatever T
    // Per-level buffers of a cycle, allocated once: a multigrid object runs one cycle at a time.
    mutable std::vector<buffer<T>> work_, rhs_, solution_;
};

/// Preconditioned conjugate gradients on A x = b from the given x (a warm start).
/// Solving for several right-hand sides of one system shares its preconditioner.
/// `M(r, z)` sets z = M^-1 r for spans of T (`multigrid`, `jacobi_preconditioner`).
template <class T, class Preconditioner>
solve_report pcg(const ar_system<T>& A, detail::vector_in<T> b, detail::vector_out<T> x, const Preconditioner& M,
                 const solve_options& options = {}) {
    detail::require_sizes<T>(A, b, x, "pcg");
    const detail::stopwatch clock;
    solve_report report{std::string("pcg + ") + Preconditioner::name};
    const std::size_t n = A.size();
    buffer<T> r(n), z(n), p(n), q(n);
    const double b_norm = detail::norm(b);
    report.relative_residual = detail::residual<T>(A, b, x, r) / b_norm;
    M(std::span<const T>(r), std::span<T>(z));
    p = z;
    double rz = detail::dot(r.data(), z.data(), n);
    // Each iteration: q = A p with <p, q> in one pass; r -= step q with |r|^2 in one; the
    // preconditioner; <r, z>; then x += step p and p = z + beta p in one pass.
    while (!(report.converged = report.relative_residual <= options.tolerance) &&
           report.iterations < options.max_iterations) {
        const T step = T(rz / A.apply_and_dot(p.data(), q.data()));
        const double rr = detail::partial_sums(n, [&](std::size_t i) {
            r[i] -= step * q[i];
            return double(r[i]) * double(r[i]);
        });
        ++report.iterations;
        report.relative_residual = std::sqrt(rr) / b_norm;
        if (report.relative_residual <= options.tolerance || report.iterations == options.max_iterations) {
            for (std::size_t j = 0; j < n; ++j) x[j] += step * p[j];
            continue;   // the loop's test records convergence and stops
        }
        M(std::span<const T>(r), std::span<T>(z));
        const double rz_next = detail::dot(r.data(), z.data(), n);
        const T beta = T(rz_next / rz);
        for (std::size_t j = 0; j < n; ++j) {
            x[j] += step * p[j];
            p[j] = z[j] + beta * p[j];
        }
        rz = rz_next;
    }
    report.seconds = clock.seconds();
    return report;
}

/// Preconditioned conjugate gradients on the system's own A x = b.
template <class T, class Preconditioner>
solve_report pcg(const ar_system<T>& A, detail::vector_out<T> x, const Preconditioner& M,
                 const solve_options& options = {}) {
    return pcg(A, A.rhs, x, M, options);
}

/// V-cycles of `M` (a multigrid of A) alone on A x = b, from the given x.
template <class T>
solve_report multigrid_solve(const ar_system<T>& A, detail::vector_in<T> b, detail::vector_out<T> x,
                             const multigrid<T>& M, const solve_options& options = {}) {
    buffer<T> z(A.size());
    return detail::iterate<T>("multigrid", A, b, x, options, [&](std::span<T> xk, const buffer<T>& r) {
        M(std::span<const T>(r), std::span<T>(z));
        for (std::size_t i = 0; i < xk.size(); ++i) xk[i] += z[i];
    });
}
/// V-cycles alone on the system's own A x = b, from the given x.
template <class T>
solve_report multigrid_solve(const ar_system<T>& A, detail::vector_out<T> x, const solve_options& options = {}) {
    A.require_size(x, "multigrid_solve");
    return multigrid_solve(A, A.rhs, x, multigrid(A), options);
}

}  // namespace nonlocal
