#pragma once
/// @file depth/flying_pixels.hpp
/// Flying pixels: a time-of-flight pixel that straddles a depth step receives light from both
/// sides and measures a depth between them, floating in the air between foreground and
/// background. They are found here; the depth tasks treat them as missing, so that the
/// colour-guided estimate gives each the depth of the side whose colour it shares, or where
/// the colours do not tell the sides apart a blend of the two. (Moving each all the way to the
/// side nearer in colour, or in its measured depth, raises the error: the colour edges of real
/// scenes are often a pixel off the depth step; see the performance page.)

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "nonlocal/depth/observations.hpp"

namespace nonlocal::detail {

/// The flying pixels of `d`: observed pixels that, along a row, a column or a diagonal, lie
/// between the observations two away on either side, which differ by more than `step`, more
/// than a fifth of their difference from each, where the depth changes less than an eighth of
/// that difference from two to three away on each side. Two away, so that both pixels of a
/// step, mixed each, are found; flat sides, so that a steep slope is not taken for a step (on
/// a plane the change from two to three away is a quarter); a surface one or two pixels thin
/// whose sides agree is not a step either.
inline std::vector<std::size_t> find_flying_pixels(const observed_depth& d, double step) {
    constexpr std::array<std::array<int, 2>, 4> directions{{{0, 1}, {1, 0}, {1, 1}, {1, -1}}};
    const std::ptrdiff_t H = std::ptrdiff_t(d.height), W = std::ptrdiff_t(d.width);
    const auto observed = [&](std::ptrdiff_t r, std::ptrdiff_t c) {
        return r >= 0 && c >= 0 && r < H && c < W && d.observed[std::size_t(r * W + c)];
    };
    const auto at = [&](std::ptrdiff_t r, std::ptrdiff_t c) { return d.depth[std::size_t(r * W + c)]; };
    std::vector<std::size_t> found;
    for (std::ptrdiff_t r = 0; r < H; ++r)
        for (std::ptrdiff_t c = 0; c < W; ++c) {
            if (!d.observed[std::size_t(r * W + c)]) continue;
            for (const auto& [dy, dx] : directions) {
                if (!observed(r - 3 * dy, c - 3 * dx) || !observed(r - 2 * dy, c - 2 * dx) || !observed(r + 2 * dy, c + 2 * dx) ||
                    !observed(r + 3 * dy, c + 3 * dx))
                    continue;
                const double a = at(r - 2 * dy, c - 2 * dx), b = at(r + 2 * dy, c + 2 * dx), v = at(r, c);
                const double jump = std::abs(a - b), lo = std::min(a, b), hi = std::max(a, b);
                const bool flat = std::abs(a - at(r - 3 * dy, c - 3 * dx)) < 0.125 * jump &&
                                  std::abs(b - at(r + 3 * dy, c + 3 * dx)) < 0.125 * jump;
                if (jump > step && flat && v > lo + 0.2 * jump && v < hi - 0.2 * jump) {
                    found.push_back(std::size_t(r * W + c));
                    break;
                }
            }
        }
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
