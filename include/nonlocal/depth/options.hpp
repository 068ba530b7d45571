#pragma once
/// @file depth/options.hpp
/// The parameters of the depth tasks, their checks, and what a task returns.

#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/solve/multigrid.hpp"
#include "nonlocal/solve/solvers.hpp"

namespace nonlocal {

/// Solvers for the depth tasks: CG preconditioned by a multigrid V-cycle, V-cycles alone,
/// CG preconditioned by the diagonal, Jacobi or SOR. The two multigrid solvers start from
/// full multigrid's approximation (`multigrid::full`, counted as one iteration), the others
/// from a normalised box interpolation of the observations; the normalised model's second
/// solve, K(m d), starts from that interpolation times K(m) for every solver.
enum class depth_solver { pcg_multigrid, multigrid, pcg_jacobi, jacobi, sor };

/// The estimator built on the AR system (see the file's comment).
enum class depth_model {
    normalized,
    ar,
    separable,
    normalised [[deprecated("use depth_model::normalized")]] = normalized   ///< the name before 0.1.0, for one release
};

/// The colour weight of an edge: exp(-|g_i - g_j|_1 / sigma_r) (`laplacian_distance`)
/// or exp(-|g_i - g_j|^2 / (2 sigma_r^2)) (`gaussian_distance` of bandwidth sigma_r sqrt 2),
/// g the guide's pixels in `depth_options::space`.
enum class color_kernel { laplacian, gaussian };

/// The channels colours are compared in: luma and chroma (a 3-channel guide, taken as
/// RGB, becomes Y, c Cb, c Cr of ITU-R BT.601, c = `depth_options::chroma_weight`; guides
/// of other channel counts are compared as they are), or the guide's own channels.
/// Shading and highlights change a surface's luma more than its chroma, and two
/// surfaces often differ in chroma where their luma is alike: on the Aloe protocols
/// comparing in luma-chroma lowers the error of every task (x4 2.94 -> 2.82, hole
/// filling 1.67 -> 1.56).
enum class color_space { luma_chroma, guide };

/// The names before 0.1.0, kept for one release.
using colour_kernel [[deprecated("use nonlocal::color_kernel")]] = color_kernel;
using colour_space [[deprecated("use nonlocal::color_space")]] = color_space;

/// How holes beside a depth step are filled: blended from the observations around them as
/// the colours say (`blend`), or from the far side only, the side of the smaller values
/// (disparity) or of the larger ones (distance). Holes from occlusion, the part of the
/// scene a stereo pair's second camera or a structured-light projector cannot see, lie
/// beside the foreground and belong to the background; holes of a time-of-flight camera are
/// not occlusions (use `blend` there). See `depth/occlusion.hpp` for how the side is decided.
enum class occlusion_fill { blend, from_smaller, from_larger };

/// Parameters of the depth tasks.
struct depth_options {
    depth_model model = depth_model::normalized;
    int connectivity = 8;                                          ///< 4 (diamond) or 8 (square) neighbours
    std::size_t radius = 1;                                        ///< of the stencil (1: 4 or 8 neighbours)
    color_kernel color = color_kernel::laplacian;
    color_space space = color_space::luma_chroma;
    double chroma_weight = 1.5;                                    ///< luma_chroma: of Cb and Cr against Y
    /// Colour bandwidth, in the units of the compared channels on the 8-bit scale: luma
    /// (0..255) in luma_chroma; for RGB compared as it is (colour_space::guide), about 3.
    /// Integer guides wider than 8 bits are brought to that scale (uint16: values / 257),
    /// so one setting suits 8- and 16-bit images of a scene; float guides are compared as
    /// they are (scale sigma_r with them if they are not on 0..255).
    /// 0 (the default): chosen from the data. Upsampling takes the bandwidth whose result best
    /// predicts a quarter of the samples held out (`depth/hold_out.hpp`); hole filling and
    /// denoising take a quarter of the guide's contrast, the median colour difference of
    /// neighbouring pixels (1.6 on the Middlebury scene of the performance page, 4.5 to 4.8 on
    /// photographs of fur and fruit). `depth_result::sigma_r` says what was used.
    double sigma_r = 0;
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
    /// A depth step: neighbours whose depths differ by more than this (0: 5 % of the observed
    /// depth's range). Flying pixels and occlusion holes are found at steps; residuals below
    /// half a step are never rejected as wrong measurements.
    double step = 0;
    /// Robust data term: after the first estimate, up to this many re-estimates with each
    /// observation's confidence times Tukey's biweight of its residual to the last estimate,
    /// (1 - (r / c)^2)^2 for |r| < c and 0 beyond (iteratively reweighted least squares), stopping
    /// early when no weight changes by more than `robust_tolerance`. The residual is the smaller
    /// of those to the estimate and to the median of the observations around (`depth/robust.hpp`).
    /// For sensor depth with wrong measurements (a matcher's mismatches, multipath); 1 re-estimate
    /// suffices on the real-sensor protocols. 0 (off) by default: on clean depth it also rejects
    /// correct observations of structures a pixel or two thin whose colour edges are a pixel off
    /// (see the performance page). `depth_result::rejected` counts the observations it ended with
    /// weight 0.
    std::size_t robust_iterations = 0;
    /// Tukey's c in robust standard deviations of the residuals (1.4826 x their median absolute
    /// value), at least half a `step`: residuals beyond it reject their observation.
    double robust_threshold = 4.685;
    double robust_tolerance = 0.02;   ///< largest change of a weight that ends the robust re-estimates
    /// Flying pixels: observations at a depth step holding a mix of its two sides (time-of-flight
    /// sensors average both sides within a pixel), which `depth/flying_pixels.hpp` finds and the
    /// task re-estimates from the side their colour belongs to (as if missing), or from the side
    /// their neighbours tell (`flying_pixel_sides`). On in
    /// `fill_options()` and `denoise_options()` (clean depth has none to find: nothing changes);
    /// `depth_result::flying` counts them.
    bool flying_pixels = false;
    /// The flying pixels found whose neighbours tell which side they touch take that side's
    /// depth instead of the colour-guided estimate (`flying_pixel_sides` in
    /// `depth/flying_pixels.hpp`: in a band of two flying pixels between the sides, each the
    /// side beyond its other neighbour; between two observations that agree, their mean). For
    /// time-of-flight depth, whose steps blur into bands of mixed pixels; off by default, since
    /// a real ledge one or two pixels wide between two depths looks the same (see the
    /// performance page for both sides). Nothing changes without `flying_pixels`.
    bool flying_pixel_sides = false;
    occlusion_fill occlusions = occlusion_fill::blend;   ///< how holes beside depth steps are filled
    /// Each observation replaced by the median of the observations in its 5 x 5 window (after
    /// the flying pixels are removed, before anything else): noisy depth with mixed pixels at
    /// its steps (time of flight) loses both, at the cost of corners and of structures thinner
    /// than three pixels, so it is off by default (see the performance page for both sides).
    bool median_of_observations = false;
    /// The observations' noise, a standard deviation in depth units, as `depth_result::noise`
    /// reports it: negative (the default) estimates it from them (`estimate_noise`; from the
    /// low-resolution map when upsampling). What the noise calls for, the data term's weight, is
    /// chosen from the samples when upsampling (`data_weight`), so the value only informs.
    double noise = -1;
    /// The data term's weight against the smoothness, a factor on eps (normalised and separable
    /// models) and lambda (AR model). 0 (the default): 1 when filling and denoising; when
    /// upsampling, chosen with the colour bandwidth from the samples, the factor in [1/32, 8]
    /// whose result best predicts a quarter of them held out (`depth/hold_out.hpp`): smaller for
    /// noisy samples, which the smoothness then averages, larger where the colours tell the
    /// depth edges well. `depth_result::data_weight` says what was used.
    double data_weight = 0;
    depth_solver solver = depth_solver::pcg_multigrid;   ///< of the normalised and AR models
    bool single_precision = true;                                  ///< solve in float (half the memory traffic) or double
    solve_options solve{1e-4, 500};
    /// Of the multigrid solvers. Two sweeps on the coarser levels instead of four: the
    /// normalised model takes as many MG-PCG iterations either way for less work per cycle
    /// (the AR model a few more, docs/performance.md).
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
    std::size_t rejected = 0;            ///< observations the robust data term rejected (weight 0)
    std::size_t flying = 0;              ///< observations taken as flying pixels and re-estimated
    std::size_t robust_iterations = 0;   ///< re-estimates of the robust data term
    double noise = 0;                    ///< the observations' noise the task took (`depth_options::noise`)
    double data_weight = 1;              ///< the data term's weight the task used (`depth_options::data_weight`)
    double sigma_r = 0;                  ///< the colour bandwidth the task used (`depth_options::sigma_r`)
};

/// The most memory a depth task takes per pixel of its guide beyond its inputs, at the
/// defaults of `fill_depth`, `denoise_depth` and `upsample_depth` (a job's memory: this
/// times the pixels, plus the inputs). The suite holds the tasks to it
/// (tests/depth/depth_memory.cpp); the measured figures are in the performance page.
inline constexpr std::size_t depth_task_bytes_per_pixel = 256;

/// What a guide of pixel type `Pixel` is multiplied by to be on the 8-bit scale of
/// `depth_options::sigma_r`: 255 / its largest value for integers wider than 8 bits (uint16:
/// 1 / 257), 1 for the others.
template <class Pixel>
constexpr double guide_scale() {
    if constexpr (std::is_integral_v<Pixel> && (std::numeric_limits<Pixel>::max() > 255))
        return 255.0 / double(std::numeric_limits<Pixel>::max());
    return 1.0;
}

namespace detail {

/// Two solves reported as one: iterations and seconds add up, the larger residual, converged when both did.
inline solve_report one_report(std::string method, const solve_report& first, const solve_report& second) {
    return {std::move(method), first.iterations + second.iterations,
            std::max(first.relative_residual, second.relative_residual), first.converged && second.converged,
            first.seconds + second.seconds};
}

/// Throws `std::invalid_argument` (from `where`) unless the options are valid, naming each
/// field that is not and its value: "depth_options::sigma_r must be finite and positive, got -1".
inline void check_options(const depth_options& o, std::string_view where) {
    field_checks fields("depth_options");
    const auto need = [&](bool ok, std::string_view field, std::string_view rule, double value) {
        fields.need(ok, field, rule, value);
    };
    const auto positive = [](double x) { return std::isfinite(x) && x > 0; };
    const auto not_negative = [](double x) { return std::isfinite(x) && x >= 0; };
    need(o.connectivity == 4 || o.connectivity == 8, "connectivity", "4 or 8", o.connectivity);
    need(o.radius >= 1, "radius", "at least 1", double(o.radius));
    need(o.sigma_r == 0 || positive(o.sigma_r), "sigma_r", "finite and positive, or 0 (chosen from the data)", o.sigma_r);
    need(o.sigma_s > 0 && !std::isnan(o.sigma_s), "sigma_s", "positive (infinite: no spatial weight)", o.sigma_s);
    need(not_negative(o.chroma_weight), "chroma_weight", "finite and at least 0", o.chroma_weight);
    need(positive(o.epsilon_scale), "epsilon_scale", "finite and positive", o.epsilon_scale);
    need(positive(o.lambda), "lambda", "finite and positive", o.lambda);
    need(not_negative(o.min_weight), "min_weight", "finite and at least 0", o.min_weight);
    need(not_negative(o.median_scale), "median_scale", "finite and at least 0", o.median_scale);
    need(not_negative(o.median_flatness), "median_flatness", "finite and at least 0", o.median_flatness);
    need(not_negative(o.sigma_d), "sigma_d", "finite and at least 0 (0: 2 % of the depth range)", o.sigma_d);
    need(o.stage_factor >= 2, "stage_factor", "at least 2", double(o.stage_factor));
    need(o.separable_passes >= 1, "separable_passes", "at least 1", double(o.separable_passes));
    need(positive(o.separable_strength), "separable_strength", "finite and positive", o.separable_strength);
    need(not_negative(o.step), "step", "finite and at least 0 (0: 5 % of the depth range)", o.step);
    need(positive(o.robust_threshold), "robust_threshold", "finite and positive", o.robust_threshold);
    need(not_negative(o.robust_tolerance), "robust_tolerance", "finite and at least 0", o.robust_tolerance);
    need(o.data_weight == 0 || positive(o.data_weight), "data_weight", "finite and positive, or 0 (chosen from the data)",
         o.data_weight);
    need(!std::isnan(o.noise) && o.noise < std::numeric_limits<double>::infinity(), "noise",
         "finite (negative: estimated from the observations)", o.noise);
    need(o.solve.tolerance >= 0, "solve.tolerance", "at least 0", o.solve.tolerance);
    fields.check(where);
}

/// The options with the data term's weight times `weight` (`depth_options::noise`).
inline depth_options with_data_weight(depth_options o, double weight) {
    o.epsilon_scale *= weight, o.lambda *= weight;   // eps: the normalised and separable models' data term
    return o;
}

}  // namespace detail
}  // namespace nonlocal
