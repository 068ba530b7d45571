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
/// the pixels with `patch_group{H, W, ph, pw}`, without unfolding the map.
///
/// Weights load from a state_dict saved as one .npy per entry (nn/io/transformer.hpp):
/// `self_attn.in_proj_weight`, `self_attn.in_proj_bias`, `self_attn.out_proj.{weight, bias}`,
/// `linear1`, `linear2`, `norm1` and `norm2`, each `.weight` and `.bias`.

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>

#include <xtensor/xadapt.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/nn/layer_norm.hpp"
#include "nonlocal/nn/linear.hpp"
#include "nonlocal/nn/multi_head_attention.hpp"

namespace nonlocal::nn {

/// The activation between the feed-forward layer's two linear maps (`simd::activation`:
/// identity, relu, gelu), and its application to an array.
using simd::activation;
using simd::activate;

/// The feed-forward part of a Transformer layer, linear2(activation(linear1(x))), in
/// PyTorch's `nn.Linear` layout (`linear1`/`linear2` of `nn.TransformerEncoderLayer`,
/// `fc1`/`fc2` of timm's ViT MLP), in T (float or double).
template <class T = float>
struct basic_feed_forward {
    linear_layer<T> linear1;   ///< [F, E] and [F]
    linear_layer<T> linear2;   ///< [E, F] and [E]
    activation kind = activation::relu;

    /// Throws `std::invalid_argument` unless the weights have the shapes above with E, F > 0.
    basic_feed_forward(xt::xtensor<T, 2> w1, xt::xtensor<T, 1> b1, xt::xtensor<T, 2> w2, xt::xtensor<T, 1> b2,
                       activation a = activation::relu)
        : kind(a) {
        const std::size_t F = w1.shape(0), E = w1.shape(1);
        detail::require(E > 0 && F > 0 && b1.size() == F && w2.shape() == std::array<std::size_t, 2>{E, F} &&
                            b2.size() == E,
                        "nn::feed_forward", [&] {
                            return "expected linear1_weight [F, E], linear1_bias [F], linear2_weight [E, F] and "
                                   "linear2_bias [E] with E, F > 0; got " +
                                   detail::shape_string(w1.shape()) + ", " + detail::shape_string(b1.shape()) +
                                   ", " + detail::shape_string(w2.shape()) + " and " +
                                   detail::shape_string(b2.shape());
                        });
        linear1 = linear_layer<T>(std::move(w1), std::move(b1));
        linear2 = linear_layer<T>(std::move(w2), std::move(b2));
    }

    /// Both linear maps in precision `p` from now on (`linear_layer::to`).
    basic_feed_forward& to(precision p) {
        linear1.to(p);
        linear2.to(p);
        return *this;
    }

    std::size_t features() const noexcept { return linear1.in_features(); }   ///< E
    std::size_t hidden() const noexcept { return linear1.out_features(); }    ///< F

    /// The tokens x [n, E] through the two linear maps: [n, E], the linear maps on the threads
    /// of `policy`.
    template <class Arch = default_arch, execution_policy Ex>
    xt::xtensor<T, 2> operator()(Ex policy, row_matrix<const T> x) const {
        xt::xtensor<T, 2> y = xt::empty<T>({x.rows, features()});
        apply<Arch>(policy, x, y.data(), false);
        return y;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch>
    xt::xtensor<T, 2> operator()(row_matrix<const T> x) const {
        return operator()<Arch>(execution::seq, x);
    }

    /// y [n, E] += the MLP of x [n, E] (a residual connection), y written as the second
    /// linear map's results leave its GEMM.
    template <class Arch = default_arch, execution_policy Ex>
    void add_to(Ex policy, row_matrix<const T> x, T* y) const {
        apply<Arch>(policy, x, y, true);
    }

private:
    // The bias and the activation (compiled for each) applied as linear1's GEMM stores the
    // hidden values, the bias (and the residual) as linear2's stores its output.
    template <class Arch, execution_policy Ex>
    void apply(Ex policy, row_matrix<const T> x, T* y, bool add) const {
        // A buffer, whose large blocks are kept for the next call (see multi_head_attention),
        // left unwritten: linear1's stores write every value.
        uninitialized_buffer<T> h(x.rows * hidden());
        simd::with_activation(kind, [&](auto act) {
            simd::linear_rows<Arch>(policy, x, linear1.packed(),
                                    simd::store_rows<T, decltype(act)>{h.data(), hidden(), {linear1.bias_data(), act}});
        });
        simd::linear_rows<Arch>(policy, row_matrix<const T>{h.data(), x.rows, hidden()}, linear2.packed(),
                                simd::store_rows<T, simd::no_activation>{y, features(), {linear2.bias_data()}, add});
    }
};

/// The architecture of one `nn.TransformerEncoderLayer(embed_dim, num_heads, feedforward,
/// activation=kind, layer_norm_eps, norm_first)`, PyTorch's defaults, or of timm's `Block`
/// (norm first; `bias` is its `qkv_bias`).
struct encoder_layer_config {
    std::size_t embed_dim = 0;       ///< E
    std::size_t num_heads = 1;       ///< h, dividing E
    std::size_t feedforward = 2048;  ///< the MLP's hidden features
    activation kind = activation::relu;
    bool norm_first = false;
    double layer_norm_eps = 1e-5;
    bool bias = true;                ///< the attention's input projection has a bias
};

/// One Transformer encoder layer over tokens [B, L, E] or [L, E] of T, float or double (see
/// the file's comment).
template <class T = float>
struct basic_transformer_encoder_layer {
    basic_multi_head_attention<T> self_attn;
    basic_feed_forward<T> mlp;
    basic_layer_norm<T> norm1, norm2;
    bool norm_first = false;

