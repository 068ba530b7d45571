#pragma once
/// @file nn/nonlocal_block.hpp
/// The non-local block of Wang, Girshick, Gupta and He (CVPR 2018):
///
///     z_i = x_i + W_z y_i,   y_i = (1 / C_i) sum_j f(x_i, x_j) g(x_j),   g(x) = W_g x
///
/// with f and C chosen by the similarity and normalization policies:
///
/// | form               | similarity                         | normalization |
/// |--------------------|------------------------------------|---------------|
/// | Gaussian           | `gaussian{}`                       | `sum{}`       |
/// | embedded Gaussian  | `embedded_gaussian{theta, phi}`    | `sum{}`       |
/// | dot product        | `embedded_dot_product{theta, phi}` | `count{}`     |
/// | concatenation      | `concatenation{theta, phi, w_f}`   | `count{}`     |

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/weighted_aggregate.hpp"

namespace nonlocal::nn {

/// A non-local block over tokens x [n, c] (the pixels of an image or a video)
/// or a batch [B, n, c]. g_weight is W_g [e, c], z_weight is W_z [c, e]
/// (`nn.Linear` / 1x1-convolution layout, no biases).
template <similarity S, normalization Nm>
struct nonlocal_block {
    S similarity;
    Nm normalization;
    xt::xtensor<double, 2> g_weight;
    xt::xtensor<double, 2> z_weight;

    /// Throws `std::invalid_argument` unless g_weight is [e, c] and z_weight is [c, e].
    template <class G, class Z>
    nonlocal_block(S s, Nm nm, const xt::xexpression<G>& g, const xt::xexpression<Z>& z)
        : similarity(std::move(s)), normalization(nm), g_weight(xt::cast<double>(g.derived_cast())),
          z_weight(xt::cast<double>(z.derived_cast())) {
        detail::require(g_weight.shape(0) == z_weight.shape(1) && g_weight.shape(1) == z_weight.shape(0),
                        "nn::nonlocal_block", [&] {
                            return "g_weight " + detail::shape_string(g_weight.shape()) + " and z_weight " +
                                   detail::shape_string(z_weight.shape()) + " must be [e, c] and [c, e]";
                        });
    }

    /// z = x + W_z(aggregate of W_g x), same shape as x.
    template <class Arch = default_arch, class X>
    auto operator()(const xt::xexpression<X>& x) const {
        using T = detail::value_type_of<X>;
        static_assert(std::floating_point<T>, "nonlocal::nn::nonlocal_block: x must be float or double");
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R == 2 || R == 3, "nonlocal::nn::nonlocal_block: x must be [n, c] or [B, n, c]");
        xt::xtensor<T, R> z = x.derived_cast();
        const std::size_t channels = z.shape(R - 1), tokens = z.size() / (channels ? channels : 1);
        detail::require(channels == g_weight.shape(1), "nn::nonlocal_block", [&] {
            return "x " + detail::shape_string(z.shape()) + " does not fit g_weight " +
                   detail::shape_string(g_weight.shape());
        });
        const xt::xtensor<T, 2> wg = xt::cast<T>(g_weight), wz = xt::cast<T>(z_weight);
        const row_matrix<const T> flat{z.data(), tokens, channels};
        xt::xtensor<T, 2> g_flat = simd::linear_rows<Arch>(flat, as_rows(wg));
        auto shape = z.shape();
        shape[R - 1] = wg.shape(0);
        xt::xtensor<T, R> g = xt::empty<T>(shape);
        std::copy(g_flat.begin(), g_flat.end(), g.begin());
        const xt::xtensor<T, R> y = weighted_aggregate<Arch>(z, z, g, similarity, dense{}, normalization);
        const xt::xtensor<T, 2> wy =
            simd::linear_rows<Arch>(row_matrix<const T>{y.data(), tokens, wg.shape(0)}, as_rows(wz));
        for (std::size_t t = 0; t < z.size(); ++t) z.data()[t] += wy.data()[t];
        return z;
    }
};

}  // namespace nonlocal::nn
