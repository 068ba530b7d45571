#pragma once
/// @file depth/occlusion.hpp
/// Occlusion-aware hole filling (`occlusion_fill`). A hole beside a depth step is taken to
/// belong to the far side, decided per missing pixel: looking from it along the 8 directions
/// of the grid, the first observation met in each, the far side's depth is the second
/// farthest of those (the farthest alone could be one wrong measurement), as semi-global
/// matching fills occlusions (Hirschmueller 2008). The observations within a depth step of
/// it are the far side; those nearer, the near side. The depth tasks then cut the edges
/// between a missing pixel and the near side (`cut_near_side`), so that no path carries the
/// near side into the hole, and where the colour-guided estimate does not reach into a hole
/// (far from every observation its edges lead to), they take the far side's interpolation:
/// the mean of the far side's first observations, each weighted by the inverse of its distance.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/depth/observations.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/solve/ar_system.hpp"

namespace nonlocal::detail {

/// The first observation met from each missing pixel of `d` along each of the 8 directions
/// of the grid, k = 0 .. 7 for (dy, dx) = (-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1),
/// (1, 0), (1, 1): hole h (the h-th of the n missing pixels in row order, at `pixel[h]`)
/// meets depth[k n + h] after steps[k n + h] steps of `length(k)` pixels (a diagonal step
/// sqrt 2), depth +inf when the image's edge comes first. Each direction's hits are written
/// in order.
///
/// One sweep per direction carries each pixel's first observation from the neighbour it
/// looks through, from the row before, where a row's pixels are independent and the loop
/// vectorises; along a row (the two horizontal directions) a hole meets the observation
/// beyond its run of holes, found from the row's list of holes alone. The sweeps read
/// the depths as floats, NaN where missing (a third of the bytes of a mask and a double), and
/// keep them as floats; a depth that a float does not hold exactly is rounded to the nearest.
struct first_observations {
    static constexpr std::size_t directions = 8;
    buffer<std::size_t> pixel;
    uninitialized_buffer<float> depth, steps;   // every entry written by the sweeps

    /// The length in pixels of a step along direction k.
    static double length(std::size_t k) { return k == 0 || k == 2 || k == 5 || k == 7 ? std::sqrt(2.0) : 1.0; }

    explicit first_observations(const observed_depth& d) {
        constexpr float none = std::numeric_limits<float>::infinity();
        const std::size_t H = d.height, W = d.width;
        buffer<std::size_t> holes_before(H + 1, 0);   // of each row
        for (std::size_t r = 0; r < H; ++r) {
            std::size_t holes = 0;
            for (std::size_t c = 0; c < W; ++c) holes += !d.observed[r * W + c];
            holes_before[r + 1] = holes_before[r] + holes;
        }
        pixel = compacted<buffer<std::size_t>>(
            H * W, holes_before[H], [&](std::size_t i) { return !d.observed[i]; }, [](std::size_t i) { return i; });
        depth.resize(pixel.size() * directions), steps.resize(pixel.size() * directions);
        const uninitialized_buffer<float> value = d.depth_or_nan<float>();
        // m[c] and f[c]: the first observation from pixel (r, c) along -(dy, dx) and the steps to
        // it, for this row and (pm, pf) the row before it in the sweep: two rows are all a sweep keeps.
        uninitialized_buffer<float> met(2 * W), far(2 * W);
        std::size_t k = 0;
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                if (dy == 0 && dx == 0) continue;
                for (std::size_t step = 0; step < H; ++step) {
                    const std::size_t r = dy >= 0 ? step : H - 1 - step;
                    const std::size_t first_hole = holes_before[r], row_holes = holes_before[r + 1] - first_hole;
                    float* hit_depth = depth.data() + k * pixel.size() + first_hole;
                    float* hit_steps = steps.data() + k * pixel.size() + first_hole;
                    const std::size_t* column = pixel.data() + first_hole;
                    if (dy == 0) {   // along the row: the observation beyond the run of holes, from the row's list
                        for (std::size_t j = 0; j < row_holes; ++j) {
                            const std::size_t h = dx > 0 ? j : row_holes - 1 - j, c = column[h] - r * W;
                            const std::size_t p = c - std::size_t(dx);   // the pixel it looks through (wraps outside)
                            if (j > 0 && column[dx > 0 ? h - 1 : h + 1] == r * W + p) {   // a hole: on from it
                                hit_depth[h] = hit_depth[dx > 0 ? h - 1 : h + 1];
                                hit_steps[h] = hit_steps[dx > 0 ? h - 1 : h + 1] + 1.f;
                            } else {   // an observation, or the image's edge
                                const bool outside = p >= W;
                                hit_depth[h] = outside ? none : value[r * W + p], hit_steps[h] = outside ? 0.f : 1.f;
                            }
                        }
                        continue;
                    }
                    float* __restrict m = met.data() + (step % 2) * W;
                    float* __restrict f = far.data() + (step % 2) * W;
                    if (step == 0) {   // the sweep's first row: nothing before it
                        std::fill(m, m + W, none), std::fill(f, f + W, 0.f);
                    } else {   // from the row before, r - dy, shifted by dx
                        const std::size_t pr = std::size_t(std::ptrdiff_t(r) - dy);
                        const float* __restrict pm = met.data() + (1 - step % 2) * W;
                        const float* __restrict pf = far.data() + (1 - step % 2) * W;
                        const float* before = value.data() + pr * W;
                        const std::size_t first = dx > 0 ? 1 : 0, last = dx < 0 ? W - 1 : W;   // c - dx inside
                        if (dx > 0) m[0] = none, f[0] = 0;
                        if (dx < 0 && W > 0) m[W - 1] = none, f[W - 1] = 0;
                        for (std::size_t c = first; c < last; ++c) {
                            const std::size_t p = c - std::size_t(dx);
                            const float v = before[p];
                            const bool seen = v == v;
                            m[c] = seen ? v : pm[p];
                            f[c] = seen ? 1.f : pf[p] + 1.f;
                        }
                    }
                    // The row's holes, gathered: a list, where a test of every pixel would branch at random.
                    for (std::size_t h = 0; h < row_holes; ++h)
                        hit_depth[h] = m[column[h] - r * W], hit_steps[h] = f[column[h] - r * W];
                }
                ++k;
            }
    }
};

