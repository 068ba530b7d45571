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
/// The pixels at one offset are a group of the neighborhood `patch_group{H, W, ph, pw}`.
/// Unfolding is the copy of the map into tokens the encoder layers need anyway, with each
/// group's pixels one after another; the layers then attend densely within each group's
/// sequence, reading it in place, and folding is the copy back. A map the
/// patch does not divide is resized bilinearly up to the next multiples before the global
/// part and back after it, as timm does.
///
/// `mobilevit` is the whole network as timm's `mobilevit_xxs`, `_xs` and `_s` build it: a
/// 3 x 3 stem of stride 2, stages of inverted residual (MV2) and MobileViT blocks, a 1 x 1
/// convolution to the features, global average pooling and the classifier.

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/neighborhood/patch_group.hpp"
#include "nonlocal/nn/batch_norm.hpp"
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/inverted_residual.hpp"
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

/// One stage of MobileViT as timm's `ByoModelCfg` describes it: `blocks` inverted residuals
/// to `channels`, the first of stride `stride`, and, when `transformer_dim` is set, a
/// MobileViT block after them.
struct mobilevit_stage {
    std::size_t blocks = 1, channels = 0, stride = 1;
    double expansion = 4;               ///< the inverted residuals' bottle ratio
    std::size_t transformer_dim = 0;    ///< 0: no MobileViT block
    std::size_t transformer_depth = 0;
};

/// The architecture of MobileViT (v1) as timm builds it: `named("mobilevit_s")` and the
/// others, or any other stem, stages, features and classes.
struct mobilevit_config {
    std::size_t in_channels = 3, stem = 16;
    std::vector<mobilevit_stage> stages;
    std::size_t features = 0;           ///< final_conv's output channels
    std::size_t classes = 1000;         ///< the head's outputs (0: no head, the pooled features)
    std::size_t num_heads = 4;
    size2 patch = 2;

