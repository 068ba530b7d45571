#pragma once
/// @file nn/mobilevit_block.hpp
/// MobileViT's block (Mehta and Rastegari, ICLR 2022) as the paper draws it and timm's
/// `MobileVitBlock` computes it:
///
///     local:   y = conv_1x1(conv_kxk(x))                 (conv_kxk with its batch norm and SiLU)
///     global:  unfold y into patches of ph x pw pixels; the pixels at one offset of every
///              patch attend to each other through the transformer layers; norm; fold back
///     fusion:  z = conv_fusion([x, conv_proj(y)])         (both with batch norm and SiLU)
///
/// The pixels at one offset are a group of the neighborhood `patch_group{H, W, ph, pw}`.
/// Unfolding is the copy of the map into tokens the encoder layers need anyway, with each
/// group's pixels one after another; the layers then attend densely within each group's
/// sequence, reading it in place, and folding is the copy back. A map the
/// patch does not divide is resized bilinearly up to the next multiples before the global
/// part and back after it, as timm does.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/neighborhood/patch_group.hpp"
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/layer_norm.hpp"
#include "nonlocal/nn/linear.hpp"
#include "nonlocal/nn/multi_head_attention.hpp"
#include "nonlocal/nn/resize.hpp"
#include "nonlocal/nn/transformer.hpp"

namespace nonlocal::nn {

/// The architecture of one MobileViT block as timm builds it (`MobileVitBlock`).
struct mobilevit_block_config {
    std::size_t in_channels = 0;
    std::size_t out_channels = 0;       ///< conv_proj's and conv_fusion's (0: in_channels)
    std::size_t transformer_dim = 0;    ///< D, conv_1x1's output channels
    std::size_t transformer_depth = 0;  ///< encoder layers
    std::size_t num_heads = 4;
    double mlp_ratio = 2;               ///< the MLP's hidden features over D
    size2 patch = 2;
    std::size_t kernel = 3;             ///< conv_kxk's and conv_fusion's
    bool fusion = true;                 ///< conv_fusion (timm's no_fusion = false)
};

/// MobileViT's block over feature maps [B, C, H, W] of T, float or double (see the file's
/// comment).
template <class T = float>
class basic_mobilevit_block {
public:
    /// The convolutions with their batch norms folded in and their activations set; the
    /// encoder layers (norm first) of D = conv_1x1's output channels; `conv_fusion` none for
    /// a block without fusion (its output is then conv_proj's). Throws
    /// `std::invalid_argument` naming the channels that do not chain.
    basic_mobilevit_block(conv2d<T> conv_kxk, conv2d<T> conv_1x1, std::vector<basic_transformer_encoder_layer<T>> transformer,
                    basic_layer_norm<T> norm, conv2d<T> conv_proj, std::optional<conv2d<T>> conv_fusion, size2 patch = 2)
        : conv_kxk_(std::move(conv_kxk)), conv_1x1_(std::move(conv_1x1)), transformer_(std::move(transformer)),
          norm_(std::move(norm)), conv_proj_(std::move(conv_proj)), conv_fusion_(std::move(conv_fusion)), patch_(patch) {
        const std::size_t C = conv_kxk_.in_channels(), D = conv_1x1_.out_channels();
        bool fits = conv_kxk_.out_channels() == C && conv_kxk_.keeps_size() && conv_1x1_.in_channels() == C &&
                    conv_1x1_.kernel() == size2(1) && conv_1x1_.keeps_size() && norm_.features() == D &&
                    conv_proj_.in_channels() == D && conv_proj_.kernel() == size2(1) && conv_proj_.keeps_size() &&
                    patch_.h > 0 && patch_.w > 0 &&
                    (!conv_fusion_ || (conv_fusion_->in_channels() == C + conv_proj_.out_channels() &&
                                       conv_fusion_->keeps_size()));
        for (const auto& layer : transformer_) fits = fits && layer.self_attn.embed_dim == D && layer.norm_first;
        detail::require(fits, "nn::mobilevit_block", [&] {
            return "expected conv_kxk [C, C, k, k], conv_1x1 [D, C, 1, 1], norm-first layers and a norm of D "
                   "features, conv_proj [O, D, 1, 1] and conv_fusion [O, C + O, k, k], each convolution keeping the "
                   "map's size (stride 1, padding half its reach); got conv_kxk " +
                   detail::shape_string(conv_kxk_.weight().shape()) + ", conv_1x1 " +
                   detail::shape_string(conv_1x1_.weight().shape()) + ", conv_proj " +
                   detail::shape_string(conv_proj_.weight().shape()) +
                   (conv_fusion_ ? ", conv_fusion " + detail::shape_string(conv_fusion_->weight().shape()) : "");
        });
    }

    /// The encoder layers' linear maps in precision `p` from now on (`linear_layer::to`); the
    /// convolutions stay in T.
    basic_mobilevit_block& to(precision p) {
        for (auto& layer : transformer_) layer.to(p);
        return *this;
    }

    std::size_t in_channels() const noexcept { return conv_kxk_.in_channels(); }
    std::size_t out_channels() const noexcept {
        return conv_fusion_ ? conv_fusion_->out_channels() : conv_proj_.out_channels();
    }
    std::size_t transformer_dim() const noexcept { return conv_1x1_.out_channels(); }   ///< D
    size2 patch() const noexcept { return patch_; }
    /// The output's height and width for an input of `height` x `width`: the same.
    size2 output_size(std::size_t height, std::size_t width) const noexcept { return {height, width}; }

