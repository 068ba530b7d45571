#pragma once
/// @file image/pixels.hpp
/// Images in and out of the aggregate: [H, W] or [H, W, C] of any arithmetic
/// type <-> pixels [H * W, C] of float or double, and back with rounding and
/// clamping for integer types; and images as one plane per channel, the layout
/// of kernels that work on one channel of many pixels at a time.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"

namespace nonlocal {

/// An image [H, W] or [H, W, C] with its pixels as rows [H * W, C]: pixel (r, c) is row
/// r * width + c. `ar_system` takes a guide this way.
template <class T>
struct pixel_rows {
    std::size_t height = 0, width = 0, channels = 0;
    xt::xtensor<T, 2> pixels;
};

/// An image as one plane per channel: pixel (r, c) of channel k at
/// values[k * height * width + r * width + c]. `ar_system` takes a guide this way with a
/// similarity that sums over channels.
template <class T>
struct image_planes {
    std::size_t height = 0, width = 0, channels = 0;
    buffer<T> values;

    std::size_t pixels() const noexcept { return height * width; }
    const T* channel(std::size_t k) const noexcept { return values.data() + k * pixels(); }
    T* channel(std::size_t k) noexcept { return values.data() + k * pixels(); }
};

}  // namespace nonlocal

namespace nonlocal::detail {

/// The type images of `Pixel` are computed in: double for double, float otherwise.
template <class Pixel>
using compute_type = std::conditional_t<std::is_same_v<Pixel, double>, double, float>;

/// Where a value of an image lies: pixel (row, column), channel.
struct image_position {
    std::size_t row = 0, column = 0, channel = 0;
};

/// 1 when v is NaN or infinite, else 0: an int, so that loops or-ing it over many values vectorise.
template <class T>
int not_finite(T v) noexcept {
    return !(std::abs(v) <= std::numeric_limits<T>::max());
}

/// Throws `std::invalid_argument` (from `where`, naming the image `name`) at the first of
/// its `values` (converted to floating point) that is not finite, if any; `position(t)`
/// says where value t lies. Images are checked as they are converted: an image sets the
/// weights or means of every pixel near each of its pixels, so one NaN or infinity would
/// spread through the result.
template <class T, class Position>
void require_finite(std::span<const T> values, Position&& position, std::string_view where, std::string_view name) {
    const auto t = std::size_t(std::find_if(values.begin(), values.end(), [](T v) { return not_finite(v) != 0; }) -
                               values.begin());
    if (t == values.size()) return;
    const image_position at = position(t);
    require(false, where, [&] {
        return std::string(name) + " holds a value that is not finite: " + std::to_string(values[t]) + " at pixel (" +
               std::to_string(at.row) + ", " + std::to_string(at.column) + "), channel " + std::to_string(at.channel);
    });
}

/// The pixel rows of an image; `std::invalid_argument` (from `where`, naming it `name`) when
/// it is empty or a value is not finite in T (`require_finite`).
template <class T, class E>
pixel_rows<T> to_pixel_rows(const xt::xexpression<E>& image, std::string_view where, std::string_view name) {
    constexpr std::size_t R = static_rank<E>;
    static_assert(R == 2 || R == 3, "nonlocal: images are [H, W] or [H, W, C]");
    static_assert(std::is_arithmetic_v<value_type_of<E>>, "nonlocal: images hold numbers");
    const auto& e = image.derived_cast();
    pixel_rows<T> p;
    p.height = e.shape()[0], p.width = e.shape()[1], p.channels = R == 3 ? e.shape()[2] : 1;
    require(p.height > 0 && p.width > 0 && p.channels > 0, where, [&] {
        return std::string(name) + " is empty: " + shape_string(e.shape());
    });
    p.pixels = xt::empty<T>({p.height * p.width, p.channels});
    std::size_t t = 0;
    int bad = 0;
    for (const auto& x : e) bad |= not_finite(p.pixels.data()[t++] = static_cast<T>(x));   // row-major traversal
    if (bad) require_finite(std::span<const T>(p.pixels.data(), p.pixels.size()), [&p](std::size_t t) {
        return image_position{t / p.channels / p.width, t / p.channels % p.width, t % p.channels};
    }, where, name);
    return p;
}

/// The planes of an image [H, W] or [H, W, C] of any arithmetic type; `std::invalid_argument`
/// (from `where`, naming the argument `name`) when it is empty or a value is not finite
/// in T (`require_finite`).
template <class T, class E>
image_planes<T> to_planes(const xt::xexpression<E>& image, std::string_view where, std::string_view name) {
    constexpr std::size_t R = static_rank<E>;
    static_assert(R == 2 || R == 3, "nonlocal: images are [H, W] or [H, W, C]");
    static_assert(std::is_arithmetic_v<value_type_of<E>>, "nonlocal: images hold numbers");
    const contiguous<value_type_of<E>, R> e(image);   // borrowed when it is a row-major container
    image_planes<T> p{e.shape(0), e.shape(1), R == 3 ? e.shape(2) : 1, {}};
    require(p.height > 0 && p.width > 0 && p.channels > 0, where, [&] {
        return std::string(name) + " is empty: " + shape_string(e.shape());
    });
    p.values.resize(p.pixels() * p.channels);
    int bad = 0;
    for (std::size_t k = 0; k < p.channels; ++k) {
        T* out = p.channel(k);
        const auto* in = e.data() + k;
        for (std::size_t i = 0; i < p.pixels(); ++i) bad |= not_finite(out[i] = static_cast<T>(in[i * p.channels]));
    }
    if (bad) require_finite(std::span<const T>(p.values.data(), p.values.size()), [&p](std::size_t t) {
        return image_position{t % p.pixels() / p.width, t % p.pixels() % p.width, t / p.pixels()};
    }, where, name);
    return p;
}

/// The planes of pixel rows.
template <class T, class U>
image_planes<T> to_planes(const pixel_rows<U>& rows) {
    image_planes<T> p{rows.height, rows.width, rows.channels, buffer<T>(rows.height * rows.width * rows.channels)};
    for (std::size_t k = 0; k < p.channels; ++k)
        for (std::size_t i = 0; i < p.pixels(); ++i) p.channel(k)[i] = static_cast<T>(rows.pixels(i, k));
    return p;
}

/// Pixels [H * W, C] back to an image of `Pixel` with the rank of the input.
template <class Pixel, std::size_t R, class T>
xt::xtensor<Pixel, R> from_pixel_rows(const xt::xtensor<T, 2>& pixels, std::size_t height, std::size_t width) {
    std::array<std::size_t, R> shape{};
    shape[0] = height, shape[1] = width;
    if constexpr (R == 3) shape[2] = pixels.shape(1);
    xt::xtensor<Pixel, R> out = xt::empty<Pixel>(shape);
    for (std::size_t t = 0; t < pixels.size(); ++t) {
        const T x = pixels.data()[t];
        if constexpr (std::is_integral_v<Pixel>) {
            const T lo = T(std::numeric_limits<Pixel>::lowest()), hi = T(std::numeric_limits<Pixel>::max());
            out.data()[t] = static_cast<Pixel>(std::clamp(std::nearbyint(x), lo, hi));
        } else {
            out.data()[t] = static_cast<Pixel>(x);
        }
    }
    return out;
}

}  // namespace nonlocal::detail
