// nlm_denoise and fill_depth on tiny images (up to 16 x 16) and options drawn from the
// input, out-of-range ones included. Each must refuse (with std::invalid_argument) exactly
// the inputs its documentation says it refuses, and otherwise keep its promises: non-local
// means is a weighted mean, so every output lies within its channel's input range; the
// depth models average the observations, and fill_depth's result lies within their range,
// converged or not, with or without a confidence map, the robust term, flying pixels, the
// median of the observations and occlusion-aware filling.
#include <nonlocal/nonlocal.hpp>

#include "fuzz_support.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace {

/// A parameter as drawn: usually in its range, sometimes 0, negative, NaN or infinite.
double drawn_parameter(FuzzedDataProvider& in, double typical) {
    switch (in.ConsumeIntegralInRange(0, 15)) {
        case 0: return 0;
        case 1: return -typical;
        case 2: return std::numeric_limits<double>::quiet_NaN();
        case 3: return std::numeric_limits<double>::infinity();
        default: return typical * in.ConsumeIntegralInRange(1, 64) / 16.0;
    }
}

xt::xtensor<float, 3> drawn_image(FuzzedDataProvider& in, std::size_t h, std::size_t w, std::size_t c) {
    xt::xtensor<float, 3> image = xt::empty<float>({h, w, c});
    for (float& x : image) x = float(in.ConsumeIntegral<std::uint8_t>());
    return image;
}

void denoise(FuzzedDataProvider& in) {
    const std::size_t h = in.ConsumeIntegralInRange(0, 16), w = in.ConsumeIntegralInRange(0, 16);
    const std::size_t c = in.ConsumeBool() ? 1 : 3;
    nonlocal::nlm_options o;
    o.patch_radius = in.ConsumeIntegralInRange(0, 4);
    o.search_radius = in.ConsumeIntegralInRange(0, 6);
    o.h = in.ConsumeBool() ? 0 : drawn_parameter(in, 20);
    o.sigma = drawn_parameter(in, 10);
    const bool with_nan = in.ConsumeIntegralInRange(0, 7) == 0;
    xt::xtensor<float, 3> image = drawn_image(in, h, w, c);
    if (with_nan && image.size()) image.data()[in.ConsumeIntegralInRange<std::size_t>(0, image.size() - 1)] = NAN;
    const double strength = o.h > 0 ? o.h : o.h_per_sigma * o.sigma;
    const bool valid = image.size() > 0 && !(with_nan && image.size()) && std::isfinite(o.sigma) && o.sigma >= 0 &&
                       o.h >= 0 && std::isfinite(strength) && strength > 0 && o.patch_radius <= std::max(h, w);
    xt::xtensor<float, 3> out;
    const bool ran = nonlocal::fuzz::completed<std::invalid_argument>(
        [&] { out = nonlocal::nlm_denoise(nonlocal::execution::parallel_policy{int(c)}, image, o); });
    if (ran != valid)
        std::fprintf(stderr, "%zu x %zu x %zu, h = %g, sigma = %g, NaN: %d, patch %zu, search %zu\n", h, w, c, o.h, o.sigma,
                     int(with_nan), o.patch_radius, o.search_radius);
    nonlocal::fuzz::require(ran == valid, "nlm_denoise refuses the inputs its documentation lists, and only them");
    if (!ran) return;
    nonlocal::fuzz::require(out.shape() == image.shape(), "nlm_denoise keeps the shape");
    for (std::size_t ch = 0; ch < c; ++ch) {
        float lo = INFINITY, hi = -INFINITY;
        for (std::size_t t = ch; t < image.size(); t += c) lo = std::min(lo, image.data()[t]), hi = std::max(hi, image.data()[t]);
        for (std::size_t t = ch; t < out.size(); t += c)
            nonlocal::fuzz::require(out.data()[t] >= lo - 1e-3f * (1 + hi - lo) && out.data()[t] <= hi + 1e-3f * (1 + hi - lo),
                                    "non-local means stays within the channel's range");
    }
}

