#pragma once
/// @file depth/estimators.hpp
/// The estimators of the depth tasks (`depth_model`), each on the AR system of the guide:
/// from the observations on the guide's grid, the depth at every pixel and how its solves
/// went (see `filter/depth.hpp` for the models).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "nonlocal/buffer.hpp"
#include "nonlocal/depth/observations.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/image/box_interpolation.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/similarity/distance.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/solve/line_solves.hpp"
#include "nonlocal/solve/multigrid.hpp"
#include "nonlocal/solve/solvers.hpp"

namespace nonlocal::detail {

/// The box interpolation of an AR system's data term.
template <class T>
buffer<double> normalised_interpolation(const ar_system<T>& A) {
    return normalised_interpolation(A.height, A.width, A.alpha().data(), A.rhs.data());
}

/// Solves A x = b with the chosen solver from the given x, or, when `from_full` and the
/// solver is a multigrid one, from full multigrid's approximation (`M`: a multigrid of A,
/// for those solvers).
template <class T>
solve_report solve(const ar_system<T>& A, vector_in<T> b, vector_out<T> x, const depth_options& o,
                   const multigrid<T>* M, bool from_full) {
    const auto vcycles = [&] {
        if (!from_full) return multigrid_solve(A, b, x, *M, o.solve);
        M->full(b, x);
        solve_report r = multigrid_solve(A, b, x, *M, {o.solve.tolerance, o.solve.max_iterations > 0 ? o.solve.max_iterations - 1 : 0});
        r.method = "full multigrid + " + r.method;
        r.iterations += 1;
        return r;
    };
    switch (o.solver) {
        case depth_solver::pcg_multigrid: return from_full ? full_multigrid(A, b, x, *M, o.solve) : pcg(A, b, x, *M, o.solve);
        case depth_solver::multigrid: return vcycles();
        case depth_solver::pcg_jacobi: return pcg(A, b, x, jacobi_preconditioner(A), o.solve);
        case depth_solver::jacobi: return jacobi(A, b, x, o.solve);
        case depth_solver::sor: return sor(A, b, x, 1.6, o.solve);
    }
    return {};
}

/// The AR system of the guide with the chosen colour kernel and stencil and the data
/// term alpha, b = alpha xhat, the spatial Gaussian applied per stencil direction.
template <class T>
ar_system<T> depth_system(const image_planes<T>& g, buffer<T> alpha, buffer<T> b, const depth_options& o) {
    const grid_stencil stencil{g.height, g.width, o.connectivity, o.radius};
    ar_system<T> A = o.colour == colour_kernel::laplacian
                         ? ar_system<T>(g, stencil, laplacian_distance(o.sigma_r), std::move(alpha), std::move(b),
                                        o.min_weight)
                         : ar_system<T>(g, stencil, gaussian_distance(o.sigma_r * std::sqrt(2.0)), std::move(alpha),
                                        std::move(b), o.min_weight);
    A.threads = o.threads;
    if (std::isfinite(o.sigma_s)) {
        A.reweight([&](std::size_t d, std::span<T> plane) {
            const double dy = double(A.offsets[d].dy), dx = double(A.offsets[d].dx);
            const double falloff = std::exp(-(dy * dy + dx * dx) / (2 * o.sigma_s * o.sigma_s));
            for (T& w : plane) w = w == 0 ? T(0) : T(std::max(double(w) * falloff, o.min_weight));
        });
    }
    return A;
}

/// A multigrid hierarchy of A when the chosen solver uses one.
template <class T>
std::unique_ptr<multigrid<T>> hierarchy(const ar_system<T>& A, const depth_options& o) {
    const bool multilevel = o.solver == depth_solver::pcg_multigrid || o.solver == depth_solver::multigrid;
    return multilevel ? std::make_unique<multigrid<T>>(A, o.multigrid) : nullptr;
}

/// The data term of the normalised and separable models on every pixel: eps =
/// `epsilon_scale` x the observed fraction, so that the kernel's reach follows the
/// observations' spacing.
inline double normalised_epsilon(const observed_depth& d, const depth_options& o) { return o.epsilon_scale * d.fraction(); }

/// depth_model::ar: the AR model's minimiser, alpha = lambda on the observed pixels.
struct ar_estimator {
    template <class T>
    static buffer<double> estimate(const image_planes<T>& g, const observed_depth& d, const depth_options& o,
                                   solve_report& report) {
        const std::size_t n = g.pixels();
        auto [alpha, b] = d.scaled<T>(o.lambda);
        const ar_system<T> A = depth_system<T>(g, std::move(alpha), std::move(b), o);
        const auto M = hierarchy(A, o);
        buffer<T> solution(n, T(0));
        if (!M) {
            const buffer<double> x0 = normalised_interpolation(A);
            std::copy(x0.begin(), x0.end(), solution.begin());
        }
        report = solve(A, A.rhs, solution, o, M.get(), true);
        return buffer<double>(solution.begin(), solution.end());
    }
};

/// depth_model::normalised: K(m d) / K(m) with K = eps (L + eps I)^-1, two solves of one
/// system that share a multigrid hierarchy.
struct normalised_estimator {
    template <class T>
    static buffer<double> estimate(const image_planes<T>& g, const observed_depth& d, const depth_options& o,
                                   solve_report& report) {
        const std::size_t n = g.pixels();
        const double fraction = d.fraction(), eps = normalised_epsilon(d, o);
        // K(m d) and K(m): one system with alpha = eps everywhere, b = eps m d and eps m.
        auto [b_mask, b_depth] = d.scaled<T>(eps);
        // x0 = the normalised box interpolation of m d (eps cancels).
        const buffer<double> x0 = normalised_interpolation(g.height, g.width, b_mask.data(), b_depth.data());
        const ar_system<T> A = depth_system<T>(g, buffer<T>(n, T(eps)), std::move(b_depth), o);
        const auto M = hierarchy(A, o);
        // K(m) first (from the observed fraction, for the solvers that need a start); then
        // K(m d) from x0 K(m), exact where the depth is constant.
        buffer<T> km(n, T(fraction)), kd(n);
        const solve_report rm = solve(A, b_mask, km, o, M.get(), true);
        for (std::size_t i = 0; i < n; ++i) kd[i] = T(x0[i] * km[i]);
        const solve_report rd = solve(A, A.rhs, kd, o, M.get(), false);
        report = one_report("normalised " + rm.method, rm, rd);
        // Where K(m) is tiny (no observation well connected) x0 takes over; delta is far above
        // the solves' error and far below K(m) near observations (about `fraction`). K(m) and
        // K(m d) are not negative (K's entries are not, d > 0); an approximate solve's are
        // taken as 0 where they are.
        const double delta = 1e-3 * fraction;
        buffer<double> x(n);
        for (std::size_t i = 0; i < n; ++i)
            x[i] = (std::max(double(kd[i]), 0.0) + delta * x0[i]) / (std::max(double(km[i]), 0.0) + delta);
        return x;
    }
};

/// depth_model::separable: K_s(m d) / K_s(m) with K_s the fast global smoother's separable
/// approximation of K (`separable_smooth`).
struct separable_estimator {
    template <class T>
    static buffer<double> estimate(const image_planes<T>& g, const observed_depth& d, const depth_options& o,
                                   solve_report& report) {
        const std::size_t n = g.pixels();
        // K_s(m) and K_s(m d) of the system with alpha = eps everywhere, side by side.
        auto [km, kd] = d.scaled<T>(1.0);
        const ar_system<T> A = depth_system<T>(g, buffer<T>(n, T(normalised_epsilon(d, o))), buffer<T>(n, T(0)), o);   // b unused
        const stopwatch solve_clock;
        const std::array<std::span<T>, 2> smoothed{std::span<T>(km), std::span<T>(kd)};
        const separable_options passes{o.separable_passes, o.separable_strength / std::sqrt(d.fraction())};
        separable_smooth(A, std::span<const std::span<T>>(smoothed), passes);
        report = {"separable, " + std::to_string(passes.passes) + " passes of line solves", passes.passes, 0.0, true,
                  solve_clock.seconds()};
        // K_s's entries are positive, so K_s(m d) / K_s(m) is a weighted mean of the observed
        // depths, unless K_s(m) underflows far from every observation (in holes a few hundred
        // pixels across); the box interpolation takes over there (set up only if some pixel needs it).
        buffer<double> x(n);
        std::unique_ptr<box_interpolation> x0;
        for (std::size_t i = 0; i < n; ++i) {
            const double ratio = double(kd[i]) / double(km[i]);
            if (km[i] > std::numeric_limits<T>::min() && std::isfinite(ratio)) {
                x[i] = ratio;
                continue;
            }
            if (!x0) x0 = std::make_unique<box_interpolation>(observed_interpolation(d));
            x[i] = (*x0)(i / g.width, i % g.width);
        }
        return x;
    }
};

}  // namespace nonlocal::detail
