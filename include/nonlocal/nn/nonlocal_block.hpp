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
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include <xtensor/xadapt.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/nn/batch_norm.hpp"
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/pooling.hpp"
#include "nonlocal/normalization.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/similarity/concatenation.hpp"
#include "nonlocal/similarity/dot_product.hpp"
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
        xt::xtensor<T, 2> g_flat = simd::linear_rows<Arch>(execution::seq, flat, as_rows(wg));
        auto shape = z.shape();
        shape[R - 1] = wg.shape(0);
        xt::xtensor<T, R> g = xt::empty<T>(shape);
        std::copy(g_flat.begin(), g_flat.end(), g.begin());
        const xt::xtensor<T, R> y = weighted_aggregate<Arch>(z, z, g, similarity, dense{}, normalization);
        const xt::xtensor<T, 2> wy =
            simd::linear_rows<Arch>(execution::seq, row_matrix<const T>{y.data(), tokens, wg.shape(0)}, as_rows(wz));
        for (std::size_t t = 0; t < z.size(); ++t) z.data()[t] += wy.data()[t];
        return z;
    }
};

/// The four forms of the non-local block (the rows of the table above).
enum class nonlocal_form { gaussian, embedded_gaussian, dot_product, concatenation };

/// The architecture of the PyTorch re-implementation's `NONLocalBlock2D(in_channels,
/// inter_channels, sub_sample, bn_layer)` (or `NONLocalBlock3D`) in one of the four forms.
struct nonlocal_block_config {
    nonlocal_form form = nonlocal_form::embedded_gaussian;
    std::size_t in_channels = 0;
    std::size_t inter_channels = 0;   ///< 0: in_channels / 2 (at least 1), as the module defaults
    bool sub_sample = true;           ///< max-pooled keys and values (`g.0`, `phi.0`)
    bool batch_norm = true;           ///< W's BatchNorm (`bn_layer`)
    std::size_t dimensions = 2;       ///< 2 (`NONLocalBlock2D`) or 3 (`NONLocalBlock3D`, 1 x 1 x 1 weights)
};

template <class T>
class basic_nonlocal_feature_block;

/// The block's forward pass behind `basic_nonlocal_feature_block::operator()`: z = the block
/// of x, row-major [B, C, frames, H, W] (frames 1 for maps), on the threads of `policy`, the
/// shapes checked by the caller. Not inline: a program that compiles it once
/// (nonlocal/nn/instances.hpp) declares it `extern` elsewhere.
template <class Arch, class T>
void nonlocal_block_forward(execution::parallel_policy policy, const basic_nonlocal_feature_block<T>& block, const T* x,
                            std::size_t B, std::size_t frames, std::size_t H, std::size_t W, T* z);

