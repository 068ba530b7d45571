#pragma once
// The real-sensor depth protocols of the depth evaluation (docs/performance.md), built from a
// ground-truth disparity map d [H, W] (0 = unknown) with fixed seeds: what a stereo matcher or
// structured light gives (occlusion holes, fattened edges, mismatches), and what a
// time-of-flight camera gives (flying pixels, noise growing with distance, outliers, holes).
// Both return the observations, 0 where missing; `depth_steps` is the definition of a step both use,
// and `score` the errors both benchmarks report.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include <nonlocal/depth/tasks.hpp>

namespace nonlocal::bench {

using disparity_map = xt::xtensor<float, 2>;

/// The smallest and largest known disparity.
inline std::pair<float, float> known_range(const disparity_map& d) {
    float lo = INFINITY, hi = -INFINITY;
    for (const float v : d)
        if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    return {lo, hi};
}

/// Calls step(p, q) for every pair of horizontal or vertical neighbours with known disparities
/// differing by more than 8, p the foreground (larger disparity), q the background.
template <class Step>
void depth_steps(const disparity_map& d, Step&& step) {
    const std::size_t H = d.shape(0), W = d.shape(1);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c)
            for (const auto& [dr, dc] : {std::pair<std::size_t, std::size_t>{0, 1}, {1, 0}}) {
                if (r + dr >= H || c + dc >= W) continue;
                const std::size_t i = r * W + c, j = (r + dr) * W + c + dc;
                const float a = d.data()[i], b = d.data()[j];
                if (a <= 0 || b <= 0 || std::abs(a - b) <= 8) continue;
                a > b ? step(i, j) : step(j, i);
            }
}

/// The errors of an estimate over the pixels whose ground truth is known: RMSE, and bad-1 and
/// bad-2, the shares (in %) of pixels off by more than 1 and 2 disparities.
struct depth_errors {
    double rmse = INFINITY, bad1 = INFINITY, bad2 = INFINITY;
};

/// The errors of `estimate` (row-major, the size of `truth`) against `truth` (0 = unknown).
inline depth_errors score(const float* estimate, const disparity_map& truth) {
    double se = 0;
    std::size_t count = 0, over1 = 0, over2 = 0;
    for (std::size_t i = 0; i < truth.size(); ++i)
        if (truth.data()[i] > 0) {
            const double e = double(estimate[i]) - truth.data()[i];
            se += e * e, ++count, over1 += std::abs(e) > 1, over2 += std::abs(e) > 2;
        }
    return {std::sqrt(se / double(count)), 100.0 * double(over1) / double(count), 100.0 * double(over2) / double(count)};
}

/// `count` of the pixels where `eligible`, drawn without replacement.
template <class Eligible>
std::vector<std::size_t> draw_pixels(std::size_t n, double share, Eligible&& eligible, std::mt19937& gen) {
    std::vector<std::size_t> pool;
    for (std::size_t i = 0; i < n; ++i)
        if (eligible(i)) pool.push_back(i);
    std::shuffle(pool.begin(), pool.end(), gen);
    pool.resize(std::size_t(std::llround(share * double(pool.size()))));
    return pool;
}

/// Stereo or structured light: (a) occlusion holes: (y, x) is missing when some x' > x has
/// x' - d(y, x') <= x - d(y, x), hidden in the right view; (b) edge fattening: within 2 pixels of
/// a step on the background side, the foreground's disparity; (c) 3 % of the remaining observed
/// pixels replaced by uniform random disparities over d's range; (d) 10 % of the pixels dropped
/// at random, and every pixel with d = 0; (e) Gaussian noise of sigma 1 on what is left.
inline disparity_map stereo_protocol(const disparity_map& d, unsigned seed = 2024) {
    const std::size_t H = d.shape(0), W = d.shape(1);
    std::mt19937 gen(seed);
    disparity_map out = d;
    std::vector<bool> missing(H * W);
    for (std::size_t r = 0; r < H; ++r) {   // (a), each row from the right
        float nearest = INFINITY;           // min over x' > x of x' - d(y, x')
        for (std::size_t c = W; c-- > 0;) {
            const float v = d(r, c);
            if (v > 0 && nearest <= float(c) - v) missing[r * W + c] = true;
            if (v > 0) nearest = std::min(nearest, float(c) - v);
        }
    }
    depth_steps(d, [&](std::size_t fg, std::size_t bg) {   // (b)
        const std::ptrdiff_t away = std::ptrdiff_t(bg) - std::ptrdiff_t(fg);
        for (std::ptrdiff_t k = 0, p = std::ptrdiff_t(bg); k < 2; ++k, p += away) {
            const bool wrapped = (away == 1 && std::size_t(p) % W == 0) || (away == -1 && std::size_t(p) % W == W - 1);
            if (p < 0 || p >= std::ptrdiff_t(H * W) || wrapped) break;
            if (d.data()[p] > 0 && d.data()[p] < d.data()[fg] - 8) out.data()[p] = std::max(out.data()[p], d.data()[fg]);
        }
    });
    const auto [lo, hi] = known_range(d);
    std::uniform_real_distribution<float> anywhere(lo, hi);
    for (const std::size_t i : draw_pixels(H * W, 0.03, [&](std::size_t i) { return d.data()[i] > 0 && !missing[i]; }, gen))   // (c)
        out.data()[i] = anywhere(gen);
    for (const std::size_t i : draw_pixels(H * W, 0.10, [](std::size_t) { return true; }, gen)) missing[i] = true;   // (d)
    std::normal_distribution<float> noise(0.f, 1.f);
    for (std::size_t i = 0; i < H * W; ++i)   // (d), (e)
        out.data()[i] = missing[i] || d.data()[i] <= 0 ? 0.f : std::max(out.data()[i] + noise(gen), 0.01f);
    return out;
}

