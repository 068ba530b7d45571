#pragma once
/// @file nn/vision_transformer.hpp
/// The Vision Transformer (Dosovitskiy et al. 2021) for classification, as torchvision's
/// `VisionTransformer` and timm's `VisionTransformer` (class token pooling) compute it:
///
///     tokens = [class token, patches of the image, each a conv_proj of stride p] + position embedding
///     tokens = encoder layers (norm first, GELU, layer norm eps 1e-6)
///     logits = head(norm(tokens)[0])
///
/// Weights load from a model's state_dict saved as one .npy per entry, the dots of the
/// names as underscores:
///
///     for name, value in model.state_dict().items():
///         numpy.save(prefix + name.replace(".", "_") + ".npy", value.numpy())

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/npy.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/layer_norm.hpp"
#include "nonlocal/nn/linear.hpp"
#include "nonlocal/nn/multi_head_attention.hpp"
#include "nonlocal/nn/position_encoding.hpp"
#include "nonlocal/nn/transformer.hpp"

namespace nonlocal::nn {

/// A Vision Transformer over images [B, C, H, W] of T, float or double (see the file's comment).
template <class T = float>
class basic_vision_transformer {
public:
    /// `patch_embedding` a convolution whose stride is its kernel (p x p), `class_token` [E],
    /// `position_embedding` [1 + g^2, E] for a g x g grid of patches, the encoder layers,
    /// the final norm and the head (none: `operator()` gives the features);
    /// `position_resampling` how the position embedding is resampled for images of another
    /// size (`torchvision_position_resampling` or `timm_position_resampling`). Throws
    /// `std::invalid_argument` naming what does not fit.
    basic_vision_transformer(conv2d<T> patch_embedding, xt::xtensor<T, 1> class_token,
                       xt::xtensor<T, 2> position_embedding, std::vector<basic_transformer_encoder_layer<T>> layers,
                       basic_layer_norm<T> norm, std::optional<linear_layer<T>> head = std::nullopt,
                       resize_options position_resampling = torchvision_position_resampling)
        : patch_(std::move(patch_embedding)), class_token_(std::move(class_token)),
          position_(std::move(position_embedding)), layers_(std::move(layers)), norm_(std::move(norm)),
          head_(std::move(head)), position_resampling_(position_resampling) {
        const std::size_t E = class_token_.size(), p = patch_.kernel().h, tokens = position_.shape(0);
        std::size_t g = 0;
        while ((g + 1) * (g + 1) + 1 <= tokens) ++g;
        grid_ = g;
        bool fits = E > 0 && patch_.out_channels() == E && patch_.kernel().w == p && patch_.options().stride == size2(p) &&
                    patch_.options().padding == size2(0) && position_.shape(1) == E && g > 0 && g * g + 1 == tokens &&
                    norm_.features() == E && (!head_ || head_->in_features() == E);
        for (const auto& layer : layers_) fits = fits && layer.self_attn.embed_dim == E && layer.norm_first;
        detail::require(fits, "nn::vision_transformer", [&] {
            return "expected a patch embedding [E, C, p, p] of stride p and no padding, class_token [E], "
                   "position_embedding [1 + g^2, E], norm-first layers, a norm and a head of E features; got "
                   "patch embedding " + detail::shape_string(patch_.weight().shape()) + ", class_token " +
                   detail::shape_string(class_token_.shape()) + ", position_embedding " +
                   detail::shape_string(position_.shape());
        });
    }

    std::size_t embed_dim() const noexcept { return class_token_.size(); }     ///< E
    std::size_t patch_size() const noexcept { return patch_.kernel().h; }      ///< p
    std::size_t grid() const noexcept { return grid_; }                        ///< g: the embedding's grid is g x g
    std::size_t image_size() const noexcept { return grid_ * patch_size(); }   ///< g p, the training size
    std::size_t depth() const noexcept { return layers_.size(); }
    const std::vector<basic_transformer_encoder_layer<T>>& layers() const noexcept { return layers_; }
    const std::optional<linear_layer<T>>& head() const noexcept { return head_; }

