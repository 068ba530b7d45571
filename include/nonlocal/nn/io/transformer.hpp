#pragma once
/// @file nn/io/transformer.hpp
/// Multi-head attention and encoder layers from checkpoints: PyTorch's
/// `nn.MultiheadAttention` and `nn.TransformerEncoderLayer` (`load_npy`) and timm's ViT
/// block (`load_timm`), read strictly against the architecture (nn/io/checkpoint.hpp).

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/nn/io/checkpoint.hpp"
#include "nonlocal/nn/io/layer_entries.hpp"
#include "nonlocal/nn/multi_head_attention.hpp"
#include "nonlocal/nn/transformer.hpp"

namespace nonlocal::nn {

/// The names of an encoder layer's parts in a checkpoint: PyTorch's
/// `nn.TransformerEncoderLayer`'s unless given (torchvision's ViT says `self_attention_`,
/// `mlp_0`, `mlp_3`, `ln_1` and `ln_2`).
struct encoder_layer_names {
    std::string self_attn = "self_attn_", linear1 = "linear1", linear2 = "linear2", norm1 = "norm1", norm2 = "norm2";
};

}  // namespace nonlocal::nn

namespace nonlocal::detail {
/// The MLP: `first` [F, E] and `second` [E, F] with their biases.
template <class T>
nn::basic_feed_forward<T> encoder_feed_forward(nn::checkpoint& from, const std::string& first, const std::string& second,
                                           const nn::encoder_layer_config& c) {
    auto one = nn::read_linear<T>(from, first, c.embed_dim, c.feedforward);
    auto two = nn::read_linear<T>(from, second, c.feedforward, c.embed_dim);
    return nn::basic_feed_forward<T>(one.weight(), one.bias(), two.weight(), two.bias(), c.kind);
}
}  // namespace nonlocal::detail

namespace nonlocal::nn {

/// Loads `nn.MultiheadAttention(config.embed_dim, config.num_heads, bias=config.bias,
/// kdim=config.kdim, vdim=config.vdim)` from the entries below `at` of `from` (see
/// nn/io/checkpoint.hpp): `in_proj_weight` [3E, E], or `q_proj_weight` [E, E],
/// `k_proj_weight` [E, kdim] and `v_proj_weight` [E, vdim] when kdim or vdim differ from E;
/// `in_proj_bias` [3E] and `out_proj.bias` [E] when biased; `out_proj.weight` [E, E].
template <class T = float>
basic_multi_head_attention<T> load_npy(checkpoint& from, const attention_config& config,
                                           const std::string& at = "") {
    const std::size_t E = config.embed_dim, kdim = config.kdim ? config.kdim : E, vdim = config.vdim ? config.vdim : E;
    auto out = read_linear<T>(from, at + "out_proj", E, E, config.bias);
    if (kdim == E && vdim == E) {
        const auto in_weight = from.read<T, 2>(at + "in_proj_weight", {3 * E, E});
        const auto in_bias = config.bias ? from.read<T, 1>(at + "in_proj_bias", {3 * E}) : xt::xtensor<T, 1>();
        return {config.num_heads, in_weight, in_bias, out.weight(), out.bias()};
    }
    const auto in_bias = config.bias ? from.read<T, 1>(at + "in_proj_bias", {3 * E}) : xt::xtensor<T, 1>();
    return {config.num_heads, linear_layer<T>(from.read<T, 2>(at + "q_proj_weight", {E, E}), detail::bias_part(in_bias, 0, E)),
            linear_layer<T>(from.read<T, 2>(at + "k_proj_weight", {E, kdim}), detail::bias_part(in_bias, E, E)),
            linear_layer<T>(from.read<T, 2>(at + "v_proj_weight", {E, vdim}), detail::bias_part(in_bias, 2 * E, E)),
            std::move(out)};
}

/// Loads `nn.TransformerEncoderLayer` from the entries below `at` of `from` (see
/// nn/io/checkpoint.hpp): `self_attn` (`multi_head_attention::load_npy`), `linear1`
/// [F, E], `linear2` [E, F], `norm1`, `norm2` [E], their biases; or the same parts under
/// other `names`.
template <class T = float>
basic_transformer_encoder_layer<T> load_npy(checkpoint& from, const encoder_layer_config& c,
                                                const std::string& at = "", const encoder_layer_names& names = {}) {
    const std::size_t E = c.embed_dim;
    return {load_npy<T>(from, attention_config{.embed_dim = E, .num_heads = c.num_heads, .bias = c.bias},
                        at + names.self_attn),
            detail::encoder_feed_forward<T>(from, at + names.linear1, at + names.linear2, c),
            read_layer_norm<T>(from, at + names.norm1, E, c.layer_norm_eps),
            read_layer_norm<T>(from, at + names.norm2, E, c.layer_norm_eps), c.norm_first};
}

/// Loads one block of timm's ViT layout (`blocks.N.` of a `VisionTransformer`,
/// `transformer.N.` of a `MobileVitBlock`) from the entries below `at`: `norm1`,
/// `attn.qkv` [3E, E] (its bias when `config.bias`), `attn.proj` [E, E], `norm2`,
/// `mlp.fc1` [F, E], `mlp.fc2` [E, F]; norm first whatever `config.norm_first` says.
template <class T = float>
basic_transformer_encoder_layer<T> load_timm(checkpoint& from, const encoder_layer_config& c,
                                                 const std::string& at = "") {
    const std::size_t E = c.embed_dim;
    auto qkv = read_linear<T>(from, at + "attn_qkv", E, 3 * E, c.bias);
    auto proj = read_linear<T>(from, at + "attn_proj", E, E);
    return {basic_multi_head_attention<T>(c.num_heads, qkv.weight(), qkv.bias(), proj.weight(), proj.bias()),
            detail::encoder_feed_forward<T>(from, at + "mlp_fc1", at + "mlp_fc2", c),
            read_layer_norm<T>(from, at + "norm1", E, c.layer_norm_eps),
            read_layer_norm<T>(from, at + "norm2", E, c.layer_norm_eps), true};
}

}  // namespace nonlocal::nn
