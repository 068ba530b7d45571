#pragma once
/// @file filter/nlm.hpp
/// Non-local means denoising (Buades, Coll and Morel 2005) and the joint
/// bilateral filter, as weighted aggregates:
///
///     nlm_denoise    = patch_distance{patch r, h, sigma} over window2d{2 s + 1}, sum
///     joint_bilateral = patch_distance{r = 0, h from sigma_range, spatial sigma} over window2d, sum
///
/// which run through the running-sum kernel (`kernel/patch_window.hpp`).
/// Borders: patches read reflected pixels (BORDER_REFLECT_101); search windows
/// shift inward, so every pixel is compared with exactly (2 s + 1)^2 pixels of
/// the image (fewer only when the image is smaller than the window).

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/neighborhood/window.hpp"
#include "nonlocal/normalization.hpp"
#include "nonlocal/similarity/patch_distance.hpp"
#include "nonlocal/weighted_aggregate.hpp"

namespace nonlocal {

namespace detail {
/// A patch radius beyond the image's larger side would reflect a patch more than once:
/// rejected.
template <class T>
void check_patch_radius(std::string_view where, const pixel_rows<T>& img, std::size_t radius) {
    require(radius <= std::max(img.height, img.width), where, [&] {
        return "nlm_options::patch_radius = " + std::to_string(radius) + " exceeds the larger side of the " +
               std::to_string(img.height) + " x " + std::to_string(img.width) + " image";
    });
}

/// A window radius beyond the image's larger side reaches no further pixel (windows stop
/// at the image): the larger side, which gives the same result at a bounded cost.
template <class T>
std::size_t window_radius(const pixel_rows<T>& img, std::size_t radius) {
    return std::min(radius, std::max(img.height, img.width));
}
}  // namespace detail

/// Parameters of `nlm_denoise`.
struct nlm_options {
    std::size_t patch_radius = 3;    ///< patches of (2 r + 1)^2 pixels: 7 x 7
    std::size_t search_radius = 10;  ///< search windows of (2 s + 1)^2 pixels: 21 x 21
    double h = 0;                    ///< filtering strength; 0: `h_per_sigma * sigma`
    double sigma = 0;                ///< noise standard deviation, in pixel units (0: unknown)
    double h_per_sigma = 0.65;       ///< default h relative to sigma (tuned on the denoising protocol, sigma 20)
};

/// Non-local means of an image [H, W] or [H, W, C] (float, double, uint8,
/// uint16, ...): each pixel becomes the mean of the pixels of its search window
/// weighted by exp(-max(d - 2 sigma^2, 0) / h^2), d the mean squared difference
/// of their patches over pixels and channels. Returns an image of the input's
/// type and shape (integers rounded and clamped). Throws `std::invalid_argument`
/// for an empty image or one holding NaN or infinity, a non-positive or non-finite
/// h (or neither h nor sigma given), a negative or non-finite sigma, or a patch radius
/// beyond the image's larger side. A search window larger than the image is the image.
template <class Arch = default_arch, execution_policy Ex, class E>
auto nlm_denoise(Ex policy, const xt::xexpression<E>& image, const nlm_options& options = {}) {
    using Pixel = detail::value_type_of<E>;
    using T = detail::compute_type<Pixel>;
    const double h = options.h > 0 ? options.h : options.h_per_sigma * options.sigma;
    const auto not_negative = [](double x) { return std::isfinite(x) && x >= 0; };
    detail::field_checks("nlm_options")
        .need(not_negative(options.h), "h", "finite and at least 0 (0: h_per_sigma x sigma)", options.h)
        .need(not_negative(options.sigma), "sigma", "finite and at least 0 (0: unknown)", options.sigma)
        .need(std::isfinite(options.h_per_sigma) && options.h_per_sigma > 0, "h_per_sigma", "finite and positive",
              options.h_per_sigma)
        .need(!(not_negative(options.h) && not_negative(options.sigma)) || h > 0, "h",
              "above 0, or sigma above 0 to derive it (h = h_per_sigma x sigma)", options.h)
        .check("nlm_denoise");
    const auto img = detail::to_pixel_rows<T>(image, "nlm_denoise", "image");
    detail::check_patch_radius("nlm_denoise", img, options.patch_radius);
    const patch_distance similarity(img.height, img.width, options.patch_radius, h, options.sigma);
    const window2d window{img.height, img.width, 2 * detail::window_radius(img, options.search_radius) + 1};
    const auto y = weighted_aggregate<Arch>(policy, img.pixels, img.pixels, img.pixels, similarity, window, sum{});
    return detail::from_pixel_rows<Pixel, detail::static_rank<E>>(y, img.height, img.width);
}
/// The same on the calling thread.
template <class Arch = default_arch, class E>
auto nlm_denoise(const xt::xexpression<E>& image, const nlm_options& options = {}) {
    return nlm_denoise<Arch>(execution::seq, image, options);
}

/// Parameters of `joint_bilateral`.
struct bilateral_options {
    std::size_t radius = 5;       ///< windows of (2 r + 1)^2 pixels
    double sigma_spatial = 3.0;   ///< spatial Gaussian, in pixels
    double sigma_range = 10.0;    ///< range Gaussian on the guide, in guide units
};

/// Joint bilateral filter: each pixel of `values` [H, W] or [H, W, C] becomes its
/// window's mean weighted by exp(-|p_i - p_j|^2 / 2 s_s^2 - |g_i - g_j|^2 / 2 s_r^2),
/// with g the pixels of `guide` [H, W] or [H, W, C_g] (all channels summed).
/// Returns an image of the values' type and shape. Throws `std::invalid_argument`
/// when the sizes differ, an image is empty or holds NaN or infinity, or a sigma is
/// not finite and positive. A window larger than the image is the image.
template <class Arch = default_arch, execution_policy Ex, class V, class G>
auto joint_bilateral(Ex policy, const xt::xexpression<V>& values, const xt::xexpression<G>& guide,
                     const bilateral_options& options = {}) {
    using Pixel = detail::value_type_of<V>;
    using T = detail::compute_type<Pixel>;
    const auto positive = [](double x) { return std::isfinite(x) && x > 0; };
    detail::field_checks("bilateral_options")
        .need(positive(options.sigma_spatial), "sigma_spatial", "finite and positive", options.sigma_spatial)
        .need(positive(options.sigma_range), "sigma_range", "finite and positive", options.sigma_range)
        .check("joint_bilateral");
    const auto v = detail::to_pixel_rows<T>(values, "joint_bilateral", "values");
    const auto g = detail::to_pixel_rows<T>(guide, "joint_bilateral", "guide");
    detail::require(v.height == g.height && v.width == g.width, "joint_bilateral", [&] {
        return "values are " + std::to_string(v.height) + " x " + std::to_string(v.width) + " but the guide is " +
               std::to_string(g.height) + " x " + std::to_string(g.width);
    });
    // patch_distance averages over channels: h^2 = 2 s_r^2 / C_g gives sum_c / (2 s_r^2).
    const double h = options.sigma_range * std::sqrt(2.0 / double(g.channels));
    const patch_distance similarity(g.height, g.width, 0, h, 0.0, options.sigma_spatial);
    const window2d window{g.height, g.width, 2 * detail::window_radius(g, options.radius) + 1};
    const auto y = weighted_aggregate<Arch>(policy, g.pixels, g.pixels, v.pixels, similarity, window, sum{});
    return detail::from_pixel_rows<Pixel, detail::static_rank<V>>(y, v.height, v.width);
}
/// The same on the calling thread.
template <class Arch = default_arch, class V, class G>
auto joint_bilateral(const xt::xexpression<V>& values, const xt::xexpression<G>& guide,
                     const bilateral_options& options = {}) {
    return joint_bilateral<Arch>(execution::seq, values, guide, options);
}

}  // namespace nonlocal
