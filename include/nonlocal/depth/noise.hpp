#pragma once
/// @file depth/noise.hpp
/// The observation noise of a depth map, estimated from the map itself.
///
/// Each observation whose 3 x 3 window is observed is compared with the median of its eight
/// neighbours. On a plane the eight neighbours are symmetric about the centre, so their median
/// is the centre's depth and the residual is noise alone: the observation's own noise plus the
/// median's, of standard deviation sigma sqrt(1 + 0.1682) = 1.0809 sigma for Gaussian noise
/// (the variance of the median of 8 standard normals, 0.1682 by Monte Carlo over 4 million
/// draws). A wrong measurement spoils its own residual, not its neighbours' (their median
/// ignores it), and so does a depth step the pixels next to it. The residuals are then fitted as
/// a mixture of that Gaussian and a uniform spread of wrong ones up to the largest residual
/// (expectation-maximisation, from the robust scale 1.4826 times the median absolute residual):
/// wrong measurements and steps, a fifth of the residuals or more, do not inflate the noise, even
/// those that happen to fall among the noise.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <span>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/depth/observations.hpp"
#include "nonlocal/depth/robust.hpp"
#include "nonlocal/detail/errors.hpp"

namespace nonlocal {

/// What `estimate_noise` found.
struct noise_estimate {
    double sigma = 0;            ///< standard deviation of the observations' noise, in depth units
    std::size_t samples = 0;     ///< observations with an observed 3 x 3 window it used (on a large map, of every few rows and columns)
    double left_out = 0;         ///< estimated fraction of those residuals that are not noise (steps, wrong measurements)
};

namespace detail {

/// The most windows a map's estimate visits: a megapixel map costs little more than a small one.
inline constexpr std::size_t max_visited_windows = std::size_t(1) << 17;

/// The histogram the noise's mixture is fitted on: residuals below 16 times the robust start
/// of the noise's scale, in 2048 bins.
inline constexpr double residual_histogram_range = 16;
inline constexpr std::size_t residual_histogram_bins = 2048;

/// Standard deviation of a residual of unit Gaussian noise: the observation's and the median's of 8.
inline constexpr double median8_residual_scale = 1.0809;

/// The 4th and 5th smallest of eight values (none NaN), without a branch: each half sorted
/// by five compare-exchanges, then the two halves' bitonic split (the i-th of one against the
/// (3-i)-th of the other) puts the four smallest on one side, whose largest is the 4th, and
/// the four largest on the other, whose smallest is the 5th.
inline std::pair<double, double> median8_lower_and_upper(double (&v)[8]) {
    const auto exchange = [&](int i, int j) {
        const double lo = std::min(v[i], v[j]), hi = std::max(v[i], v[j]);
        v[i] = lo, v[j] = hi;
    };
    for (int h = 0; h < 8; h += 4) {
        exchange(h, h + 1), exchange(h + 2, h + 3), exchange(h, h + 2), exchange(h + 1, h + 3), exchange(h + 1, h + 2);
    }
    const double lower = std::max(std::max(std::min(v[0], v[7]), std::min(v[1], v[6])),
                                  std::max(std::min(v[2], v[5]), std::min(v[3], v[4])));
    const double upper = std::min(std::min(std::max(v[0], v[7]), std::max(v[1], v[6])),
                                  std::min(std::max(v[2], v[5]), std::max(v[3], v[4])));
    return {lower, upper};
}

/// The noise of the observations `d` (`height` x `width`, 0 or not finite where missing).
template <class T>
noise_estimate estimate_noise(const T* d, std::size_t height, std::size_t width) {
    // On a large map every s-th row and column of them, s the least that visits at most 2^17.
    const double interior = height > 2 && width > 2 ? double(height - 2) * double(width - 2) : 0.0;
    const std::size_t step = std::max<std::size_t>(1, std::size_t(std::ceil(std::sqrt(interior / double(max_visited_windows)))));
    std::vector<double> residuals;
    residuals.reserve(std::size_t(interior) / (step * step) + height + width);
    for (std::size_t r = 1; r + 1 < height; r += step)
        for (std::size_t c = 1; c + 1 < width; c += step) {
            const double center = double(d[r * width + c]);
            if (!valid_depth(center)) continue;
            double around[8];
            std::size_t k = 0;
            bool observed = true;
            for (std::size_t y = r - 1; y <= r + 1; ++y)
                for (std::size_t x = c - 1; x <= c + 1; ++x)
                    if (y != r || x != c) {
                        around[k] = double(d[y * width + x]);
                        observed &= valid_depth(around[k++]);
                    }
            if (!observed) continue;
            const auto [lower, upper] = median8_lower_and_upper(around);
            const double median = (lower + upper) / 2;
            residuals.push_back(std::abs(center - median));
        }
    noise_estimate e;
    e.samples = residuals.size();
    if (residuals.empty()) return e;
    // The residuals' |r| as a mixture: half-normal noise of scale s and, with weight `wrong`,
    // anything up to the largest (wrong measurements, depth steps), fitted by expectation-
    // maximisation from the robust start s = 1.4826 |r| median.
    double s = 1.4826 * kth_smallest_non_negative(residuals, residuals.size() / 2);
    if (s == 0) return e;   // most residuals are 0: noise below the map's precision
    const double largest = *std::max_element(residuals.begin(), residuals.end());
    // The fit runs on a histogram of the residuals below 16 s (each bin 1/128 of s wide, its
    // count and its residuals' sum of squares), and on the few above one by one: each round
    // evaluates 2048 densities, not one per residual, and squares are summed exactly.
    const double range = std::min(largest, residual_histogram_range * s);
    const double bin_width = range / double(residual_histogram_bins);
    std::vector<double> counts(residual_histogram_bins), square_sums(residual_histogram_bins), centers(residual_histogram_bins);
    std::vector<double> beyond;
    for (const double r : residuals) {
        if (r >= range) {
            beyond.push_back(r);
            continue;
        }
        const auto bin = std::min(residual_histogram_bins - 1, std::size_t(r / bin_width));
        counts[bin] += 1, square_sums[bin] += r * r;
    }
    for (std::size_t b = 0; b < residual_histogram_bins; ++b)
        centers[b] = counts[b] > 0 ? std::sqrt(square_sums[b] / counts[b]) : 0;
    double wrong = 0.1;
    for (int round = 0; round < 100; ++round) {
        const double normal = 2 / (s * std::sqrt(2 * std::numbers::pi)), uniform = 1 / largest;
        const auto noise_share = [&](double r) {   // that r is noise
            const double g = (1 - wrong) * normal * std::exp(-r * r / (2 * s * s));
            return g / (g + wrong * uniform);
        };
        double noise = 0, squares = 0;
        for (std::size_t b = 0; b < residual_histogram_bins; ++b)
            if (counts[b] > 0) {
                const double p = noise_share(centers[b]);
                noise += p * counts[b], squares += p * square_sums[b];
            }
        for (const double r : beyond) {
            const double p = noise_share(r);
            noise += p, squares += p * r * r;
        }
        if (!(squares > 0)) break;   // nothing left that looks like noise: keep the last scale
        const double next = std::sqrt(squares / noise);
        wrong = std::clamp(1 - noise / double(residuals.size()), 1e-6, 1 - 1e-6);
        const bool settled = std::abs(next - s) <= 1e-5 * s;
        s = next;
        if (settled) break;
    }
    e.sigma = s / median8_residual_scale;
    e.left_out = wrong;
    return e;
}

}  // namespace detail

/// The standard deviation of the noise of a depth map's observations (0 or not finite where
/// missing), from the residuals of those with an observed 3 x 3 window against the median of
/// their eight neighbours (see the file's comment). Depth steps and wrong measurements up to a
/// fifth of the observations and more do not count as noise. A map quantised to integers whose
/// residuals are mostly 0 has noise 0: below its own precision. No observation with an
/// observed 3 x 3 window: `sigma` 0 and `samples` 0.
/// Throws `std::invalid_argument` if `depth` is not [H, W].
template <class E>
noise_estimate estimate_noise(const xt::xexpression<E>& depth) {
    const auto& e = depth.derived_cast();
    detail::require(e.dimension() == 2, "estimate_noise",
                    [&] { return "depth must be [H, W], got " + detail::shape_string(e.shape()); });
    const xt::xtensor<double, 2> d = e;
    return detail::estimate_noise(d.data(), d.shape(0), d.shape(1));
}

}  // namespace nonlocal
