#pragma once
/// @file filter/depth.hpp
/// Colour-guided depth refinement with the linear AR model (`solve/ar_system.hpp`):
/// hole filling, denoising and guided upsampling. Invalid depth (0 or not
/// finite) is missing; nothing is quantised. Each task builds the system, warm
/// starts from a normalised interpolation of the observations, solves, sharpens
/// the depth edges with a median (`depth_options::median_scale`), and returns the
/// depth with the solver's report.
///
/// Two estimators share the system's edge weights W:
/// - `depth_model::normalised` (the default): with L the Laplacian of W, m the
///   mask of observed pixels and d their depth, K = eps (L + eps I)^-1 is an
///   edge-aware smoothing kernel and the depth is K(m d) / K(m), a normalised
///   convolution (Knutsson and Westin 1993) whose kernel follows the colour
///   edges: each pixel averages the observations it is well connected to. Two
///   solves of one AR system (alpha = eps on every pixel) that share a
///   multigrid hierarchy. eps = `epsilon_scale` x the observed fraction keeps
///   the kernel's reach proportional to the spacing of the observations.
/// - `depth_model::ar`: the AR model's minimiser itself, alpha = lambda on the
///   observed pixels: a harmonic interpolation between them.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/filter/image.hpp"
#include "nonlocal/filter/median.hpp"
#include "nonlocal/similarity/distance.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/solve/solvers.hpp"

namespace nonlocal {

/// Solvers for the depth tasks.
enum class depth_solver { pcg_multigrid, multigrid, pcg_jacobi, jacobi, sor };

/// The estimator built on the AR system (see the file's comment).
enum class depth_model { normalised, ar };

/// The colour weight of an edge: exp(-|g_i - g_j|_1 / sigma_r) (`laplacian_distance`)
/// or exp(-|g_i - g_j|^2 / (2 sigma_r^2)) (`colour_weights`).
enum class colour_kernel { laplacian, gaussian };

/// Parameters of the depth tasks.
struct depth_options {
    depth_model model = depth_model::normalised;
    int connectivity = 8;                                          ///< 4 (diamond) or 8 (square) neighbours
    std::size_t radius = 1;                                        ///< of the stencil (1: 4 or 8 neighbours)
    colour_kernel colour = colour_kernel::laplacian;
    double sigma_r = 3.0;                                          ///< colour bandwidth, in guide units (0..255 for 8-bit)
    double sigma_s = std::numeric_limits<double>::infinity();      ///< spatial Gaussian (infinite: none)
    double epsilon_scale = 0.5;                                    ///< normalised: eps = this x observed fraction
    double lambda = 1.0;                                           ///< ar: alpha on observed pixels
    double min_weight = 1e-3;                                      ///< floor of the edge weights
    /// Edge sharpening: the result's median over a square window of radius
    /// round(median_scale x the observations' spacing), at most `median_max_radius`;
    /// the spacing is 1 / sqrt(observed fraction) pixels. 0 turns it off. Like any
    /// median it also removes structures thinner than about the radius (which the
    /// observations resolve poorly anyway) and rounds sharp corners.
    double median_scale = 0.75;
    std::size_t median_max_radius = 4;
    /// Adaptive weights (after Yang et al. 2014): re-solves whose edge weights are the colour
    /// weights times the colour kernel of the last result's depth difference, with bandwidth
    /// sigma_d (sigma_r for the depth, in depth units). Each pass costs what the first solve does.
    std::size_t depth_passes = 0;
    double sigma_d = 0;                                            ///< 0: 2 % of the observed depth's range
    /// Upsampling by an even factor above this goes coarse to fine: by half the factor
    /// onto the guide at half resolution, then by 2 (see `upsample_depth`).
    std::size_t stage_factor = 8;
    depth_solver solver = depth_solver::pcg_multigrid;
    int threads = 1;                                               ///< of the solver's passes over the pixels
    bool single_precision = true;                                  ///< solve in float (half the memory traffic) or double
    solve_options solve{1e-4, 500};
    multigrid_options multigrid{};                                 ///< of the solvers pcg_multigrid and multigrid