/// Time of flight: (a) flying pixels: at each step, the pixel on either side becomes
/// t fg + (1 - t) bg with t uniform in [0, 1]; (b) noise growing with distance, sigma =
/// 0.5 + 2 (dmax - d) / (dmax - dmin); (c) 1 % gross outliers, uniform over d's range;
/// (d) 5 % random holes and every pixel with d = 0.
inline disparity_map tof_protocol(const disparity_map& d, unsigned seed = 2025) {
    const std::size_t n = d.size();
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    disparity_map out = d;
    std::vector<bool> mixed(n);
    depth_steps(d, [&](std::size_t fg, std::size_t bg) {   // (a), each pixel mixed once
        for (const std::size_t p : {fg, bg})
            if (!mixed[p]) {
                const float t = unit(gen);
                out.data()[p] = t * d.data()[fg] + (1 - t) * d.data()[bg], mixed[p] = true;
            }
    });
    const auto [lo, hi] = known_range(d);
    std::normal_distribution<float> noise(0.f, 1.f);
    for (std::size_t i = 0; i < n; ++i)   // (b)
        if (d.data()[i] > 0) out.data()[i] += (0.5f + 2 * (hi - d.data()[i]) / (hi - lo)) * noise(gen);
    std::uniform_real_distribution<float> anywhere(lo, hi);
    for (const std::size_t i : draw_pixels(n, 0.01, [&](std::size_t i) { return d.data()[i] > 0; }, gen))   // (c)
        out.data()[i] = anywhere(gen);
    std::vector<bool> missing(n);
    for (const std::size_t i : draw_pixels(n, 0.05, [](std::size_t) { return true; }, gen)) missing[i] = true;   // (d)
    for (std::size_t i = 0; i < n; ++i)
        out.data()[i] = missing[i] || d.data()[i] <= 0 ? 0.f : std::max(out.data()[i], 0.01f);
    return out;
}

/// The upsampling protocol's samples of `d`: pixel (f r, f c) at (r, c) of a map of ceil(H / f) x
/// ceil(W / f), plus Gaussian noise of `sigma` where it is known (0: none; the seed f 100 + sigma,
/// the noisy value at least 0.5).
inline disparity_map upsampling_samples(const disparity_map& d, std::size_t f, float sigma = 0) {
    disparity_map low = xt::empty<float>({(d.shape(0) + f - 1) / f, (d.shape(1) + f - 1) / f});
    std::mt19937 gen(unsigned(f * 100 + sigma));
    std::normal_distribution<float> noise(0.f, sigma > 0 ? sigma : 1.f);
    for (std::size_t r = 0; r < low.shape(0); ++r)
        for (std::size_t c = 0; c < low.shape(1); ++c) {
            const float t = d(r * f, c * f);
            low(r, c) = sigma > 0 && t > 0 ? std::max(t + noise(gen), 0.5f) : t;
        }
    return low;
}

/// The noise of the noisy upsampling protocol: Gaussian of `sigma` on every sample, or, when
/// `grows_with_distance`, of sigma / 8 on the nearest (largest disparity) growing linearly to
/// `sigma` on the farthest, as a time-of-flight camera's does.
struct sample_noise {
    float sigma = 0;
    bool grows_with_distance = false;
};

/// `upsampling_samples` with `noise` (the seed f 100 + sigma, plus 50 when it grows with
/// distance).
inline disparity_map upsampling_samples(const disparity_map& d, std::size_t f, sample_noise noise) {
    if (!noise.grows_with_distance) return upsampling_samples(d, f, noise.sigma);
    disparity_map low = upsampling_samples(d, f);
    const auto [lo, hi] = known_range(d);
    std::mt19937 gen(unsigned(f * 100 + noise.sigma + 50));
    std::normal_distribution<float> unit(0.f, 1.f);
    for (float& v : low)
        if (v > 0) {
            const float sigma = noise.sigma * (0.125f + 0.875f * (hi - v) / std::max(hi - lo, 1e-6f));
            v = std::max(v + sigma * unit(gen), 0.5f);
        }
    return low;
}

/// What each protocol runs: `sensor_options` of stereo or time of flight (docs/performance.md
/// has what each of their settings does).
inline nonlocal::depth_options sensor_protocol_options(bool stereo) {
    return nonlocal::sensor_options(stereo ? nonlocal::depth_sensor::stereo : nonlocal::depth_sensor::time_of_flight);
}

/// The protocol's options with the separable model on the fast global smoother's two
/// directions (connectivity 4), which suits it on sensor depth better than 8, and on stereo
/// without the depth pass, which does not help it there and costs a fifth of its time
/// (docs/performance.md has both).
inline nonlocal::depth_options separable_for_sensors(bool stereo) {
    nonlocal::depth_options o = sensor_protocol_options(stereo);
    o.model = nonlocal::depth_model::separable, o.connectivity = 4;
    if (stereo) o.depth_passes = 0;
    return o;
}

}  // namespace nonlocal::bench
