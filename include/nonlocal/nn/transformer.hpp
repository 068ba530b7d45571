#pragma once
/// @file nn/transformer.hpp
/// The Transformer encoder layer of ViT and MobileViT, with the weights of PyTorch's
/// `nn.TransformerEncoderLayer(E, h, F, activation, layer_norm_eps, batch_first=True,
/// norm_first)`, and its feed-forward part. Dropout is the identity, as in inference.
///
///     norm_first (ViT, MobileViT):    x = x + self_attn(norm1(x));  x = x + mlp(norm2(x))
///     post-norm (PyTorch's default):  x = norm1(x + self_attn(x));  x = norm2(x + mlp(x))
///
/// with mlp(x) = linear2(activation(linear1(x))). The attention's keys can be restricted
/// by any neighborhood: `dense` (ViT), `causal`, `window1d` or `window2d` over the token
/// grid (local attention), or `patch_group`: MobileViT's transformer unfolds the feature
/// map into patches, attends among the pixels at the same offset of every patch and
/// folds back; the norms and the MLP act on each token alone, so that is this layer over
/// the pixels with `patch_group{H, W, ph, pw}`, without the copies.
///
/// Weight files (`load_npy`): PyTorch's state_dict names with dots as underscores, e.g.
///
///     for name, value in layer.state_dict().items():
///         numpy.save(prefix + name.replace(".", "_") + ".npy", value.numpy())
///
/// writes self_attn_in_proj_weight.npy, self_attn_in_proj_bias.npy,
/// self_attn_out_proj_weight.npy, self_attn_out_proj_bias.npy, linear1_weight.npy,
/// linear1_bias.npy, linear2_weight.npy, linear2_bias.npy, norm1_weight.npy,
/// norm1_bias.npy, norm2_weight.npy and norm2_bias.npy.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <string>
#include <utility>

#include <xsimd/xsimd.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/detail/npy.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/nn/layer_norm.hpp"
#include "nonlocal/nn/multi_head_attention.hpp"

namespace nonlocal::nn {

/// The activation between the feed-forward layer's two linear maps.
enum class activation {
    relu,   ///< x < 0 ? 0 : x (NaN stays NaN)
    gelu,   ///< x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, PyTorch's exact GELU; 0 at -infinity, its limit
};

/// x[i] = a(x[i]) for i < n, batches of `Arch` throughout: the last n mod lanes values
/// go through a padded batch, so every value's result is the same wherever it stands.
template <class Arch = default_arch>
void activate(activation a, float* x, std::size_t n) {
    using batch = xsimd::batch<float, Arch>;
    constexpr std::size_t lanes = batch::size;
    const auto apply = [x, n](auto f) {
        std::size_t i = 0;
        for (; i + lanes <= n; i += lanes) f(batch::load_unaligned(x + i)).store_unaligned(x + i);
        if (i == n) return;
        alignas(64) float tail[batch::size] = {};
        std::copy(x + i, x + n, tail);
        f(batch::load_aligned(tail)).store_aligned(tail);
        std::copy(tail, tail + (n - i), x + i);
    };
    if (a == activation::relu) return apply([](batch v) { return xsimd::select(v < batch(0.f), batch(0.f), v); });
    const batch half(0.5f), one(1.f), inverse_sqrt2(float(std::numbers::sqrt2 / 2));
    const batch minus_infinity(-std::numeric_limits<float>::infinity());
    apply([=](batch v) {
        return xsimd::select(v == minus_infinity, batch(0.f), half * v * (one + xsimd::erf(v * inverse_sqrt2)));
    });
}

/// The feed-forward part of a Transformer layer, linear2(activation(linear1(x))), in
/// PyTorch's `nn.Linear` layout (`linear1`/`linear2` of `nn.TransformerEncoderLayer`,
/// `fc1`/`fc2` of timm's ViT MLP).
struct feed_forward {
    xt::xtensor<float, 2> linear1_weight;   ///< [F, E]
    xt::xtensor<float, 1> linear1_bias;     ///< [F]
    xt::xtensor<float, 2> linear2_weight;   ///< [E, F]
    xt::xtensor<float, 1> linear2_bias;     ///< [E]
    activation kind = activation::relu;

    /// Throws `std::invalid_argument` unless the weights have the shapes above with E, F > 0.
    feed_forward(xt::xtensor<float, 2> w1, xt::xtensor<float, 1> b1, xt::xtensor<float, 2> w2,
                 xt::xtensor<float, 1> b2, activation a = activation::relu)
        : linear1_weight(std::move(w1)), linear1_bias(std::move(b1)), linear2_weight(std::move(w2)),
          linear2_bias(std::move(b2)), kind(a) {
        const std::size_t F = linear1_weight.shape(0), E = linear1_weight.shape(1);
        detail::require(E > 0 && F > 0 && linear1_bias.size() == F &&
                            linear2_weight.shape() == std::array<std::size_t, 2>{E, F} && linear2_bias.size() == E,
                        "nn::feed_forward", [&] {
                            return "expected linear1_weight [F, E], linear1_bias [F], linear2_weight [E, F] and "
                                   "linear2_bias [E] with E, F > 0; got " +
                                   detail::shape_string(linear1_weight.shape()) + ", " +
                                   detail::shape_string(linear1_bias.shape()) + ", " +
                                   detail::shape_string(linear2_weight.shape()) + " and " +
                                   detail::shape_string(linear2_bias.shape());
                        });
    }