    /// The radius of the edge-sharpening median for observations covering
    /// `observed_fraction` of the pixels: round(median_scale / sqrt(observed_fraction)),
    /// at most median_max_radius (0: no median).
    std::size_t median_radius(double observed_fraction) const {
        const double radius = std::round(median_scale / std::sqrt(observed_fraction));
        return radius < double(median_max_radius) ? std::size_t(radius) : median_max_radius;
    }
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

/// Two solves reported as one: iterations and seconds add up, the larger residual, converged when both did.
inline solve_report one_report(std::string method, const solve_report& first, const solve_report& second) {
    return {std::move(method), first.iterations + second.iterations,
            std::max(first.relative_residual, second.relative_residual), first.converged && second.converged,
            first.seconds + second.seconds};
}

/// The guide at half resolution: pixel (r, c) is the mean of the 3 x 3 box around
/// (2r, 2c) (its part inside the image), the position `upsample_depth` by 2 observes.
inline pixel_rows<double> half_resolution(const pixel_rows<double>& g) {
    pixel_rows<double> h{(g.height + 1) / 2, (g.width + 1) / 2, g.channels, {}};
    h.pixels = xt::zeros<double>({h.height * h.width, g.channels});
    for (std::size_t r = 0; r < h.height; ++r)
        for (std::size_t c = 0; c < h.width; ++c) {
            const std::size_t r0 = 2 * r > 0 ? 2 * r - 1 : 0, r1 = std::min(g.height, 2 * r + 2);
            const std::size_t c0 = 2 * c > 0 ? 2 * c - 1 : 0, c1 = std::min(g.width, 2 * c + 2);
            double* out = &h.pixels(r * h.width + c, 0);
            for (std::size_t rr = r0; rr < r1; ++rr)
                for (std::size_t cc = c0; cc < c1; ++cc)
                    for (std::size_t k = 0; k < g.channels; ++k) out[k] += g.pixels(rr * g.width + cc, k);
            const double count = double((r1 - r0) * (c1 - c0));
            for (std::size_t k = 0; k < g.channels; ++k) out[k] /= count;
        }
    return h;
}

/// x0 = box(alpha xhat) / box(alpha), the box growing until it covers an observation:
/// a cheap normalised interpolation from integral images, of `alpha` and
/// `rhs` = alpha xhat on an H x W grid. Whether a box covers an observation is
/// decided by an exact count (a sum of alphas can leave a rounding residue instead of 0).
template <class T>
buffer<double> normalised_interpolation(std::size_t H, std::size_t W, const T* alpha, const T* rhs) {
    const std::size_t stride = W + 1;
    buffer<double> sw((H + 1) * stride, 0.0), swx((H + 1) * stride, 0.0);
    buffer<std::uint32_t> count((H + 1) * stride, 0);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            const std::size_t i = (r + 1) * stride + c + 1, k = r * W + c;
            sw[i] = alpha[k] + sw[i - 1] + sw[i - stride] - sw[i - stride - 1];
            swx[i] = rhs[k] + swx[i - 1] + swx[i - stride] - swx[i - stride - 1];
            count[i] = std::uint32_t(alpha[k] > 0) + count[i - 1] + count[i - stride] - count[i - stride - 1];
        }
    const auto box = [&](const auto& s, std::size_t r0, std::size_t c0, std::size_t r1, std::size_t c1) {
        return s[r1 * stride + c1] - s[r0 * stride + c1] - s[r1 * stride + c0] + s[r0 * stride + c0];
    };
    buffer<double> x(H * W);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c)
            for (std::size_t radius = 2;; radius *= 2) {
                const std::size_t r0 = r > radius ? r - radius : 0, c0 = c > radius ? c - radius : 0;
                const std::size_t r1 = std::min(H, r + radius + 1), c1 = std::min(W, c + radius + 1);
                if (box(count, r0, c0, r1, c1) > 0) {
                    x[r * W + c] = box(swx, r0, c0, r1, c1) / box(sw, r0, c0, r1, c1);
                    break;
                }
            }
    return x;
}
template <class T>
buffer<double> normalised_interpolation(const ar_system<T>& A) {
    return normalised_interpolation(A.height, A.width, A.alpha.data(), A.rhs.data());
}

