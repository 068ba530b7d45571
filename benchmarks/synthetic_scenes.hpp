#pragma once
// Scenes whose depth is exact, for the depth protocols beyond Aloe: a slanted background
// plane, a box facing the camera and a sphere's cap in front of it, 640 x 480, depths (in
// disparity-like units) about 40 to 200, placed by a seed. The surfaces are textured with two
// photographs: the box with the other photograph than the background (a colour edge on its
// depth edge), except in scene 1, where it continues the background's (a depth edge without a
// colour edge); a painted stripe pattern on the background's upper part is a colour edge
// without a depth edge.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>

#include <xtensor/xtensor.hpp>

namespace nonlocal::bench {

struct synthetic_scene {
    xt::xtensor<float, 3> guide;   ///< RGB, 0..255
    xt::xtensor<float, 2> truth;   ///< depth at every pixel
};

/// Scene `seed` (0, 1, 2, ...) textured with `a` and `b` ([h, w, 3] photographs).
inline synthetic_scene make_scene(unsigned seed, const xt::xtensor<std::uint8_t, 3>& a, const xt::xtensor<std::uint8_t, 3>& b) {
    constexpr std::size_t H = 480, W = 640;
    synthetic_scene s{xt::empty<float>({H, W, std::size_t(3)}), xt::empty<float>({H, W})};
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> u(0, 1);
    const double base = 40 + 30 * u(gen), slope_x = 0.05 * u(gen), slope_y = 0.08 * u(gen);
    const double sphere_x = 200 + 200 * u(gen), sphere_y = 150 + 150 * u(gen), radius = 60 + 40 * u(gen);
    const double box_x = 60 + 100 * u(gen), box_y = 60 + 100 * u(gen);
    const auto texel = [](const xt::xtensor<std::uint8_t, 3>& t, std::size_t r, std::size_t c, std::size_t k) {
        return float(t(std::min(r, t.shape(0) - 1), std::min(c, t.shape(1) - 1), k));
    };
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            double depth = base + slope_x * double(c) + slope_y * double(r);
            const xt::xtensor<std::uint8_t, 3>* texture = &a;
            std::size_t tr = r, tc = c;
            bool stripe = (c / 40) % 5 == 2 && r < 200;
            if (double(c) >= box_x && double(c) < box_x + 180 && double(r) >= box_y && double(r) < box_y + 120) {
                depth = 150, texture = seed == 1 ? &a : &b, tr = r + 37, tc = c + 11, stripe = false;
            }
            const double dx = double(c) - sphere_x, dy = double(r) - sphere_y;
            if (dx * dx + dy * dy < radius * radius) {
                depth = 200 - 0.6 * std::sqrt(radius * radius - dx * dx - dy * dy);
                texture = &b, tr = 2 * r, tc = 2 * c, stripe = false;
            }
            s.truth(r, c) = float(depth);
            for (std::size_t k = 0; k < 3; ++k) {
                const float v = texel(*texture, tr, tc, k);
                s.guide(r, c, k) = stripe ? 255.f - v : v;
            }
        }
    return s;
}

}  // namespace nonlocal::bench
