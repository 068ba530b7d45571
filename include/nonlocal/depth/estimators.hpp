#pragma once
/// @file depth/estimators.hpp
/// The estimators of the depth tasks (`depth_model`), each on the AR system of the guide:
/// from the observations on the guide's grid, the depth at every pixel and how its solves
/// went (see `depth/tasks.hpp` for the models).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "nonlocal/buffer.hpp"
#include "nonlocal/depth/observations.hpp"
#include "nonlocal/depth/occlusion.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/image/box_interpolation.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/similarity/distance.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/solve/line_solves.hpp"
#include "nonlocal/solve/multigrid.hpp"
#include "nonlocal/solve/solvers.hpp"

namespace nonlocal::detail {

/// The box interpolation of an AR system's data term.
template <class T, class Arch>
buffer<double> normalized_interpolation(const ar_system<T, Arch>& A) {
    return normalized_interpolation(A.height(), A.width(), A.alpha().data(), A.rhs().data());
}

/// Solves A x = b with the chosen solver from the given x, or, when `from_full` and the
/// solver is a multigrid one, from full multigrid's approximation (`M`: a multigrid of A,
/// for those solvers), on the threads of `policy`.
template <class T, class Arch>
solve_report solve(execution::parallel_policy policy, const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                   const depth_options& o, const multigrid<T, Arch>* M, bool from_full) {
    const auto vcycles = [&] {
        if (!from_full) return multigrid_solve(policy, A, b, x, *M, o.solve);
        M->full(policy, b, x);
        solve_report r = multigrid_solve(policy, A, b, x, *M,
                                         {o.solve.tolerance, o.solve.max_iterations > 0 ? o.solve.max_iterations - 1 : 0});
        r.method = "full multigrid + " + r.method;
        r.iterations += 1;
        return r;
    };
    switch (o.solver) {
        case depth_solver::pcg_multigrid:
            return from_full ? full_multigrid(policy, A, b, x, *M, o.solve) : pcg(policy, A, b, x, *M, o.solve);
        case depth_solver::multigrid: return vcycles();
        case depth_solver::pcg_jacobi: return pcg(policy, A, b, x, jacobi_preconditioner(A), o.solve);
        case depth_solver::jacobi: return jacobi(policy, A, b, x, o.solve);
        case depth_solver::sor: return sor(policy, A, b, x, 1.6, o.solve);
    }
    return {};
}

/// The far side of the holes of `d` when `o.occlusions` asks for it (computed once a task:
/// the estimators take a pointer to it, null for none).
inline std::optional<far_side> far_side_of(const observed_depth& d, const depth_options& o) {
    if (o.occlusions == occlusion_fill::blend) return std::nullopt;
    return far_side(d, o.occlusions, depth_step(d, o));
}

/// The AR system of the guide with the chosen colour kernel and stencil and the data
/// term alpha, b = alpha xhat, the spatial Gaussian applied per stencil direction, and when
/// `far` is given the edges between the holes of `d` and their near side cut: to 0 where
/// every pixel has a data term (the normalised and separable models), to `min_weight` in the
/// AR model, whose holes must stay connected to observations.
template <class T, class Arch>
ar_system<T, Arch> depth_system(const image_planes<T>& g, const observed_depth& d, const far_side* far, buffer<T> alpha,
                          buffer<T> b, const depth_options& o) {
    const grid_stencil stencil{g.height, g.width, o.connectivity, o.radius};
    ar_system<T, Arch> A = o.color == color_kernel::laplacian
                         ? ar_system<T, Arch>(g, stencil, laplacian_distance(o.sigma_r), std::move(alpha), std::move(b),
                                        o.min_weight)
                         : ar_system<T, Arch>(g, stencil, gaussian_distance(o.sigma_r * std::sqrt(2.0)), std::move(alpha),
                                        std::move(b), o.min_weight);
    if (std::isfinite(o.sigma_s)) {
        A.reweight([&](std::size_t d, std::span<T> plane) {
            const double dy = double(A.offsets()[d].dy), dx = double(A.offsets()[d].dx);
            const double falloff = std::exp(-(dy * dy + dx * dx) / (2 * o.sigma_s * o.sigma_s));
            for (T& w : plane) w = w == 0 ? T(0) : T(std::max(double(w) * falloff, o.min_weight));
        });
    }
    if (far) cut_near_side(A, d, *far, o.model == depth_model::ar ? o.min_weight : 0.0);
    return A;
}

/// x0 replaced by the far side's interpolation in the holes that have one.
inline void far_side_fallback(const far_side& far, std::span<double> x0) {
    for (std::size_t i = 0; i < x0.size(); ++i)
        if (!std::isnan(far.interpolation[i])) x0[i] = far.interpolation[i];
}

/// A multigrid hierarchy of A when the chosen solver uses one.
template <class T, class Arch>
std::unique_ptr<multigrid<T, Arch>> hierarchy(const ar_system<T, Arch>& A, const depth_options& o) {
    const bool multilevel = o.solver == depth_solver::pcg_multigrid || o.solver == depth_solver::multigrid;
    return multilevel ? std::make_unique<multigrid<T, Arch>>(A, o.multigrid) : nullptr;
}

/// The data term of the normalised and separable models on every pixel: eps =
/// `epsilon_scale` x the observed fraction, so that the kernel's reach follows the
/// observations' spacing.
inline double normalized_epsilon(const observed_depth& d, const depth_options& o) { return o.epsilon_scale * d.fraction(); }

// Each estimator is built once on the guide and the observations, then called on them or on
// the same observations reweighted (`estimate_robustly`): `estimate(d, report)` returns the
// depth at every pixel (in an `uninitialized_buffer`, each entry written once) and says how
// its solves went, which ran on the threads of the estimator's policy.

/// depth_model::ar: the AR model's minimiser, alpha = lambda on the observed pixels (times
/// their confidence). A new system for each call, since the weights are its diagonal.
template <class T, class Arch>
class ar_estimator {
public:
    ar_estimator(execution::parallel_policy policy, const image_planes<T>& g, const observed_depth&, const far_side* far,
                 const depth_options& o)
        : policy_(policy), g_(g), o_(o), far_(far) {}
    uninitialized_buffer<double> operator()(const observed_depth& d, solve_report& report) const {
        auto [alpha, b] = d.scaled<T>(o_.lambda);
        const ar_system<T, Arch> A = depth_system<T, Arch>(g_, d, far_, std::move(alpha), std::move(b), o_);
        const auto M = hierarchy(A, o_);
        buffer<T> solution(A.size(), T(0));
        if (!M) {
            const buffer<double> x0 = normalized_interpolation(A);
            std::copy(x0.begin(), x0.end(), solution.begin());
        }
        report = solve(policy_, A, A.rhs(), solution, o_, M.get(), true);
        return uninitialized_buffer<double>(solution.begin(), solution.end());
    }

private:
    execution::parallel_policy policy_;
    const image_planes<T>& g_;
    const depth_options& o_;
    const far_side* far_;
};

/// depth_model::normalised: K(c m d) / K(c m) with K = eps (L + eps I)^-1, c the confidences:
/// two solves of one system (alpha = eps everywhere, whatever the confidences) that share a
/// multigrid hierarchy, both built once; later calls start from the last K(c m).
template <class T, class Arch>
class normalized_estimator {
public:
    normalized_estimator(execution::parallel_policy policy, const image_planes<T>& g, const observed_depth& d,
                         const far_side* far, const depth_options& o)
        : policy_(policy), o_(o), eps_(normalized_epsilon(d, o)), far_(far),
          A_(depth_system<T, Arch>(g, d, far_, buffer<T>(g.pixels(), T(eps_)), buffer<T>(g.pixels(), T(0)), o)),
          M_(hierarchy(A_, o)), km_(g.pixels(), T(d.fraction())) {}

