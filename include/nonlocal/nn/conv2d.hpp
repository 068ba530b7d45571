#pragma once
/// @file nn/conv2d.hpp
/// 2-D convolution with the weights and layout of PyTorch's `nn.Conv2d` (NCHW), in float or
/// double: stride, zero padding, dilation, groups (depthwise included), optional bias and
/// an activation applied as the results are stored.
///
/// Two algorithms (simd/convolution/):
/// - `gemm`: for each batch item and group, y [Cout / g, Ho Wo] = W [Cout / g, K] times
///   the image's columns [K, Ho Wo] (K = Cin / g kh kw), W packed once, when the layer is
///   built (`simd::packed_rows`): read in place from a zero-padded copy of the image for
///   kernels of more than one tap (`simd::convolve_implicit_gemm`), gathered a panel at a
///   time for 1 x 1 kernels (`simd::convolve_pointwise`);
/// - `direct`: one input channel per group (depthwise), vectors of outputs accumulated in
///   registers over the taps (`simd::convolve_depthwise`).
/// `automatic` takes `direct` for one input channel per group, `gemm` otherwise.

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/simd/activation.hpp"
#include "nonlocal/simd/convolution/depthwise.hpp"
#include "nonlocal/simd/convolution/geometry.hpp"
#include "nonlocal/simd/convolution/implicit_gemm.hpp"
#include "nonlocal/simd/convolution/pointwise.hpp"
#include "nonlocal/simd/convolution/weights.hpp"
#include "nonlocal/simd/packing.hpp"

namespace nonlocal::nn {

/// A pair of sizes along (height, width) (`nonlocal::size2`).
using size2 = nonlocal::size2;

/// How `conv2d` computes (see the file's comment).
enum class conv_algorithm { automatic, gemm, direct };

/// `nn.Conv2d`'s arguments that its weight does not tell.
struct conv2d_options {
    size2 stride = 1;
    size2 padding = 0;    ///< zeros on each side
    size2 dilation = 1;
    std::size_t groups = 1;
    conv_algorithm algorithm = conv_algorithm::automatic;
};

template <class T>
class conv2d;

/// y [B, Cout, Ho, Wo] = `c`'s convolution of x [B, Cin, H, W] on the threads of `policy`, by
/// the algorithm `c`'s options and shapes choose at run time (`conv2d::apply`). Not inline: a
/// program that compiles it once (nonlocal/nn/instances.hpp) declares it `extern` elsewhere.
template <class Arch, class T>
void convolve(execution::parallel_policy policy, const conv2d<T>& c, const T* x, std::size_t B, std::size_t H,
              std::size_t W, T* y);

/// y = a(conv2d(x, W) + b) with `nn.Conv2d`'s weight [Cout, Cin / groups, kh, kw] and bias
/// [Cout] or none.
template <class T = float>
class conv2d {
public:
    conv2d() = default;

    /// Throws `std::invalid_argument` unless groups divide Cout, the kernel is not empty,
    /// stride and dilation are positive, and bias is [Cout] or [0].
    explicit conv2d(xt::xtensor<T, 4> weight, xt::xtensor<T, 1> bias = {}, const conv2d_options& options = {},
                    simd::activation act = simd::activation::identity)
        : weight_(std::move(weight)), bias_(std::move(bias)), options_(options), act_(act) {
        const auto& s = weight_.shape();
        const std::size_t g = options_.groups;
        detail::require(s[0] > 0 && s[1] > 0 && s[2] > 0 && s[3] > 0 && (bias_.size() == 0 || bias_.size() == s[0]),
                        "nn::conv2d", [&] {
                            return "weight " + detail::shape_string(s) + " [Cout, Cin / groups, kh, kw] not empty and bias " +
                                   detail::shape_string(bias_.shape()) + " [Cout] or [0]";
                        });
        detail::field_checks("conv2d_options")
            .need(g > 0 && s[0] % g == 0, "groups", "positive and dividing Cout of weight " + detail::shape_string(s), g)
            .need(options_.stride.h > 0 && options_.stride.w > 0, "stride", "positive", options_.stride)
            .need(options_.dilation.h > 0 && options_.dilation.w > 0, "dilation", "positive", options_.dilation)
            .need(options_.algorithm != conv_algorithm::direct || s[1] == 1, "algorithm",
                  "automatic or gemm unless each group has one input channel (weight " + detail::shape_string(s) + ")",
                  "direct")
            .check("nn::conv2d");
        // Each group's weights [Cout / g, K] packed once as the GEMM reads them.
        if (!direct()) {
            const std::size_t rows = s[0] / g, K = s[1] * s[2] * s[3];
            for (std::size_t group = 0; group < g; ++group)
                packed_.emplace_back(row_matrix<const T>{weight_.data() + group * rows * K, rows, K});
        }
    }

    const xt::xtensor<T, 4>& weight() const noexcept { return weight_; }   ///< [Cout, Cin / groups, kh, kw]
    const xt::xtensor<T, 1>& bias() const noexcept { return bias_; }       ///< [Cout], or [0]
    const conv2d_options& options() const noexcept { return options_; }
    simd::activation activation() const noexcept { return act_; }
    std::size_t in_channels() const noexcept { return weight_.shape(1) * options_.groups; }
    std::size_t out_channels() const noexcept { return weight_.shape(0); }
    size2 kernel() const noexcept { return {weight_.shape(2), weight_.shape(3)}; }

