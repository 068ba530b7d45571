#pragma once
/// @file filter/depth.hpp
/// Colour-guided depth refinement with the linear AR model (`solve/ar_system.hpp`):
/// hole filling, denoising and guided upsampling. Invalid depth (0 or not
/// finite) is missing; nothing is quantised. Each task compares the guide's
/// colours in luma and chroma (`colour_space`), builds the system, solves it by
/// conjugate gradients preconditioned by multigrid from full multigrid's
/// approximation, sharpens the depth edges with a median
/// (`depth_options::median_scale`), and returns the depth with the solver's report.
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
/// - `depth_model::separable`: the normalised model with K replaced by the fast global
///   smoother's separable approximation (`separable_smooth`: direct line solves along each
///   stencil direction, a few passes), K_s(m d) / K_s(m). No iterative solve and no
///   multigrid: on the Aloe protocols 2.5 to 5.5 times faster than the normalised model, as
///   accurate at x4, 2.5 and 5 % less at x8 and x16; in hole filling 2 % more without a depth
///   pass, 3 % less with the one `fill_options()` runs.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/filter/median.hpp"
#include "nonlocal/similarity/distance.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/solve/line_solves.hpp"
#include "nonlocal/solve/solvers.hpp"

namespace nonlocal {

/// Solvers for the depth tasks: CG preconditioned by a multigrid V-cycle, V-cycles alone,
/// CG preconditioned by the diagonal, Jacobi or SOR. The two multigrid solvers start from
/// full multigrid's approximation (`multigrid::full`, counted as one iteration), the others
/// from a normalised box interpolation of the observations; the normalised model's second
/// solve, K(m d), starts from that interpolation times K(m) for every solver.
enum class depth_solver { pcg_multigrid, multigrid, pcg_jacobi, jacobi, sor };

/// The estimator built on the AR system (see the file's comment).
enum class depth_model { normalised, ar, separable };

/// The colour weight of an edge: exp(-|g_i - g_j|_1 / sigma_r) (`laplacian_distance`)
/// or exp(-|g_i - g_j|^2 / (2 sigma_r^2)) (`gaussian_distance` of bandwidth sigma_r sqrt 2),
/// g the guide's pixels in `depth_options::space`.
enum class colour_kernel { laplacian, gaussian };

/// The channels colours are compared in: luma and chroma (a 3-channel guide, taken as
/// RGB, becomes Y, c Cb, c Cr of ITU-R BT.601, c = `depth_options::chroma_weight`; guides
/// of other channel counts are compared as they are), or the guide's own channels.
/// Shading and highlights change a surface's luma more than its chroma, and two
/// surfaces often differ in chroma where their luma is alike: on the Aloe protocols
/// comparing in luma-chroma lowers the error of every task (x4 2.94 -> 2.82, hole
/// filling 1.67 -> 1.56).
enum class colour_space { luma_chroma, guide };

/// Parameters of the depth tasks.
struct depth_options {
    depth_model model = depth_model::normalised;
    int connectivity = 8;                                          ///< 4 (diamond) or 8 (square) neighbours
    std::size_t radius = 1;                                        ///< of the stencil (1: 4 or 8 neighbours)
    colour_kernel colour = colour_kernel::laplacian;
    colour_space space = colour_space::luma_chroma;
    double chroma_weight = 1.5;                                    ///< luma_chroma: of Cb and Cr against Y
    /// Colour bandwidth, in the units of the compared channels on the 8-bit scale: luma
    /// (0..255) in luma_chroma; for RGB compared as it is (colour_space::guide), about 3.
    /// Integer guides wider than 8 bits are brought to that scale (uint16: values / 257),
    /// so one setting suits 8- and 16-bit images of a scene; float guides are compared as
    /// they are (scale sigma_r with them if they are not on 0..255).
    double sigma_r = 1.5;
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
    /// Windows of the median whose depths span at most this fraction of the observed depth
    /// range keep their value (their median lies within that span of it); the median is there
    /// for depth steps, and skipping smooth windows saves most of its cost. 0: the exact median.
    double median_flatness = 0.01;
    /// Adaptive weights (after Yang et al. 2014): re-solves whose edge weights are the colour
    /// weights times the colour kernel of the last result's depth difference, with bandwidth
    /// sigma_d (sigma_r for the depth, in depth units). Each pass costs what the first solve does.
    /// 0 here; `fill_options()` and `denoise_options()`, the defaults of hole filling and
    /// denoising, run one.
    std::size_t depth_passes = 0;
    double sigma_d = 0;                                            ///< 0: 2 % of the observed depth's range
    /// Upsampling by an even factor above this (at least 2) goes coarse to fine: by half the
    /// factor onto the guide at half resolution, then by 2 (see `upsample_depth`).
    std::size_t stage_factor = 8;
    /// separable: passes of line solves along every stencil direction (`separable_smooth`).
    std::size_t separable_passes = 2;
    /// separable: FGS's lambda over eps, per pixel of the observations' spacing (1 / sqrt(observed
    /// fraction)): the 1-D kernels reach less far than the 2-D one of the same eps, the more so
    /// the sparser the observations. On the Aloe protocols the best constant strengths are about
    /// 0.6 for hole filling (spacing 1.3), 2 at x4 and 4 to 5 at x8: half the spacing each.
    double separable_strength = 0.5;
    depth_solver solver = depth_solver::pcg_multigrid;   ///< of the normalised and AR models
    int threads = 1;                                               ///< of the solver's passes over the pixels
    bool single_precision = true;                                  ///< solve in float (half the memory traffic) or double
    solve_options solve{1e-4, 500};
    /// Of the multigrid solvers. Two sweeps on the coarser levels instead of four: on Aloe the
    /// normalised model takes the same MG-PCG iterations either way (x4 / x8 / x16 / holes:
    /// 10 / 15 / 18 / 5) for less work per cycle; the AR model takes 6 / 5 / 12 / 4 instead of
    /// 4 / 4 / 8 / 4, about as fast at x4, x8 and in hole filling, about 25 % slower at x16.
    multigrid_options multigrid{.coarse_smoothing_steps = 2};

