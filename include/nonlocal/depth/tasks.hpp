#pragma once
/// @file depth/tasks.hpp
/// Colour-guided depth refinement with the linear AR model (`solve/ar_system.hpp`):
/// hole filling, denoising and guided upsampling. Invalid depth (0, negative or not
/// finite) is missing; nothing is quantised. Each task compares the guide's
/// colours in luma and chroma (`colour_space`), builds the system, solves it by
/// conjugate gradients preconditioned by multigrid from full multigrid's
/// approximation, sharpens the depth edges with a median
/// (`depth_options::median_scale`), and returns the depth with the solver's report. Each
/// task runs on the instruction set of its first template argument, the best the build allows
/// by default (`fill_depth<xsimd::avx2>(...)` in a program built for AVX-512 runs AVX2).
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
/// need), `depth/pipeline.hpp` (the steps of every task); this header holds the tasks.

#include <cstddef>
#include <string_view>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/depth/pipeline.hpp"
#include "nonlocal/execution.hpp"

namespace nonlocal {

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


/// Fills the missing pixels (0, negative or not finite) of `depth` [H, W] guided by `guide`
/// [H, W] or [H, W, C], with the valid pixels as the observations of `o.model`
/// (the normalised model by default; the AR model with alpha = lambda on them), with
/// `fill_options()` by default: flying pixels re-estimated, one depth pass (for sensor depth
/// with wrong measurements, turn on the robust data term, `depth_options::robust_iterations`). The result lies within the range of the valid
/// depths kept. Throws `std::invalid_argument` when sizes differ, no pixel is valid, a depth
/// is beyond float's range (the result's type), the guide holds NaN or infinity, or an option
/// is out of its range. The solves and the median run on the threads of `policy`; the result
/// does not depend on their number.
template <class Arch = default_arch, execution_policy Ex, class D, class G>
depth_result fill_depth(Ex policy, const xt::xexpression<D>& depth, const xt::xexpression<G>& guide,
                        const depth_options& o = fill_options()) {
    return detail::fill<Arch>(detail::as_parallel(policy), depth, nullptr, guide, o, "fill_depth");
}
/// The same on the calling thread.
template <class Arch = default_arch, class D, class G>
depth_result fill_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide,
                        const depth_options& o = fill_options()) {
    return fill_depth<Arch>(execution::seq, depth, guide, o);
}

