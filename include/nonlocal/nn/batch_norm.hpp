#pragma once
/// @file nn/batch_norm.hpp
/// Batch normalisation at inference, as PyTorch's `nn.BatchNorm2d` in eval mode: each
/// channel c of x [B, C, H, W] becomes (x - running_mean) / sqrt(running_var + eps) *
/// weight + bias. After a convolution it is folded into the convolution's weights (`fold`).

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/nn/conv2d.hpp"

namespace nonlocal::nn {

/// `nn.BatchNorm2d` in eval mode, held as a scale and a shift per channel.
template <class T = float>
class batch_norm2d {
public:
    /// weight and bias [C] (or both [0]: `affine=False`), running_mean and running_var [C].
    /// Throws `std::invalid_argument` naming the shapes unless they agree, or when eps < 0.
    batch_norm2d(const xt::xtensor<T, 1>& weight, const xt::xtensor<T, 1>& bias, const xt::xtensor<T, 1>& running_mean,
                 const xt::xtensor<T, 1>& running_var, double eps = 1e-5) {
        const std::size_t C = running_mean.size();
        detail::require(C > 0 && running_var.size() == C && weight.size() == bias.size() &&
                            (weight.size() == C || weight.size() == 0) && eps >= 0,
                        "nn::batch_norm2d", [&] {
                            return "weight " + detail::shape_string(weight.shape()) + ", bias " +
                                   detail::shape_string(bias.shape()) + ", running_mean " +
                                   detail::shape_string(running_mean.shape()) + " and running_var " +
                                   detail::shape_string(running_var.shape()) +
                                   " must be [C] (weight and bias may both be [0]) with eps >= 0, got eps = " +
                                   std::to_string(eps);
                        });
        scale_ = xt::empty<T>({C});
        shift_ = xt::empty<T>({C});
        for (std::size_t c = 0; c < C; ++c) {
            const double s = (weight.size() ? double(weight(c)) : 1.0) / std::sqrt(double(running_var(c)) + eps);
            scale_(c) = T(s);
            shift_(c) = T((bias.size() ? double(bias(c)) : 0.0) - double(running_mean(c)) * s);
        }
    }

    std::size_t channels() const noexcept { return scale_.size(); }
    const xt::xtensor<T, 1>& scale() const noexcept { return scale_; }   ///< weight / sqrt(var + eps)
    const xt::xtensor<T, 1>& shift() const noexcept { return shift_; }   ///< bias - mean scale

    /// x [B, C, H, W] or [C, H, W] normalised, the same shape. Throws `std::invalid_argument`
    /// unless x has C channels.
    template <class X>
    auto operator()(const xt::xexpression<X>& x) const {
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R == 3 || R == 4, "nonlocal::nn::batch_norm2d: x is [B, C, H, W] or [C, H, W]");
        const detail::contiguous<T, R> xc(x);
        detail::require(xc.shape(R - 3) == channels(), "nn::batch_norm2d", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must have " + std::to_string(channels()) + " channels";
        });
        xt::xtensor<T, R> y = xt::empty<T>(xc.shape());
        const std::size_t plane = xc.shape(R - 2) * xc.shape(R - 1), planes = y.size() / std::max<std::size_t>(plane, 1);
        for (std::size_t i = 0; i < planes && plane; ++i) {
            const T s = scale_(i % channels()), t = shift_(i % channels());
            const T* from = xc.data() + i * plane;
            T* to = y.data() + i * plane;
            for (std::size_t j = 0; j < plane; ++j) to[j] = from[j] * s + t;
        }
        return y;
    }

private:
    xt::xtensor<T, 1> scale_, shift_;
};

/// The convolution followed by the batch norm as one convolution: each output channel's
/// weights scaled, its bias shifted (computed in double). Its activation stays, applied
/// after both, so `conv` should have none unless that is meant. Throws
/// `std::invalid_argument` unless the norm has the convolution's output channels.
template <class T>
conv2d<T> fold(const conv2d<T>& conv, const batch_norm2d<T>& norm) {
    const std::size_t C = conv.out_channels();
    detail::require(norm.channels() == C, "nn::fold", [&] {
        return "the batch norm's " + std::to_string(norm.channels()) + " channels must be the convolution's " +
               std::to_string(C) + " output channels";
    });
    xt::xtensor<T, 4> weight = conv.weight();
    xt::xtensor<T, 1> bias = xt::empty<T>({C});
    const std::size_t per_channel = weight.size() / C;
    for (std::size_t c = 0; c < C; ++c) {
        const double s = norm.scale()(c);
        for (std::size_t i = 0; i < per_channel; ++i) weight.data()[c * per_channel + i] = T(weight.data()[c * per_channel + i] * s);
        bias(c) = T((conv.bias().size() ? double(conv.bias()(c)) : 0.0) * s + double(norm.shift()(c)));
    }
    return conv2d<T>(std::move(weight), std::move(bias), conv.options(), conv.activation());
}

}  // namespace nonlocal::nn