/// The non-local block on feature maps [B, C, H, W] or videos [B, C, T, H, W] of T (float or
/// double), as Wang et al. build it and the widely used PyTorch re-implementation (`NONLocalBlock2D`,
/// `NONLocalBlock3D`) lays out its weights:
///
///     theta, phi, g: 1 x 1 convolutions to e channels (C / 2 by default), with biases;
///     phi and g followed by 2 x 2 max pooling of each frame when sub-sampled;
///     y_i = (1 / C_i) sum_j f(theta x_i, phi x_j) g x_j over every position j of the map
///     (of the pooled map), the form choosing f and C (Gaussian: f on x itself);
///     z = x + BatchNorm(W_z y), W_z a 1 x 1 convolution back to C channels, the norm folded in.
template <class T = float>
class basic_nonlocal_feature_block {
public:
    /// `theta` and `phi` are unused (none) in the Gaussian form; `concat_weight` [2 e] only
    /// in the concatenation form (f = ReLU(w[:e] . theta x_i + w[e:] . phi x_j)). Throws
    /// `std::invalid_argument` naming the shapes unless every convolution is 1 x 1 with
    /// stride 1 and no padding, g, theta and phi map C to e channels and w_z e to C.
    basic_nonlocal_feature_block(nonlocal_form form, conv2d<T> g, std::optional<conv2d<T>> theta,
                           std::optional<conv2d<T>> phi, conv2d<T> w_z, bool sub_sample,
                           xt::xtensor<T, 1> concat_weight = {})
        : form_(form), g_(std::move(g)), theta_(std::move(theta)), phi_(std::move(phi)), w_z_(std::move(w_z)),
          sub_sample_(sub_sample), concat_weight_(std::move(concat_weight)) {
        const std::size_t C = g_.in_channels(), e = g_.out_channels();
        const auto pointwise = [&](const conv2d<T>& c, std::size_t in, std::size_t out) {
            return c.kernel() == size2(1) && c.options().stride == size2(1) && c.options().padding == size2(0) &&
                   c.options().groups == 1 && c.in_channels() == in && c.out_channels() == out;
        };
        const bool embedded = form_ != nonlocal_form::gaussian;
        detail::require(pointwise(g_, C, e) && pointwise(w_z_, e, C) && theta_.has_value() == embedded &&
                            phi_.has_value() == embedded && (!embedded || (pointwise(*theta_, C, e) && pointwise(*phi_, C, e))) &&
                            concat_weight_.size() == (form_ == nonlocal_form::concatenation ? 2 * e : 0),
                        "nn::nonlocal_feature_block", [&] {
                            return "expected 1 x 1 convolutions g, theta and phi [e, C, 1, 1] (no theta and phi in "
                                   "the Gaussian form), w_z [C, e, 1, 1] and, for concatenation, a weight of 2 e; "
                                   "got g " + detail::shape_string(g_.weight().shape()) + ", w_z " +
                                   detail::shape_string(w_z_.weight().shape()) + ", concat_weight " +
                                   detail::shape_string(concat_weight_.shape());
                        });
    }

    std::size_t channels() const noexcept { return g_.in_channels(); }         ///< C
    std::size_t inter_channels() const noexcept { return g_.out_channels(); }  ///< e
    nonlocal_form form() const noexcept { return form_; }
    bool sub_sample() const noexcept { return sub_sample_; }

    /// z for x [B, C, H, W] or [B, C, T, H, W], the same shape, on the threads of `policy`
    /// (the result does not depend on their number). Throws `std::invalid_argument` unless x
    /// has C channels (and, sub-sampled, frames of at least 2 x 2).
    template <class Arch = default_arch, execution_policy Ex, class X>
    auto operator()(Ex policy, const xt::xexpression<X>& x) const {
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R == 4 || R == 5, "nonlocal::nn::nonlocal_feature_block: x is [B, C, H, W] or [B, C, T, H, W]");
        const detail::contiguous<T, R> xc(x);
        const std::size_t B = xc.shape(0), C = xc.shape(1), frames = R == 5 ? xc.shape(2) : 1;
        const std::size_t H = xc.shape(R - 2), W = xc.shape(R - 1);
        detail::require(C == channels() && (!sub_sample_ || (H >= 2 && W >= 2)), "nn::nonlocal_feature_block", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must have " + std::to_string(channels()) +
                   " channels" + (sub_sample_ ? " and frames of at least 2 x 2 (sub-sampled)" : "");
        });
        xt::xtensor<T, R> z = xt::empty<T>(xc.shape());
        nonlocal_block_forward<Arch>(detail::as_parallel(policy), *this, xc.data(), B, frames, H, W, z.data());
        return z;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    auto operator()(const xt::xexpression<X>& x) const {
        return operator()<Arch>(execution::seq, x);
    }

private:
    template <class Arch, class U>
    friend void nonlocal_block_forward(execution::parallel_policy, const basic_nonlocal_feature_block<U>&, const U*,
                                       std::size_t, std::size_t, std::size_t, std::size_t, U*);

    nonlocal_form form_;
    conv2d<T> g_;
    std::optional<conv2d<T>> theta_, phi_;
    conv2d<T> w_z_;
    bool sub_sample_;
    xt::xtensor<T, 1> concat_weight_;
};

