#pragma once
// A color map for the pictures of the tools and the demo.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include <xtensor/xtensor.hpp>

namespace nonlocal::tools {

/// Turbo (Mikhailov 2019), a rainbow colour map of even perceived steps, from the polynomial
/// fit of Ruofei Du: x in [0, 1] (clamped) to 8-bit RGB, dark blue through green and yellow
/// to dark red.
inline std::array<std::uint8_t, 3> turbo(double x) {
    x = std::clamp(std::isnan(x) ? 0.0 : x, 0.0, 1.0);
    const double x2 = x * x, x3 = x2 * x, x4 = x2 * x2, x5 = x3 * x2;
    const auto channel = [&](double c0, double c1, double c2, double c3, double c4, double c5) {
        const double v = c0 + c1 * x + c2 * x2 + c3 * x3 + c4 * x4 + c5 * x5;
        return std::uint8_t(std::lround(255 * std::clamp(v, 0.0, 1.0)));
    };
    return {channel(0.13572138, 4.61539260, -42.66032258, 132.13108234, -152.94239396, 59.28637943),
            channel(0.09140261, 2.19418839, 4.84296658, -14.18503333, 4.27729857, 2.82956604),
            channel(0.10667330, 12.64194608, -60.58204836, 110.36276771, -89.90310912, 27.34824973)};
}

/// values [H, W] as 8-bit RGB [H, W, 3] through turbo, lo blue and hi red; values that are not
/// finite, or not `shown(v)`, are black.
template <class Shown>
xt::xtensor<std::uint8_t, 3> color_mapped(const xt::xtensor<float, 2>& values, float lo, float hi, Shown&& shown) {
    xt::xtensor<std::uint8_t, 3> rgb = xt::zeros<std::uint8_t>({values.shape(0), values.shape(1), std::size_t(3)});
    const double span = hi > lo ? double(hi) - lo : 1.0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float v = values.data()[i];
        if (!std::isfinite(v) || !shown(v)) continue;
        const auto color = turbo((double(v) - lo) / span);
        for (std::size_t c = 0; c < 3; ++c) rgb.data()[3 * i + c] = color[c];
    }
    return rgb;
}
/// The same with every finite value shown.
inline xt::xtensor<std::uint8_t, 3> color_mapped(const xt::xtensor<float, 2>& values, float lo, float hi) {
    return color_mapped(values, lo, hi, [](float) { return true; });
}

}  // namespace nonlocal::tools
