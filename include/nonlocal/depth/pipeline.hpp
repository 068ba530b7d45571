#pragma once
/// @file depth/pipeline.hpp
/// The steps every depth task takes, in order: the observations prepared (flying pixels,
/// medians of the observations), the estimator of the chosen model run on them (robustly when
/// asked), the edge-sharpening median, the depth passes; for upsampling, coarse to fine and
/// the data term's weight chosen from a held-out quarter of the samples. The tasks
/// (`depth/tasks.hpp`) check their inputs and call these; the solves they instantiate are
/// compiled once by `depth/instances.hpp`.

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
#include "nonlocal/depth/hold_out.hpp"
#include "nonlocal/depth/noise.hpp"
#include "nonlocal/depth/observations.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/depth/robust.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/filter/median.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/image/pyramid.hpp"

namespace nonlocal {
namespace detail {

/// Runs the estimator of `o.model` on the observations `d` on the guide `g` in precision
/// T, their holes filled from `far` (null: blended), robustly when `o.robust_iterations` says
/// (leaving in `d` the observations it kept, with their weights), then the edge-sharpening
/// median; the flying pixels whose side was told (`sides`) then take that side's depth.
/// `clock` started when the task did; the solves and the median on the threads of `policy`,
/// with the instructions of Arch.
template <class T, class Arch>
depth_result refine(execution::parallel_policy policy, const image_planes<T>& g, observed_depth& d, const far_side* far,
                    std::span<const flying_side> sides, const depth_options& o, const stopwatch& clock) {
    depth_result result;
    const auto x =
        with_estimator<Arch>(policy, g, d, far, o,
                             [&](auto& estimate) { return estimate_robustly<Arch>(estimate, d, o, result); });
    // Every model's exact result is a weighted mean of the observations (its operators have
    // no negative entries), so it lies within their range; an approximate solve can leave the
    // range by its error, the more where few observations reach a pixel: clamped to the range
    // of the observations kept.
    result.depth = xt::empty<float>({g.height, g.width});
    for (std::size_t i = 0; i < x.size(); ++i) result.depth.data()[i] = static_cast<float>(std::clamp(x[i], d.lowest, d.highest));
    if (const std::size_t radius = o.median_radius(d.fraction()); radius > 0)
        median_filter<Arch>(result.depth.data(), g.height, g.width, radius, result.depth.data(),
                                    thread_count(policy), float(o.median_flatness * d.range()));
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
template <class Arch>
flying_pixels_found prepare_observations(observed_depth& d, const depth_options& o) {
    flying_pixels_found flying;
    if (o.flying_pixels) {
        const double step = depth_step(d, o);
        const depth_lookup at(d);
        const std::vector<std::size_t> found = find_flying_pixels<Arch>(at, step);
        if (found.size() < d.count) {   // none when every observation flies
            flying.count = found.size();
            if (o.flying_pixel_sides) flying.sides = flying_pixel_sides(at, found, step);
            remove_flying_pixels(d, found);
        }
    }
    if (o.median_of_observations) {
        const buffer<double> median = observed_medians<Arch>(d);
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
template <class T, class Arch>
depth_result refine_with_passes(execution::parallel_policy policy, const image_planes<T>& g, observed_depth d,
                                const depth_options& o, std::string_view where, const stopwatch& clock) {
    require(d.count > 0, where, [] { return std::string("nothing is observed: no pixel has a valid depth"); });
    // The result is float, whatever the solve's precision.
    require(d.highest <= double(std::numeric_limits<float>::max()), where, [&] {
        const std::size_t i = std::size_t(std::find(d.depth.begin(), d.depth.end(), d.highest) - d.depth.begin());
        return "the depth " + std::to_string(d.highest) + " at pixel (" + std::to_string(i / d.width) + ", " +
               std::to_string(i % d.width) + ") is beyond the range of float, the result's type";
    });
    const flying_pixels_found flying = prepare_observations<Arch>(d, o);
    const std::optional<far_side> far = far_side_of(d, o);   // of the holes as measured
    const far_side* holes = far ? &*far : nullptr;
    depth_result result = refine<T, Arch>(policy, g, d, holes, flying.sides, o, clock);
    const std::size_t rejected = result.rejected, rounds = result.robust_iterations;
    const double sigma_d = o.depth_passes > 0 ? depth_bandwidth(d, o) : 0;
    depth_options pass_options = o;
    pass_options.robust_iterations = 0;
    for (std::size_t pass = 0; pass < o.depth_passes && sigma_d > 0; ++pass) {
        depth_result next = refine<T, Arch>(policy, with_depth_channel(g, result.depth, o.sigma_r / sigma_d), d, holes,
                                      flying.sides, pass_options, clock);
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

/// `fill_depth` with `confidence` per pixel (null: 1 everywhere).
template <class Arch, class D, class G>
depth_result fill(execution::parallel_policy policy, const xt::xexpression<D>& depth, const double* confidence,
                  const xt::xexpression<G>& guide, const depth_options& o, std::string_view where) {
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
        const auto g = compared_channels(guide_planes<T>(guide, where), o);
        depth_options chosen = o.data_weight > 0 ? with_data_weight(o, o.data_weight) : o;
        if (o.sigma_r == 0) chosen.sigma_r = color_bandwidth_start(g);
        depth_result r = refine_with_passes<T, Arch>(policy, g, observed, chosen, where, clock);
        r.sigma_r = chosen.sigma_r, r.data_weight = o.data_weight > 0 ? o.data_weight : 1.0;
        return r;
    });
    result.noise = noise;
    return result;
}

/// `fill` with a confidence map [H, W], checked against the depth, from `where`.
template <class Arch, class D, class C, class G>
depth_result fill(execution::parallel_policy policy, const xt::xexpression<D>& depth, const xt::xexpression<C>& confidence,
                  const xt::xexpression<G>& guide, const depth_options& o, std::string_view where) {
    const buffer<double> c = confidences(confidence, depth, where);
    return fill<Arch>(policy, depth, c.data(), guide, o, where);
}
/// `upsample_depth` once the sizes are checked: coarse to fine while the factor is
/// even and above `o.stage_factor`, `confidence` per pixel of `low` (null: 1 everywhere)
/// observed at the first stage, whose options are `first` (`o` with the data term's weight
/// chosen for the noise of `low`; the later stages refine a smooth result).
template <class T, class Arch>
depth_result upsample(execution::parallel_policy policy, const xt::xtensor<double, 2>& low, const double* confidence,
                      const image_planes<T>& g, std::size_t factor, const depth_options& first, const depth_options& o,
                      const stopwatch& clock) {
    if (factor > o.stage_factor && factor % 2 == 0) {
        const depth_result coarse =
            upsample<T, Arch>(policy, low, confidence, half_resolution(g), factor / 2, first, o, clock);
        depth_result fine =
            upsample<T, Arch>(policy, xt::xtensor<double, 2>(xt::cast<double>(coarse.depth)), nullptr, g, 2, o, o, clock);
        fine.report = one_report("coarse to fine, " + fine.report.method, coarse.report, fine.report);
        fine.rejected = coarse.rejected, fine.flying = coarse.flying;
        return fine;
    }
    observed_depth observed(g.height, g.width);
    for (std::size_t r = 0; r < low.shape(0); ++r)
        for (std::size_t c = 0; c < low.shape(1); ++c)
            observed.observe(factor * r * g.width + factor * c, low(r, c), confidence ? confidence[r * low.shape(1) + c] : 1.0);
    return refine_with_passes<T, Arch>(policy, g, observed, first, "upsample_depth", clock);
}

/// `upsample_depth` with `confidence` per pixel of `low` (null: 1 everywhere).
template <class Arch, class D, class G>
depth_result upsample(execution::parallel_policy policy, const xt::xexpression<D>& low, const double* confidence,
                      const xt::xexpression<G>& guide, std::size_t factor, const depth_options& o) {
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
        const auto at = [&](std::size_t r, std::size_t c) { return factor * r * g.width + factor * c; };
        // The colour bandwidth and the data term's weight, unless given, by the held-out error of
        // the separable model, which costs a fraction of the others' solves and whose best choices
        // are theirs (docs/performance.md): in turn, each from the other's last choice, until the
        // bandwidth stays (at most twice each; each changes the other's best). Beyond
        // `stage_factor` the held-out samples lie farther apart than any one stage's solve
        // reaches: the bandwidth is the start there.
        const auto predict = [&](const xt::xtensor<double, 2>& kept, depth_options trial) {
            trial.model = depth_model::separable;
            return detail::upsample<T, Arch>(policy, kept, confidence, g, factor, trial, trial, clock).depth;
        };
        // The bandwidth given, or the start of its search.
        const double start = o.sigma_r > 0 ? o.sigma_r : detail::color_bandwidth_start(g);
        depth_options chosen = o;
        chosen.sigma_r = start;
        double weight = o.data_weight > 0 ? o.data_weight : 1.0;
        const bool choose_bandwidth = o.sigma_r == 0 && factor <= o.stage_factor;
        const detail::held_out_observations held(values);
        for (int round = 0; round < 2; ++round) {
            if (choose_bandwidth) {
                const double sigma_r = detail::choose_by_hold_out(held, chosen.sigma_r, start / 8, start * 64,
                                                                  [&](const auto& kept, double s) {
                    depth_options trial = detail::with_data_weight(chosen, weight);
                    trial.sigma_r = s;
                    return predict(kept, trial);
                }, at);
                if (round > 0 && sigma_r == chosen.sigma_r) break;
                chosen.sigma_r = sigma_r;
            }
            if (o.data_weight == 0)
                weight = detail::choose_by_hold_out(held, weight, 1.0 / 32, 8.0, [&](const auto& kept, double w) {
                    return predict(kept, detail::with_data_weight(chosen, w));
                }, at);
            if (!choose_bandwidth) break;
        }
        depth_result result = detail::upsample<T, Arch>(policy, values, confidence, g, factor,
                                                        detail::with_data_weight(chosen, weight), chosen, clock);
        result.noise = noise, result.data_weight = weight, result.sigma_r = chosen.sigma_r;
        return result;
    });
}
}  // namespace detail

/// The depth tasks' solves in precision T on the default architecture, as explicit
/// instantiations after `prefix` (other architectures compile where they are used): declared
/// (`extern`) here when NONLOCAL_DEPTH_EXTERN_INSTANCES is defined, defined by
/// nonlocal/depth/instances.hpp. They precede every use: the tasks are templates, instantiated
/// only in the program's own code.
#define NONLOCAL_DEPTH_SOLVES(prefix, T)                                                                        \
    prefix template depth_result detail::refine_with_passes<T, default_arch>(                                   \
        execution::parallel_policy, const image_planes<T>&, detail::observed_depth, const depth_options&,      \
        std::string_view, const detail::stopwatch&);                                                            \
    prefix template depth_result detail::upsample<T, default_arch>(                                             \
        execution::parallel_policy, const xt::xtensor<double, 2>&, const double*, const image_planes<T>&,      \
        std::size_t, const depth_options&, const depth_options&, const detail::stopwatch&);
#ifdef NONLOCAL_DEPTH_EXTERN_INSTANCES
NONLOCAL_DEPTH_SOLVES(extern, float)
NONLOCAL_DEPTH_SOLVES(extern, double)
#endif

}  // namespace nonlocal