    /// The radius of the edge-sharpening median for observations covering
    /// `observed_fraction` of the pixels: round(median_scale / sqrt(observed_fraction)),
    /// at most median_max_radius (0: no median).
    std::size_t median_radius(double observed_fraction) const {
        const double radius = std::round(median_scale / std::sqrt(observed_fraction));
        return radius < double(median_max_radius) ? std::size_t(radius) : median_max_radius;
    }
};

/// A refined depth map and how its solve went; `seconds` counts everything
/// (weights, starts, solver set-up, solve and median), the report the solves alone.
struct depth_result {
    xt::xtensor<float, 2> depth;
    solve_report report;
    double seconds = 0;
};

namespace detail {

/// Both tests evaluated (`&`, not `&&`): no branch where missing pixels lie at random.
inline bool valid_depth(double d) { return std::isfinite(d) & (d > 0); }

/// Two solves reported as one: iterations and seconds add up, the larger residual, converged when both did.
inline solve_report one_report(std::string method, const solve_report& first, const solve_report& second) {
    return {std::move(method), first.iterations + second.iterations,
            std::max(first.relative_residual, second.relative_residual), first.converged && second.converged,
            first.seconds + second.seconds};
}

/// The observed depth on the guide's grid: `depth[i]` where `observed[i]`, 0 elsewhere.
/// Each pixel is observed at most once.
struct observed_depth {
    std::size_t height = 0, width = 0;
    buffer<double> depth;
    buffer<std::uint8_t> observed;
    std::size_t count = 0;   ///< of observed pixels
    double lowest = std::numeric_limits<double>::infinity(), highest = -lowest;   ///< of the observed depths

