#pragma once
/// @file depth/tasks.hpp
/// Colour-guided depth refinement with the linear AR model (`solve/ar_system.hpp`):
/// hole filling, denoising and guided upsampling. Invalid depth (0, negative or not
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
///   multigrid: several times faster than the normalised model, nearly as accurate
///   (docs/performance.md compares them).
///
/// Sensor depth (options, off unless said): a confidence per pixel scaling the data term (the
/// tasks' overloads taking a confidence map), flying pixels treated as missing (on in
/// `fill_options()`) or given the side their neighbours tell, the median of the observations,
/// the robust data term, and holes beside depth steps filled from the far side.
///
/// The parts: `depth/options.hpp` (the parameters), `depth/observations.hpp` (what a task
/// observes), `depth/estimators.hpp` (one class per model), `depth/robust.hpp`,
/// `depth/flying_pixels.hpp`, `depth/occlusion.hpp` and `depth/noise.hpp` (what real sensors
/// need); this header holds the tasks.

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/depth/estimators.hpp"
#include "nonlocal/depth/flying_pixels.hpp"
#include "nonlocal/depth/noise.hpp"
#include "nonlocal/depth/observations.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/depth/robust.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/filter/median.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/image/pyramid.hpp"

namespace nonlocal {
namespace detail {

/// Runs the estimator of `o.model` on the observations `d` on the guide `g` in precision
/// T, their holes filled from `far` (null: blended), robustly when `o.robust_iterations` says
/// (leaving in `d` the observations it kept, with their weights), then the edge-sharpening
/// median; the flying pixels whose side was told (`sides`) then take that side's depth.
/// `clock` started when the task did.
template <class T>
depth_result refine(const image_planes<T>& g, observed_depth& d, const far_side* far, std::span<const flying_side> sides,
                    const depth_options& o, const stopwatch& clock) {
    depth_result result;
    const auto x = with_estimator(g, d, far, o, [&](auto& estimate) { return estimate_robustly(estimate, d, o, result); });
    // Every model's exact result is a weighted mean of the observations (its operators have
    // no negative entries), so it lies within their range; an approximate solve can leave the
    // range by its error, the more where few observations reach a pixel: clamped to the range
    // of the observations kept.
    result.depth = xt::empty<float>({g.height, g.width});
    for (std::size_t i = 0; i < x.size(); ++i) result.depth.data()[i] = static_cast<float>(std::clamp(x[i], d.lowest, d.highest));
    if (const std::size_t radius = o.median_radius(d.fraction()); radius > 0)
        median_filter<default_arch>(result.depth.data(), g.height, g.width, radius, result.depth.data(), o.threads,
                                    float(o.median_flatness * d.range()));
    for (const auto& [pixel, depth] : sides) result.depth.data()[pixel] = static_cast<float>(depth);
    result.seconds = clock.seconds();
    return result;
}

/// The flying pixels of a task's observations: how many were removed, and those whose side
/// their neighbours tell (`flying_pixel_sides`) when `depth_options::flying_pixel_sides` asks.
struct flying_pixels_found {
    std::size_t count = 0;
    std::vector<flying_side> sides;
};

/// The observations as the estimators take them: without the flying pixels when
/// `o.flying_pixels` says, each replaced by the median of its neighbours when
/// `o.median_of_observations` says (the range and the count following). Returns the flying
/// pixels removed.
inline flying_pixels_found prepare_observations(observed_depth& d, const depth_options& o) {
    flying_pixels_found flying;
    if (o.flying_pixels) {
        const double step = depth_step(d, o);
        const depth_lookup at(d);
        const std::vector<std::size_t> found = find_flying_pixels(at, step);
        if (found.size() < d.count) {   // none when every observation flies
            flying.count = found.size();
            if (o.flying_pixel_sides) flying.sides = flying_pixel_sides(at, found, step);
            remove_flying_pixels(d, found);
        }
    }
    if (o.median_of_observations) {
        const buffer<double> median = observed_medians(d);
        observed_depth medians(d.height, d.width);
        for (std::size_t i = 0; i < median.size(); ++i) medians.observe(i, median[i], d.confidence[i]);
        d = std::move(medians);
    }
    return flying;
}

/// The task in precision T: the observations prepared (`prepare_observations`), the model
/// (robustly when `o.robust_iterations` says, holes filled as `o.occlusions` says), then each
/// depth pass on the guide with the last result as one more channel, on the observations the
/// robust term kept. Throws (from `where`) when nothing is observed.
template <class T>
depth_result refine_with_passes(const image_planes<T>& g, observed_depth d, const depth_options& o,
                                std::string_view where, const stopwatch& clock) {
    require(d.count > 0, where, [] { return std::string("nothing is observed: no pixel has a valid depth"); });
    // The result is float, whatever the solve's precision.
    require(d.highest <= double(std::numeric_limits<float>::max()), where, [&] {
        const std::size_t i = std::size_t(std::find(d.depth.begin(), d.depth.end(), d.highest) - d.depth.begin());
        return "the depth " + std::to_string(d.highest) + " at pixel (" + std::to_string(i / d.width) + ", " +
               std::to_string(i % d.width) + ") is beyond the range of float, the result's type";
    });
    const flying_pixels_found flying = prepare_observations(d, o);
    const std::optional<far_side> far = far_side_of(d, o);   // of the holes as measured
    const far_side* holes = far ? &*far : nullptr;
    depth_result result = refine<T>(g, d, holes, flying.sides, o, clock);
    const std::size_t rejected = result.rejected, rounds = result.robust_iterations;
    const double sigma_d = o.depth_passes > 0 ? depth_bandwidth(d, o) : 0;
    depth_options pass_options = o;
    pass_options.robust_iterations = 0;
    for (std::size_t pass = 0; pass < o.depth_passes && sigma_d > 0; ++pass) {
        depth_result next =
            refine<T>(with_depth_channel(g, result.depth, o.sigma_r / sigma_d), d, holes, flying.sides, pass_options, clock);
        next.report = one_report(next.report.method, result.report, next.report);
        result = std::move(next);
    }
    result.flying = flying.count, result.rejected = rejected, result.robust_iterations = rounds;
    result.seconds = clock.seconds();
    return result;
}

/// f.template operator()<T>() with T = float or double, as `o.single_precision` says.
template <class F>
depth_result in_precision(const depth_options& o, F&& f) {
    return o.single_precision ? f.template operator()<float>() : f.template operator()<double>();
}

}  // namespace detail

/// The defaults of `fill_depth`: `depth_options` with one depth pass, whose weights also
/// follow the first result's depth (the depth steps the colours miss), and the flying pixels
/// found and re-estimated (`depth_options::flying_pixels`).
inline depth_options fill_options() { return {.depth_passes = 1, .flying_pixels = true}; }

/// Where a depth map comes from, as `sensor_options` takes it: what its depth is like.
enum class depth_sensor {
    clean,              ///< exact or nearly (synthetic, a fused model, ground truth)
    stereo,             ///< a matcher's disparity: mismatches, occlusion holes where disparity is smaller
    structured_light,   ///< distance with the projector's shadows where distance is larger, wrong codes
    time_of_flight      ///< noise, flying pixels at steps, multipath; holes are not occlusions
};

/// `fill_options()` for the depth of `sensor`, as its artefacts call for:
/// - `clean`: `fill_options()` as it is;
/// - `stereo`: one re-estimate of the robust data term (`robust_iterations`), which rejects a
///   matcher's mismatches, and holes beside depth steps filled from the smaller values
///   (`occlusion_fill::from_smaller`: disparity, whose background is the smaller);
/// - `structured_light`: the same, the holes filled from the larger values (distance);
/// - `time_of_flight`: each observation first replaced by the median of its 5 x 5 window
///   (`median_of_observations`), and the flying pixels whose neighbours tell their side given
///   that side's depth (`flying_pixel_sides`); holes blended.
/// Any field can be changed after; the options of each were measured on the real-sensor
/// protocols of the performance page.
inline depth_options sensor_options(depth_sensor sensor) {
    depth_options o = fill_options();
    switch (sensor) {
    case depth_sensor::clean: break;
    case depth_sensor::stereo: o.robust_iterations = 1, o.occlusions = occlusion_fill::from_smaller; break;
    case depth_sensor::structured_light: o.robust_iterations = 1, o.occlusions = occlusion_fill::from_larger; break;
    case depth_sensor::time_of_flight: o.median_of_observations = true, o.flying_pixel_sides = true; break;
    }
    return o;
}

namespace detail {
/// `fill_depth` with `confidence` per pixel (null: 1 everywhere).
template <class D, class G>
depth_result fill(const xt::xexpression<D>& depth, const double* confidence, const xt::xexpression<G>& guide,
                  const depth_options& o, std::string_view where) {
    const stopwatch clock;
    check_options(o, where);
    const depth_values<D> d(depth, where);
    const auto [H, W] = guide_size(guide);
    require(d.shape(0) == H && d.shape(1) == W, where, [&, H = H, W = W] {
        return "depth " + shape_string(d.shape()) + " and guide " + std::to_string(H) + " x " + std::to_string(W) +
               " must have the same size";
    });
    observed_depth observed(H, W);
    observed.observe_all(d.data(), confidence);
    const double noise = o.noise >= 0 ? o.noise : estimate_noise(d.data(), H, W).sigma;   // within result.seconds
    depth_result result = in_precision(o, [&]<class T>() {
        return refine_with_passes<T>(compared_channels(guide_planes<T>(guide, where), o), observed, o, where, clock);
    });
    result.noise = noise;
    return result;
}

/// `fill` with a confidence map [H, W], checked against the depth, from `where`.
template <class D, class C, class G>
depth_result fill(const xt::xexpression<D>& depth, const xt::xexpression<C>& confidence, const xt::xexpression<G>& guide,
                  const depth_options& o, std::string_view where) {
    const buffer<double> c = confidences(confidence, depth, where);
    return fill(depth, c.data(), guide, o, where);
}
}  // namespace detail

/// Fills the missing pixels (0, negative or not finite) of `depth` [H, W] guided by `guide`
/// [H, W] or [H, W, C], with the valid pixels as the observations of `o.model`
/// (the normalised model by default; the AR model with alpha = lambda on them), with
/// `fill_options()` by default: flying pixels re-estimated, one depth pass (for sensor depth
/// with wrong measurements, turn on the robust data term, `depth_options::robust_iterations`). The result lies within the range of the valid
/// depths kept. Throws `std::invalid_argument` when sizes differ, no pixel is valid, a depth
/// is beyond float's range (the result's type), the guide holds NaN or infinity, or an option
/// is out of its range.
template <class D, class G>
depth_result fill_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide, const depth_options& o = fill_options()) {
    return detail::fill(depth, nullptr, guide, o, "fill_depth");
}

