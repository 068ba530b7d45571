#pragma once
/// @file image/features.hpp
/// Per-pixel features that turn image filters into weighted aggregates:
/// patches (non-local means) and scaled (position, colour) vectors (bilateral).

#include <cmath>
#include <concepts>
#include <cstddef>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"

namespace nonlocal {

namespace detail {

/// Reflection without repeating the border pixel (OpenCV's BORDER_REFLECT_101):
/// -1 -> 1, n -> n - 2.
inline std::size_t reflect(std::ptrdiff_t i, std::size_t n) noexcept {
    if (n == 1) return 0;
    const auto period = static_cast<std::ptrdiff_t>(2 * n - 2);
    i %= period;
    if (i < 0) i += period;
    return static_cast<std::size_t>(i < static_cast<std::ptrdiff_t>(n) ? i : period - i);
}

/// An image [H, W] or [H, W, C] as float-or-double pixels [H, W, C].
template <class T, class E>
xt::xtensor<T, 3> as_image(const xt::xexpression<E>& image, std::string_view where) {
    constexpr std::size_t R = static_rank<E>;
    static_assert(R == 2 || R == 3, "nonlocal: images are [H, W] or [H, W, C]");
    const auto& e = image.derived_cast();
    xt::xtensor<T, 3> out;
    if constexpr (R == 2) out = xt::expand_dims(xt::cast<T>(e), 2);
    else out = xt::cast<T>(e);
    require(out.size() > 0, where, [&] { return "the image is empty: " + shape_string(out.shape()); });
    return out;
}

}  // namespace detail

namespace detail {
/// Patch features [H * W, (2 radius + 1)^2 * C] of pixels [H * W, C] (row-major,
/// channels last), borders reflected (BORDER_REFLECT_101).
template <class T>
xt::xtensor<T, 2> patch_rows(const T* pixels, std::size_t H, std::size_t W, std::size_t C, std::size_t radius) {
    const std::size_t side = 2 * radius + 1;
    xt::xtensor<T, 2> f = xt::empty<T>({H * W, side * side * C});
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            T* out = &f(r * W + c, 0);
            for (std::size_t dr = 0; dr < side; ++dr)
                for (std::size_t dc = 0; dc < side; ++dc) {
                    const std::size_t rr = reflect(std::ptrdiff_t(r + dr) - std::ptrdiff_t(radius), H);
                    const std::size_t cc = reflect(std::ptrdiff_t(c + dc) - std::ptrdiff_t(radius), W);
                    for (std::size_t ch = 0; ch < C; ++ch) *out++ = pixels[(rr * W + cc) * C + ch];
                }
        }
    return f;
}
}  // namespace detail

/// Features [H * W, (2 radius + 1)^2 * C]: the patch around each pixel, pixels
/// in row-major order, borders reflected (BORDER_REFLECT_101). With them,
/// non-local means is `gaussian_distance{h * sqrt(features)}` over a `window2d`
/// search window with `sum` normalization: exp(-mean squared patch distance / h^2)
/// (`patch_distance` does the same without materialising the patches).
template <class T = float, class E>
xt::xtensor<T, 2> patch_features(const xt::xexpression<E>& image, std::size_t radius) {
    const xt::xtensor<T, 3> img = detail::as_image<T>(image, "patch_features");
    return detail::patch_rows(img.data(), img.shape(0), img.shape(1), img.shape(2), radius);
}

/// Features [H * W, 2 + C] = (row / s_s, col / s_s, guide / s_r) / sqrt(2), so that
/// `gaussian_distance{1}` between two pixels is the joint bilateral weight
/// exp(-|p_i - p_j|^2 / 2 s_s^2 - |I_i - I_j|^2 / 2 s_r^2).
/// Throws `std::invalid_argument` unless both sigmas are finite and positive.
template <class T = float, class E>
xt::xtensor<T, 2> bilateral_features(const xt::xexpression<E>& guide, double sigma_spatial, double sigma_range) {
    detail::require(std::isfinite(sigma_spatial) && sigma_spatial > 0 && std::isfinite(sigma_range) &&
                        sigma_range > 0,
                    "bilateral_features", [&] {
                        return "sigma_spatial and sigma_range must be finite and positive, got " +
                               std::to_string(sigma_spatial) + " and " + std::to_string(sigma_range);
                    });
    const xt::xtensor<T, 3> img = detail::as_image<T>(guide, "bilateral_features");
    const std::size_t H = img.shape(0), W = img.shape(1), C = img.shape(2);
    const double ks = 1.0 / (std::sqrt(2.0) * sigma_spatial), kr = 1.0 / (std::sqrt(2.0) * sigma_range);
    xt::xtensor<T, 2> f = xt::empty<T>({H * W, 2 + C});
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            f(r * W + c, 0) = static_cast<T>(r * ks);
            f(r * W + c, 1) = static_cast<T>(c * ks);
            for (std::size_t ch = 0; ch < C; ++ch) f(r * W + c, 2 + ch) = static_cast<T>(img(r, c, ch) * kr);
        }
    return f;
}

}  // namespace nonlocal