    observed_depth(std::size_t h, std::size_t w) : height(h), width(w), depth(h * w, 0.0), observed(h * w, 0) {}
    /// Pixel i's depth d, observed when valid. Branch-free, since missing pixels are often
    /// scattered at random.
    void observe(std::size_t i, double d) {
        constexpr double infinity = std::numeric_limits<double>::infinity();
        const bool valid = valid_depth(d);
        count += valid, observed[i] = valid, depth[i] = valid ? d : 0.0;
        lowest = std::min(lowest, valid ? d : infinity), highest = std::max(highest, valid ? d : -infinity);
    }
    /// Observes every pixel, `values` holding height x width depths.
    template <class V>
    void observe_all(const V* values) {
        for (std::size_t i = 0; i < depth.size(); ++i) observe(i, double(values[i]));
    }
    double fraction() const { return double(count) / double(height * width); }
    /// The largest observed depth less the smallest (0 when nothing is observed).
    double range() const { return count > 0 ? highest - lowest : 0.0; }
};

/// The guide's planes in T on the 8-bit scale of `depth_options::sigma_r`: integer guides
/// wider than 8 bits scaled by 255 / their type's largest value (uint16: 1 / 257), other
/// guides as they are. `std::invalid_argument` (from `where`) as `to_planes` throws.
template <class T, class G>
image_planes<T> guide_planes(const xt::xexpression<G>& guide, std::string_view where) {
    using Pixel = value_type_of<G>;
    image_planes<T> planes = to_planes<T>(guide, where, "guide");
    if constexpr (std::is_integral_v<Pixel> && (std::numeric_limits<Pixel>::max() > 255)) {
        const T scale = T(255.0 / double(std::numeric_limits<Pixel>::max()));
        for (T& v : planes.values) v *= scale;
    }
    return planes;
}

/// The planes to compare colours in (`colour_space`): a 3-channel guide as Y, c Cb, c Cr
/// (ITU-R BT.601: Cb = 0.564 (B - Y), Cr = 0.713 (R - Y)) for luma_chroma, else as it is.
template <class T>
image_planes<T> compared_channels(image_planes<T> g, const depth_options& o) {
    if (o.space != colour_space::luma_chroma || g.channels != 3) return g;
    T *first = g.channel(0), *second = g.channel(1), *third = g.channel(2);   // R, G, B in; Y, c Cb, c Cr out
    const T cb = T(0.564 * o.chroma_weight), cr = T(0.713 * o.chroma_weight);
    for (std::size_t i = 0; i < g.pixels(); ++i) {
        const T red = first[i], green = second[i], blue = third[i];
        const T y = T(0.299) * red + T(0.587) * green + T(0.114) * blue;
        first[i] = y, second[i] = cb * (blue - y), third[i] = cr * (red - y);
    }
    return g;
}

/// The guide at half resolution: pixel (r, c) is the mean of the 3 x 3 box around
/// (2r, 2c) (its part inside the image), the position `upsample_depth` by 2 observes.
/// Each output row sums its 3 (or 2) input rows per column, in double, then 3 (or 2) of
/// those sums per output pixel.
template <class T>
image_planes<T> half_resolution(const image_planes<T>& g) {
    image_planes<T> h{(g.height + 1) / 2, (g.width + 1) / 2, g.channels, {}};
    h.values.resize(h.pixels() * h.channels);
    std::vector<double> column_sums(g.width);
    for (std::size_t k = 0; k < g.channels; ++k)
        for (std::size_t r = 0; r < h.height; ++r) {
            const std::size_t r0 = 2 * r > 0 ? 2 * r - 1 : 0, r1 = std::min(g.height, 2 * r + 2);
            const T* first = g.channel(k) + r0 * g.width;
            for (std::size_t c = 0; c < g.width; ++c) column_sums[c] = double(first[c]);
            for (std::size_t rr = r0 + 1; rr < r1; ++rr)
                for (std::size_t c = 0; c < g.width; ++c) column_sums[c] += double(g.channel(k)[rr * g.width + c]);
            T* out = h.channel(k) + r * h.width;
            for (std::size_t c = 0; c < h.width; ++c) {
                const std::size_t c0 = 2 * c > 0 ? 2 * c - 1 : 0, c1 = std::min(g.width, 2 * c + 2);
                double sum = 0;
                for (std::size_t cc = c0; cc < c1; ++cc) sum += column_sums[cc];
                out[c] = T(sum / double((r1 - r0) * (c1 - c0)));
            }
        }
    return h;
}

/// x0 = box(alpha xhat) / box(alpha), the box growing until it covers an observation:
/// a cheap normalised interpolation from integral images, of `alpha` and
/// `rhs` = alpha xhat on an H x W grid, evaluated at any pixel. Whether a box covers an
/// observation is decided by an exact count (a sum of alphas can leave a rounding residue
/// instead of 0).
class box_interpolation {
public:
    template <class Alpha, class Rhs>
    box_interpolation(std::size_t H, std::size_t W, const Alpha* alpha, const Rhs* rhs)
        : height(H), width(W), stride(W + 1), sw((H + 1) * stride, 0.0), swx((H + 1) * stride, 0.0),
          count((H + 1) * stride, 0) {
        // Each row's running sums plus the row above's integral: one dependent add per pixel
        // and sum, where adding the left and upper integrals and subtracting the corner chains three.
        for (std::size_t r = 0; r < H; ++r) {
            double row_w = 0, row_wx = 0;
            std::uint32_t row_count = 0;
            for (std::size_t c = 0; c < W; ++c) {
                const std::size_t i = (r + 1) * stride + c + 1, k = r * W + c;
                row_w += double(alpha[k]), row_wx += double(rhs[k]), row_count += std::uint32_t(alpha[k] > 0);
                sw[i] = sw[i - stride] + row_w, swx[i] = swx[i - stride] + row_wx, count[i] = count[i - stride] + row_count;
            }
        }
    }
    /// x0 at pixel (r, c); the grid must hold an observation.
    double operator()(std::size_t r, std::size_t c) const {
        for (std::size_t radius = 2;; radius *= 2) {
            const std::size_t r0 = r > radius ? r - radius : 0, c0 = c > radius ? c - radius : 0;
            const std::size_t r1 = std::min(height, r + radius + 1), c1 = std::min(width, c + radius + 1);
            if (box(count, r0, c0, r1, c1) > 0) return box(swx, r0, c0, r1, c1) / box(sw, r0, c0, r1, c1);
        }
    }

private:
    std::size_t height, width, stride;
    buffer<double> sw, swx;
    buffer<std::uint32_t> count;