void fill(FuzzedDataProvider& in) {
    const std::size_t h = in.ConsumeIntegralInRange(0, 16), w = in.ConsumeIntegralInRange(0, 16);
    const std::size_t gh = in.ConsumeIntegralInRange(0, 7) == 0 ? in.ConsumeIntegralInRange(0, 16) : h;
    const std::size_t c = in.ConsumeBool() ? 1 : 3;
    nonlocal::depth_options o = nonlocal::fill_options();
    o.model = nonlocal::depth_model(in.ConsumeIntegralInRange(0, 2));
    o.connectivity = in.ConsumeBool() ? 8 : 4;
    o.radius = in.ConsumeIntegralInRange(1, 3);
    o.color = in.ConsumeBool() ? nonlocal::color_kernel::laplacian : nonlocal::color_kernel::gaussian;
    o.space = in.ConsumeBool() ? nonlocal::color_space::luma_chroma : nonlocal::color_space::guide;
    o.sigma_r = 0.25 + in.ConsumeIntegralInRange(0, 64) / 4.0;
    o.epsilon_scale = drawn_parameter(in, 0.5);
    o.lambda = drawn_parameter(in, 1);
    o.median_scale = in.ConsumeBool() ? 0 : 0.75;
    o.depth_passes = in.ConsumeIntegralInRange(0, 2);
    o.solver = nonlocal::depth_solver(in.ConsumeIntegralInRange(0, 4));
    const nonlocal::execution::parallel_policy on{in.ConsumeIntegralInRange(1, 2)};
    o.single_precision = in.ConsumeBool();
    o.robust_iterations = in.ConsumeIntegralInRange(0, 3);
    o.flying_pixels = in.ConsumeBool();
    o.median_of_observations = in.ConsumeBool();
    o.occlusions = nonlocal::occlusion_fill(in.ConsumeIntegralInRange(0, 2));
    const xt::xtensor<float, 3> guide = drawn_image(in, gh, w, c);
    xt::xtensor<float, 2> depth = xt::empty<float>({h, w});
    for (float& d : depth) d = in.ConsumeIntegralInRange(0, 3) == 0 ? 0.0f : float(in.ConsumeIntegralInRange(1, 255));
    // A confidence map half the time: levels 0 to 1, sometimes negative or NaN at one pixel.
    const bool confident = in.ConsumeBool();
    const std::size_t ch = confident && in.ConsumeIntegralInRange(0, 7) == 0 ? in.ConsumeIntegralInRange(0, 16) : h;
    xt::xtensor<float, 2> confidence = xt::empty<float>({ch, w});
    for (float& v : confidence) v = float(in.ConsumeIntegralInRange(0, 4)) / 4.0f;
    const int spoiled = confidence.size() > 0 ? in.ConsumeIntegralInRange(0, 7) : 0;   // 1: negative, 2: NaN
    if (confident && spoiled == 1) confidence.data()[in.ConsumeIntegralInRange<std::size_t>(0, confidence.size() - 1)] = -1.0f;
    if (confident && spoiled == 2) confidence.data()[in.ConsumeIntegralInRange<std::size_t>(0, confidence.size() - 1)] = NAN;
    float lo = INFINITY, hi = -INFINITY;
    for (std::size_t i = 0; i < depth.size(); ++i)
        if (const float d = depth.data()[i]; d > 0 && (!confident || ch != h || confidence.data()[i] > 0))
            lo = std::min(lo, d), hi = std::max(hi, d);
    const bool valid = gh == h && lo <= hi && std::isfinite(o.epsilon_scale) && o.epsilon_scale > 0 &&
                       std::isfinite(o.lambda) && o.lambda > 0 && (!confident || (ch == h && spoiled != 1 && spoiled != 2));
    nonlocal::depth_result result;
    const bool ran = nonlocal::fuzz::completed<std::invalid_argument>([&] {
        result = confident ? nonlocal::fill_depth(on, depth, confidence, guide, o) : nonlocal::fill_depth(on, depth, guide, o);
    });
    if (ran != valid)
        std::fprintf(stderr, "%zu x %zu (guide %zu x %zu x %zu, confidence %d: %zu rows, spoiled %d), epsilon_scale = %g, "
                     "lambda = %g, observed %g..%g\n",
                     h, w, gh, w, c, int(confident), ch, spoiled, o.epsilon_scale, o.lambda, double(lo), double(hi));
    nonlocal::fuzz::require(ran == valid, "fill_depth refuses the inputs its documentation lists, and only them");
    if (!ran) return;
    nonlocal::fuzz::require(result.depth.shape() == depth.shape(), "fill_depth keeps the size");
    for (float d : result.depth) {
        if (!(d >= lo && d <= hi))
            std::fprintf(stderr, "%zu x %zu x %zu: depth %g outside %g..%g; model %d, solver %d, connectivity %d, radius %d, "
                         "passes %d, median %g, epsilon_scale %g, lambda %g, sigma_r %g, single %d, iterations %d, residual %g\n",
                         h, w, c, double(d), double(lo), double(hi), int(o.model), int(o.solver), o.connectivity, int(o.radius),
                         int(o.depth_passes), o.median_scale, o.epsilon_scale, o.lambda, o.sigma_r, int(o.single_precision),
                         int(result.report.iterations), double(result.report.relative_residual));
        nonlocal::fuzz::require(d >= lo && d <= hi, "the filled depth lies within the observations' range");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    if (in.ConsumeBool()) denoise(in);
    else fill(in);
    return 0;
}
