#pragma once
/// @file nn/vision_transformer.hpp
/// The Vision Transformer (Dosovitskiy et al. 2021) for classification, as torchvision's
/// `VisionTransformer` and timm's `VisionTransformer` (class token pooling) compute it:
///
///     tokens = [class token, patches of the image, each a conv_proj of stride p] + position embedding
///     tokens = encoder layers (norm first, GELU, layer norm eps 1e-6)
///     logits = head(norm(tokens)[0])
///
/// `nn::load_torchvision` and `nn::load_timm` (nn/io/vision_transformer.hpp) read the weights
/// from a model's state_dict saved as one .npy per entry, the dots of the
/// names as underscores:
///
///     for name, value in model.state_dict().items():
///         numpy.save(prefix + name.replace(".", "_") + ".npy", value.numpy())

#include <charconv>
#include <cstddef>
#include <string_view>
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

/// The architecture of a Vision Transformer: `named("vit_b_16")` (torchvision's names),
/// `named("vit_base_patch16_224")` (timm's), or any other sizes.
struct vit_config {
    std::size_t image_size = 224;   ///< the side of the images it was built for: g = image_size / patch
    std::size_t patch = 16;
    std::size_t hidden = 768;       ///< E
    std::size_t layers = 12;
    std::size_t heads = 12;
    std::size_t mlp = 3072;         ///< the MLP's hidden features
    std::size_t classes = 1000;     ///< the head's outputs (0: no head, the class token's features)
    std::size_t in_channels = 3;
    bool qkv_bias = true;

    /// torchvision's `vit_b_16`, `vit_b_32`, `vit_l_16`, `vit_l_32`, `vit_h_14` and timm's
    /// `vit_{tiny, small, base, large, huge}_patch{P}_{S}` (anything after a dot, a pretrained
    /// tag, ignored), 1000 classes. Throws `std::invalid_argument` naming the forms for another.
    static vit_config named(std::string_view name) {
        name = name.substr(0, name.find('.'));
        const auto sized = [](char size, std::size_t patch, std::size_t image) -> std::optional<vit_config> {
            switch (size) {
            case 't': return vit_config{image, patch, 192, 12, 3, 768};
            case 's': return vit_config{image, patch, 384, 12, 6, 1536};
            case 'b': return vit_config{image, patch, 768, 12, 12, 3072};
            case 'l': return vit_config{image, patch, 1024, 24, 16, 4096};
            case 'h': return vit_config{image, patch, 1280, 32, 16, 5120};
            default: return std::nullopt;
            }
        };
        const auto number = [](std::string_view text) -> std::size_t {
            std::size_t value = 0;
            const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
            return error == std::errc() && end == text.data() + text.size() ? value : 0;
        };
        std::optional<vit_config> config;
        if (name.size() > 6 && name.starts_with("vit_") && name[5] == '_' && std::string_view("blh").find(name[4]) != std::string_view::npos) {
            if (const std::size_t patch = number(name.substr(6))) config = sized(name[4], patch, 224);   // torchvision
        } else {
            for (const std::string_view size : {"tiny", "small", "base", "large", "huge"}) {
                const std::string start = "vit_" + std::string(size) + "_patch";
                if (!name.starts_with(start)) continue;
                const std::string_view rest = name.substr(start.size());
                const std::size_t gap = rest.find('_');
                const std::size_t patch = number(rest.substr(0, gap));
                const std::size_t image = gap == std::string_view::npos ? 0 : number(rest.substr(gap + 1));
                if (patch && image) config = sized(size[0], patch, image);
            }
        }
        if (!config || config->image_size % config->patch)
            detail::fail("nn::vit_config::named", "unknown architecture " + std::string(name) +
                                                      "; expected torchvision's vit_b_16, vit_b_32, vit_l_16, vit_l_32 or "
                                                      "vit_h_14, or timm's vit_{tiny, small, base, large, huge}_patch{P}_{S}");
        return *config;
    }
};

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

    /// The encoder layers' linear maps and the head in precision `p` from now on
    /// (`linear_layer::to`, as PyTorch's `model.to(torch.bfloat16)`); the patch embedding,
    /// the attention's Q K^T and P V, the norms and the GELU stay in T. Throws
    /// `std::invalid_argument` for `precision::bf16` unless T is float.
    basic_vision_transformer& to(precision p) {
        for (auto& layer : layers_) layer.to(p);
        if (head_) head_->to(p);
        return *this;
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
    template <class Arch = default_arch, execution_policy Ex, class X>
    xt::xtensor<T, 2> operator()(Ex policy, const xt::xexpression<X>& images) const {
        xt::xtensor<T, 2> features = this->template class_features<Arch>(policy, images);
        if (!head_) return features;
        return head_->template operator()<Arch>(policy, features);
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    xt::xtensor<T, 2> operator()(const xt::xexpression<X>& images) const {
        return operator()<Arch>(execution::seq, images);
    }

    /// The class token's features [B, E] after the final norm (before the head).
    template <class Arch = default_arch, execution_policy Ex, class X>
    xt::xtensor<T, 2> class_features(Ex policy, const xt::xexpression<X>& images) const {
        const xt::xtensor<T, 3> all = this->template encode<Arch>(policy, images);
        const std::size_t B = all.shape(0), E = embed_dim();
        xt::xtensor<T, 2> features = xt::empty<T>({B, E});
        for (std::size_t b = 0; b < B; ++b) norm_.template normalize<Arch>(&all(b, 0, 0), &features(b, 0), 1);
        return features;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    xt::xtensor<T, 2> class_features(const xt::xexpression<X>& images) const {
        return class_features<Arch>(execution::seq, images);
    }

    /// The tokens [B, 1 + (H / p)(W / p), E] after the encoder layers, before the final norm.
    template <class Arch = default_arch, execution_policy Ex, class X>
    xt::xtensor<T, 3> encode(Ex policy, const xt::xexpression<X>& images) const {
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
        const xt::xtensor<T, 4> patches = patch_.template operator()<Arch>(policy, images);   // [B, E, g, g]
        xt::xtensor<T, 3> tokens = xt::empty<T>({B, 1 + N, E});
        for (std::size_t b = 0; b < B; ++b) {
            for (std::size_t e = 0; e < E; ++e) tokens(b, 0, e) = class_token_(e) + position(0, e);
            for (std::size_t e = 0; e < E; ++e)
                for (std::size_t t = 0; t < N; ++t) tokens(b, 1 + t, e) = patches.data()[(b * E + e) * N + t] + position(1 + t, e);
        }
        for (const auto& layer : layers_) layer.template apply_in_place<Arch>(policy, tokens.data(), B, 1 + N);
        return tokens;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    xt::xtensor<T, 3> encode(const xt::xexpression<X>& images) const {
        return encode<Arch>(execution::seq, images);
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
};

/// The float network.
using vision_transformer = basic_vision_transformer<float>;

}  // namespace nonlocal::nn
