#pragma once
/// @file filter/depth.hpp
/// Colour-guided depth refinement with the linear AR model (`solve/ar_system.hpp`):
/// hole filling, denoising and guided upsampling. Invalid depth (0 or not
/// finite) is missing; nothing is quantised. Each task builds the system, warm
/// starts from a normalised interpolation of the observations, solves, and
/// returns the depth with the solver's report.

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/filter/image.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/solve/solvers.hpp"

namespace nonlocal {

/// Solvers for the depth tasks.
enum class depth_solver { pcg_multigrid, multigrid, pcg_jacobi, jacobi, sor };

/// Parameters of the depth tasks.
struct depth_options {
    int connectivity = 8;                                          ///< 4 (diamond) or 8 (square) neighbours
    std::size_t radius = 1;                                        ///< of the stencil (1: 4 or 8 neighbours)
    double sigma_r = 3.0;                                          ///< colour Gaussian, in guide units (0..255 for 8-bit)
    double sigma_s = std::numeric_limits<double>::infinity();      ///< spatial Gaussian (infinite: none)
    double lambda = 1.0;                                           ///< alpha on observed pixels
    double min_weight = 1e-3;                                      ///< floor of the edge weights
    depth_solver solver = depth_solver::pcg_multigrid;
    solve_options solve{1e-4, 500};
};

/// A refined depth map and how its solve went; `seconds` counts everything
/// (weights, warm start, solver set-up and solve), the report the solve alone.
struct depth_result {
    xt::xtensor<float, 2> depth;
    solve_report report;
    double seconds = 0;
};

namespace detail {

inline bool valid_depth(double d) { return std::isfinite(d) && d > 0; }

/// x0 = box(alpha xhat) / box(alpha), the box growing until it covers an observation:
/// a cheap normalised interpolation from integral images.
inline std::vector<double> normalised_interpolation(const ar_system& A) {
    const std::size_t H = A.height, W = A.width;
    std::vector<double> sw((H + 1) * (W + 1), 0.0), swx((H + 1) * (W + 1), 0.0);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            const std::size_t i = (r + 1) * (W + 1) + c + 1;
            sw[i] = A.alpha[r * W + c] + sw[i - 1] + sw[i - W - 1] - sw[i - W - 2];
            swx[i] = A.rhs[r * W + c] + swx[i - 1] + swx[i - W - 1] - swx[i - W - 2];
        }
    const auto box = [&](const std::vector<double>& s, std::size_t r0, std::size_t c0, std::size_t r1, std::size_t c1) {
        return s[r1 * (W + 1) + c1] - s[r0 * (W + 1) + c1] - s[r1 * (W + 1) + c0] + s[r0 * (W + 1) + c0];
    };
    std::vector<double> x(H * W);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c)
            for (std::size_t radius = 2;; radius *= 2) {
                const std::size_t r0 = r > radius ? r - radius : 0, c0 = c > radius ? c - radius : 0;
                const std::size_t r1 = std::min(H, r + radius + 1), c1 = std::min(W, c + radius + 1);
                const double w = box(sw, r0, c0, r1, c1);
                if (w > 0) {
                    x[r * W + c] = box(swx, r0, c0, r1, c1) / w;
                    break;
                }
            }
    return x;
}

/// Builds and solves the system; `clock` started when the task did.
inline depth_result refine(const pixel_rows<double>& g, const xt::xtensor<double, 2>& xhat,
                           const xt::xtensor<double, 2>& alpha, const depth_options& o, const stopwatch& clock) {
    const ar_system A(g, grid_stencil{g.height, g.width, o.connectivity, o.radius},
                      colour_weights(g.height, g.width, g.channels, o.sigma_r, o.sigma_s), xhat, alpha, o.min_weight);
    std::vector<double> x = normalised_interpolation(A);
    depth_result result;
    switch (o.solver) {
        case depth_solver::pcg_multigrid: result.report = pcg(A, x, multigrid(A), o.solve); break;
        case depth_solver::multigrid: result.report = multigrid_solve(A, x, o.solve); break;
        case depth_solver::pcg_jacobi: result.report = pcg(A, x, jacobi_preconditioner(A), o.solve); break;
        case depth_solver::jacobi: result.report = jacobi(A, x, o.solve); break;
        case depth_solver::sor: result.report = sor(A, x, 1.6, o.solve); break;
    }
    result.depth = xt::empty<float>({g.height, g.width});
    for (std::size_t i = 0; i < x.size(); ++i) result.depth.data()[i] = static_cast<float>(x[i]);
    result.seconds = clock.seconds();
    return result;
}