    /// The logits [B, classes] of images [B, C, H, W] (the class token's features [B, E]
    /// without a head), on the threads of `policy` (the result does not depend on their
    /// number). An image of another size than `image_size()` (H and W multiples of p, equal)
    /// gets the position embedding resampled to its grid (`resample_position_embedding`, as
    /// torchvision or timm does, as the model was built). Throws `std::invalid_argument`
    /// naming the shape otherwise.
    template <class Arch = default_arch, class X, execution_policy Ex = execution::sequenced_policy>
    xt::xtensor<T, 2> operator()(const xt::xexpression<X>& images, Ex policy = {}) const {
        xt::xtensor<T, 2> features = this->template class_features<Arch>(images, policy);
        if (!head_) return features;
        return head_->template operator()<Arch>(features, policy);
    }

    /// The class token's features [B, E] after the final norm (before the head).
    template <class Arch = default_arch, class X, execution_policy Ex = execution::sequenced_policy>
    xt::xtensor<T, 2> class_features(const xt::xexpression<X>& images, Ex policy = {}) const {
        const xt::xtensor<T, 3> all = this->template encode<Arch>(images, policy);
        const std::size_t B = all.shape(0), E = embed_dim();
        xt::xtensor<T, 2> features = xt::empty<T>({B, E});
        for (std::size_t b = 0; b < B; ++b) norm_.template normalise<Arch>(&all(b, 0, 0), &features(b, 0), 1);
        return features;
    }

    /// The tokens [B, 1 + (H / p)(W / p), E] after the encoder layers, before the final norm.
    template <class Arch = default_arch, class X, execution_policy Ex = execution::sequenced_policy>
    xt::xtensor<T, 3> encode(const xt::xexpression<X>& images, Ex policy = {}) const {
        const detail::contiguous<T, 4> x(images);
        const std::size_t B = x.shape(0), H = x.shape(2), W = x.shape(3), p = patch_size(), E = embed_dim();
        detail::require(x.shape(1) == patch_.in_channels() && H % p == 0 && W % p == 0 && H == W && H > 0,
                        "nn::vision_transformer", [&] {
                            return "images " + detail::shape_string(x.shape()) + " must be [B, " +
                                   std::to_string(patch_.in_channels()) + ", H, W] with H = W a multiple of the patch size " +
                                   std::to_string(p);
                        });
        const std::size_t g = H / p, N = g * g;
        xt::xtensor<T, 2> position = position_;
        if (g != grid_) {   // the grid's rows resampled, the class token's kept
            const xt::xtensor<T, 2> patches = xt::view(position_, xt::range(1, 1 + grid_ * grid_), xt::all());
            const xt::xtensor<T, 2> resampled = resample_position_embedding(patches, grid_, g, position_resampling_);
            position = xt::empty<T>({1 + N, E});
            xt::view(position, 0) = xt::view(position_, 0);
            xt::view(position, xt::range(1, 1 + N), xt::all()) = resampled;
        }
        const xt::xtensor<T, 4> patches = patch_.template operator()<Arch>(images, policy);   // [B, E, g, g]
        xt::xtensor<T, 3> tokens = xt::empty<T>({B, 1 + N, E});
        for (std::size_t b = 0; b < B; ++b) {
            for (std::size_t e = 0; e < E; ++e) tokens(b, 0, e) = class_token_(e) + position(0, e);
            for (std::size_t e = 0; e < E; ++e)
                for (std::size_t t = 0; t < N; ++t) tokens(b, 1 + t, e) = patches.data()[(b * E + e) * N + t] + position(1 + t, e);
        }
        for (const auto& layer : layers_) layer.template apply_in_place<Arch>(tokens.data(), B, 1 + N, dense{}, policy);
        return tokens;
    }

    /// Loads torchvision's `VisionTransformer` (`vit_b_16` and the others): `class_token`,
    /// `conv_proj`, `encoder.pos_embedding`, `encoder.layers.encoder_layer_N.{ln_1,
    /// self_attention, ln_2, mlp.0, mlp.3}`, `encoder.ln`, `heads.head`, saved as the file's
    /// comment shows. Throws `std::runtime_error` naming a file that cannot be read and
    /// `std::invalid_argument` naming one of another shape, or a head with `pre_logits`.
    static basic_vision_transformer load_torchvision(const std::string& prefix, std::size_t num_heads) {
        constexpr std::string_view who = "nn::vision_transformer::load_torchvision";
        const loader load{{prefix, who}};
        load.refuse("heads_pre_logits_weight", "a head with a representation layer (pre_logits)");
        std::vector<basic_transformer_encoder_layer<T>> layers;
        for (std::size_t i = 0; load.has("encoder_layers_encoder_layer_" + std::to_string(i) + "_ln_1_weight"); ++i) {
            const std::string at = "encoder_layers_encoder_layer_" + std::to_string(i) + "_";
            layers.emplace_back(basic_multi_head_attention<T>::load_npy(prefix + at + "self_attention_", num_heads),
                                basic_feed_forward<T>(load.matrix(at + "mlp_0_weight"), load.vector(at + "mlp_0_bias"),
                                             load.matrix(at + "mlp_3_weight"), load.vector(at + "mlp_3_bias"),
                                             activation::gelu),
                                load.norm(at + "ln_1"), load.norm(at + "ln_2"), true);
        }
        return {load.patch_embedding("conv_proj"), load.token("class_token"), load.positions("encoder_pos_embedding"),
                std::move(layers), load.norm("encoder_ln"), load.head("heads_head")};
    }

