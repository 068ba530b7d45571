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
#include <limits>
#include <span>

#include "nonlocal/buffer.hpp"
#include "nonlocal/depth/observations.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/solve/ar_system.hpp"

namespace nonlocal::detail {

/// Calls visit(i, depth, distance) for every missing pixel i of `d` and each of the 8
/// directions in which an observation lies from it, with the first one's depth and distance
/// (in pixels, a diagonal step sqrt 2).
template <class Visit>
void first_observations(const observed_depth& d, Visit&& visit) {
    constexpr double none = std::numeric_limits<double>::infinity();
    const std::size_t H = d.height, W = d.width;
    buffer<double> met(H * W), distance(H * W);
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
            if (dy == 0 && dx == 0) continue;
            const double length = dy != 0 && dx != 0 ? std::sqrt(2.0) : 1.0;
            // met[i]: the first observation from i along -(dy, dx); i is visited after that neighbour.
            for (std::size_t k = 0; k < H; ++k) {
                const std::size_t r = dy >= 0 ? k : H - 1 - k;
                for (std::size_t l = 0; l < W; ++l) {
                    const std::size_t c = dx >= 0 ? l : W - 1 - l, i = r * W + c;
                    const std::ptrdiff_t pr = std::ptrdiff_t(r) - dy, pc = std::ptrdiff_t(c) - dx;
                    if (pr < 0 || pc < 0 || pr >= std::ptrdiff_t(H) || pc >= std::ptrdiff_t(W)) {
                        met[i] = none;
                        continue;
                    }
                    const std::size_t p = std::size_t(pr) * W + std::size_t(pc);
                    met[i] = d.observed[p] ? d.depth[p] : met[p];
                    distance[i] = d.observed[p] ? length : distance[p] + length;
                    if (!d.observed[i] && met[i] != none) visit(i, met[i], distance[i]);
                }
            }
        }
}

/// The far side of every missing pixel (see the file's comment); NaN where fewer than two
/// directions meet an observation, and at observed pixels.
struct far_side {
    buffer<double> depth;          ///< the second farthest first observation
    buffer<double> interpolation;  ///< the far side's first observations' mean, weighted by inverse distance
    double sign = 1;               ///< +1 where smaller depths are farther, -1 where larger ones are
    double step = 0;               ///< nearer than `depth` by more than this: the near side

    far_side(const observed_depth& d, occlusion_fill fill, double depth_step)
        : depth(d.depth.size(), std::numeric_limits<double>::quiet_NaN()), interpolation(depth),
          sign(fill == occlusion_fill::from_larger ? -1.0 : 1.0), step(depth_step) {
        constexpr double none = std::numeric_limits<double>::infinity();
        buffer<double> farthest(d.depth.size(), none), second(d.depth.size(), none);   // of sign x depth
        first_observations(d, [&](std::size_t i, double v, double) {
            const double s = sign * v;
            if (s < farthest[i]) second[i] = farthest[i], farthest[i] = s;
            else if (s < second[i]) second[i] = s;
        });
        buffer<double> sum(d.depth.size(), 0.0), weights(d.depth.size(), 0.0);
        first_observations(d, [&](std::size_t i, double v, double distance) {
            if (sign * v <= second[i] + step) sum[i] += v / distance, weights[i] += 1 / distance;
        });
        for (std::size_t i = 0; i < depth.size(); ++i)
            if (second[i] != none) depth[i] = sign * second[i], interpolation[i] = sum[i] / weights[i];
    }
    /// Whether observation `o` of `d` is on the near side of missing pixel `hole`.
    bool near_side(const observed_depth& d, std::size_t hole, std::size_t o) const {
        return !d.observed[hole] && d.observed[o] && sign * (d.depth[o] - depth[hole]) > step;
    }
};

/// Sets to `weight` A's edges between each missing pixel of `d` and its near side.
template <class T, class Arch>
void cut_near_side(ar_system<T, Arch>& A, const observed_depth& d, const far_side& far, double weight) {
    const std::size_t H = A.height, W = A.width;
    A.reweight([&](std::size_t dir, std::span<T> plane) {
        const std::ptrdiff_t dy = A.offsets[dir].dy, dx = A.offsets[dir].dx;
        for (std::size_t r = 0; r < H; ++r)
            for (std::size_t c = 0; c < W; ++c) {
                const std::ptrdiff_t qr = std::ptrdiff_t(r) + dy, qc = std::ptrdiff_t(c) + dx;
                if (qr < 0 || qc < 0 || qr >= std::ptrdiff_t(H) || qc >= std::ptrdiff_t(W)) continue;
                const std::size_t p = r * W + c, q = std::size_t(qr) * W + std::size_t(qc);
                if (far.near_side(d, p, q) || far.near_side(d, q, p)) plane[p] = std::min(plane[p], T(weight));
            }
    });
}

}  // namespace nonlocal::detail