    uninitialized_buffer<double> operator()(const observed_depth& d, solve_report& report) {
        const std::size_t n = A_.size();
        auto [b_mask, b_depth] = d.scaled<T, uninitialized_buffer<T>>(eps_);
        // x0 = the normalised box interpolation of c m d (eps cancels), in holes the far side's
        // interpolation when filling from the far side.
        buffer<double> x0 = normalized_interpolation(A_.height(), A_.width(), b_mask.data(), b_depth.data());
        if (far_) far_side_fallback(*far_, x0);
        // K(c m) first (the first time from full multigrid, or from the observed fraction for the
        // solvers that need a start); then K(c m d) from x0 K(c m), exact where the depth is constant.
        const solve_report rm = solve(policy_, A_, b_mask, km_, o_, M_.get(), !solved_);
        solved_ = true;
        uninitialized_buffer<T> kd(n);
        for (std::size_t i = 0; i < n; ++i) kd[i] = T(x0[i] * km_[i]);
        const solve_report rd = solve(policy_, A_, b_depth, kd, o_, M_.get(), false);
        report = one_report("normalised " + rm.method, rm, rd);
        // Where K(c m) is tiny (no observation well connected) x0 takes over; delta is far above
        // the solves' error and far below K(c m) near observations (about the mean of c m, which
        // delta scales with, so that only the confidences' ratios matter). K(c m)
        // and K(c m d) are not negative (K's entries are not, d > 0); an approximate solve's
        // are taken as 0 where they are.
        const double delta = 1e-3 * d.mean_confidence();
        uninitialized_buffer<double> x(n);
        for (std::size_t i = 0; i < n; ++i)
            x[i] = (std::max(double(kd[i]), 0.0) + delta * x0[i]) / (std::max(double(km_[i]), 0.0) + delta);
        return x;
    }

private:
    execution::parallel_policy policy_;
    const depth_options& o_;
    double eps_;
    const far_side* far_;
    ar_system<T, Arch> A_;
    std::unique_ptr<multigrid<T, Arch>> M_;
    buffer<T> km_;
    bool solved_ = false;
};

/// depth_model::separable: K_s(c m d) / K_s(c m) with K_s the fast global smoother's separable
/// approximation of K (`separable_smooth`), its system built once.
template <class T, class Arch>
class separable_estimator {
public:
    separable_estimator(execution::parallel_policy policy, const image_planes<T>& g, const observed_depth& d,
                        const far_side* far, const depth_options& o)
        : policy_(policy), passes_{o.separable_passes, o.separable_strength / std::sqrt(d.fraction())}, far_(far),
          A_(depth_system<T, Arch>(g, d, far_, buffer<T>(g.pixels(), T(normalized_epsilon(d, o))), buffer<T>(g.pixels(), T(0)),
                             o)) {}   // b unused

