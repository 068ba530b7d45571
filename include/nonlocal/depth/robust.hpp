#pragma once
/// @file depth/robust.hpp
/// The robust data term of the depth tasks: iteratively reweighted least squares with
/// Tukey's biweight. Each round weighs every observation by its residual to the last
/// estimate, so that wrong measurements (a matcher's mismatches, multipath, a sensor's
/// gross errors), which the edge-aware estimate does not follow, lose their pull on it.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/depth/observations.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/simd/selection_network.hpp"

namespace nonlocal::detail {

/// Tukey's biweight: (1 - (r / c)^2)^2 for |r| < c, 0 beyond.
inline double tukey_weight(double r, double c) {
    const double u = r / c;
    return std::abs(u) < 1 ? (1 - u * u) * (1 - u * u) : 0.0;
}

/// The k-th smallest (from 0) of `values`, each finite and at least 0, as std::nth_element
/// finds it: such doubles order as their bit patterns do, so one pass counts them by their
/// top 16 bits (sign, exponent and 4 bits of mantissa), and nth_element runs on the values
/// of the bucket that holds the k-th alone (a few per cent of them), where it would reorder all.
inline double kth_smallest_non_negative(std::span<const double> values, std::size_t k) {
    constexpr int shift = 48;
    const auto bucket_of = [](double v) { return std::size_t(std::bit_cast<std::uint64_t>(v) >> shift); };
    std::vector<std::uint32_t> count(std::size_t(1) << (64 - shift), 0);
    for (const double v : values) ++count[bucket_of(v)];
    std::size_t bucket = 0, before = 0;
    while (before + count[bucket] <= k) before += count[bucket++];
    auto members = compacted<uninitialized_buffer<double>>(
        values.size(), count[bucket], [&](std::size_t i) { return bucket_of(values[i]) == bucket; },
        [&](std::size_t i) { return values[i]; });
    const auto kth = members.begin() + std::ptrdiff_t(k - before);
    std::nth_element(members.begin(), kth, members.end());
    return *kth;
}

/// The robust standard deviation of the observations' residuals to `estimate`: 1.4826 x their
/// median absolute value (the standard deviation for Gaussian residuals, unmoved by up to half
/// of them being wrong). 0 when nothing is observed.
inline double robust_scale(const observed_depth& d, std::span<const double> estimate) {
    if (d.count == 0) return 0;
    const auto residuals = compacted<uninitialized_buffer<double>>(
        d.depth.size(), d.count, [&](std::size_t i) { return d.observed[i]; },
        [&](std::size_t i) { return std::abs(d.depth[i] - estimate[i]); });
    return 1.4826 * kth_smallest_non_negative(residuals, d.count / 2);
}

/// The median of the observations of `d` in the 5 x 5 window around pixel (r, c) (the upper
/// median of an even count); the pixel must be observed. Near the image's edges the window
/// shrinks on both sides alike (a row at the top edge looks along it, a corner at itself), so
/// that it stays symmetric about the pixel, where the median of a plane is the plane.
inline double observed_median(const observed_depth& d, std::size_t r, std::size_t c) {
    constexpr std::size_t radius = 2;
    const std::size_t ry = std::min({radius, r, d.height - 1 - r}), rx = std::min({radius, c, d.width - 1 - c});
    std::array<double, (2 * radius + 1) * (2 * radius + 1)> window;
    std::size_t n = 0;
    for (std::size_t y = r - ry; y <= r + ry; ++y)
        for (std::size_t x = c - rx; x <= c + rx; ++x)
            if (const std::size_t j = y * d.width + x; d.observed[j]) window[n++] = d.depth[j];
    std::nth_element(window.begin(), window.begin() + std::ptrdiff_t(n / 2), window.begin() + std::ptrdiff_t(n));
    return window[n / 2];
}

/// `observed_medians` computed in T (see there).
template <class T, class Arch>
buffer<double> observed_medians_in(const observed_depth& d) {
    using batch = xsimd::batch<T, Arch>;
    using network = fixed_median_network<2>;
    constexpr std::size_t lanes = batch::size, side = network::side;
    const std::size_t H = d.height, W = d.width;
    buffer<double> median(d.depth.size(), 0.0);
    const uninitialized_buffer<T> value = d.template depth_or_nan<T>();
    const batch infinity(std::numeric_limits<T>::infinity()), one(1), zero(0);
    for (std::size_t r = 0; r < H; ++r) {
        // Batches from column 2 on, the last one moved back to end at column W - 3 (recomputing
        // a few windows) so that only the two columns at each edge go one at a time.
        const bool batched = r >= 2 && r + 2 < H && W >= lanes + 4;
        for (std::size_t start = 2; batched && start < W - 2; start += lanes) {
            const std::size_t c = std::min(start, W - 2 - lanes);
            const std::size_t first = (r - 2) * W + c - 2;   // the windows' top-left values
            batch count = zero;
            for (std::size_t y = 0; y < side; ++y)
                for (std::size_t x = 0; x < side; ++x) {
                    const batch v = batch::load_unaligned(&value[first + y * W + x]);
                    count += xsimd::select(xsimd::isnan(v), zero, one);
                }
            const batch below = batch(T(12)) - xsimd::floor(count * batch(T(0.5)));   // a, per window
            batch missing = zero, v[network::slots];
            for (std::size_t y = 0; y < side; ++y)
                for (std::size_t x = 0; x < side; ++x) {
                    const batch observed = batch::load_unaligned(&value[first + y * W + x]);
                    const auto absent = xsimd::isnan(observed);
                    v[y * side + x] = xsimd::select(absent, xsimd::select(missing < below, -infinity, infinity), observed);
                    missing += xsimd::select(absent, one, zero);
                }
            network::run<1>(v);
            const std::size_t at = r * W + c;
            alignas(64) T out[lanes];
            xsimd::select(xsimd::isnan(batch::load_unaligned(&value[at])), zero, v[network::output]).store_aligned(out);
            for (std::size_t l = 0; l < lanes; ++l) median[at + l] = double(out[l]);
        }
        for (std::size_t x = 0; x < W; ++x) {
            const bool vectorised = batched && x >= 2 && x < W - 2;
            if (!vectorised && d.observed[r * W + x]) median[r * W + x] = observed_median(d, r, x);
        }
    }
    return median;
}

/// `observed_median` at every observed pixel of `d`, 0 elsewhere. Pixels 2 or more from the
/// edges go a batch of neighbours at a time through the median network of 25 values: of a
/// window with n observations, a = 12 - floor(n / 2) missing values enter as -inf and the
/// others as +inf, so that the network's middle value (rank 12) is the observations' rank
/// floor(n / 2), the upper median. In float, twice as many windows a batch, when every
/// observed depth is a float (depth read from float maps, 16-bit PNGs or integers): the
/// network only selects, so the medians are the same. The rest go through `observed_median`.
template <class Arch = default_arch>
buffer<double> observed_medians(const observed_depth& d) {
    bool floats = true;
    for (std::size_t i = 0; i < d.depth.size(); ++i) floats &= double(float(d.depth[i])) == d.depth[i];   // 0 where missing
    return floats ? observed_medians_in<float, Arch>(d) : observed_medians_in<double, Arch>(d);
}

/// Tukey's weight of every observation's residual (1 where nothing is observed), with c =
/// `robust_threshold` x `robust_scale`, at least half a depth step. The residual is the smaller
/// of the one to `estimate` and the one to `median` (`observed_medians`): an observation is
/// rejected only when it disagrees with both the edge-aware estimate and its neighbours (a
/// pixel at a depth step whose colour edge is a pixel off keeps the median of its side, a
/// plane's edge its exact median).
inline buffer<double> robust_weights(const observed_depth& d, std::span<const double> estimate, std::span<const double> median,
                                     const depth_options& o) {
    const double c = std::max(o.robust_threshold * robust_scale(d, estimate), 0.5 * depth_step(d, o));
    buffer<double> weights(d.depth.size(), 1.0);
    if (!(c > 0)) return weights;   // a constant depth: nothing to reject
    for (std::size_t i = 0; i < d.depth.size(); ++i) {   // every pixel, kept where observed: no branch on the mask
        const double tukey = tukey_weight(std::min(std::abs(d.depth[i] - estimate[i]), std::abs(d.depth[i] - median[i])), c);
        weights[i] = d.observed[i] ? tukey : 1.0;
    }
    return weights;
}

/// Runs `estimate(observations, report)` on `d`, then re-estimates with the observations
/// reweighted by `robust_weights` until no weight changes by more than `o.robust_tolerance`,
/// at most `o.robust_iterations` times. Leaves in `d` the observations of the last
/// estimate (with their weights) and in `result` the rounds, the rejected count and the
/// solves' report; returns the last estimate.
template <class Arch, class Estimate>
auto estimate_robustly(Estimate&& estimate, observed_depth& d, const depth_options& o, depth_result& result) {
    auto x = estimate(d, result.report);
    if (o.robust_iterations == 0) return x;
    const observed_depth measured = d;
    const buffer<double> median = observed_medians<Arch>(measured);
    buffer<double> weights(d.depth.size(), 1.0);
    for (std::size_t round = 0; round < o.robust_iterations; ++round) {
        buffer<double> next = robust_weights(measured, x, median, o);
        double change = 0;
        for (std::size_t i = 0; i < next.size(); ++i) change = std::max(change, std::abs(next[i] - weights[i]));
        if (change <= o.robust_tolerance) break;
        observed_depth kept = measured.reweighted(next);
        if (kept.count == 0) break;   // cannot happen with c above the median residual; kept for safety
        weights = std::move(next), d = std::move(kept);
        solve_report report;
        x = estimate(d, report);
        result.report = one_report(result.report.method, result.report, report);
        result.robust_iterations = round + 1;
    }
    result.rejected = measured.count - d.count;
    return x;
}

}  // namespace nonlocal::detail