/// `fill_depth` with a confidence per pixel, `confidence` [H, W] (finite, at least 0; 0 is
/// missing), which scales each observation's data term: the normalised and separable models
/// average the observations weighted by it (only its ratios matter), the AR model's alpha is
/// lambda times it. A ToF amplitude, a matcher's left-right consistency or a validity mask.
/// Throws as `fill_depth` does, or when the confidence's size differs from the depth's or a
/// confidence is negative or not finite.
template <class D, class C, class G>
depth_result fill_depth(const xt::xexpression<D>& depth, const xt::xexpression<C>& confidence,
                        const xt::xexpression<G>& guide, const depth_options& o = fill_options()) {
    return detail::fill(depth, confidence, guide, o, "fill_depth");
}

/// The defaults of `denoise_depth`: `fill_options()` with more smoothing (the normalised
/// model's kernel reaching twice as many observations, epsilon_scale = 0.25; the AR
/// model's data term weaker, lambda = 0.2), so the colour-guided smoothness averages the
/// noise; its depth pass, as `fill_options()`'s, follows the depth steps.
inline depth_options denoise_options() {
    depth_options o = fill_options();
    o.epsilon_scale = 0.25, o.lambda = 0.2;
    return o;
}

/// Denoises `depth` (and fills its holes): `fill_depth` with `denoise_options()` by default.
template <class D, class G>
depth_result denoise_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide,
                           const depth_options& o = denoise_options()) {
    return detail::fill(depth, nullptr, guide, o, "denoise_depth");
}