/// `fill_depth` with a confidence per pixel, `confidence` [H, W] (finite, at least 0; 0 is
/// missing), which scales each observation's data term: the normalised and separable models
/// average the observations weighted by it (only its ratios matter), the AR model's alpha is
/// lambda times it. A ToF amplitude, a matcher's left-right consistency or a validity mask.
/// Throws as `fill_depth` does, or when the confidence's size differs from the depth's or a
/// confidence is negative or not finite.
template <class Arch = default_arch, execution_policy Ex, class D, class C, class G>
depth_result fill_depth(Ex policy, const xt::xexpression<D>& depth, const xt::xexpression<C>& confidence,
                        const xt::xexpression<G>& guide, const depth_options& o = fill_options()) {
    return detail::fill<Arch>(detail::as_parallel(policy), depth, confidence, guide, o, "fill_depth");
}
/// The same on the calling thread.
template <class Arch = default_arch, class D, class C, class G>
depth_result fill_depth(const xt::xexpression<D>& depth, const xt::xexpression<C>& confidence,
                        const xt::xexpression<G>& guide, const depth_options& o = fill_options()) {
    return fill_depth<Arch>(execution::seq, depth, confidence, guide, o);
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
template <class Arch = default_arch, execution_policy Ex, class D, class G>
depth_result denoise_depth(Ex policy, const xt::xexpression<D>& depth, const xt::xexpression<G>& guide,
                           const depth_options& o = denoise_options()) {
    return detail::fill<Arch>(detail::as_parallel(policy), depth, nullptr, guide, o, "denoise_depth");
}
/// The same on the calling thread.
template <class Arch = default_arch, class D, class G>
depth_result denoise_depth(const xt::xexpression<D>& depth, const xt::xexpression<G>& guide,
                           const depth_options& o = denoise_options()) {
    return denoise_depth<Arch>(execution::seq, depth, guide, o);
}

/// `denoise_depth` with a confidence per pixel, as `fill_depth` takes it.
template <class Arch = default_arch, execution_policy Ex, class D, class C, class G>
depth_result denoise_depth(Ex policy, const xt::xexpression<D>& depth, const xt::xexpression<C>& confidence,
                           const xt::xexpression<G>& guide, const depth_options& o = denoise_options()) {
    return detail::fill<Arch>(detail::as_parallel(policy), depth, confidence, guide, o, "denoise_depth");
}
/// The same on the calling thread.
template <class Arch = default_arch, class D, class C, class G>
depth_result denoise_depth(const xt::xexpression<D>& depth, const xt::xexpression<C>& confidence,
                           const xt::xexpression<G>& guide, const depth_options& o = denoise_options()) {
    return denoise_depth<Arch>(execution::seq, depth, confidence, guide, o);
}


/// Upsamples `low` [h, w] by `factor` onto the grid of `guide` [H, W(, C)]: pixel
/// (r, c) of `low` is observed at (factor r, factor c); H and W must lie in
/// [factor (h - 1) + 1, factor h] and likewise for W. An even factor above
/// `o.stage_factor` (8 by default) goes coarse to fine, which converges in fewer
/// iterations: by factor / 2 onto the guide at half resolution (3 x 3 box means at
/// the even pixels), then by 2 from that result, recursively. The colour bandwidth and the
/// data term's weight, unless given, are those whose result best predicts a quarter of the
/// samples held out (`depth/hold_out.hpp`): noisy samples get a weaker data term, a textured
/// guide a wider bandwidth. Throws `std::invalid_argument` as `fill_depth` does, or when the
/// sizes do not fit. The solves and the median run on the threads of `policy`.
template <class Arch = default_arch, execution_policy Ex, class D, class G>
depth_result upsample_depth(Ex policy, const xt::xexpression<D>& low, const xt::xexpression<G>& guide,
                            std::size_t factor, const depth_options& o = {}) {
    return detail::upsample<Arch>(detail::as_parallel(policy), low, nullptr, guide, factor, o);
}
/// The same on the calling thread.
template <class Arch = default_arch, class D, class G>
depth_result upsample_depth(const xt::xexpression<D>& low, const xt::xexpression<G>& guide, std::size_t factor,
                            const depth_options& o = {}) {
    return upsample_depth<Arch>(execution::seq, low, guide, factor, o);
}

/// `upsample_depth` with a confidence per pixel of `low`, `confidence` [h, w], as `fill_depth`
/// takes it (observed at the first stage of coarse to fine). Throws as `upsample_depth` does,
/// or when the confidence's size differs from `low`'s or a confidence is negative or not finite.
template <class Arch = default_arch, execution_policy Ex, class D, class C, class G>
depth_result upsample_depth(Ex policy, const xt::xexpression<D>& low, const xt::xexpression<C>& confidence,
                            const xt::xexpression<G>& guide, std::size_t factor, const depth_options& o = {}) {
    const buffer<double> c = detail::confidences(confidence, low, "upsample_depth");
    return detail::upsample<Arch>(detail::as_parallel(policy), low, c.data(), guide, factor, o);
}
/// The same on the calling thread.
template <class Arch = default_arch, class D, class C, class G>
depth_result upsample_depth(const xt::xexpression<D>& low, const xt::xexpression<C>& confidence,
                            const xt::xexpression<G>& guide, std::size_t factor, const depth_options& o = {}) {
    return upsample_depth<Arch>(execution::seq, low, confidence, guide, factor, o);
}

}  // namespace nonlocal
