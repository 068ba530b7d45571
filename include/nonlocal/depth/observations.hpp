#pragma once
/// @file depth/observations.hpp
/// What a depth task observes: the valid pixels of a depth map on the guide's grid, and
/// the guide's planes on the scale of the colour bandwidth.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/depth/options.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/image/box_interpolation.hpp"
#include "nonlocal/image/color.hpp"
#include "nonlocal/image/pixels.hpp"

namespace nonlocal::detail {

/// Both tests evaluated (`&`, not `&&`): no branch where missing pixels lie at random.
inline bool valid_depth(double d) { return std::isfinite(d) & (d > 0); }

/// The observed depth on the guide's grid: `depth[i]` with confidence `confidence[i]` where
/// `observed[i]`, 0 elsewhere. A pixel is observed when its depth is valid and its
/// confidence positive; the confidence scales its data term. Each pixel is observed at most once.
struct observed_depth {
    std::size_t height = 0, width = 0;
    buffer<double> depth, confidence;
    buffer<std::uint8_t> observed;
    std::size_t count = 0;   ///< of observed pixels
    double lowest = std::numeric_limits<double>::infinity(), highest = -lowest;   ///< of the observed depths

    observed_depth(std::size_t h, std::size_t w) : height(h), width(w), depth(h * w, 0.0), confidence(h * w, 0.0), observed(h * w, 0) {}
    /// Pixel i's depth d with confidence c, observed when d is valid and c > 0. Branch-free,
    /// since missing pixels are often scattered at random.
    void observe(std::size_t i, double d, double c = 1.0) {
        constexpr double infinity = std::numeric_limits<double>::infinity();
        const bool valid = valid_depth(d) & (c > 0);
        count += valid, observed[i] = valid, depth[i] = valid ? d : 0.0, confidence[i] = valid ? c : 0.0;
        lowest = std::min(lowest, valid ? d : infinity), highest = std::max(highest, valid ? d : -infinity);
    }
    /// Observes every pixel, `values` holding height x width depths and `confidences` (when
    /// given) as many confidences.
    template <class V, class C = double>
    void observe_all(const V* values, const C* confidences = nullptr) {
        for (std::size_t i = 0; i < depth.size(); ++i) observe(i, double(values[i]), confidences ? double(confidences[i]) : 1.0);
    }
    /// The same observations with confidence `confidence[i] x weights[i]` (a weight of 0 removes
    /// an observation; `lowest` and `highest` then span the ones kept).
    observed_depth reweighted(std::span<const double> weights) const {
        observed_depth r(height, width);
        for (std::size_t i = 0; i < depth.size(); ++i) r.observe(i, observed[i] ? depth[i] : 0.0, confidence[i] * weights[i]);
        return r;
    }
    /// The same observations without those at `pixels` (observed ones; `lowest` and `highest`
    /// then span the ones kept): `reweighted` with a weight of 0 there, in place.
    void forget(std::span<const std::size_t> pixels) {
        constexpr double infinity = std::numeric_limits<double>::infinity();
        for (const std::size_t i : pixels) observed[i] = 0, depth[i] = 0.0, confidence[i] = 0.0;
        count = 0, lowest = infinity, highest = -infinity;
        for (std::size_t i = 0; i < depth.size(); ++i) {   // no branch on the mask
            count += observed[i];
            lowest = std::min(lowest, observed[i] ? depth[i] : infinity), highest = std::max(highest, observed[i] ? depth[i] : -infinity);
        }
    }
    double fraction() const { return double(count) / double(height * width); }
    /// The observed depths in T (float or double), NaN where nothing is observed: a missing
    /// value then fails every comparison, which lets a batch of pixels test their neighbours
    /// without a mask. Branch-free (the mask sets a quiet NaN's bits on the 0 stored where
    /// nothing is observed), so that the loop vectorises.
    template <class T = double>
    uninitialized_buffer<T> depth_or_nan() const {
        using bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
        const bits nan = std::bit_cast<bits>(std::numeric_limits<T>::quiet_NaN());
        uninitialized_buffer<T> value(depth.size());
        for (std::size_t i = 0; i < depth.size(); ++i)
            value[i] = std::bit_cast<T>(std::bit_cast<bits>(T(depth[i])) | ((bits(observed[i]) - 1) & nan));
        return value;
    }
    /// The mean of c m over the pixels (the observed fraction when every confidence is 1).
    double mean_confidence() const {
        double sum = 0;
        for (const double c : confidence) sum += c;
        return sum / double(height * width);
    }
    /// s c m and s c m d per pixel in T, c the confidences, m the mask of observed pixels and
    /// d their depth: the data terms of the estimators (in an `uninitialized_buffer<T>` where
    /// they need not become a system's, which spares zeroing what is then written).
    template <class T, class Buffer = buffer<T>>
    std::pair<Buffer, Buffer> scaled(double s) const {
        Buffer mask(depth.size()), masked_depth(depth.size());
        for (std::size_t i = 0; i < depth.size(); ++i)
            mask[i] = T(s * confidence[i]), masked_depth[i] = T(s * confidence[i] * depth[i]);
        return {std::move(mask), std::move(masked_depth)};
    }
    /// The largest observed depth less the smallest (0 when nothing is observed).
    double range() const { return count > 0 ? highest - lowest : 0.0; }
};

/// The box interpolation of the observed depth: alpha the confidences, alpha xhat the depth
/// times them (0 where unobserved).
inline box_interpolation observed_interpolation(const observed_depth& d) {
    buffer<double> weighted(d.depth.size());
    for (std::size_t i = 0; i < weighted.size(); ++i) weighted[i] = d.confidence[i] * d.depth[i];
    return box_interpolation(d.height, d.width, d.confidence.data(), weighted.data());
}
/// `o.sigma_d`, or when it is 0, 2 % of the observed depth's range (0 if the observed depth is constant).
inline double depth_bandwidth(const observed_depth& d, const depth_options& o) {
    return o.sigma_d > 0 ? o.sigma_d : 0.02 * d.range();
}

/// `o.step`, or when it is 0, 5 % of the observed depth's range: a depth step.
inline double depth_step(const observed_depth& d, const depth_options& o) { return o.step > 0 ? o.step : 0.05 * d.range(); }

/// A depth map [H, W] as contiguous values; `std::invalid_argument` (from `where`) when it is empty.
template <class D>
struct depth_values : contiguous<value_type_of<D>, 2> {
    static_assert(static_rank<D> == 2, "nonlocal: depth maps are [H, W]");
    static_assert(std::is_arithmetic_v<value_type_of<D>>, "nonlocal: depth maps hold numbers");
    depth_values(const xt::xexpression<D>& depth, std::string_view where) : contiguous<value_type_of<D>, 2>(depth) {
        require(this->shape(0) * this->shape(1) > 0, where,
                [&] { return "the depth map is empty: " + shape_string(this->shape()); });
    }
};

/// The confidences `confidence` [H, W] in row order as doubles; `std::invalid_argument` (from
/// `where`) unless its size is the depth map's and every confidence is finite and at least 0.
template <class C, class D>
buffer<double> confidences(const xt::xexpression<C>& confidence, const xt::xexpression<D>& depth, std::string_view where) {
    static_assert(static_rank<C> == 2, "nonlocal: confidence maps are [H, W], as the depth maps they go with");
    static_assert(std::is_arithmetic_v<value_type_of<C>>, "nonlocal: confidence maps hold numbers");
    const contiguous<value_type_of<C>, 2> c(confidence);
    const auto& shape = depth.derived_cast().shape();
    require(c.shape(0) == std::size_t(shape[0]) && c.shape(1) == std::size_t(shape[1]), where, [&] {
        return "confidence " + shape_string(c.shape()) + " and depth " + shape_string(shape) + " must have the same size";
    });
    buffer<double> out(c.shape(0) * c.shape(1));
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = double(c.data()[i]);
        require(std::isfinite(out[i]) && out[i] >= 0, where, [&] {
            return "the confidence at pixel (" + std::to_string(i / c.shape(1)) + ", " + std::to_string(i % c.shape(1)) +
                   ") is " + std::to_string(out[i]) + ": confidences must be finite and at least 0 (0: missing)";
        });
    }
    return out;
}