/// `denoise_depth` with a confidence per pixel, as `fill_depth` takes it.
template <class D, class C, class G>
depth_result denoise_depth(const xt::xexpression<D>& depth, const xt::xexpression<C>& confidence,
                           const xt::xexpression<G>& guide, const depth_options& o = denoise_options()) {
    return detail::fill(depth, confidence, guide, o, "denoise_depth");
}

namespace detail {
/// `upsample_depth` once the sizes are checked: coarse to fine while the factor is
/// even and above `o.stage_factor`, `confidence` per pixel of `low` (null: 1 everywhere)
/// observed at the first stage, whose options are `first` (`o` with the data term's weight
/// chosen for the noise of `low`; the later stages refine a smooth result).
template <class T>
depth_result upsample(const xt::xtensor<double, 2>& low, const double* confidence, const image_planes<T>& g,
                      std::size_t factor, const depth_options& first, const depth_options& o, const stopwatch& clock) {
    if (factor > o.stage_factor && factor % 2 == 0) {
        const depth_result coarse = upsample(low, confidence, half_resolution(g), factor / 2, first, o, clock);
        depth_result fine = upsample(xt::xtensor<double, 2>(xt::cast<double>(coarse.depth)), nullptr, g, 2, o, o, clock);
        fine.report = one_report("coarse to fine, " + fine.report.method, coarse.report, fine.report);
        fine.rejected = coarse.rejected, fine.flying = coarse.flying;
        return fine;
    }
    observed_depth observed(g.height, g.width);
    for (std::size_t r = 0; r < low.shape(0); ++r)
        for (std::size_t c = 0; c < low.shape(1); ++c)
            observed.observe(factor * r * g.width + factor * c, low(r, c), confidence ? confidence[r * low.shape(1) + c] : 1.0);
    return refine_with_passes<T>(g, observed, first, "upsample_depth", clock);
}
}  // namespace detail

