#pragma once
/// @file nn/pooling.hpp
/// Max, average and adaptive average pooling of feature maps [B, C, H, W] or [C, H, W], as
/// PyTorch's `nn.MaxPool2d`, `nn.AvgPool2d` and `nn.AdaptiveAvgPool2d` compute them
/// (output sizes, `ceil_mode`, `count_include_pad`, NaN propagated by the max).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/nn/conv2d.hpp"

namespace nonlocal::nn {

/// The arguments of `nn.MaxPool2d` and `nn.AvgPool2d`.
struct pool2d_options {
    size2 kernel = 1;
    size2 stride = 0;   ///< 0: the kernel, PyTorch's default
    size2 padding = 0;  ///< at most half the (dilated) kernel, as PyTorch requires
    size2 dilation = 1; ///< max pooling only
    bool ceil_mode = false;
    bool count_include_pad = true;   ///< average pooling only
};

namespace detail_pool {
/// PyTorch's pooling output size, `ceil_mode` keeping a last window that starts inside the
/// image or its left padding.
inline std::size_t output_count(std::size_t size, std::size_t kernel, std::size_t stride, std::size_t padding,
                                std::size_t dilation, bool ceil_mode) {
    const std::size_t span = dilation * (kernel - 1) + 1, padded = size + 2 * padding;
    if (padded < span) return 0;
    std::size_t count = (padded - span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    if (ceil_mode && (count - 1) * stride >= size + padding) --count;
    return count;
}

/// The input's height and width, with the options checked against them.
template <class X>
std::array<std::size_t, 2> checked_size(const char* who, const xt::xexpression<X>& x, const pool2d_options& o,
                                        std::size_t& Ho, std::size_t& Wo) {
    constexpr std::size_t R = detail::static_rank<X>;
    const auto& shape = x.derived_cast().shape();
    const std::size_t H = shape[R - 2], W = shape[R - 1];
    const size2 s = o.stride == size2(0) ? o.kernel : o.stride;
    detail::field_checks("pool2d_options")
        .need(o.kernel.h > 0 && o.kernel.w > 0, "kernel", "positive", o.kernel)
        .need(o.stride == size2(0) || (o.stride.h > 0 && o.stride.w > 0), "stride", "positive (or 0: the kernel)", o.stride)
        .need(o.dilation.h > 0 && o.dilation.w > 0, "dilation", "positive", o.dilation)
        .need(2 * o.padding.h <= o.dilation.h * (o.kernel.h - 1) + 1 && 2 * o.padding.w <= o.dilation.w * (o.kernel.w - 1) + 1,
              "padding", "at most half the dilated kernel (2 padding <= dilation (kernel - 1) + 1)", o.padding)
        .check(who);
    Ho = output_count(H, o.kernel.h, s.h, o.padding.h, o.dilation.h, o.ceil_mode);
    Wo = output_count(W, o.kernel.w, s.w, o.padding.w, o.dilation.w, o.ceil_mode);
    detail::require(Ho > 0 && Wo > 0, who, [&] {
        std::ostringstream what;
        what << "x " << detail::shape_string(shape) << " with kernel " << o.kernel << ", padding " << o.padding
             << " and dilation " << o.dilation << ": the padded map must hold a window";
        return what.str();
    });
    return {H, W};
}
}  // namespace detail_pool

/// Max pooling: each output the largest value of its window (padding never wins; NaN
/// wins, as in PyTorch). Throws `std::invalid_argument` naming the shape and options when
/// they leave no window or pad by more than half the kernel.
template <class X>
auto max_pool2d(const xt::xexpression<X>& x, const pool2d_options& o) {
    using T = detail::value_type_of<X>;
    std::size_t Ho, Wo;
    const auto size = detail_pool::checked_size("nn::max_pool2d", x, o, Ho, Wo);
    const std::size_t H = size[0], W = size[1];   // not a structured binding: the lambda captures them
    const size2 s = o.stride == size2(0) ? o.kernel : o.stride, p = o.padding, d = o.dilation, k = o.kernel;
    return detail::map_planes(x, Ho, Wo, [=](const T* in, T* out) {
        for (std::size_t oy = 0; oy < Ho; ++oy)
            for (std::size_t ox = 0; ox < Wo; ++ox) {
                // The largest value, or NaN if the window holds one (v != v).
                T best = -std::numeric_limits<T>::infinity();
                bool nan = false;
                for (std::size_t ky = 0; ky < k.h; ++ky) {
                    const std::size_t iy = oy * s.h + ky * d.h;
                    if (iy < p.h || iy >= p.h + H) continue;
                    for (std::size_t kx = 0; kx < k.w; ++kx) {
                        const std::size_t ix = ox * s.w + kx * d.w;
                        if (ix < p.w || ix >= p.w + W) continue;
                        const T v = in[(iy - p.h) * W + ix - p.w];
                        best = v > best ? v : best;
                        nan |= v != v;
                    }
                }
                out[oy * Wo + ox] = nan ? std::numeric_limits<T>::quiet_NaN() : best;
            }
    });
}

/// Average pooling: each output the mean of its window, the padding counted as zeros when
/// `count_include_pad` (PyTorch's default), a window running past the padded map
/// (`ceil_mode`) averaged over what it covers. Throws as `max_pool2d` does; the dilation
/// must be 1.
template <class X>
auto avg_pool2d(const xt::xexpression<X>& x, const pool2d_options& o) {
    using T = detail::value_type_of<X>;
    detail::require(o.dilation == size2(1), "nn::avg_pool2d", [&] {
        return "average pooling has no dilation; got (" + std::to_string(o.dilation.h) + ", " +
               std::to_string(o.dilation.w) + ")";
    });
    std::size_t Ho, Wo;
    const auto size = detail_pool::checked_size("nn::avg_pool2d", x, o, Ho, Wo);
    const std::size_t H = size[0], W = size[1];
    const size2 s = o.stride == size2(0) ? o.kernel : o.stride, p = o.padding;
    return detail::map_planes(x, Ho, Wo, [&](const T* in, T* out) {
        for (std::size_t oy = 0; oy < Ho; ++oy)
            for (std::size_t ox = 0; ox < Wo; ++ox) {
                // The window in padded coordinates, cut at the padded map's end, then at the map's.
                const std::size_t y0 = oy * s.h, x0 = ox * s.w;
                const std::size_t y1 = std::min(y0 + o.kernel.h, H + 2 * p.h), x1 = std::min(x0 + o.kernel.w, W + 2 * p.w);
                const std::size_t padded_count = (y1 - y0) * (x1 - x0);
                const std::size_t ya = std::max(y0, p.h), yb = std::min(y1, p.h + H);
                const std::size_t xa = std::max(x0, p.w), xb = std::min(x1, p.w + W);
                double sum = 0;
                for (std::size_t iy = ya; iy < yb; ++iy)
                    for (std::size_t ix = xa; ix < xb; ++ix) sum += in[(iy - p.h) * W + ix - p.w];
                const std::size_t count = o.count_include_pad ? padded_count : (yb - ya) * (xb - xa);
                out[oy * Wo + ox] = count ? T(sum / double(count)) : T(0);
            }
    });
}

/// Adaptive average pooling to `output` (height, width): output (i, j) averages rows
/// [floor(i H / Ho), ceil((i + 1) H / Ho)) and the columns alike, as PyTorch does (1: global
/// average pooling). Throws `std::invalid_argument` when the output or the map is empty.
template <class X>
auto adaptive_avg_pool2d(const xt::xexpression<X>& x, size2 output) {
    using T = detail::value_type_of<X>;
    constexpr std::size_t R = detail::static_rank<X>;
    const auto& shape = x.derived_cast().shape();
    const std::size_t H = shape[R - 2], W = shape[R - 1];
    detail::require(output.h > 0 && output.w > 0 && H > 0 && W > 0, "nn::adaptive_avg_pool2d", [&] {
        return "x " + detail::shape_string(shape) + " to (" + std::to_string(output.h) + ", " +
               std::to_string(output.w) + "): both must be non-empty";
    });
    return detail::map_planes(x, output.h, output.w, [&](const T* in, T* out) {
        for (std::size_t oy = 0; oy < output.h; ++oy)
            for (std::size_t ox = 0; ox < output.w; ++ox) {
                const std::size_t ya = oy * H / output.h, yb = ((oy + 1) * H + output.h - 1) / output.h;
                const std::size_t xa = ox * W / output.w, xb = ((ox + 1) * W + output.w - 1) / output.w;
                double sum = 0;
                for (std::size_t iy = ya; iy < yb; ++iy)
                    for (std::size_t ix = xa; ix < xb; ++ix) sum += in[iy * W + ix];
                out[oy * output.w + ox] = T(sum / double((yb - ya) * (xb - xa)));
            }
    });
}

}  // namespace nonlocal::nn