    uninitialized_buffer<double> operator()(const observed_depth& d, solve_report& report) const {
        const std::size_t n = A_.size();
        // K_s(c m) and K_s(c m d), side by side.
        auto [km, kd] = d.scaled<T, uninitialized_buffer<T>>(1.0);
        const stopwatch solve_clock;
        const std::array<std::span<T>, 2> smoothed{std::span<T>(km), std::span<T>(kd)};
        separable_smooth(policy_, A_, std::span<const std::span<T>>(smoothed), passes_);
        report = {"separable, " + std::to_string(passes_.passes) + " passes of line solves", passes_.passes, 0.0, true,
                  solve_clock.seconds()};
        // K_s's entries are positive, so K_s(c m d) / K_s(c m) is a weighted mean of the observed
        // depths, unless K_s(c m) underflows far from every observation (in holes a few hundred
        // pixels across); the far side's interpolation (when filling from it) or the box
        // interpolation takes over there (set up only if some pixel needs it).
        uninitialized_buffer<double> x(n);
        std::unique_ptr<box_interpolation> x0;
        for (std::size_t i = 0; i < n; ++i) {
            const double ratio = double(kd[i]) / double(km[i]);
            if (km[i] > std::numeric_limits<T>::min() && std::isfinite(ratio)) {
                x[i] = ratio;
                continue;
            }
            if (far_ && !std::isnan(far_->interpolation[i])) {
                x[i] = far_->interpolation[i];
                continue;
            }
            if (!x0) x0 = std::make_unique<box_interpolation>(observed_interpolation(d));
            x[i] = (*x0)(i / A_.width(), i % A_.width());
        }
        return x;
    }

private:
    execution::parallel_policy policy_;
    separable_options passes_;
    const far_side* far_;
    ar_system<T, Arch> A_;
};

/// f(estimator) with the estimator of `o.model`, built on the guide, the observations and the
/// far side of their holes (null: holes blended), its solves on the threads of `policy`.
template <class Arch, class T, class F>
auto with_estimator(execution::parallel_policy policy, const image_planes<T>& g, const observed_depth& d,
                    const far_side* far, const depth_options& o, F&& f) {
    switch (o.model) {
        case depth_model::ar: {
            ar_estimator<T, Arch> e(policy, g, d, far, o);
            return f(e);
        }
        case depth_model::separable: {
            separable_estimator<T, Arch> e(policy, g, d, far, o);
            return f(e);
        }
        case depth_model::normalized: break;
    }
    normalized_estimator<T, Arch> e(policy, g, d, far, o);
    return f(e);
}

}  // namespace nonlocal::detail