namespace detail {
/// The weight of the data term of noisy observations `values` (0 or not finite where missing),
/// against the options': the largest of 1, 1/2, 1/4, ... down to 1/32 whose result predicts the
/// observations of odd rows and odd columns, held out, from the others better than the next
/// one's does. A held-out observation's expected squared error is the result's there plus the
/// noise's variance, independent of the result: the weight of least held-out error is that of
/// least error, as far as three quarters of the observations tell. `predict(kept, w)` refines the
/// observations kept (the held-out ones missing) with the data term's weight times w; observation
/// (r, c) lies at `at(r, c)` of its result. 1 when fewer than 16 observations would be held out.
template <class Predict, class At>
double data_weight_by_hold_out(const xt::xtensor<double, 2>& values, Predict&& predict, At&& at) {
    xt::xtensor<double, 2> kept = values;
    std::vector<std::array<std::size_t, 2>> held;
    std::size_t observed = 0;
    for (std::size_t r = 0; r < values.shape(0); ++r)
        for (std::size_t c = 0; c < values.shape(1); ++c) {
            observed += valid_depth(values(r, c));
            if (r % 2 == 1 && c % 2 == 1 && valid_depth(values(r, c))) held.push_back({r, c}), kept(r, c) = 0;
        }
    if (held.size() < 16 || held.size() == observed) return 1.0;
    double best = 1, least = std::numeric_limits<double>::infinity();
    for (double w = 1; w >= 1.0 / 32; w /= 2) {
        const auto x = predict(kept, w);
        double error = 0;
        for (const auto& [r, c] : held) {
            const double e = double(x.data()[at(r, c)]) - values(r, c);
            error += e * e;
        }
        if (!(error < least)) break;
        best = w, least = error;
    }
    return best;
}

/// `upsample_depth` with `confidence` per pixel of `low` (null: 1 everywhere).
template <class D, class G>
depth_result upsample(const xt::xexpression<D>& low, const double* confidence, const xt::xexpression<G>& guide,
                      std::size_t factor, const depth_options& o) {
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
    const double noise = o.noise >= 0 ? o.noise : detail::estimate_noise(values.data(), h, w).sigma;
    return detail::in_precision(o, [&]<class T>() {
        const auto g = detail::compared_channels(detail::guide_planes<T>(guide, "upsample_depth"), o);
        const double weight = noise > 0 ? detail::data_weight_by_hold_out(values, [&](const xt::xtensor<double, 2>& kept, double w) {
            return detail::upsample<T>(kept, confidence, g, factor, detail::with_data_weight(o, w), o, clock).depth;
        }, [&](std::size_t r, std::size_t c) { return factor * r * g.width + factor * c; }) : 1.0;
        depth_result result = detail::upsample<T>(values, confidence, g, factor, detail::with_data_weight(o, weight), o, clock);
        result.noise = noise, result.data_weight = weight;
        return result;
    });
}
}  // namespace detail

