#pragma once
/// @file depth/flying_pixels.hpp
/// Flying pixels: a time-of-flight pixel that straddles a depth step receives light from both
/// sides and measures a depth between them, floating in the air between foreground and
/// background. They are found here, and where their neighbours tell which side a flying pixel
/// touches it takes that side's depth (`flying_pixel_sides`); the depth tasks treat the rest as
/// missing, so that the colour-guided estimate gives each the depth of the side whose colour it
/// shares, or where the colours do not tell the sides apart a blend of the two. (Moving each of
/// those all the way to the side nearer in colour, or in its measured depth, raises the error:
/// the colour edges of real scenes are often a pixel off the depth step; see the performance
/// page.)

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

/// The four directions along which a pixel can straddle a step: a row, a column, the diagonals.
inline constexpr std::array<std::array<std::ptrdiff_t, 2>, 4> step_directions{{{0, 1}, {1, 0}, {1, 1}, {1, -1}}};

/// The observed depths of `d` by row and column, NaN where missing or outside the image.
struct depth_lookup {
    uninitialized_buffer<double> value;
    std::size_t height, width;
    explicit depth_lookup(const observed_depth& d) : value(d.depth_or_nan()), height(d.height), width(d.width) {}
    bool inside(std::ptrdiff_t r, std::ptrdiff_t c) const {
        return r >= 0 && c >= 0 && r < std::ptrdiff_t(height) && c < std::ptrdiff_t(width);
    }
    double operator()(std::ptrdiff_t r, std::ptrdiff_t c) const {
        return inside(r, c) ? value[std::size_t(r) * width + std::size_t(c)] : std::numeric_limits<double>::quiet_NaN();
    }
    /// Whether the pixel (r, c) straddles a step along (dy, dx) (`straddles`).
    bool straddles(std::ptrdiff_t r, std::ptrdiff_t c, std::ptrdiff_t dy, std::ptrdiff_t dx, double step) const {
        const auto& self = *this;
        return detail::straddles(self(r - 3 * dy, c - 3 * dx), self(r - 2 * dy, c - 2 * dx), self(r, c),
                                 self(r + 2 * dy, c + 2 * dx), self(r + 3 * dy, c + 3 * dx), step);
    }
};

