#pragma once
/// @file nn/mobilevit.hpp
/// MobileViT's block (Mehta and Rastegari, ICLR 2022) as the paper draws it and timm's
/// `MobileVitBlock` computes it:
///
///     local:   y = conv_1x1(conv_kxk(x))                 (conv_kxk with its batch norm and SiLU)
///     global:  unfold y into patches of ph x pw pixels; the pixels at one offset of every
///              patch attend to each other through the transformer layers; norm; fold back
///     fusion:  z = conv_fusion([x, conv_proj(y)])         (both with batch norm and SiLU)
///
/// Unfolding, attending and folding is the encoder layers over the map's pixels with the
/// neighborhood `patch_group{H, W, ph, pw}`: no copies of the map into patches.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/npy.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/patch_group.hpp"
#include "nonlocal/nn/batch_norm.hpp"
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/layer_norm.hpp"
#include "nonlocal/nn/multi_head_attention.hpp"
#include "nonlocal/nn/transformer.hpp"

namespace nonlocal::nn {

/// MobileViT's block over feature maps [B, C, H, W] (see the file's comment).
class mobilevit_block {
public:
    /// The convolutions with their batch norms folded in and their activations set; the
    /// encoder layers (norm first) of D = conv_1x1's output channels; `conv_fusion` none for
    /// a block without fusion (its output is then conv_proj's). Throws
    /// `std::invalid_argument` naming the channels that do not chain.
    mobilevit_block(conv2d<float> conv_kxk, conv2d<float> conv_1x1, std::vector<transformer_encoder_layer> transformer,
                    layer_norm norm, conv2d<float> conv_proj, std::optional<conv2d<float>> conv_fusion, size2 patch = 2)
        : conv_kxk_(std::move(conv_kxk)), conv_1x1_(std::move(conv_1x1)), transformer_(std::move(transformer)),
          norm_(std::move(norm)), conv_proj_(std::move(conv_proj)), conv_fusion_(std::move(conv_fusion)), patch_(patch) {
        const std::size_t C = conv_kxk_.in_channels(), D = conv_1x1_.out_channels();
        bool fits = conv_kxk_.out_channels() == C && conv_kxk_.options().stride == size2(1) &&
                    conv_1x1_.in_channels() == C && norm_.features() == D && conv_proj_.in_channels() == D &&
                    patch_.h > 0 && patch_.w > 0 &&
                    (!conv_fusion_ || (conv_fusion_->in_channels() == C + conv_proj_.out_channels() &&
                                       conv_fusion_->options().stride == size2(1)));
        for (const auto& layer : transformer_) fits = fits && layer.self_attn.embed_dim == D && layer.norm_first;
        detail::require(fits, "nn::mobilevit_block", [&] {
            return "expected conv_kxk [C, C, k, k] of stride 1, conv_1x1 [D, C, 1, 1], norm-first layers and a norm "
                   "of D features, conv_proj [O, D, 1, 1] and conv_fusion [O, C + O, k, k]; got conv_kxk " +
                   detail::shape_string(conv_kxk_.weight().shape()) + ", conv_1x1 " +
                   detail::shape_string(conv_1x1_.weight().shape()) + ", conv_proj " +
                   detail::shape_string(conv_proj_.weight().shape()) +
                   (conv_fusion_ ? ", conv_fusion " + detail::shape_string(conv_fusion_->weight().shape()) : "");
        });
    }

    std::size_t in_channels() const noexcept { return conv_kxk_.in_channels(); }
    std::size_t out_channels() const noexcept {
        return conv_fusion_ ? conv_fusion_->out_channels() : conv_proj_.out_channels();
    }
    std::size_t transformer_dim() const noexcept { return conv_1x1_.out_channels(); }   ///< D
    size2 patch() const noexcept { return patch_; }