/// The depth tasks' solves in precision T, as explicit instantiations after `prefix`: declared
/// (`extern`) here when NONLOCAL_DEPTH_EXTERN_INSTANCES is defined, defined by
/// nonlocal/depth/instances.hpp. They precede every use: the tasks are templates, instantiated
/// only in the program's own code.
#define NONLOCAL_DEPTH_SOLVES(prefix, T)                                                                          \
    prefix template depth_result detail::refine_with_passes<T>(const image_planes<T>&, detail::observed_depth, \
                                                              const depth_options&, std::string_view,              \
                                                              const detail::stopwatch&);                           \
    prefix template depth_result detail::upsample<T>(const xt::xtensor<double, 2>&, const double*,                \
                                                    const image_planes<T>&, std::size_t, const depth_options&, \
                                                    const depth_options&, const detail::stopwatch&);
#ifdef NONLOCAL_DEPTH_EXTERN_INSTANCES
NONLOCAL_DEPTH_SOLVES(extern, float)
NONLOCAL_DEPTH_SOLVES(extern, double)
#endif

/// Upsamples `low` [h, w] by `factor` onto the grid of `guide` [H, W(, C)]: pixel
/// (r, c) of `low` is observed at (factor r, factor c); H and W must lie in
/// [factor (h - 1) + 1, factor h] and likewise for W. An even factor above
/// `o.stage_factor` (8 by default) goes coarse to fine, which converges in fewer
/// iterations: by factor / 2 onto the guide at half resolution (3 x 3 box means at
/// the even pixels), then by 2 from that result, recursively. Noisy samples (`o.noise`,
/// estimated from `low` by default) get the data term's weight their held-out quarter calls for
/// (`depth_options::noise`). Throws `std::invalid_argument` as `fill_depth` does, or when the
/// sizes do not fit.
template <class D, class G>
depth_result upsample_depth(const xt::xexpression<D>& low, const xt::xexpression<G>& guide, std::size_t factor,
                            const depth_options& o = {}) {
    return detail::upsample(low, nullptr, guide, factor, o);
}

/// `upsample_depth` with a confidence per pixel of `low`, `confidence` [h, w], as `fill_depth`
/// takes it (observed at the first stage of coarse to fine). Throws as `upsample_depth` does,
/// or when the confidence's size differs from `low`'s or a confidence is negative or not finite.
template <class D, class C, class G>
depth_result upsample_depth(const xt::xexpression<D>& low, const xt::xexpression<C>& confidence,
                            const xt::xexpression<G>& guide, std::size_t factor, const depth_options& o = {}) {
    const buffer<double> c = detail::confidences(confidence, low, "upsample_depth");
    return detail::upsample(low, c.data(), guide, factor, o);
}

}  // namespace nonlocal