    template <class S>
    typename S::value_type box(const S& s, std::size_t r0, std::size_t c0, std::size_t r1, std::size_t c1) const {
        return s[r1 * stride + c1] - s[r0 * stride + c1] - s[r1 * stride + c0] + s[r0 * stride + c0];
    }
};

/// `box_interpolation` at every pixel.
template <class T>
buffer<double> normalised_interpolation(std::size_t H, std::size_t W, const T* alpha, const T* rhs) {
    const box_interpolation x0(H, W, alpha, rhs);
    buffer<double> x(H * W);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) x[r * W + c] = x0(r, c);
    return x;
}
/// The box interpolation of the observed depth: alpha the mask, alpha xhat the depth (0 where unobserved).
inline box_interpolation observed_interpolation(const observed_depth& d) {
    return box_interpolation(d.height, d.width, d.observed.data(), d.depth.data());
}
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

/// Builds and solves the system of the observations `d` on the guide `g` in precision T;
/// `clock` started when the task did.
template <class T>
depth_result refine(const image_planes<T>& g, const observed_depth& d, const depth_options& o, const stopwatch& clock) {
    const std::size_t n = g.pixels();
    const double fraction = d.fraction();
    const bool multilevel = o.solver == depth_solver::pcg_multigrid || o.solver == depth_solver::multigrid;
    const auto hierarchy = [&](const ar_system<T>& A) {
        return multilevel ? std::make_unique<multigrid<T>>(A, o.multigrid) : nullptr;
    };
    // The normalised and separable models' data term on every pixel: the kernel's reach
    // follows the observations' spacing.
    const double eps = o.epsilon_scale * fraction;
    depth_result result;
    buffer<double> x;
    if (o.model == depth_model::ar) {
        buffer<T> alpha(n), b(n);
        for (std::size_t i = 0; i < n; ++i) alpha[i] = T(o.lambda * d.observed[i]), b[i] = T(o.lambda * d.observed[i] * d.depth[i]);
        const ar_system<T> A = depth_system<T>(g, std::move(alpha), std::move(b), o);
        const auto M = hierarchy(A);
        buffer<T> solution(n, T(0));
        if (!multilevel) {
            const buffer<double> x0 = normalised_interpolation(A);
            std::copy(x0.begin(), x0.end(), solution.begin());
        }
        result.report = solve(A, A.rhs, solution, o, M.get(), true);
        x.assign(solution.begin(), solution.end());
    } else if (o.model == depth_model::separable) {
        // K_s(m) and K_s(m d) of the system with alpha = eps everywhere, side by side.
        buffer<T> km(n), kd(n);
        for (std::size_t i = 0; i < n; ++i) km[i] = T(d.observed[i]), kd[i] = T(d.observed[i] * d.depth[i]);
        const ar_system<T> A = depth_system<T>(g, buffer<T>(n, T(eps)), buffer<T>(n, T(0)), o);   // b unused
        const stopwatch solve_clock;
        const std::array<std::span<T>, 2> smoothed{std::span<T>(km), std::span<T>(kd)};
        const separable_options passes{o.separable_passes, o.separable_strength / std::sqrt(fraction)};
        separable_smooth(A, std::span<const std::span<T>>(smoothed), passes);
        result.report = {"separable, " + std::to_string(passes.passes) + " passes of line solves", passes.passes, 0.0,
                         true, solve_clock.seconds()};
        // K_s's entries are positive, so K_s(m d) / K_s(m) is a weighted mean of the observed
        // depths, unless K_s(m) underflows far from every observation (in holes a few hundred
        // pixels across); the box interpolation takes over there (set up only if some pixel needs it).
        x.resize(n);
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
    } else {
        // K(m d) and K(m): one system with alpha = eps everywhere, b = eps m d and eps m.
        buffer<T> b_mask(n), b_depth(n);
        for (std::size_t i = 0; i < n; ++i) b_mask[i] = T(eps * d.observed[i]), b_depth[i] = T(eps * d.observed[i] * d.depth[i]);
        // x0 = the normalised box interpolation of m d (eps cancels).
        const buffer<double> x0 = normalised_interpolation(g.height, g.width, b_mask.data(), b_depth.data());
        const ar_system<T> A = depth_system<T>(g, buffer<T>(n, T(eps)), std::move(b_depth), o);
        const auto M = hierarchy(A);
        // K(m) first (from the observed fraction, for the solvers that need a start); then
        // K(m d) from x0 K(m), exact where the depth is constant.
        buffer<T> km(n, T(fraction)), kd(n);
        const solve_report rm = solve(A, b_mask, km, o, M.get(), true);
        for (std::size_t i = 0; i < n; ++i) kd[i] = T(x0[i] * km[i]);
        const solve_report rd = solve(A, A.rhs, kd, o, M.get(), false);
        result.report = one_report("normalised " + rm.method, rm, rd);
        // Where K(m) is tiny (no observation well connected) x0 takes over; delta is far above
        // the solves' error and far below K(m) near observations (about `fraction`). K(m) and
        // K(m d) are not negative (K's entries are not, d > 0); an approximate solve's are
        // taken as 0 where they are.
        const double delta = 1e-3 * fraction;
        x.resize(n);
        for (std::size_t i = 0; i < n; ++i)
            x[i] = (std::max(double(kd[i]), 0.0) + delta * x0[i]) / (std::max(double(km[i]), 0.0) + delta);
    }
    result.depth = xt::empty<float>({g.height, g.width});
    for (std::size_t i = 0; i < x.size(); ++i) result.depth.data()[i] = static_cast<float>(x[i]);
    if (const std::size_t radius = o.median_radius(fraction); radius > 0)
        median_filter<default_arch>(result.depth.data(), g.height, g.width, radius, result.depth.data(), o.threads,
                                    float(o.median_flatness * d.range()));
    result.seconds = clock.seconds();
    return result;
}

/// The guide with `depth` x `scale` as one more channel: with scale = sigma_r / sigma_d,
/// either colour kernel's weight becomes the colour weight times the same kernel of the
/// depth difference with bandwidth sigma_d.
template <class T>
image_planes<T> with_depth_channel(const image_planes<T>& g, const xt::xtensor<float, 2>& depth, double scale) {
    image_planes<T> joint{g.height, g.width, g.channels + 1, {}};
    joint.values.resize(joint.pixels() * joint.channels);
    std::copy(g.values.begin(), g.values.end(), joint.values.begin());
    T* last = joint.channel(g.channels);
    for (std::size_t i = 0; i < g.pixels(); ++i) last[i] = T(double(depth.data()[i]) * scale);
    return joint;
}

/// `o.sigma_d`, or when it is 0, 2 % of the observed depth's range (0 if the observed depth is constant).
inline double depth_bandwidth(const observed_depth& d, const depth_options& o) {
    return o.sigma_d > 0 ? o.sigma_d : 0.02 * d.range();
}

/// Throws `std::invalid_argument` (from `where`) unless the options are valid.
inline void check_options(const depth_options& o, std::string_view where) {
    require(std::isfinite(o.epsilon_scale) && o.epsilon_scale > 0 && std::isfinite(o.lambda) && o.lambda > 0 &&
                std::isfinite(o.median_scale) && o.median_scale >= 0 && std::isfinite(o.sigma_d) && o.sigma_d >= 0 &&
                std::isfinite(o.chroma_weight) && o.chroma_weight >= 0 && std::isfinite(o.median_flatness) &&
                o.median_flatness >= 0 && std::isfinite(o.min_weight) && o.min_weight >= 0 && o.stage_factor >= 2 &&
                o.separable_passes >= 1 && std::isfinite(o.separable_strength) && o.separable_strength > 0 &&
                o.solve.tolerance >= 0 && o.threads >= 1,
            where, [&] {
                return "needs finite epsilon_scale > 0, finite lambda > 0, finite median_scale >= 0, finite sigma_d >= 0, "
                       "finite chroma_weight >= 0, finite median_flatness >= 0, finite min_weight >= 0, stage_factor >= 2, "
                       "separable_passes >= 1, finite separable_strength > 0, solve.tolerance >= 0 and threads >= 1, "
                       "got epsilon_scale = " +
                       std::to_string(o.epsilon_scale) + ", lambda = " + std::to_string(o.lambda) +
                       ", median_scale = " + std::to_string(o.median_scale) + ", sigma_d = " + std::to_string(o.sigma_d) +
                       ", chroma_weight = " + std::to_string(o.chroma_weight) +
                       ", median_flatness = " + std::to_string(o.median_flatness) +
                       ", min_weight = " + std::to_string(o.min_weight) + ", stage_factor = " + std::to_string(o.stage_factor) +
                       ", separable_passes = " + std::to_string(o.separable_passes) +
                       ", separable_strength = " + std::to_string(o.separable_strength) +
                       ", solve.tolerance = " + std::to_string(o.solve.tolerance) + ", threads = " + std::to_string(o.threads);
            });
}

/// The task in precision T: the model, then each depth pass on the guide with the last
/// result as one more channel. Throws (from `where`) when nothing is observed.
template <class T>
depth_result refine_with_passes(const image_planes<T>& g, const observed_depth& d, const depth_options& o,
                                std::string_view where, const stopwatch& clock) {
    require(d.count > 0, where, [] { return std::string("nothing is observed: no pixel has a valid depth"); });
    // The result is float, whatever the solve's precision.
    require(d.highest <= double(std::numeric_limits<float>::max()), where, [&] {
        const std::size_t i = std::size_t(std::find(d.depth.begin(), d.depth.end(), d.highest) - d.depth.begin());
        return "the depth " + std::to_string(d.highest) + " at pixel (" + std::to_string(i / d.width) + ", " +
               std::to_string(i % d.width) + ") is beyond the range of float, the result's type";
    });
    depth_result result = refine<T>(g, d, o, clock);
    const double sigma_d = o.depth_passes > 0 ? depth_bandwidth(d, o) : 0;
    for (std::size_t pass = 0; pass < o.depth_passes && sigma_d > 0; ++pass) {
        depth_result next = refine<T>(with_depth_channel(g, result.depth, o.sigma_r / sigma_d), d, o, clock);
        next.report = one_report(next.report.method, result.report, next.report);
        result = std::move(next);
    }
    return result;
}

/// f.template operator()<T>() with T = float or double, as `o.single_precision` says.
template <class F>
depth_result in_precision(const depth_options& o, F&& f) {
    return o.single_precision ? f.template operator()<float>() : f.template operator()<double>();
}

/// A depth map [H, W] as contiguous values; `std::invalid_argument` (from `where`) when it is empty.
template <class D>
struct depth_values : contiguous<value_type_of<D>, 2> {
    static_assert(static_rank<D> == 2, "nonlocal: depth maps are [H, W]");
    static_assert(std::is_arithmetic_v<value_type_of<D>>, "nonlocal: depth maps hold numbers");
    depth_values(const xt::xexpression<D>& depth, std::string_view where) : contiguous<value_type_of<D>, 2>(depth) {
        require(this->shape(0) * this->shape(1) > 0, where,
                [&] { return "the depth map is empty: " + shape_string(this->shape()); });
    }
};

/// The height and width of a guide [H, W] or [H, W, C].
template <class G>
std::pair<std::size_t, std::size_t> guide_size(const xt::xexpression<G>& guide) {
    static_assert(static_rank<G> == 2 || static_rank<G> == 3, "nonlocal: images are [H, W] or [H, W, C]");
    const auto& shape = guide.derived_cast().shape();
    return {std::size_t(shape[0]), std::size_t(shape[1])};
}

}  // namespace detail

