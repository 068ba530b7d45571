#pragma once
/// @file depth/flying_pixels.hpp
/// Flying pixels: a time-of-flight pixel that straddles a depth step receives light from both
/// sides and measures a depth between them, floating in the air between foreground and
/// background. They are found here; the depth tasks treat them as missing, so that the
/// colour-guided estimate gives each the depth of the side whose colour it shares, or where
/// the colours do not tell the sides apart a blend of the two. (Moving each all the way to the
/// side nearer in colour, or in its measured depth, raises the error: the colour edges of real
/// scenes are often a pixel off the depth step; see the performance page.)

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/depth/observations.hpp"

namespace nonlocal::detail {

/// Whether v, between a two away on one side and b two away on the other, flies (see
/// `find_flying_pixels`), a3 and b3 three away; on plain values or on batches of them, where a
/// missing value is NaN and fails every comparison.
template <class V>
auto straddles(V a3, V a, V v, V b, V b3, double step) {
    using std::abs, std::max, std::min;   // plain values; batches find xsimd's by argument-dependent lookup
    const V jump = abs(a - b), lo = min(a, b), hi = max(a, b), eighth = V(0.125) * jump, fifth = V(0.2) * jump;
    return (jump > V(step)) & (abs(a - a3) < eighth) & (abs(b - b3) < eighth) & (v > lo + fifth) & (v < hi - fifth);
}

/// The flying pixels of `d`: observed pixels that, along a row, a column or a diagonal, lie
/// between the observations two away on either side, which differ by more than `step`, more
/// than a fifth of their difference from each, where the depth changes less than an eighth of
/// that difference from two to three away on each side. Two away, so that both pixels of a
/// step, mixed each, are found; flat sides, so that a steep slope is not taken for a step (on
/// a plane the change from two to three away is a quarter); a surface one or two pixels thin
/// whose sides agree is not a step either. In row order; pixels 3 or more from the edges a
/// batch at a time.
template <class Arch = default_arch>
std::vector<std::size_t> find_flying_pixels(const observed_depth& d, double step) {
    using batch = xsimd::batch<double, Arch>;
    constexpr std::size_t lanes = batch::size;
    constexpr std::array<std::array<std::ptrdiff_t, 2>, 4> directions{{{0, 1}, {1, 0}, {1, 1}, {1, -1}}};
    const std::size_t H = d.height, W = d.width;
    const buffer<double> value = d.depth_or_nan();
    const auto at = [&](std::ptrdiff_t r, std::ptrdiff_t c) {
        return r < 0 || c < 0 || r >= std::ptrdiff_t(H) || c >= std::ptrdiff_t(W)
                   ? std::numeric_limits<double>::quiet_NaN()
                   : value[std::size_t(r) * W + std::size_t(c)];
    };
    buffer<std::uint8_t> flies(H * W, 0);
    for (std::size_t r = 0; r < H; ++r) {
        std::size_t c = 0;
        if (r >= 3 && r + 3 < H)
            for (c = 3; c + lanes + 3 <= W; c += lanes) {
                const auto load = [&](std::ptrdiff_t dy, std::ptrdiff_t dx) {
                    return batch::load_unaligned(&value[std::size_t(std::ptrdiff_t(r) + dy) * W + std::size_t(std::ptrdiff_t(c) + dx)]);
                };
                const batch v = load(0, 0);
                xsimd::batch_bool<double, Arch> any(false);
                for (const auto& [dy, dx] : directions)
                    any = any | straddles(load(-3 * dy, -3 * dx), load(-2 * dy, -2 * dx), v, load(2 * dy, 2 * dx),
                                          load(3 * dy, 3 * dx), step);
                alignas(64) double flag[lanes];
                xsimd::select(any, batch(1.0), batch(0.0)).store_aligned(flag);
                for (std::size_t l = 0; l < lanes; ++l) flies[r * W + c + l] = flag[l] != 0;
            }
        for (std::size_t x = 0; x < W; ++x) {
            if (r >= 3 && r + 3 < H && x >= 3 && x < c) continue;   // done a batch at a time
            const std::ptrdiff_t y = std::ptrdiff_t(r), z = std::ptrdiff_t(x);
            for (const auto& [dy, dx] : directions)
                if (straddles(at(y - 3 * dy, z - 3 * dx), at(y - 2 * dy, z - 2 * dx), at(y, z), at(y + 2 * dy, z + 2 * dx),
                              at(y + 3 * dy, z + 3 * dx), step)) {
                    flies[r * W + x] = 1;
                    break;
                }
        }
    }
    std::vector<std::size_t> found;
    for (std::size_t i = 0; i < flies.size(); ++i)
        if (flies[i]) found.push_back(i);
    return found;
}

/// `d` without the flying pixels `flying` (found on it); `d` as it is when every observation is one.
inline void remove_flying_pixels(observed_depth& d, const std::vector<std::size_t>& flying) {
    if (flying.empty() || flying.size() == d.count) return;
    buffer<double> keep(d.depth.size(), 1.0);
    for (const std::size_t i : flying) keep[i] = 0;
    d = d.reweighted(keep);
}

}  // namespace nonlocal::detail