    /// Loads timm's `VisionTransformer` with class-token pooling (`vit_base_patch16_224` and
    /// the others): `cls_token`, `patch_embed.proj`, `pos_embed`, `blocks.N.{norm1, attn.qkv,
    /// attn.proj, norm2, mlp.fc1, mlp.fc2}`, `norm`, `head`, saved as the file's comment
    /// shows; for images of another size the position embedding is resampled as timm's
    /// `resample_abs_pos_embed` does (`timm_position_resampling`).
    /// Models with layer scale (`ls1`), `fc_norm` or average pooling are refused with
    /// `std::invalid_argument`; file errors as `load_torchvision`.
    static basic_vision_transformer load_timm(const std::string& prefix, std::size_t num_heads) {
        constexpr std::string_view who = "nn::vision_transformer::load_timm";
        const loader load{{prefix, who}};
        load.refuse("blocks_0_ls1_gamma", "layer scale (ls1, ls2)");
        load.refuse("fc_norm_weight", "a norm after pooling (fc_norm)");
        std::vector<basic_transformer_encoder_layer<T>> layers;
        for (std::size_t i = 0; load.has("blocks_" + std::to_string(i) + "_norm1_weight"); ++i) {
            layers.push_back(basic_transformer_encoder_layer<T>::load_timm(prefix + "blocks_" + std::to_string(i) + "_",
                                                                 num_heads, activation::gelu, 1e-6));
        }
        return {load.patch_embedding("patch_embed_proj"), load.token("cls_token"), load.positions("pos_embed"),
                std::move(layers), load.norm("norm"), load.head("head"), timm_position_resampling};
    }

private:
    conv2d<T> patch_;
    xt::xtensor<T, 1> class_token_;
    xt::xtensor<T, 2> position_;
    std::vector<basic_transformer_encoder_layer<T>> layers_;
    basic_layer_norm<T> norm_;
    std::optional<linear_layer<T>> head_;
    resize_options position_resampling_;
    std::size_t grid_ = 0;

    /// The files of one saved state_dict, and how the ViT's parts are read from them.
    struct loader : detail::weight_files<T> {
        basic_layer_norm<T> norm(const std::string& name) const {
            return basic_layer_norm<T>(this->vector(name + "_weight"), this->vector(name + "_bias"), 1e-6);
        }
        conv2d<T> patch_embedding(const std::string& name) const {
            xt::xtensor<T, 4> weight = this->template tensor<4>(name + "_weight");
            const std::size_t p = weight.shape(2);
            return conv2d<T>(std::move(weight), this->optional_vector(name + "_bias"), {.stride = p});
        }
        /// [1, 1, E] as [E].
        xt::xtensor<T, 1> token(const std::string& name) const {
            const xt::xtensor<T, 3> t = this->template tensor<3>(name);
            return xt::xtensor<T, 1>(xt::flatten(t));
        }
        /// [1, 1 + g^2, E] as [1 + g^2, E].
        xt::xtensor<T, 2> positions(const std::string& name) const {
            const xt::xtensor<T, 3> t = this->template tensor<3>(name);
            detail::require(t.shape(0) == 1, this->who, [&] {
                return this->path(name) + " holds " + detail::shape_string(t.shape()) + "; expected [1, 1 + g^2, E]";
            });
            return xt::xtensor<T, 2>(xt::view(t, 0));
        }
        std::optional<linear_layer<T>> head(const std::string& name) const {
            if (!this->has(name + "_weight")) return std::nullopt;
            return linear_layer<T>(this->matrix(name + "_weight"), this->optional_vector(name + "_bias"));
        }
    };
};

/// The float network.
using vision_transformer = basic_vision_transformer<float>;

}  // namespace nonlocal::nn