/// The defaults of `fill_depth`: `depth_options` with one depth pass, whose weights also
/// follow the first result's depth. On Aloe's hole-filling protocol it lowers the normalised
/// model's error from 1.56 to 1.44 (and 1.43 to 1.29 without the noise) for about 1.6 times
/// the time; with 80 % of the pixels missing it changes the error by less than 1 %.
inline depth_options fill_options() { return {.depth_passes = 1}; }

/// Fills the missing pixels (0 or not finite) of `depth` [H, W] guided by `guide`
/// [H, W] or [H, W, C], with the valid pixels as the observations of `o.model`
/// (the normalised model by default; the AR model with alpha = lambda on them), with
/// `fill_options()` by default.
/// Throws `std::invalid_argument` when sizes differ, no pixel is valid, a depth is beyond
/// float's range (the result's type), the guide holds NaN or infinity, or an option is
/// out of its range.
template <class D, class G>
depth_result fill_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide, const depth_options& o = fill_options(),
                        std::string_view where = "fill_depth") {
    const detail::stopwatch clock;
    detail::check_options(o, where);
    const detail::depth_values<D> d(depth, where);
    const auto [H, W] = detail::guide_size(guide);
    detail::require(d.shape(0) == H && d.shape(1) == W, where, [&, H = H, W = W] {
        return "depth " + detail::shape_string(d.shape()) + " and guide " + std::to_string(H) + " x " + std::to_string(W) +
               " must have the same size";
    });
    detail::observed_depth observed(H, W);
    observed.observe_all(d.data());
    return detail::in_precision(o, [&]<class T>() {
        return detail::refine_with_passes<T>(detail::compared_channels(detail::guide_planes<T>(guide, where), o),
                                             observed, o, where, clock);
    });
}