    /// The block's output [B, O, H, W] for x [B, C, H, W], on the threads of `policy` (the
    /// result does not depend on their number). Throws `std::invalid_argument` naming the
    /// shape unless x has C channels and is not empty.
    template <class Arch = default_arch, execution_policy Ex, class X>
    xt::xtensor<T, 4> operator()(Ex policy, const xt::xexpression<X>& x) const {
        const detail::contiguous<T, 4> xc(x);
        const std::size_t B = xc.shape(0), C = xc.shape(1), H = xc.shape(2), W = xc.shape(3);
        detail::require(C == in_channels() && H > 0 && W > 0, "nn::mobilevit_block", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must have " + std::to_string(in_channels()) +
                   " channels and pixels";
        });
        xt::xtensor<T, 4> y = xt::empty<T>({B, out_channels(), H, W});
        apply<Arch>(policy, xc.data(), B, H, W, y.data());
        return y;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    xt::xtensor<T, 4> operator()(const xt::xexpression<X>& x) const {
        return operator()<Arch>(execution::seq, x);
    }

    /// y [B, O, H, W] = the block's output for x [B, C, H, W], raw arrays of those shapes, y
    /// apart from x. The maps and tokens in between live in work arrays whose blocks are
    /// kept for the next call (`buffer`).
    template <class Arch = default_arch, execution_policy Ex>
    void apply(Ex policy, const T* x, std::size_t B, std::size_t H, std::size_t W, T* y) const {
        const std::size_t C = in_channels(), D = transformer_dim(), O = conv_proj_.out_channels(), HW = H * W;
        uninitialized_buffer<T> features(B * C * HW), local(B * D * HW);
        conv_kxk_.template apply<Arch>(policy, x, B, H, W, features.data());
        conv_1x1_.template apply<Arch>(policy, features.data(), B, H, W, local.data());
        // The global part on a map the patch divides: its pixels as tokens [B G, N, D],
        // through the layers and the norm, and back.
        const size2 map{H, W}, divided{(H + patch_.h - 1) / patch_.h * patch_.h, (W + patch_.w - 1) / patch_.w * patch_.w};
        const std::size_t P = divided.h * divided.w;
        const auto maps = [&](T* data, size2 size) {
            return xt::adapt(data, B * D * size.h * size.w, xt::no_ownership(),
                             std::array<std::size_t, 4>{B, D, size.h, size.w});
        };
        // Each patch group's pixels one after another, as timm's unfold lays them out: the
        // encoder layers then run on B G sequences of N tokens with dense attention, which
        // the tiled kernel reads in place (on the map's order, `patch_group` would gather
        // each group's rows of q, k and v and scatter its results, head by head).
        const patch_group groups{divided.h, divided.w, patch_.h, patch_.w};
        const std::size_t G = groups.groups(), N = groups.group_size();
        std::vector<std::size_t> pixel(P);
        for (std::size_t r = 0; r < P; ++r) pixel[r] = groups.member(r / N, r % N);
        const auto pixel_of = [&](std::size_t r) { return pixel[r]; };
        uninitialized_buffer<T> tokens(B * P * D);
        if (divided == map) {
            detail::maps_to_tokens(local.data(), B, D, P, tokens.data(), pixel_of);
        } else {
            const xt::xtensor<T, 4> resized = resize_bilinear(maps(local.data(), map), divided);
            detail::maps_to_tokens(resized.data(), B, D, P, tokens.data(), pixel_of);
        }
        for (const auto& layer : transformer_) layer.template apply_in_place<Arch>(policy, tokens.data(), B * G, N);
        norm_.template normalize<Arch>(tokens.data(), tokens.data(), B * P);
        if (divided == map) {
            detail::tokens_to_maps(tokens.data(), B, P, D, local.data(), pixel_of);
        } else {
            xt::xtensor<T, 4> folded = xt::empty<T>({B, D, divided.h, divided.w});
            detail::tokens_to_maps(tokens.data(), B, P, D, folded.data(), pixel_of);
            maps(local.data(), map) = resize_bilinear(folded, map);
        }
        if (!conv_fusion_) return conv_proj_.template apply<Arch>(policy, local.data(), B, H, W, y);
        // [x, conv_proj(local)] along the channels, the projection written in place image by image.
        uninitialized_buffer<T> both(B * (C + O) * HW);
        for (std::size_t b = 0; b < B; ++b) {
            T* image = both.data() + b * (C + O) * HW;
            std::copy_n(x + b * C * HW, C * HW, image);
            conv_proj_.template apply<Arch>(policy, local.data() + b * D * HW, 1, H, W, image + C * HW);
        }
        conv_fusion_->template apply<Arch>(policy, both.data(), B, H, W, y);
    }

private:
    conv2d<T> conv_kxk_, conv_1x1_;
    std::vector<basic_transformer_encoder_layer<T>> transformer_;
    basic_layer_norm<T> norm_;
    conv2d<T> conv_proj_;
    std::optional<conv2d<T>> conv_fusion_;
    size2 patch_;
};

/// The float block.
using mobilevit_block = basic_mobilevit_block<float>;

}  // namespace nonlocal::nn