/// The float block.
using nonlocal_feature_block = basic_nonlocal_feature_block<float>;

template <class Arch, class T>
void nonlocal_block_forward(execution::parallel_policy policy, const basic_nonlocal_feature_block<T>& block, const T* x,
                            std::size_t B, std::size_t frames, std::size_t H, std::size_t W, T* z) {
    const std::size_t C = block.channels(), e = block.inter_channels(), N = frames * H * W;
    // Frames stacked along the height: a 1 x 1 convolution sees the same pixels.
    const auto convolved = [&](const conv2d<T>& c) {
        xt::xtensor<T, 4> m = xt::empty<T>({B, e, frames * H, W});
        c.template apply<Arch>(policy, x, B, frames * H, W, m.data());
        return m;
    };
    // The tokens [B, positions, channels] of a map [B, c, T H, W], each frame 2 x 2 max-pooled
    // first when asked.
    const auto tokens = [&](const T* m, std::size_t c, bool pool) {
        xt::xtensor<T, 4> pooled;
        std::size_t P = N;
        if (pool) {
            pooled = nn::max_pool2d(xt::adapt(m, B * c * P, xt::no_ownership(), std::array<std::size_t, 4>{B, c * frames, H, W}),
                                    {.kernel = 2});
            m = pooled.data();
            P = frames * (H / 2) * (W / 2);
        }
        xt::xtensor<T, 3> t = xt::empty<T>({B, P, c});
        detail::maps_to_tokens(m, B, c, P, t.data());
        return t;
    };
    const auto map_tokens = [&](const xt::xtensor<T, 4>& m, bool pool) { return tokens(m.data(), e, pool); };
    const auto values = map_tokens(convolved(block.g_), block.sub_sample_);
    const auto aggregate = [&](const auto& queries, const auto& keys, const auto& similarity, auto normalization) {
        return weighted_aggregate<Arch>(policy, queries, keys, values, similarity, dense{}, normalization);
    };
    xt::xtensor<T, 3> y;
    if (block.form_ == nonlocal_form::gaussian) {
        y = aggregate(tokens(x, C, false), tokens(x, C, block.sub_sample_), dot_product{}, softmax{});
    } else {
        const auto queries = map_tokens(convolved(*block.theta_), false);
        const auto keys = map_tokens(convolved(*block.phi_), block.sub_sample_);
        if (block.form_ == nonlocal_form::embedded_gaussian) y = aggregate(queries, keys, dot_product{}, softmax{});
        else if (block.form_ == nonlocal_form::dot_product) y = aggregate(queries, keys, dot_product{}, count{});
        else y = aggregate(queries, keys, concatenation(xt::eye<double>(e), xt::eye<double>(e), block.concat_weight_), count{});
    }
    // y [B, N, e] back to a map [B, e, T H, W], through W_z, plus x.
    xt::xtensor<T, 4> y_map = xt::empty<T>({B, e, frames * H, W});
    detail::tokens_to_maps(y.data(), B, N, e, y_map.data());
    block.w_z_.template apply<Arch>(policy, y_map.data(), B, frames * H, W, z);
    for (std::size_t i = 0; i < B * C * N; ++i) z[i] += x[i];
}

/// `nonlocal_block_forward` of T on the default architecture (float): declared (`extern`)
/// here when NONLOCAL_NN_EXTERN_INSTANCES is defined, defined by nonlocal/nn/instances.hpp.
#define NONLOCAL_NN_NONLOCAL_BLOCK(prefix, T)                                                                          \
    prefix template void nonlocal_block_forward<default_arch, T>(execution::parallel_policy,                           \
                                                                 const basic_nonlocal_feature_block<T>&, const T*,      \
                                                                 std::size_t, std::size_t, std::size_t, std::size_t, T*);
#ifdef NONLOCAL_NN_EXTERN_INSTANCES
NONLOCAL_NN_NONLOCAL_BLOCK(extern, float)
#endif

}  // namespace nonlocal::nn