/// The defaults of `denoise_depth`: `fill_options()` with more smoothing (the normalised
/// model's kernel reaching twice as many observations, epsilon_scale = 0.25; the AR
/// model's data term weaker, lambda = 0.2), so the colour-guided smoothness averages the
/// noise. Its depth pass lowers the error on Aloe's hole-filling protocol from 1.62 to 1.43.
inline depth_options denoise_options() {
    depth_options o = fill_options();
    o.epsilon_scale = 0.25, o.lambda = 0.2;
    return o;
}

/// Denoises `depth` (and fills its holes): `fill_depth` with `denoise_options()` by default.
template <class D, class G>
depth_result denoise_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide,
                           depth_options o = denoise_options()) {
    return fill_depth(depth, guide, o, "denoise_depth");
}

namespace detail {
/// `upsample_depth` once the sizes are checked: coarse to fine while the factor is
/// even and above `o.stage_factor`.
template <class T>
depth_result upsample(const xt::xtensor<double, 2>& low, const image_planes<T>& g, std::size_t factor,
                      const depth_options& o, const stopwatch& clock) {
    if (factor > o.stage_factor && factor % 2 == 0) {
        const depth_result coarse = upsample(low, half_resolution(g), factor / 2, o, clock);
        depth_result fine = upsample(xt::xtensor<double, 2>(xt::cast<double>(coarse.depth)), g, 2, o, clock);
        fine.report = one_report("coarse to fine, " + fine.report.method, coarse.report, fine.report);
        return fine;
    }
    observed_depth observed(g.height, g.width);
    for (std::size_t r = 0; r < low.shape(0); ++r)
        for (std::size_t c = 0; c < low.shape(1); ++c) observed.observe(factor * r * g.width + factor * c, low(r, c));
    return refine_with_passes<T>(g, observed, o, "upsample_depth", clock);
}
}  // namespace detail