/// Solves A x = b from x with the chosen solver (`M`: a multigrid of A, built when needed).
template <class T>
solve_report solve(const ar_system<T>& A, vector_in<T> b, vector_out<T> x, const depth_options& o,
                   std::unique_ptr<multigrid<T>>& M) {
    if ((o.solver == depth_solver::pcg_multigrid || o.solver == depth_solver::multigrid) && !M)
        M = std::make_unique<multigrid<T>>(A, o.multigrid);
    switch (o.solver) {
        case depth_solver::pcg_multigrid: return pcg(A, b, x, *M, o.solve);
        case depth_solver::multigrid: return multigrid_solve(A, b, x, *M, o.solve);
        case depth_solver::pcg_jacobi: return pcg(A, b, x, jacobi_preconditioner(A), o.solve);
        case depth_solver::jacobi: return jacobi(A, b, x, o.solve);
        case depth_solver::sor: return sor(A, b, x, 1.6, o.solve);
    }
    return {};
}

/// The AR system of the guide with the chosen colour kernel and stencil and the data
/// term alpha, b = alpha xhat, the spatial Gaussian applied per stencil direction.
template <class T>
ar_system<T> depth_system(const pixel_rows<double>& g, buffer<T> alpha, buffer<T> b, const depth_options& o) {
    const grid_stencil stencil{g.height, g.width, o.connectivity, o.radius};
    ar_system<T> A = o.colour == colour_kernel::laplacian
                         ? ar_system<T>(g, stencil, laplacian_distance(o.sigma_r), std::move(alpha), std::move(b),
                                        o.min_weight)
                         : ar_system<T>(g, stencil, colour_weights(g.height, g.width, g.channels, o.sigma_r),
                                        std::move(alpha), std::move(b), o.min_weight);
    A.threads = o.threads;
    if (std::isfinite(o.sigma_s)) {
        for (std::size_t d = 0; d < A.offsets.size(); ++d) {
            const double dy = double(A.offsets[d].dy), dx = double(A.offsets[d].dx);
            const double falloff = std::exp(-(dy * dy + dx * dx) / (2 * o.sigma_s * o.sigma_s));
            for (T& w : A.weights[d]) w = w == 0 ? T(0) : T(std::max(double(w) * falloff, o.min_weight));
        }
        A.update_diagonal();
    }
    return A;
}

/// Builds and solves the system for the observed pixels (`observed` 1, else 0, a
/// `fraction` of all) of `xhat` in precision T; `clock` started when the task did.
template <class T>
depth_result refine(const pixel_rows<double>& g, const xt::xtensor<double, 2>& xhat,
                    const xt::xtensor<double, 2>& observed, double fraction, const depth_options& o,
                    const stopwatch& clock) {
    const std::size_t n = g.height * g.width;
    const double* m = observed.data();
    const double* d = xhat.data();
    std::unique_ptr<multigrid<T>> M;
    depth_result result;
    buffer<double> x;
    if (o.model == depth_model::ar) {
        buffer<T> alpha(n), b(n);
        for (std::size_t i = 0; i < n; ++i) alpha[i] = T(o.lambda * m[i]), b[i] = T(o.lambda * m[i] * d[i]);
        const ar_system<T> A = depth_system<T>(g, std::move(alpha), std::move(b), o);
        const buffer<double> x0 = normalised_interpolation(A);
        buffer<T> solution(x0.begin(), x0.end());
        result.report = solve(A, A.rhs, solution, o, M);
        x.assign(solution.begin(), solution.end());
    } else {
        // K(m d) and K(m): one system with alpha = eps everywhere, b = eps m d and eps m.
        const double eps = o.epsilon_scale * fraction;
        buffer<T> b_mask(n), b_depth(n);
        for (std::size_t i = 0; i < n; ++i) b_mask[i] = T(eps * m[i]), b_depth[i] = T(eps * m[i] * d[i]);
        // x0 = the normalised box interpolation of m d (eps cancels).
        const buffer<double> x0 = normalised_interpolation(g.height, g.width, b_mask.data(), b_depth.data());
        const ar_system<T> A = depth_system<T>(g, buffer<T>(n, T(eps)), std::move(b_depth), o);
        // K(m) first; K(m d) from x0 K(m), exact where the depth is constant.
        buffer<T> km(n, T(fraction)), kd(n);
        const solve_report rm = solve(A, b_mask, km, o, M);
        for (std::size_t i = 0; i < n; ++i) kd[i] = T(x0[i] * km[i]);
        const solve_report rd = solve(A, A.rhs, kd, o, M);
        result.report = one_report("normalised " + rd.method, rm, rd);
        // Where K(m) is tiny (no observation well connected) x0 takes over; delta is far above
        // the solves' error and far below K(m) near observations (about `fraction`).
        const double delta = 1e-3 * fraction;
        x.resize(n);
        for (std::size_t i = 0; i < n; ++i) x[i] = (kd[i] + delta * x0[i]) / (km[i] + delta);
    }
    result.depth = xt::empty<float>({g.height, g.width});
    for (std::size_t i = 0; i < x.size(); ++i) result.depth.data()[i] = static_cast<float>(x[i]);
    if (const std::size_t radius = o.median_radius(fraction); radius > 0)
        median_filter<default_arch>(result.depth.data(), g.height, g.width, radius, result.depth.data(), o.threads);
    result.seconds = clock.seconds();
    return result;
}