/// The flying pixels of the observations `at` looks up: observed pixels that, along a row, a
/// column or a diagonal, lie between the observations two away on either side, which differ by
/// more than `step`, more than a fifth of their difference from each, where the depth changes
/// less than an eighth of that difference from two to three away on each side. Two away, so
/// that both pixels of a step, mixed each, are found; flat sides, so that a steep slope is not
/// taken for a step (on a plane the change from two to three away is a quarter); a surface one
/// or two pixels thin whose sides agree is not a step either. In row order; pixels 3 or more
/// from the edges a batch at a time.
template <class Arch = default_arch>
std::vector<std::size_t> find_flying_pixels(const depth_lookup& at, double step) {
    using batch = xsimd::batch<double, Arch>;
    constexpr std::size_t lanes = batch::size;
    const std::size_t H = at.height, W = at.width;
    buffer<std::uint8_t> flies(H * W, 0);
    for (std::size_t r = 0; r < H; ++r) {
        std::size_t c = 0;
        if (r >= 3 && r + 3 < H)
            for (c = 3; c + lanes + 3 <= W; c += lanes) {
                const auto load = [&](std::ptrdiff_t dy, std::ptrdiff_t dx) {
                    return batch::load_unaligned(&at.value[std::size_t(std::ptrdiff_t(r) + dy) * W + std::size_t(std::ptrdiff_t(c) + dx)]);
                };
                const batch v = load(0, 0);
                xsimd::batch_bool<double, Arch> any(false);
                for (const auto& [dy, dx] : step_directions)
                    any = any | straddles(load(-3 * dy, -3 * dx), load(-2 * dy, -2 * dx), v, load(2 * dy, 2 * dx),
                                          load(3 * dy, 3 * dx), step);
                alignas(64) double flag[lanes];
                xsimd::select(any, batch(1.0), batch(0.0)).store_aligned(flag);
                for (std::size_t l = 0; l < lanes; ++l) flies[r * W + c + l] = flag[l] != 0;
            }
        for (std::size_t x = 0; x < W; ++x) {
            if (r >= 3 && r + 3 < H && x >= 3 && x < c) continue;   // done a batch at a time
            const std::ptrdiff_t y = std::ptrdiff_t(r), z = std::ptrdiff_t(x);
            for (const auto& [dy, dx] : step_directions)
                if (at.straddles(y, z, dy, dx, step)) {
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

/// `find_flying_pixels` on the observations `d`.
template <class Arch = default_arch>
std::vector<std::size_t> find_flying_pixels(const observed_depth& d, double step) {
    return find_flying_pixels<Arch>(depth_lookup(d), step);
}

/// A flying pixel whose side its neighbours tell, and that side's depth.
struct flying_side {
    std::size_t pixel;
    double depth;
};

/// The side that each of the flying pixels `flying` (found on the observations `at` looks up
/// with `step`, in row order) touches, where its neighbours tell it. Along each direction in
/// which a flying pixel straddles a step, its two neighbours: when one of them flies too, the
/// two are the band between the sides, and it touches the side beyond the other neighbour,
/// whose depth is the mean of that side's two nearest observations; when neither flies and
/// they agree, it lies between two observations of one side (its partner across the step
/// measured its own side), their mean. Depths that disagree by more than `step` between
/// directions or within a side tell nothing; a band of one flying pixel between the sides
/// tells nothing either. The pixels told, in row order, with the mean of their directions'
/// depths.
inline std::vector<flying_side> flying_pixel_sides(const depth_lookup& at, const std::vector<std::size_t>& flying, double step) {
    const std::size_t W = at.width;
    buffer<std::uint8_t> flies(at.height * W, 0);
    for (const std::size_t i : flying) flies[i] = 1;
    const auto flies_at = [&](std::ptrdiff_t r, std::ptrdiff_t c) {   // outside or missing: not flying
        return at.inside(r, c) && flies[std::size_t(r) * W + std::size_t(c)];
    };
    const auto agreed = [step](double a, double b) { return std::abs(a - b) < step; };   // false when either is NaN
    std::vector<flying_side> told;
    for (const std::size_t i : flying) {
        const std::ptrdiff_t y = std::ptrdiff_t(i / W), x = std::ptrdiff_t(i % W);
        double sum = 0, lowest = std::numeric_limits<double>::infinity(), highest = -lowest;
        std::size_t count = 0;
        for (const auto& [dy, dx] : step_directions) {
            if (!at.straddles(y, x, dy, dx, step)) continue;
            const bool before = flies_at(y - dy, x - dx), after = flies_at(y + dy, x + dx);
            const double a = at(y - dy, x - dx), b = at(y + dy, x + dx);
            double side = std::numeric_limits<double>::quiet_NaN();
            if (before != after) {   // the band of two: the side beyond the neighbour that does not fly
                const std::ptrdiff_t s = before ? 1 : -1;
                const double near = at(y + s * dy, x + s * dx), next = at(y + 2 * s * dy, x + 2 * s * dx);
                if (agreed(near, next)) side = 0.5 * (near + next);
            } else if (!before && agreed(a, b)) {
                side = 0.5 * (a + b);
            }
            if (std::isnan(side)) continue;
            sum += side, ++count, lowest = std::min(lowest, side), highest = std::max(highest, side);
        }
        if (count > 0 && highest - lowest < step) told.push_back({i, sum / double(count)});
    }
    return told;
}

/// `d` without the flying pixels `flying` (found on it); `d` as it is when every observation is one.
inline void remove_flying_pixels(observed_depth& d, const std::vector<std::size_t>& flying) {
    if (!flying.empty() && flying.size() < d.count) d.forget(flying);
}

}  // namespace nonlocal::detail