/// Upsamples `low` [h, w] by `factor` onto the grid of `guide` [H, W(, C)]: pixel
/// (r, c) of `low` is observed at (factor r, factor c); H and W must lie in
/// [factor (h - 1) + 1, factor h] and likewise for W. An even factor above
/// `o.stage_factor` (8 by default) goes coarse to fine, which converges in fewer
/// iterations: by factor / 2 onto the guide at half resolution (3 x 3 box means at
/// the even pixels), then by 2 from that result, recursively. Throws
/// `std::invalid_argument` as `fill_depth` does, or when the sizes do not fit.
template <class D, class G>
depth_result upsample_depth(const xt::xexpression<D>& low, const xt::xexpression<G>& guide, std::size_t factor,
                            const depth_options& o = {}) {
    const detail::stopwatch clock;
    detail::check_options(o, "upsample_depth");
    const detail::depth_values<D> d(low, "upsample_depth");
    const auto [H, W] = detail::guide_size(guide);
    const std::size_t h = d.shape(0), w = d.shape(1);
    detail::require(factor >= 1 && H > factor * (h - 1) && H <= factor * h && W > factor * (w - 1) && W <= factor * w,
                    "upsample_depth", [&, H = H, W = W] {
                        return "a " + std::to_string(h) + " x " + std::to_string(w) + " depth map upsampled by " +
                               std::to_string(factor) + " does not fit a " + std::to_string(H) + " x " +
                               std::to_string(W) + " guide";
                    });
    xt::xtensor<double, 2> values = xt::empty<double>({h, w});
    std::copy(d.data(), d.data() + h * w, values.begin());
    return detail::in_precision(o, [&]<class T>() {
        return detail::upsample<T>(values, detail::compared_channels(detail::guide_planes<T>(guide, "upsample_depth"), o),
                                   factor, o, clock);
    });
}

}  // namespace nonlocal
