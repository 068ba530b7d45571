#pragma once
/// @file filter/image.hpp
/// Images in and out of the aggregate: [H, W] or [H, W, C] of any arithmetic
/// type <-> pixels [H * W, C] of float or double, and back with rounding and
/// clamping for integer types.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"

namespace nonlocal::detail {

/// The type images of `Pixel` are computed in: double for double, float otherwise.
template <class Pixel>
using compute_type = std::conditional_t<std::is_same_v<Pixel, double>, double, float>;

/// An image [H, W] or [H, W, C] with its pixels as rows [H * W, C].
template <class T>
struct pixel_rows {
    std::size_t height = 0, width = 0, channels = 0;
    xt::xtensor<T, 2> pixels;
};

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
    for (const auto& x : e) p.pixels.data()[t++] = static_cast<T>(x);   // row-major traversal
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