    /// The block's output [B, O, H, W] for x [B, C, H, W], on the threads of `policy` (the
    /// result does not depend on their number). Throws `std::invalid_argument` unless x has
    /// C channels and the patch divides H and W (timm resizes such a map bilinearly first;
    /// the block does not).
    template <class Arch = default_arch, class X, execution_policy Ex = execution::sequenced_policy>
    xt::xtensor<float, 4> operator()(const xt::xexpression<X>& x, Ex policy = {}) const {
        const detail::contiguous<float, 4> xc(x);
        const std::size_t B = xc.shape(0), C = xc.shape(1), H = xc.shape(2), W = xc.shape(3), P = H * W;
        detail::require(C == in_channels() && H % patch_.h == 0 && W % patch_.w == 0 && H > 0 && W > 0,
                        "nn::mobilevit_block", [&] {
                            return "x " + detail::shape_string(xc.shape()) + " must have " +
                                   std::to_string(in_channels()) + " channels and a size that the " +
                                   std::to_string(patch_.h) + " x " + std::to_string(patch_.w) + " patch divides";
                        });
        const xt::xtensor<float, 4> local =
            conv_1x1_.template operator()<Arch>(conv_kxk_.template operator()<Arch>(x, policy), policy);
        // The map's pixels as tokens [B, H W, D], through the layers and the norm, and back.
        const std::size_t D = transformer_dim();
        xt::xtensor<float, 3> tokens = xt::empty<float>({B, P, D});
        detail::transpose_each(local.data(), B, D, P, tokens.data());
        const patch_group groups{H, W, patch_.h, patch_.w};
        for (const auto& layer : transformer_) tokens = layer.template operator()<Arch>(tokens, groups, policy);
        norm_.template normalise<Arch>(tokens.data(), tokens.data(), B * P);
        xt::xtensor<float, 4> global = xt::empty<float>({B, D, H, W});
        detail::transpose_each(tokens.data(), B, P, D, global.data());
        xt::xtensor<float, 4> projected = conv_proj_.template operator()<Arch>(global, policy);
        if (!conv_fusion_) return projected;
        // [x, projected] along the channels.
        const std::size_t O = projected.shape(1);
        xt::xtensor<float, 4> both = xt::empty<float>({B, C + O, H, W});
        for (std::size_t b = 0; b < B; ++b) {
            std::copy_n(xc.data() + b * C * P, C * P, both.data() + b * (C + O) * P);
            std::copy_n(projected.data() + b * O * P, O * P, both.data() + (b * (C + O) + C) * P);
        }
        return conv_fusion_->template operator()<Arch>(both, policy);
    }

    /// Loads timm's `MobileVitBlock` saved as one .npy per state_dict name, dots as
    /// underscores (e.g. prefix `stages_2_1_`): `conv_kxk.{conv, bn}`, `conv_1x1`,
    /// `transformer.N.{norm1, attn.qkv, attn.proj, norm2, mlp.fc1, mlp.fc2}`, `norm`,
    /// `conv_proj.{conv, bn}`, `conv_fusion.{conv, bn}` (absent: no fusion); each batch norm
    /// folded into its convolution, SiLU after it, the transformer's MLP with SiLU, layer norms
    /// of eps 1e-5, as timm builds MobileViT v1. Throws `std::runtime_error` naming a file that
    /// cannot be read and `std::invalid_argument` naming one of another shape.
    static mobilevit_block load_timm(const std::string& prefix, std::size_t num_heads = 4, size2 patch = 2) {
        constexpr std::string_view who = "nn::mobilevit_block::load_timm";
        const auto path = [&](const std::string& name) { return prefix + name + ".npy"; };
        const auto has = [&](const std::string& name) { return std::filesystem::exists(path(name)); };
        const auto vector = [&](const std::string& name) { return detail::load_weights<1>(path(name), who); };
        // A ConvNormAct: the convolution, padding k / 2, its batch norm folded, SiLU.
        const auto conv_norm_act = [&](const std::string& name) {
            xt::xtensor<float, 4> weight = detail::load_weights<4>(path(name + "_conv_weight"), who);
            const std::size_t k = weight.shape(2);
            const conv2d<float> conv(std::move(weight), {}, {.padding = k / 2}, simd::activation::silu);
            return fold(conv, batch_norm2d<float>(vector(name + "_bn_weight"), vector(name + "_bn_bias"),
                                                  vector(name + "_bn_running_mean"), vector(name + "_bn_running_var")));
        };
        std::vector<transformer_encoder_layer> layers;
        for (std::size_t i = 0; has("transformer_" + std::to_string(i) + "_norm1_weight"); ++i)
            layers.push_back(transformer_encoder_layer::load_timm(prefix + "transformer_" + std::to_string(i) + "_",
                                                                 num_heads, simd::activation::silu, 1e-5));
        std::optional<conv2d<float>> fusion;
        if (has("conv_fusion_conv_weight")) fusion = conv_norm_act("conv_fusion");
        return {conv_norm_act("conv_kxk"),
                conv2d<float>(detail::load_weights<4>(path("conv_1x1_weight"), who)),
                std::move(layers),
                layer_norm(vector("norm_weight"), vector("norm_bias")),
                conv_norm_act("conv_proj"),
                std::move(fusion),
                patch};
    }

private:
    conv2d<float> conv_kxk_, conv_1x1_;
    std::vector<transformer_encoder_layer> transformer_;
    layer_norm norm_;
    conv2d<float> conv_proj_;
    std::optional<conv2d<float>> conv_fusion_;
    size2 patch_;
};

}  // namespace nonlocal::nn