/// The far side of every missing pixel (see the file's comment); NaN where fewer than two
/// directions meet an observation, and at observed pixels.
struct far_side {
    buffer<double> depth;          ///< the second farthest first observation
    buffer<double> interpolation;  ///< the far side's first observations' mean, weighted by inverse distance
    buffer<std::size_t> holes;     ///< the missing pixels that have a far side, in row order
    double sign = 1;               ///< +1 where smaller depths are farther, -1 where larger ones are
    double step = 0;               ///< nearer than `depth` by more than this: the near side

    far_side(const observed_depth& d, occlusion_fill fill, double depth_step)
        : depth(d.depth.size(), std::numeric_limits<double>::quiet_NaN()), interpolation(depth),
          sign(fill == occlusion_fill::from_larger ? -1.0 : 1.0), step(depth_step) {
        constexpr double none = std::numeric_limits<double>::infinity();
        const first_observations met(d);
        constexpr std::size_t K = first_observations::directions;
        const std::size_t n = met.pixel.size();
        // Hole by hole without a branch (a loop over the holes that vectorises): the smallest
        // and second smallest of sign x depth (none stays +inf), then the mean over the first
        // observations within a step of the second.
        uninitialized_buffer<double> second_of(n), mean_of(n);
        for (std::size_t h = 0; h < n; ++h) {
            double farthest = none, second = none;
            for (std::size_t k = 0; k < K; ++k) {
                const double v = met.depth[k * n + h], s = v == none ? none : sign * v;
                second = std::min(second, std::max(farthest, s)), farthest = std::min(farthest, s);
            }
            double sum = 0, weights = 0;
            for (std::size_t k = 0; k < K; ++k) {
                const double v = met.depth[k * n + h], distance = met.steps[k * n + h] * first_observations::length(k);
                const bool within = (v != none) & (sign * v <= second + step);
                sum += within ? v / distance : 0.0, weights += within ? 1 / distance : 0.0;
            }
            second_of[h] = second, mean_of[h] = sum / weights;
        }
        holes.reserve(n);
        for (std::size_t h = 0; h < n; ++h) {
            if (second_of[h] == none) continue;   // fewer than two directions meet an observation
            depth[met.pixel[h]] = sign * second_of[h], interpolation[met.pixel[h]] = mean_of[h];
            holes.push_back(met.pixel[h]);
        }
    }
    /// Whether observation `o` of `d` is on the near side of missing pixel `hole`.
    bool near_side(const observed_depth& d, std::size_t hole, std::size_t o) const {
        return (!d.observed[hole]) & (d.observed[o] != 0) & (sign * (d.depth[o] - depth[hole]) > step);   // no branch
    }
};

/// Sets to `weight` A's edges between each missing pixel of `d` and its near side (when
/// `weight` is the smaller): in each direction's plane, the edge from a hole to its neighbour
/// and the edge into it from the neighbour on the other side, visiting the far side's holes
/// only (`d`: the observations `far` was found on, or fewer).
template <class T, class Arch>
void cut_near_side(ar_system<T, Arch>& A, const observed_depth& d, const far_side& far, double weight) {
    const std::ptrdiff_t h = std::ptrdiff_t(A.height()), w = std::ptrdiff_t(A.width());
    A.reweight([&](std::size_t dir, std::span<T> plane) {
        const std::ptrdiff_t dy = A.offsets()[dir].dy, dx = A.offsets()[dir].dx;
        std::ptrdiff_t r = 0, row_start = 0;   // the holes' row: they come in row order
        for (const std::size_t hole : far.holes) {
            while (std::ptrdiff_t(hole) >= row_start + w) ++r, row_start += w;
            const std::ptrdiff_t c = std::ptrdiff_t(hole) - row_start;
            for (const std::ptrdiff_t s : {1, -1}) {   // the edge leaving the hole, then the one entering it
                const std::ptrdiff_t y = r + s * dy, x = c + s * dx;
                if (y < 0 || x < 0 || y >= h || x >= w) continue;
                const std::size_t other = std::size_t(y * w + x);
                T& weight_of_edge = plane[s > 0 ? hole : other];   // written either way: no branch on the depths
                weight_of_edge = far.near_side(d, hole, other) ? std::min(weight_of_edge, T(weight)) : weight_of_edge;
            }
        }
    });
}

}  // namespace nonlocal::detail