    /// Throws `std::invalid_argument` unless the MLP and both norms have the attention's E features.
    basic_transformer_encoder_layer(basic_multi_head_attention<T> attention, basic_feed_forward<T> ff,
                                    basic_layer_norm<T> n1, basic_layer_norm<T> n2, bool norm_first_ = false)
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

    /// The attention's projections and the MLP in precision `p` from now on (`linear_layer::to`).
    basic_transformer_encoder_layer& to(precision p) {
        self_attn.to(p);
        mlp.to(p);
        return *this;
    }

    /// The layer's output, the shape of x, on the threads of `policy` (the projections, the
    /// attention and the MLP; the result does not depend on their number).
    /// Throws `std::invalid_argument` unless x is [B, L, E] or [L, E] with the layer's E, or
    /// when the neighborhood does not fit L tokens.
    template <class Arch = default_arch, execution_policy Ex, class X, neighborhood Nb = dense>
    auto operator()(Ex policy, const xt::xexpression<X>& x, const Nb& neighborhood = {}) const {
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R == 2 || R == 3, "nonlocal::nn::transformer_encoder_layer: tokens are [B, L, E] or [L, E]");
        const detail::contiguous<T, R> xc(x);
        const std::size_t E = self_attn.embed_dim;
        detail::require(xc.shape(R - 1) == E, "nn::transformer_encoder_layer", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must be [B, L, E] or [L, E] with E = " + std::to_string(E);
        });
        xt::xtensor<T, R> y = xt::empty<T>(xc.shape());
        std::copy(xc.data(), xc.data() + y.size(), y.begin());
        apply_in_place<Arch>(policy, y.data(), R == 3 ? xc.shape(0) : 1, xc.shape(R - 2), neighborhood);
        return y;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X, neighborhood Nb = dense>
    auto operator()(const xt::xexpression<X>& x, const Nb& neighborhood = {}) const {
        return operator()<Arch>(execution::seq, x, neighborhood);
    }

    /// x [B, L, E] replaced by the layer's output, as `operator()` computes it, with no copy
    /// of the tokens: each residual branch adds its result to x as its last GEMM stores it.
    /// Throws as `operator()` does.
    template <class Arch = default_arch, execution_policy Ex, neighborhood Nb = dense>
    void apply_in_place(Ex policy, T* x, std::size_t B, std::size_t L, const Nb& neighborhood = {}) const {
        const std::size_t E = self_attn.embed_dim, tokens = B * L;
        const auto as_tokens = [&](T* data) {
            return xt::adapt(data, tokens * E, xt::no_ownership(), std::array<std::size_t, 3>{B, L, E});
        };
        const auto attend_add = [&](const auto& in) {
            self_attn.template forward_to<Arch>(policy, x, true, in, in, in, {}, neighborhood);
        };
        const auto feed_add = [&](const T* in) {
            mlp.template add_to<Arch>(policy, row_matrix<const T>{in, tokens, E}, x);
        };
        if (norm_first) {
            // Both norms' outputs in one work array, whose block is kept for the next call.
            uninitialized_buffer<T> normed(tokens * E);
            norm1.template normalize<Arch>(x, normed.data(), tokens);
            attend_add(as_tokens(normed.data()));
            norm2.template normalize<Arch>(x, normed.data(), tokens);
            feed_add(normed.data());
        } else {
            attend_add(as_tokens(x));
            norm1.template normalize<Arch>(x, x, tokens);
            feed_add(x);
            norm2.template normalize<Arch>(x, x, tokens);
        }
    }
};

/// The float layers.
using feed_forward = basic_feed_forward<float>;
using transformer_encoder_layer = basic_transformer_encoder_layer<float>;

}  // namespace nonlocal::nn