/// The guide with `depth` x `scale` as one more channel: with scale = sigma_r / sigma_d,
/// either colour kernel's weight becomes the colour weight times the same kernel of the
/// depth difference with bandwidth sigma_d.
inline pixel_rows<double> with_depth_channel(const pixel_rows<double>& g, const xt::xtensor<float, 2>& depth,
                                             double scale) {
    pixel_rows<double> joint{g.height, g.width, g.channels + 1, {}};
    joint.pixels = xt::empty<double>({g.height * g.width, g.channels + 1});
    for (std::size_t i = 0; i < g.height * g.width; ++i) {
        for (std::size_t k = 0; k < g.channels; ++k) joint.pixels(i, k) = g.pixels(i, k);
        joint.pixels(i, g.channels) = double(depth.data()[i]) * scale;
    }
    return joint;
}

/// `o.sigma_d`, or when it is 0, 2 % of the observed depth's range (0 if the observed depth is constant).
inline double depth_bandwidth(const xt::xtensor<double, 2>& xhat, const xt::xtensor<double, 2>& observed,
                              const depth_options& o) {
    if (o.sigma_d > 0) return o.sigma_d;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (std::size_t i = 0; i < xhat.size(); ++i)
        if (observed.data()[i] > 0) lo = std::min(lo, xhat.data()[i]), hi = std::max(hi, xhat.data()[i]);
    return 0.02 * (hi - lo);
}