template <class D>
xt::xtensor<double, 2> depth_values(const xt::xexpression<D>& depth, std::string_view where) {
    static_assert(static_rank<D> == 2, "nonlocal: depth maps are [H, W]");
    xt::xtensor<double, 2> d = xt::cast<double>(depth.derived_cast());
    require(d.size() > 0, where, [&] { return "the depth map is empty: " + shape_string(d.shape()); });
    return d;
}

inline void require_same_size(std::string_view where, const xt::xtensor<double, 2>& depth, std::size_t H, std::size_t W) {
    require(depth.shape(0) == H && depth.shape(1) == W, where, [&] {
        return "depth " + shape_string(depth.shape()) + " and guide " + std::to_string(H) + " x " + std::to_string(W) +
               " must have the same size";
    });
}

}  // namespace detail

/// Fills the missing pixels (0 or not finite) of `depth` [H, W] guided by `guide`
/// [H, W] or [H, W, C]: the AR model with alpha = lambda on the valid pixels.
/// Throws `std::invalid_argument` when sizes differ or no pixel is valid.
template <class D, class G>
depth_result fill_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide, const depth_options& o = {}) {
    const detail::stopwatch clock;
    const auto d = detail::depth_values(depth, "fill_depth");
    const auto g = detail::to_pixel_rows<double>(guide, "fill_depth", "guide");
    detail::require_same_size("fill_depth", d, g.height, g.width);
    xt::xtensor<double, 2> alpha = xt::zeros<double>(d.shape()), xhat = xt::zeros<double>(d.shape());
    for (std::size_t i = 0; i < d.size(); ++i)
        if (detail::valid_depth(d.data()[i])) alpha.data()[i] = o.lambda, xhat.data()[i] = d.data()[i];
    return detail::refine(g, xhat, alpha, o, clock);
}

/// Denoises `depth` (and fills its holes): `fill_depth` with a weaker data term
/// (lambda = 0.2 by default), so the colour-guided smoothness averages the noise.
template <class D, class G>
depth_result denoise_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide,
                           depth_options o = {.lambda = 0.2}) {
    return fill_depth(depth, guide, o);
}

/// Upsamples `low` [h, w] by `factor` onto the grid of `guide` [H, W(, C)]: pixel
/// (r, c) of `low` is observed at (factor r, factor c); H and W must lie in
/// [factor (h - 1) + 1, factor h] and likewise for W.
template <class D, class G>
depth_result upsample_depth(const xt::xexpression<D>& low, const xt::xexpression<G>& guide, std::size_t factor,
                            const depth_options& o = {}) {
    const detail::stopwatch clock;
    const auto d = detail::depth_values(low, "upsample_depth");
    const auto g = detail::to_pixel_rows<double>(guide, "upsample_depth", "guide");
    const std::size_t h = d.shape(0), w = d.shape(1);
    detail::require(factor >= 1 && g.height > factor * (h - 1) && g.height <= factor * h && g.width > factor * (w - 1) &&
                        g.width <= factor * w,
                    "upsample_depth", [&] {
                        return "a " + std::to_string(h) + " x " + std::to_string(w) + " depth map upsampled by " +
                               std::to_string(factor) + " does not fit a " + std::to_string(g.height) + " x " +
                               std::to_string(g.width) + " guide";
                    });
    xt::xtensor<double, 2> alpha = xt::zeros<double>({g.height, g.width}), xhat = alpha;
    for (std::size_t r = 0; r < h; ++r)
        for (std::size_t c = 0; c < w; ++c)
            if (detail::valid_depth(d(r, c))) alpha(factor * r, factor * c) = o.lambda, xhat(factor * r, factor * c) = d(r, c);
    return detail::refine(g, xhat, alpha, o, clock);
}

}  // namespace nonlocal