    std::size_t features() const noexcept { return linear1_weight.shape(1); }   ///< E
    std::size_t hidden() const noexcept { return linear1_weight.shape(0); }     ///< F

    /// The tokens x [n, E] through the two linear maps: [n, E], the linear maps on `threads` threads.
    template <class Arch = default_arch>
    xt::xtensor<float, 2> operator()(row_matrix<const float> x, int threads = 1) const {
        xt::xtensor<float, 2> hidden_values =
            simd::linear_rows<Arch>(x, as_rows(linear1_weight), linear1_bias.data(), threads);
        activate<Arch>(kind, hidden_values.data(), hidden_values.size());
        return simd::linear_rows<Arch>(as_rows(std::as_const(hidden_values)), as_rows(linear2_weight),
                                         linear2_bias.data(), threads);
    }
};

/// The arguments of `nn.TransformerEncoderLayer` that `load_npy` cannot read from the weights.
struct encoder_options {
    activation kind = activation::relu;
    bool norm_first = false;
    double layer_norm_eps = 1e-5;
};

/// One Transformer encoder layer over float tokens [B, L, E] or [L, E] (see the file's comment).
struct transformer_encoder_layer {
    multi_head_attention self_attn;
    feed_forward mlp;
    layer_norm norm1, norm2;
    bool norm_first = false;

    /// Throws `std::invalid_argument` unless the MLP and both norms have the attention's E features.
    transformer_encoder_layer(multi_head_attention attention, feed_forward ff, layer_norm n1, layer_norm n2,
                              bool norm_first_ = false)
        : self_attn(std::move(attention)), mlp(std::move(ff)), norm1(std::move(n1)), norm2(std::move(n2)),
          norm_first(norm_first_) {
        const std::size_t E = self_attn.embed_dim;
        detail::require(mlp.features() == E && norm1.features() == E && norm2.features() == E,
                        "nn::transformer_encoder_layer", [&] {
                            return "the attention's E = " + std::to_string(E) + " must be the MLP's (" +
                                   std::to_string(mlp.features()) + ") and the norms' (" +
                                   std::to_string(norm1.features()) + " and " + std::to_string(norm2.features()) + ")";
                        });
    }

    /// Loads the twelve files named in the file's comment from `prefix` (float32, or float64 or
    /// integers converted to float). Throws `std::runtime_error` naming a file that cannot be
    /// read, and `std::invalid_argument` naming one of another element type or rank.
    static transformer_encoder_layer load_npy(const std::string& prefix, std::size_t num_heads,
                                              const encoder_options& o = {}) {
        constexpr std::string_view who = "nn::transformer_encoder_layer::load_npy";
        const auto matrix = [&](const char* name) { return detail::load_weights<2>(prefix + name + ".npy", who); };
        const auto vector = [&](const char* name) { return detail::load_weights<1>(prefix + name + ".npy", who); };
        return {multi_head_attention::load_npy(prefix + "self_attn_", num_heads),
                feed_forward(matrix("linear1_weight"), vector("linear1_bias"), matrix("linear2_weight"),
                             vector("linear2_bias"), o.kind),
                layer_norm(vector("norm1_weight"), vector("norm1_bias"), o.layer_norm_eps),
                layer_norm(vector("norm2_weight"), vector("norm2_bias"), o.layer_norm_eps), o.norm_first};
    }

    /// The layer's output, the shape of x, on the threads of `policy` (the projections, the
    /// attention and the MLP; the result does not depend on their number).
    /// Throws `std::invalid_argument` unless x is [B, L, E] or [L, E] with the layer's E, or
    /// when the neighborhood does not fit L tokens.
    template <class Arch = default_arch, class X, neighborhood Nb = dense,
              execution_policy Ex = execution::sequenced_policy>
    auto operator()(const xt::xexpression<X>& x, const Nb& neighborhood = {}, Ex policy = {}) const {
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R == 2 || R == 3, "nonlocal::nn::transformer_encoder_layer: tokens are [B, L, E] or [L, E]");
        const detail::contiguous<float, R> xc(x);
        const std::size_t E = self_attn.embed_dim;
        detail::require(xc.shape(R - 1) == E, "nn::transformer_encoder_layer", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must be [B, L, E] or [L, E] with E = " + std::to_string(E);
        });
        xt::xtensor<float, R> y = xt::empty<float>(xc.shape());
        std::copy(xc.data(), xc.data() + y.size(), y.begin());
        const std::size_t tokens = y.size() / E;
        const int threads = detail::thread_count(policy);
        const auto attend = [&](const xt::xtensor<float, R>& in) {
            return self_attn.template operator()<Arch>(in, in, in, neighborhood, policy);
        };
        const auto feed = [&](const xt::xtensor<float, R>& in) {
            return mlp.template operator()<Arch>(row_matrix<const float>{in.data(), tokens, E}, threads);
        };
        const auto add = [&](const auto& residual) {
            for (std::size_t i = 0; i < y.size(); ++i) y.data()[i] += residual.data()[i];
        };
        if (norm_first) {
            add(attend(norm1(y)));
            add(feed(norm2(y)));
        } else {
            add(attend(y));
            norm1.normalise(y.data(), y.data(), tokens);
            add(feed(y));
            norm2.normalise(y.data(), y.data(), tokens);
        }
        return y;
    }
};

}  // namespace nonlocal::nn
