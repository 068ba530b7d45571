#pragma once
/// @file similarity/patch_distance.hpp
/// The similarity of non-local means and of (joint) bilateral filters, on the
/// pixels of a height x width image given as features [H * W, C]:
///
///     logit(i, j) = -max(d(i, j) - 2 sigma^2, 0) / h^2 - |p_i - p_j|^2 / (2 s_s^2)
///
/// where d(i, j) is the mean over the (2 r + 1)^2 patch pixels and the C channels
/// of the squared differences between the patches around pixels i and j
/// (borders reflected, BORDER_REFLECT_101), sigma the noise level (0: no
/// subtraction) and s_s a spatial bandwidth (infinite: no spatial term).
/// With r = 0 and h^2 = 2 s_r^2 / C this is the joint bilateral weight.
///
/// Through the general kernels the patches are materialised by the projection;
/// over a `window2d` with `sum` normalization the running-sum kernel
/// (`kernel/patch_window.hpp`) computes the same without them, at a cost per
/// pixel independent of the patch size.

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/image/features.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal {

struct patch_distance {
    using weight_function = exp_weight;
    using traits = similarity_traits<opaque_form, symmetric>;

    std::size_t height = 0;
    std::size_t width = 0;
    std::size_t patch_radius = 3;
    double h = 10.0;
    double sigma = 0.0;
    double spatial_sigma = std::numeric_limits<double>::infinity();

    /// Throws `std::invalid_argument` unless h is finite and positive, sigma finite and
    /// non-negative, and spatial_sigma positive (infinite allowed).
    patch_distance(std::size_t height_, std::size_t width_, std::size_t patch_radius_, double h_,
                   double sigma_ = 0.0, double spatial_sigma_ = std::numeric_limits<double>::infinity())
        : height(height_), width(width_), patch_radius(patch_radius_), h(h_), sigma(sigma_),
          spatial_sigma(spatial_sigma_) {
        detail::require(std::isfinite(h) && h > 0 && std::isfinite(sigma) && sigma >= 0 &&
                            !std::isnan(spatial_sigma) && spatial_sigma > 0,
                        "patch_distance", [&] {
                            return "needs finite h > 0, finite sigma >= 0 and spatial_sigma > 0, got h = " +
                                   std::to_string(h) + ", sigma = " + std::to_string(sigma) +
                                   ", spatial_sigma = " + std::to_string(spatial_sigma);
                        });
    }

    /// The patch features of the pixels (for the general kernels).
    template <class T>
    xt::xtensor<T, 2> project_queries(row_matrix<const T> x) const {
        detail::require(x.rows == height * width, "patch_distance", [&] {
            return "a " + std::to_string(height) + " x " + std::to_string(width) + " image has " +
                   std::to_string(height * width) + " pixels, got " + std::to_string(x.rows) + " rows";
        });
        return detail::patch_rows(x.data, height, width, x.cols, patch_radius);
    }
    template <class T>
    xt::xtensor<T, 2> project_keys(row_matrix<const T> x) const { return project_queries(x); }

    template <class T>
    T logit(std::span<const T> q, std::span<const T> k, std::size_t i, std::size_t j) const {
        const double d = double(simd::squared_distance(q.data(), k.data(), q.size())) / double(q.size());
        double l = -std::max(d - 2 * sigma * sigma, 0.0) / (h * h);
        if (std::isfinite(spatial_sigma)) {
            const double dr = double(i / width) - double(j / width), dc = double(i % width) - double(j % width);
            l -= (dr * dr + dc * dc) / (2 * spatial_sigma * spatial_sigma);
        }
        return static_cast<T>(l);
    }
};

static_assert(similarity<patch_distance>);

/// The colour Gaussian weight of the AR model, w_ij = exp(-|g_i - g_j|^2 / (2 sigma_r^2)
/// - |p_i - p_j|^2 / (2 sigma_s^2)) (sigma_s infinite: no spatial term), as a
/// `patch_distance` of radius 0 for a guide of `channels` channels.
inline patch_distance color_weights(std::size_t height, std::size_t width, std::size_t channels, double sigma_r,
                                     double sigma_s = std::numeric_limits<double>::infinity()) {
    return patch_distance(height, width, 0, sigma_r * std::sqrt(2.0 / double(channels)), 0.0, sigma_s);
}
/// The name before 0.1.0, kept for one release.
[[deprecated("use nonlocal::color_weights")]] inline patch_distance colour_weights(
    std::size_t height, std::size_t width, std::size_t channels, double sigma_r,
    double sigma_s = std::numeric_limits<double>::infinity()) {
    return color_weights(height, width, channels, sigma_r, sigma_s);
}

}  // namespace nonlocal
