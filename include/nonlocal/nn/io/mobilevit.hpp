#pragma once
/// @file nn/io/mobilevit.hpp
/// MobileViT from timm's checkpoints (`load_timm`): the inverted residual, the MobileViT
/// block and the network, read strictly against the architecture (nn/io/checkpoint.hpp).

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/nn/io/checkpoint.hpp"
#include "nonlocal/nn/io/layer_entries.hpp"
#include "nonlocal/nn/inverted_residual.hpp"
#include "nonlocal/nn/io/transformer.hpp"
#include "nonlocal/nn/mobilevit.hpp"
#include "nonlocal/nn/mobilevit_block.hpp"

namespace nonlocal::nn {

/// Loads timm's inverted residual from the entries below `at` of `from` (see
/// nn/io/checkpoint.hpp): `conv1_1x1`, `conv2_kxk` and `conv3_1x1`, each `.conv` and `.bn`,
/// folded.
template <class T = float>
basic_inverted_residual<T> load_timm(checkpoint& from, const inverted_residual_config& c,
                                         const std::string& at = "") {
    const std::size_t mid = c.mid_channels;
    return {read_conv_norm_act<T>(from, at + "conv1_1x1", {.in = c.in_channels, .out = mid, .act = c.act}),
            read_conv_norm_act<T>(from, at + "conv2_kxk",
                                  {.in = mid, .out = mid, .kernel = 3, .stride = c.stride, .groups = mid, .act = c.act}),
            read_conv_norm_act<T>(from, at + "conv3_1x1", {.in = mid, .out = c.out_channels})};
}

/// Loads timm's `MobileVitBlock` from the entries below `at` of `from` (see
/// nn/io/checkpoint.hpp): `conv_kxk.{conv, bn}`, `conv_1x1`, `transformer.N.{norm1,
/// attn.qkv, attn.proj, norm2, mlp.fc1, mlp.fc2}`, `norm`, `conv_proj.{conv, bn}`,
/// `conv_fusion.{conv, bn}`; each batch norm folded into its convolution, SiLU after it,
/// the MLP with SiLU, layer norms of eps 1e-5, as timm builds MobileViT v1.
template <class T = float>
basic_mobilevit_block<T> load_timm(checkpoint& from, const mobilevit_block_config& c,
                                       const std::string& at = "") {
    constexpr auto silu = simd::activation::silu;
    const std::size_t C = c.in_channels, O = c.out_channels ? c.out_channels : C, D = c.transformer_dim, k = c.kernel;
    conv2d<T> conv_kxk = read_conv_norm_act<T>(from, at + "conv_kxk", {.in = C, .out = C, .kernel = k, .act = silu});
    conv2d<T> conv_1x1 = read_conv<T>(from, at + "conv_1x1", {.in = C, .out = D}, false);
    std::vector<basic_transformer_encoder_layer<T>> layers;
    const encoder_layer_config layer{.embed_dim = D, .num_heads = c.num_heads,
                                     .feedforward = std::size_t(double(D) * c.mlp_ratio), .kind = silu,
                                     .norm_first = true, .layer_norm_eps = 1e-5};
    for (std::size_t i = 0; i < c.transformer_depth; ++i)
        layers.push_back(load_timm<T>(from, layer, at + "transformer_" + std::to_string(i) + "_"));
    basic_layer_norm<T> norm = read_layer_norm<T>(from, at + "norm", D, 1e-5);
    conv2d<T> conv_proj = read_conv_norm_act<T>(from, at + "conv_proj", {.in = D, .out = O, .act = silu});
    std::optional<conv2d<T>> fusion;
    if (c.fusion) fusion = read_conv_norm_act<T>(from, at + "conv_fusion", {.in = C + O, .out = O, .kernel = k, .act = silu});
    return {std::move(conv_kxk), std::move(conv_1x1), std::move(layers), std::move(norm), std::move(conv_proj),
            std::move(fusion), c.patch};
}

/// Loads timm's MobileViT of architecture `c` (`mobilevit_config::named("mobilevit_s")`,
/// ...) from the entries below `at` of `from` (see nn/io/checkpoint.hpp): `stem.{conv, bn}`,
/// `stages.S.J` (inverted residuals, then a MobileViT block in a stage that has one),
/// `final_conv.{conv, bn}`, `head.fc` (none when `c.classes` is 0); SiLU throughout.
template <class T = float>
basic_mobilevit<T> load_timm(checkpoint& from, const mobilevit_config& c, const std::string& at = "") {
    constexpr auto silu = simd::activation::silu;
    conv2d<T> stem = read_conv_norm_act<T>(from, at + "stem", {.in = c.in_channels, .out = c.stem, .kernel = 3, .stride = 2, .act = silu});
    std::vector<typename basic_mobilevit<T>::block> blocks;
    std::size_t channels = c.stem;
    for (std::size_t s = 0; s < c.stages.size(); ++s) {
        const mobilevit_stage& stage = c.stages[s];
        const std::string in_stage = at + "stages_" + std::to_string(s) + "_";
        for (std::size_t j = 0; j < stage.blocks; ++j) {
            blocks.emplace_back(load_timm<T>(
                from,
                {.in_channels = channels, .out_channels = stage.channels, .stride = j == 0 ? stage.stride : 1,
                 .mid_channels = divisible_by_8(double(channels) * stage.expansion)},
                in_stage + std::to_string(j) + "_"));
            channels = stage.channels;
        }
        if (stage.transformer_dim)
            blocks.emplace_back(load_timm<T>(
                from,
                {.in_channels = channels, .transformer_dim = stage.transformer_dim,
                 .transformer_depth = stage.transformer_depth, .num_heads = c.num_heads, .patch = c.patch},
                in_stage + std::to_string(stage.blocks) + "_"));
    }
    conv2d<T> final_conv = read_conv_norm_act<T>(from, at + "final_conv", {.in = channels, .out = c.features, .act = silu});
    std::optional<linear_layer<T>> head;
    if (c.classes) head = read_linear<T>(from, at + "head_fc", c.features, c.classes);
    return {std::move(stem), std::move(blocks), std::move(final_conv), std::move(head)};
}

}  // namespace nonlocal::nn