inline depth_result refine(const pixel_rows<double>& g, const xt::xtensor<double, 2>& xhat,
                           const xt::xtensor<double, 2>& observed, const depth_options& o, std::string_view where,
                           const stopwatch& clock) {
    const double fraction = xt::sum(observed)() / double(observed.size());
    require(fraction > 0, where, [] { return std::string("nothing is observed: no pixel has a valid depth"); });
    require(std::isfinite(o.epsilon_scale) && o.epsilon_scale > 0 && std::isfinite(o.lambda) && o.lambda > 0 &&
                std::isfinite(o.median_scale) && o.median_scale >= 0 && std::isfinite(o.sigma_d) && o.sigma_d >= 0 &&
                o.threads >= 1,
            where, [&] {
                return "needs finite epsilon_scale > 0, finite lambda > 0, finite median_scale >= 0, finite sigma_d >= 0 "
                       "and threads >= 1, got epsilon_scale = " +
                       std::to_string(o.epsilon_scale) + ", lambda = " + std::to_string(o.lambda) +
                       ", median_scale = " + std::to_string(o.median_scale) + ", sigma_d = " + std::to_string(o.sigma_d) +
                       ", threads = " + std::to_string(o.threads);
            });
    const auto model = [&](const pixel_rows<double>& guide) {
        return o.single_precision ? refine<float>(guide, xhat, observed, fraction, o, clock)
                                  : refine<double>(guide, xhat, observed, fraction, o, clock);
    };
    // The model, then each depth pass on the guide with the last result as one more channel.
    depth_result result = model(g);
    const double sigma_d = o.depth_passes > 0 ? depth_bandwidth(xhat, observed, o) : 0;
    for (std::size_t pass = 0; pass < o.depth_passes && sigma_d > 0; ++pass) {
        depth_result next = model(with_depth_channel(g, result.depth, o.sigma_r / sigma_d));
        next.report = one_report(next.report.method, result.report, next.report);
        result = std::move(next);
    }
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
/// [H, W] or [H, W, C], with the valid pixels as the observations of `o.model`
/// (the normalised model by default; the AR model with alpha = lambda on them).
/// Throws `std::invalid_argument` when sizes differ or no pixel is valid.
template <class D, class G>
depth_result fill_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide, const depth_options& o = {},
                        std::string_view where = "fill_depth") {
    const detail::stopwatch clock;
    const auto d = detail::depth_values(depth, where);
    const auto g = detail::to_pixel_rows<double>(guide, where, "guide");
    detail::require_same_size(where, d, g.height, g.width);
    xt::xtensor<double, 2> observed = xt::zeros<double>(d.shape()), xhat = xt::zeros<double>(d.shape());
    for (std::size_t i = 0; i < d.size(); ++i)
        if (detail::valid_depth(d.data()[i])) observed.data()[i] = 1, xhat.data()[i] = d.data()[i];
    return detail::refine(g, xhat, observed, o, where, clock);
}

/// Denoises `depth` (and fills its holes): `fill_depth` with more smoothing by
/// default (the normalised model's kernel reaching twice as many observations,
/// epsilon_scale = 0.25; the AR model's data term weaker, lambda = 0.2), so the
/// colour-guided smoothness averages the noise.
template <class D, class G>
depth_result denoise_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide,
                           depth_options o = {.epsilon_scale = 0.25, .lambda = 0.2}) {
    return fill_depth(depth, guide, o, "denoise_depth");
}

namespace detail {
/// `upsample_depth` once the sizes are checked: coarse to fine while the factor is
/// even and above `o.stage_factor`.
inline depth_result upsample(const xt::xtensor<double, 2>& d, const pixel_rows<double>& g, std::size_t factor,
                             const depth_options& o, const stopwatch& clock) {
    if (factor > o.stage_factor && factor % 2 == 0) {
        const depth_result coarse = upsample(d, half_resolution(g), factor / 2, o, clock);
        depth_result fine = upsample(xt::xtensor<double, 2>(xt::cast<double>(coarse.depth)), g, 2, o, clock);
        fine.report = one_report("coarse to fine, " + fine.report.method, coarse.report, fine.report);
        return fine;
    }
    const std::size_t h = d.shape(0), w = d.shape(1);
    xt::xtensor<double, 2> observed = xt::zeros<double>({g.height, g.width}), xhat = observed;
    for (std::size_t r = 0; r < h; ++r)
        for (std::size_t c = 0; c < w; ++c)
            if (valid_depth(d(r, c))) observed(factor * r, factor * c) = 1, xhat(factor * r, factor * c) = d(r, c);
    return refine(g, xhat, observed, o, "upsample_depth", clock);
}
}  // namespace detail

/// Upsamples `low` [h, w] by `factor` onto the grid of `guide` [H, W(, C)]: pixel
/// (r, c) of `low` is observed at (factor r, factor c); H and W must lie in
/// [factor (h - 1) + 1, factor h] and likewise for W. An even factor above
/// `o.stage_factor` (8 by default) goes coarse to fine, which converges in fewer
/// iterations: by factor / 2 onto the guide at half resolution (3 x 3 box means at
/// the even pixels), then by 2 from that result, recursively.
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
    return detail::upsample(d, g, factor, o, clock);
}

}  // namespace nonlocal
