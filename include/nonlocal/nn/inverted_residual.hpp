#pragma once
/// @file nn/inverted_residual.hpp
/// The inverted residual block of MobileNetV2 (Sandler et al. 2018), MobileViT's "MV2":
///
///     y = project(depthwise(expand(x))) (+ x when the block keeps the channels and the size)
///
/// `expand` a 1 x 1 convolution to t C channels with its activation, `depthwise` a k x k
/// convolution of one channel per group (the block's stride) with its activation,
/// `project` a 1 x 1 convolution back to C' channels without one (a linear bottleneck).
/// Batch norms are folded into the convolutions (`fold`, `read_conv_norm_act`).

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/nn/batch_norm.hpp"
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/simd/activation.hpp"

namespace nonlocal::nn {

/// timm's `make_divisible(v, 8)`: v rounded to the nearest multiple of 8 (at least 8), one
/// multiple more when rounding lost more than a tenth of v.
constexpr std::size_t divisible_by_8(double v) {
    std::size_t out = std::max<std::size_t>(8, std::size_t(v + 4) / 8 * 8);
    if (double(out) < 0.9 * v) out += 8;
    return out;
}

/// The architecture of one inverted residual as timm builds it for MobileViT (a
/// `BottleneckBlock` with `bottle_in` and `linear_out`, a 3 x 3 depthwise convolution).
struct inverted_residual_config {
    std::size_t in_channels = 0, out_channels = 0;
    std::size_t stride = 1;                        ///< the depthwise convolution's
    std::size_t mid_channels = 0;                  ///< the expanded channels (timm: divisible_by_8(in x ratio))
    simd::activation act = simd::activation::silu; ///< after the expansion and the depthwise convolution
};

/// MobileNetV2's inverted residual block over maps [B, C, H, W] of T, float or double (see the
/// file's comment).
template <class T = float>
class basic_inverted_residual {
public:
    /// `expand` none for an expansion ratio of 1 (MobileNetV2's first block). The residual
    /// is added when `project` gives the input's channels and the depthwise convolution keeps
    /// the map's size (stride 1, padding half its reach).
    /// Throws `std::invalid_argument` naming the shapes when the convolutions do not chain,
    /// the expansion or the projection is not 1 x 1, or the middle one is not depthwise.
    basic_inverted_residual(std::optional<conv2d<T>> expand, conv2d<T> depthwise, conv2d<T> project)
        : expand_(std::move(expand)), depthwise_(std::move(depthwise)), project_(std::move(project)) {
        const std::size_t mid = depthwise_.in_channels();
        const bool fits = (!expand_ || (expand_->out_channels() == mid && expand_->kernel() == size2(1) &&
                                        expand_->keeps_size())) &&
                          depthwise_.out_channels() == mid && depthwise_.options().groups == mid &&
                          project_.in_channels() == mid && project_.kernel() == size2(1) && project_.keeps_size();
        detail::require(fits, "nn::inverted_residual", [&] {
            return "expected expand [M, C, 1, 1] and project [C', M, 1, 1] of stride 1 without padding, depthwise "
                   "[M, 1, k, k] with M groups; got " +
                   (expand_ ? "expand " + detail::shape_string(expand_->weight().shape()) + ", " : std::string()) +
                   "depthwise " + detail::shape_string(depthwise_.weight().shape()) + " with " +
                   std::to_string(depthwise_.options().groups) + " groups, project " +
                   detail::shape_string(project_.weight().shape());
        });
    }

    std::size_t in_channels() const noexcept { return expand_ ? expand_->in_channels() : depthwise_.in_channels(); }
    std::size_t out_channels() const noexcept { return project_.out_channels(); }
    std::size_t stride() const noexcept { return depthwise_.options().stride.h; }
    bool residual() const noexcept {
        return in_channels() == out_channels() && depthwise_.keeps_size();
    }

    /// The output's height and width for an input of `height` x `width` (the depthwise
    /// convolution's).
    size2 output_size(std::size_t height, std::size_t width) const noexcept {
        return depthwise_.output_size(height, width);
    }

    /// The block's output [B, C', H / s, W / s] (sizes as `output_size` gives them) for
    /// x [B, C, H, W], on the threads of `policy` (the result does not depend on their
    /// number). Throws `std::invalid_argument` naming the shape unless x has C channels.
    template <class Arch = default_arch, execution_policy Ex, class X>
    xt::xtensor<T, 4> operator()(Ex policy, const xt::xexpression<X>& x) const {
        const detail::contiguous<T, 4> xc(x);
        const std::size_t B = xc.shape(0), H = xc.shape(2), W = xc.shape(3);
        const size2 out = output_size(H, W);
        detail::require(xc.shape(1) == in_channels() && out.h > 0 && out.w > 0, "nn::inverted_residual", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must have " + std::to_string(in_channels()) +
                   " channels and room for the depthwise kernel " + detail::shape_string(depthwise_.weight().shape());
        });
        xt::xtensor<T, 4> y = xt::empty<T>({B, out_channels(), out.h, out.w});
        apply<Arch>(policy, xc.data(), B, H, W, y.data());
        return y;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    xt::xtensor<T, 4> operator()(const xt::xexpression<X>& x) const {
        return operator()<Arch>(execution::seq, x);
    }

    /// y [B, C', Ho, Wo] = the block's output for x [B, C, H, W], raw arrays of those shapes
    /// (Ho x Wo as `output_size` gives it), y apart from x. The expanded maps live in work
    /// arrays whose blocks are kept for the next call (`buffer`).
    template <class Arch = default_arch, execution_policy Ex>
    void apply(Ex policy, const T* x, std::size_t B, std::size_t H, std::size_t W, T* y) const {
        const std::size_t mid = depthwise_.in_channels();
        const size2 out = output_size(H, W);
        uninitialized_buffer<T> expanded(expand_ ? B * mid * H * W : 0), middle(B * mid * out.h * out.w);
        if (expand_) expand_->template apply<Arch>(policy, x, B, H, W, expanded.data());
        depthwise_.template apply<Arch>(policy, expand_ ? expanded.data() : x, B, H, W, middle.data());
        project_.template apply<Arch>(policy, middle.data(), B, out.h, out.w, y);
        if (residual())
            for (std::size_t i = 0, n = B * out_channels() * H * W; i < n; ++i) y[i] += x[i];
    }

private:
    std::optional<conv2d<T>> expand_;
    conv2d<T> depthwise_, project_;
};

/// The float block.
using inverted_residual = basic_inverted_residual<float>;

}  // namespace nonlocal::nn