    /// timm's `mobilevit_xxs`, `mobilevit_xs` and `mobilevit_s` (1000 classes). Throws
    /// `std::invalid_argument` listing the names for another.
    static mobilevit_config named(std::string_view name) {
        const auto stages = [](std::size_t c1, std::size_t c2, std::size_t c3, std::size_t c4, std::size_t c5,
                               std::array<std::size_t, 3> dims, double ratio) {
            return std::vector<mobilevit_stage>{{1, c1, 1, ratio},
                                                {3, c2, 2, ratio},
                                                {1, c3, 2, ratio, dims[0], 2},
                                                {1, c4, 2, ratio, dims[1], 4},
                                                {1, c5, 2, ratio, dims[2], 3}};
        };
        if (name == "mobilevit_xxs") return {.stages = stages(16, 24, 48, 64, 80, {64, 80, 96}, 2), .features = 320};
        if (name == "mobilevit_xs") return {.stages = stages(32, 48, 64, 80, 96, {96, 120, 144}, 4), .features = 384};
        if (name == "mobilevit_s") return {.stages = stages(32, 64, 96, 128, 160, {144, 192, 240}, 4), .features = 640};
        detail::fail("nn::mobilevit_config::named",
                     "unknown architecture " + std::string(name) + "; expected mobilevit_xxs, mobilevit_xs or mobilevit_s");
    }
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
    template <class Arch = default_arch, class X, execution_policy Ex = execution::sequenced_policy>
    xt::xtensor<T, 4> operator()(const xt::xexpression<X>& x, Ex policy = {}) const {
        const detail::contiguous<T, 4> xc(x);
        const std::size_t B = xc.shape(0), C = xc.shape(1), H = xc.shape(2), W = xc.shape(3);
        detail::require(C == in_channels() && H > 0 && W > 0, "nn::mobilevit_block", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must have " + std::to_string(in_channels()) +
                   " channels and pixels";
        });
        xt::xtensor<T, 4> y = xt::empty<T>({B, out_channels(), H, W});
        apply<Arch>(xc.data(), B, H, W, y.data(), policy);
        return y;
    }

    /// y [B, O, H, W] = the block's output for x [B, C, H, W], raw arrays of those shapes, y
    /// apart from x. The maps and tokens in between live in work arrays whose blocks are
    /// kept for the next call (`buffer`).
    template <class Arch = default_arch, execution_policy Ex = execution::sequenced_policy>
    void apply(const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, Ex policy = {}) const {
        const int threads = detail::thread_count(policy);
        const std::size_t C = in_channels(), D = transformer_dim(), O = conv_proj_.out_channels(), HW = H * W;
        uninitialised_buffer<T> features(B * C * HW), local(B * D * HW);
        conv_kxk_.template apply<Arch>(x, B, H, W, features.data(), threads);
        conv_1x1_.template apply<Arch>(features.data(), B, H, W, local.data(), threads);
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
        uninitialised_buffer<T> tokens(B * P * D);
        if (divided == map) {
            detail::maps_to_tokens(local.data(), B, D, P, tokens.data(), pixel_of);
        } else {
            const xt::xtensor<T, 4> resized = resize_bilinear(maps(local.data(), map), divided);
            detail::maps_to_tokens(resized.data(), B, D, P, tokens.data(), pixel_of);
        }
        for (const auto& layer : transformer_) layer.template apply_in_place<Arch>(tokens.data(), B * G, N, dense{}, policy);
        norm_.template normalise<Arch>(tokens.data(), tokens.data(), B * P);
        if (divided == map) {
            detail::tokens_to_maps(tokens.data(), B, P, D, local.data(), pixel_of);
        } else {
            xt::xtensor<T, 4> folded = xt::empty<T>({B, D, divided.h, divided.w});
            detail::tokens_to_maps(tokens.data(), B, P, D, folded.data(), pixel_of);
            maps(local.data(), map) = resize_bilinear(folded, map);
        }
        if (!conv_fusion_) return conv_proj_.template apply<Arch>(local.data(), B, H, W, y, threads);
        // [x, conv_proj(local)] along the channels, the projection written in place image by image.
        uninitialised_buffer<T> both(B * (C + O) * HW);
        for (std::size_t b = 0; b < B; ++b) {
            T* image = both.data() + b * (C + O) * HW;
            std::copy_n(x + b * C * HW, C * HW, image);
            conv_proj_.template apply<Arch>(local.data() + b * D * HW, 1, H, W, image + C * HW, threads);
        }
        conv_fusion_->template apply<Arch>(both.data(), B, H, W, y, threads);
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

/// MobileViT (v1) for classification over images [B, 3, H, W] of T, float or double (see the
/// file's comment).
template <class T = float>
class basic_mobilevit {
public:
    /// A block of a stage: an inverted residual (MV2) or a MobileViT block.
    using block = std::variant<basic_inverted_residual<T>, basic_mobilevit_block<T>>;

    /// The stem, the blocks of every stage in order, the convolution to the features and the
    /// classifier (none: `operator()` gives the pooled features). Throws
    /// `std::invalid_argument` naming the channels where one part does not feed the next.
    basic_mobilevit(conv2d<T> stem, std::vector<block> blocks, conv2d<T> final_conv,
              std::optional<linear_layer<T>> head = std::nullopt)
        : stem_(std::move(stem)), blocks_(std::move(blocks)), final_conv_(std::move(final_conv)), head_(std::move(head)) {
        std::size_t channels = stem_.out_channels(), index = 0;
        for (const block& b : blocks_) {
            const std::size_t in = std::visit([](const auto& part) { return part.in_channels(); }, b);
            detail::require(in == channels, "nn::mobilevit", [&] {
                return "block " + std::to_string(index) + " takes " + std::to_string(in) + " channels; the part before it gives " +
                       std::to_string(channels);
            });
            channels = std::visit([](const auto& part) { return part.out_channels(); }, b);
            ++index;
        }
        detail::require(final_conv_.in_channels() == channels && (!head_ || head_->in_features() == final_conv_.out_channels()),
                        "nn::mobilevit", [&] {
                            return "final_conv " + detail::shape_string(final_conv_.weight().shape()) + " must take the last block's " +
                                   std::to_string(channels) + " channels and the head its output channels";
                        });
    }

    /// The MobileViT blocks' encoder layers and the head in precision `p` from now on
    /// (`linear_layer::to`); the convolutions, a fair share of the network's work, stay in T.
    basic_mobilevit& to(precision p) {
        for (block& b : blocks_)
            if (auto* transformer_block = std::get_if<basic_mobilevit_block<T>>(&b)) transformer_block->to(p);
        if (head_) head_->to(p);
        return *this;
    }

    const std::vector<block>& blocks() const noexcept { return blocks_; }
    std::size_t num_features() const noexcept { return final_conv_.out_channels(); }
    const std::optional<linear_layer<T>>& head() const noexcept { return head_; }

    /// The logits [B, classes] of images [B, C, H, W] (the pooled features [B, F] without a
    /// head), on the threads of `policy` (the result does not depend on their number).
    /// Throws `std::invalid_argument` naming the shape when the images do not fit the stem
    /// or are too small for the network's strides.
    template <class Arch = default_arch, class X, execution_policy Ex = execution::sequenced_policy>
    xt::xtensor<T, 2> operator()(const xt::xexpression<X>& images, Ex policy = {}) const {
        const xt::xtensor<T, 4> maps = this->template features<Arch>(images, policy);
        const std::size_t B = maps.shape(0), F = maps.shape(1), P = maps.shape(2) * maps.shape(3);
        xt::xtensor<T, 2> pooled = xt::empty<T>({B, F});
        for (std::size_t i = 0; i < B * F; ++i) {
            double sum = 0;
            for (std::size_t p = 0; p < P; ++p) sum += maps.data()[i * P + p];
            pooled.data()[i] = T(sum / double(P));
        }
        if (!head_) return pooled;
        return head_->template operator()<Arch>(pooled, policy);
    }

    /// The feature maps [B, F, H / 32, W / 32] after `final_conv`, before pooling. A batch of
    /// at least as many images as threads is shared out image by image (each thread runs whole
    /// images on its own, with no synchronisation between layers); a smaller one runs each
    /// layer on every thread.
    template <class Arch = default_arch, class X, execution_policy Ex = execution::sequenced_policy>
    xt::xtensor<T, 4> features(const xt::xexpression<X>& images, Ex policy = {}) const {
        const detail::contiguous<T, 4> x(images);
        const std::size_t B = x.shape(0), H = x.shape(2), W = x.shape(3);
        size2 size = stem_.output_size(H, W);
        detail::require(x.shape(1) == stem_.in_channels() && size.h > 0 && size.w > 0, "nn::mobilevit", [&] {
            return "images " + detail::shape_string(x.shape()) + " must be [B, " + std::to_string(stem_.in_channels()) +
                   ", H, W] with room for the stem's kernel";
        });
        for (const block& b : blocks_) {
            size = std::visit([&](const auto& part) { return part.output_size(size.h, size.w); }, b);
            detail::require(size.h > 0 && size.w > 0, "nn::mobilevit", [&] {
                return "images " + detail::shape_string(x.shape()) + " are too small for the network's strides";
            });
        }
        xt::xtensor<T, 4> features = xt::empty<T>({B, final_conv_.out_channels(), size.h, size.w});
        const int threads = detail::thread_count(policy);
        if (threads > 1 && B >= std::size_t(threads)) {
            const std::size_t image = x.shape(1) * H * W, map = features.size() / B;
            detail::parallel_for(B, threads, [&](std::size_t b) {
                features_of<Arch>(x.data() + b * image, 1, H, W, features.data() + b * map, execution::seq);
            }, detail::task_costs::even);
        } else {
            features_of<Arch>(x.data(), B, H, W, features.data(), policy);
        }
        return features;
    }

private:
    /// y = the feature maps of images x [B, C, H, W] (sizes checked), raw arrays. Each block
    /// reads the map before it from a work array and writes its own into a new one; their
    /// blocks are kept for the next call (`buffer`).
    template <class Arch, execution_policy Ex>
    void features_of(const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, Ex policy) const {
        const int threads = detail::thread_count(policy);
        size2 size = stem_.output_size(H, W);
        uninitialised_buffer<T> in(B * stem_.out_channels() * size.h * size.w);
        stem_.template apply<Arch>(x, B, H, W, in.data(), threads);
        for (const block& b : blocks_)
            std::visit(
                [&](const auto& part) {
                    const size2 next = part.output_size(size.h, size.w);
                    uninitialised_buffer<T> out(B * part.out_channels() * next.h * next.w);
                    part.template apply<Arch>(in.data(), B, size.h, size.w, out.data(), policy);
                    in = std::move(out);
                    size = next;
                },
                b);
        final_conv_.template apply<Arch>(in.data(), B, size.h, size.w, y, threads);
    }

    conv2d<T> stem_;
    std::vector<block> blocks_;
    conv2d<T> final_conv_;
    std::optional<linear_layer<T>> head_;
};

/// The float network.
using mobilevit = basic_mobilevit<float>;

}  // namespace nonlocal::nn
