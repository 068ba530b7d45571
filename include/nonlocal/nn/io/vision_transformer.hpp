#pragma once
/// @file nn/io/vision_transformer.hpp
/// The Vision Transformer from torchvision's (`load_torchvision`) and timm's (`load_timm`)
/// checkpoints, read strictly against the architecture (nn/io/checkpoint.hpp).

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/nn/io/checkpoint.hpp"
#include "nonlocal/nn/io/layer_entries.hpp"
#include "nonlocal/nn/io/transformer.hpp"
#include "nonlocal/nn/vision_transformer.hpp"

namespace nonlocal::detail {
/// The encoder layers of `c`, in either layout: norm first, GELU, layer norms of eps 1e-6.
inline nn::encoder_layer_config vit_layer_config(const nn::vit_config& c) {
    return {.embed_dim = c.hidden, .num_heads = c.heads, .feedforward = c.mlp, .kind = nn::activation::gelu,
            .norm_first = true, .layer_norm_eps = 1e-6, .bias = c.qkv_bias};
}

/// The names of the parts around the layers in one layout.
struct vit_part_names {
    std::string patch_embedding, class_token, positions, norm, head;
};

/// The patch embedding [E, C, p, p] with its bias, the class token [1, 1, E], the position
/// embedding [1, 1 + g^2, E], the final norm and the head [classes, E] of `c`.
template <class T>
nn::basic_vision_transformer<T> vit_parts(nn::checkpoint& from, const nn::vit_config& c, const std::string& at,
                                      const vit_part_names& names, std::vector<nn::basic_transformer_encoder_layer<T>> layers,
                                      nn::resize_options resampling) {
    const std::size_t E = c.hidden, p = c.patch, g = c.image_size / c.patch;
    nn::conv2d<T> patch = nn::read_conv<T>(from, at + names.patch_embedding, {.in = c.in_channels, .out = E, .kernel = p, .stride = p});
    const xt::xtensor<T, 3> token = from.read<T, 3>(at + names.class_token, {1, 1, E});
    const xt::xtensor<T, 3> positions = from.read<T, 3>(at + names.positions, {1, 1 + g * g, E});
    std::optional<nn::linear_layer<T>> head;
    if (c.classes) head = nn::read_linear<T>(from, at + names.head, E, c.classes);
    return {std::move(patch), xt::xtensor<T, 1>(xt::flatten(token)), xt::xtensor<T, 2>(xt::view(positions, 0)),
            std::move(layers), nn::read_layer_norm<T>(from, at + names.norm, E, 1e-6), std::move(head), resampling};
}
}  // namespace nonlocal::detail

namespace nonlocal::nn {

/// Loads torchvision's `VisionTransformer` of architecture `c` (`vit_config::named("vit_b_16")`,
/// ...) from the entries below `at` of `from` (see nn/io/checkpoint.hpp): `class_token`,
/// `conv_proj`, `encoder.pos_embedding`, `encoder.layers.encoder_layer_N.{ln_1,
/// self_attention, ln_2, mlp.0, mlp.3}`, `encoder.ln`, `heads.head`.
template <class T = float>
basic_vision_transformer<T> load_torchvision(checkpoint& from, const vit_config& c, const std::string& at = "") {
    std::vector<basic_transformer_encoder_layer<T>> layers;
    const encoder_layer_names names{"self_attention_", "mlp_0", "mlp_3", "ln_1", "ln_2"};
    for (std::size_t i = 0; i < c.layers; ++i)
        layers.push_back(load_npy<T>(
            from, detail::vit_layer_config(c), at + "encoder_layers_encoder_layer_" + std::to_string(i) + "_", names));
    return detail::vit_parts<T>(from, c, at, {"conv_proj", "class_token", "encoder_pos_embedding", "encoder_ln", "heads_head"},
                 std::move(layers), torchvision_position_resampling);
}

/// Loads timm's `VisionTransformer` with class-token pooling of architecture `c`
/// (`vit_config::named("vit_base_patch16_224")`, ...) from the entries below `at`:
/// `cls_token`, `patch_embed.proj`, `pos_embed`, `blocks.N.{norm1, attn.qkv, attn.proj,
/// norm2, mlp.fc1, mlp.fc2}`, `norm`, `head`; for images of another size the position
/// embedding is resampled as timm's `resample_abs_pos_embed` does
/// (`timm_position_resampling`). Layer scale (`ls1`), `fc_norm` and average pooling are
/// not part of this architecture: their entries are unexpected.
template <class T = float>
basic_vision_transformer<T> load_timm(checkpoint& from, const vit_config& c, const std::string& at = "") {
    std::vector<basic_transformer_encoder_layer<T>> layers;
    for (std::size_t i = 0; i < c.layers; ++i)
        layers.push_back(load_timm<T>(from, detail::vit_layer_config(c), at + "blocks_" + std::to_string(i) + "_"));
    return detail::vit_parts<T>(from, c, at, {"patch_embed_proj", "cls_token", "pos_embed", "norm", "head"}, std::move(layers),
                 timm_position_resampling);
}

}  // namespace nonlocal::nn