/// The height and width of a guide [H, W] or [H, W, C].
template <class G>
std::pair<std::size_t, std::size_t> guide_size(const xt::xexpression<G>& guide) {
    static_assert(static_rank<G> == 2 || static_rank<G> == 3, "nonlocal: images are [H, W] or [H, W, C]");
    const auto& shape = guide.derived_cast().shape();
    return {std::size_t(shape[0]), std::size_t(shape[1])};
}

/// The guide's planes in T on the 8-bit scale of `depth_options::sigma_r` (`guide_scale`).
/// `std::invalid_argument` (from `where`) as `to_planes` throws.
template <class T, class G>
image_planes<T> guide_planes(const xt::xexpression<G>& guide, std::string_view where) {
    image_planes<T> planes = to_planes<T>(guide, where, "guide");
    if constexpr (constexpr double scale = guide_scale<value_type_of<G>>(); scale != 1.0)
        for (T& v : planes.values) v *= T(scale);
    return planes;
}

/// The planes to compare colours in (`colour_space`): a 3-channel guide as luma and
/// chroma (`luma_chroma`) for colour_space::luma_chroma, else as it is.
template <class T>
image_planes<T> compared_channels(image_planes<T> g, const depth_options& o) {
    return o.space == color_space::luma_chroma ? luma_chroma(std::move(g), o.chroma_weight) : g;
}

/// The guide with `depth` x `scale` as one more channel: with scale = sigma_r / sigma_d,
/// either colour kernel's weight becomes the colour weight times the same kernel of the
/// depth difference with bandwidth sigma_d.
template <class T>
image_planes<T> with_depth_channel(const image_planes<T>& g, const xt::xtensor<float, 2>& depth, double scale) {
    image_planes<T> joint{g.height, g.width, g.channels + 1, {}};
    joint.values.resize(joint.pixels() * joint.channels);
    std::copy(g.values.begin(), g.values.end(), joint.values.begin());
    T* last = joint.channel(g.channels);
    for (std::size_t i = 0; i < g.pixels(); ++i) last[i] = T(double(depth.data()[i]) * scale);
    return joint;
}

}  // namespace nonlocal::detail
