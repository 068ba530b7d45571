#pragma once
/// @file nn/mobilevit.hpp
/// MobileViT (v1) as timm's `mobilevit_xxs`, `_xs` and `_s` build it: a 3 x 3 stem of
/// stride 2, stages of inverted residual (MV2, nn/inverted_residual.hpp) and MobileViT blocks
/// (nn/mobilevit_block.hpp), a 1 x 1 convolution to the features, global average pooling
/// and the classifier.

#include <array>
#include <cstddef>
#include <string_view>
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
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/inverted_residual.hpp"
#include "nonlocal/nn/linear.hpp"
#include "nonlocal/nn/mobilevit_block.hpp"

namespace nonlocal::nn {

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
    template <class Arch = default_arch, execution_policy Ex, class X>
    xt::xtensor<T, 2> operator()(Ex policy, const xt::xexpression<X>& images) const {
        const xt::xtensor<T, 4> maps = this->template features<Arch>(policy, images);
        const std::size_t B = maps.shape(0), F = maps.shape(1), P = maps.shape(2) * maps.shape(3);
        xt::xtensor<T, 2> pooled = xt::empty<T>({B, F});
        for (std::size_t i = 0; i < B * F; ++i) {
            double sum = 0;
            for (std::size_t p = 0; p < P; ++p) sum += maps.data()[i * P + p];
            pooled.data()[i] = T(sum / double(P));
        }
        if (!head_) return pooled;
        return head_->template operator()<Arch>(policy, pooled);
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    xt::xtensor<T, 2> operator()(const xt::xexpression<X>& images) const {
        return operator()<Arch>(execution::seq, images);
    }

    /// The feature maps [B, F, H / 32, W / 32] after `final_conv`, before pooling. A batch of
    /// at least as many images as threads is shared out image by image (each thread runs whole
    /// images on its own, with no synchronisation between layers); a smaller one runs each
    /// layer on every thread.
    template <class Arch = default_arch, execution_policy Ex, class X>
    xt::xtensor<T, 4> features(Ex policy, const xt::xexpression<X>& images) const {
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
                features_of<Arch>(execution::seq, x.data() + b * image, 1, H, W, features.data() + b * map);
            }, detail::task_costs::even);
        } else {
            features_of<Arch>(policy, x.data(), B, H, W, features.data());
        }
        return features;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    xt::xtensor<T, 4> features(const xt::xexpression<X>& images) const {
        return features<Arch>(execution::seq, images);
    }

private:
    /// y = the feature maps of images x [B, C, H, W] (sizes checked), raw arrays. Each block
    /// reads the map before it from a work array and writes its own into a new one; their
    /// blocks are kept for the next call (`buffer`).
    template <class Arch, execution_policy Ex>
    void features_of(Ex policy, const T* x, std::size_t B, std::size_t H, std::size_t W, T* y) const {
        size2 size = stem_.output_size(H, W);
        uninitialized_buffer<T> in(B * stem_.out_channels() * size.h * size.w);
        stem_.template apply<Arch>(policy, x, B, H, W, in.data());
        for (const block& b : blocks_)
            std::visit(
                [&](const auto& part) {
                    const size2 next = part.output_size(size.h, size.w);
                    uninitialized_buffer<T> out(B * part.out_channels() * next.h * next.w);
                    part.template apply<Arch>(policy, in.data(), B, size.h, size.w, out.data());
                    in = std::move(out);
                    size = next;
                },
                b);
        final_conv_.template apply<Arch>(policy, in.data(), B, size.h, size.w, y);
    }

    conv2d<T> stem_;
    std::vector<block> blocks_;
    conv2d<T> final_conv_;
    std::optional<linear_layer<T>> head_;
};

/// The float network.
using mobilevit = basic_mobilevit<float>;

}  // namespace nonlocal::nn