    /// The channels, kernel, stride, padding and dilation as the algorithms read them.
    simd::conv_geometry geometry() const noexcept {
        const conv2d_options& o = options_;
        return {o.groups, weight_.shape(1), out_channels() / o.groups, kernel(), o.stride, o.padding, o.dilation};
    }

    /// The output's height and width for an input of `height` x `width`.
    size2 output_size(std::size_t height, std::size_t width) const noexcept {
        return geometry().output_size(height, width);
    }

    /// Whether every output is as large as its input: stride 1 and the padding on each side
    /// half the dilated kernel's reach, 2 p = d (k - 1).
    bool keeps_size() const noexcept {
        const conv2d_options& o = options_;
        return o.stride == size2(1) && 2 * o.padding.h == o.dilation.h * (kernel().h - 1) &&
               2 * o.padding.w == o.dilation.w * (kernel().w - 1);
    }

    /// The convolution of x [B, Cin, H, W] (or [Cin, H, W]): [B, Cout, Ho, Wo] (or [Cout, Ho,
    /// Wo]), on the threads of `policy` (the result does not depend on their number).
    /// Throws `std::invalid_argument` naming the shapes unless x has Cin channels and the
    /// padded image holds the dilated kernel.
    template <class Arch = default_arch, execution_policy Ex, class X>
    auto operator()(Ex policy, const xt::xexpression<X>& x) const {
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R == 3 || R == 4, "nonlocal::nn::conv2d: x is [B, C, H, W] or [C, H, W]");
        const detail::contiguous<T, R> xc(x);   // borrowed when x is a row-major container
        const std::size_t B = R == 4 ? xc.shape(0) : 1, H = xc.shape(R - 2), W = xc.shape(R - 1);
        const size2 out = output_size(H, W);
        detail::require(xc.shape(R - 3) == in_channels() && out.h > 0 && out.w > 0, "nn::conv2d", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must have " + std::to_string(in_channels()) +
                   " channels and room for the kernel " + detail::shape_string(weight_.shape()) +
                   " (dilation " + std::to_string(options_.dilation.h) + ", " + std::to_string(options_.dilation.w) +
                   ", padding " + std::to_string(options_.padding.h) + ", " + std::to_string(options_.padding.w) + ")";
        });
        std::array<std::size_t, R> shape;
        if constexpr (R == 4) shape = {B, out_channels(), out.h, out.w};
        else shape = {out_channels(), out.h, out.w};
        xt::xtensor<T, R> y = xt::empty<T>(shape);
        apply<Arch>(policy, xc.data(), B, H, W, y.data());
        return y;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    auto operator()(const xt::xexpression<X>& x) const {
        return operator()<Arch>(execution::seq, x);
    }

    /// y [B, Cout, Ho, Wo] = the convolution of x [B, Cin, H, W], raw arrays of the shapes
    /// `output_size` gives, on the threads of `policy`.
    template <class Arch = default_arch, execution_policy Ex>
    void apply(Ex policy, const T* x, std::size_t B, std::size_t H, std::size_t W, T* y) const {
        convolve<Arch>(detail::as_parallel(policy), *this, x, B, H, W, y);
    }
private:
    template <class Arch, class U>
    friend void convolve(execution::parallel_policy, const conv2d<U>&, const U*, std::size_t, std::size_t, std::size_t,
                         U*);

    xt::xtensor<T, 4> weight_;
    xt::xtensor<T, 1> bias_;
    conv2d_options options_;
    simd::activation act_ = simd::activation::identity;
    std::vector<simd::packed_rows<T>> packed_;   // the gemm algorithm's weights, a group each

    bool direct() const noexcept {
        return options_.algorithm == conv_algorithm::direct ||
               (options_.algorithm == conv_algorithm::automatic && weight_.shape(1) == 1);
    }

    simd::conv_weights<T> weights() const noexcept {
        return {weight_.data(), std::span<const simd::packed_rows<T>>(packed_), bias_.size() ? bias_.data() : nullptr, act_};
    }
};

template <class Arch, class T>
void convolve(execution::parallel_policy policy, const conv2d<T>& c, const T* x, std::size_t B, std::size_t H,
              std::size_t W, T* y) {
    const simd::conv_geometry conv = c.geometry();
    if (c.direct()) simd::convolve_depthwise<Arch>(policy, conv, c.weights(), x, B, H, W, y);
    else if (conv.kernel == size2(1)) simd::convolve_pointwise<Arch>(policy, conv, c.weights(), x, B, H, W, y);
    else simd::convolve_implicit_gemm<Arch>(policy, conv, c.weights(), x, B, H, W, y);
}

/// `convolve` of T on the default architecture (float, as the networks use it): declared
/// (`extern`) here when NONLOCAL_NN_EXTERN_INSTANCES is defined, defined by
/// nonlocal/nn/instances.hpp.
#define NONLOCAL_NN_CONVOLVE(prefix, T)                                                                        \
    prefix template void convolve<default_arch, T>(execution::parallel_policy, const conv2d<T>&, const T*,       \
                                                   std::size_t, std::size_t, std::size_t, T*);
#ifdef NONLOCAL_NN_EXTERN_INSTANCES
NONLOCAL_NN_CONVOLVE(extern, float)
#endif

}  // namespace nonlocal::nn
