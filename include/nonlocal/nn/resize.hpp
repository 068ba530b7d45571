#pragma once
/// @file nn/resize.hpp
/// Resizing of feature maps and images [B, C, H, W] or [C, H, W] as PyTorch's
/// `F.interpolate(x, size, mode, align_corners, antialias)` computes it, bilinear or bicubic.
/// torchvision's `Resize` on tensors and timm's position-embedding resampling call it with
/// antialias, which also matches PIL's resampling of pictures (PIL rounds to 8 bits between
/// its two passes; this does not).
///
/// Each output pixel is a weighted sum of input pixels, separably along the height and the
/// width. Along an axis of n inputs resized to m, output o sits at input coordinate
/// c = (o + 0.5) n / m - 0.5 (cell centres aligned), or c = o (n - 1) / (m - 1) with
/// `align_corners`.
/// - Without antialias, bilinear blends the two inputs around c (c clamped to >= 0 first,
///   the inputs past the last one read as the last one); bicubic weighs the four inputs
///   around c with Keys' cubic of a = -0.75, the inputs outside the axis read as the
///   nearest one on it.
/// - With antialias, the kernel (the triangle, or Keys' cubic of a = -0.5) is stretched by
///   s = max(1, n / m) when shrinking, centred at s (o + 0.5) in the inputs' cell
///   coordinates, cut to the inputs within its support, and its weights normalised to sum
///   to 1. Enlarging, bilinear with antialias equals bilinear without it; bicubic does not
///   (a = -0.5 and the normalised border).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/nn/conv2d.hpp"

namespace nonlocal::nn {

/// The interpolating kernel of `resize`.
enum class interpolation { bilinear, bicubic };

/// How `resize` places and weighs its taps (see the file's comment); the defaults are
/// `F.interpolate(mode="bilinear")`'s.
struct resize_options {
    interpolation mode = interpolation::bilinear;
    bool antialias = false;
    bool align_corners = false;
};

}  // namespace nonlocal::nn

namespace nonlocal::detail {

/// Keys' cubic convolution kernel of parameter a, zero beyond |x| = 2.
inline double keys_cubic(double x, double a) {
    x = std::abs(x);
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0;
}

/// The taps of each output along one axis: output o reads inputs index[o * span + t] with
/// weights[o * span + t], t < span (unused taps weigh 0).
struct resize_taps {
    std::vector<std::size_t> index;
    std::vector<double> weights;
    std::size_t span = 0;

    resize_taps(std::size_t inputs, std::size_t outputs, nn::resize_options o) {
        const bool cubic = o.mode == nn::interpolation::bicubic;
        const double scale = !o.align_corners ? double(inputs) / double(outputs)
                             : outputs > 1    ? double(inputs - 1) / double(outputs - 1)
                                              : 0.0;
        if (o.antialias) {
            const double stretch = std::max(1.0, scale), support = (cubic ? 2.0 : 1.0) * stretch;
            const auto kernel = [&](double x) {
                x /= stretch;
                return cubic ? keys_cubic(x, -0.5) : std::max(0.0, 1 - std::abs(x));
            };
            span = std::size_t(std::ceil(2 * support)) + 1;
            allocate(outputs);
            for (std::size_t out = 0; out < outputs; ++out) {
                const double center = scale * (double(out) + 0.5);
                const auto lo = std::size_t(std::max(0.0, std::floor(center - support + 0.5)));
                const std::size_t hi = std::min(inputs, std::size_t(std::max(0.0, std::floor(center + support + 0.5))));
                double sum = 0;
                for (std::size_t i = lo; i < hi && i - lo < span; ++i)
                    sum += set(out, i - lo, i, kernel(double(i) - center + 0.5));
                for (std::size_t t = 0; t < span; ++t) weights[out * span + t] /= sum != 0 ? sum : 1;
            }
            return;
        }
        span = cubic ? 4 : 2;
        allocate(outputs);
        const auto clamped = [&](double i) { return std::size_t(std::clamp(i, 0.0, double(inputs - 1))); };
        for (std::size_t out = 0; out < outputs; ++out) {
            double c = o.align_corners ? scale * double(out) : scale * (double(out) + 0.5) - 0.5;
            if (!cubic) {
                c = std::max(c, 0.0);
                const std::size_t i = clamped(c);
                const double t = i + 1 < inputs ? c - double(i) : 0.0;
                set(out, 0, i, 1 - t);
                set(out, 1, clamped(double(i) + 1), t);
                continue;
            }
            const double base = std::floor(c), t = c - base;
            for (std::size_t k = 0; k < 4; ++k)
                set(out, k, clamped(base - 1 + double(k)), keys_cubic(t + 1 - double(k), -0.75));
        }
    }

private:
    void allocate(std::size_t outputs) {
        index.assign(outputs * span, 0);
        weights.assign(outputs * span, 0.0);
    }
    double set(std::size_t out, std::size_t tap, std::size_t input, double weight) {
        index[out * span + tap] = input;
        return weights[out * span + tap] = weight;
    }
};

}  // namespace nonlocal::detail

namespace nonlocal::nn {

/// x [B, C, H, W] or [C, H, W] resized to `size` (see the file's comment); sums in double.
/// Throws `std::invalid_argument` naming the shapes when the input or the size is empty.
template <class X>
auto resize(const xt::xexpression<X>& x, size2 size, resize_options options = {}) {
    constexpr std::size_t R = detail::static_rank<X>;
    static_assert(R == 3 || R == 4, "nonlocal::nn::resize: x is [B, C, H, W] or [C, H, W]");
    const auto& shape = x.derived_cast().shape();
    const std::size_t H = shape[R - 2], W = shape[R - 1];
    detail::require(H > 0 && W > 0 && size.h > 0 && size.w > 0, "nn::resize", [&] {
        return "x " + detail::shape_string(shape) + " and the size (" + std::to_string(size.h) + ", " +
               std::to_string(size.w) + ") must not be empty";
    });
    const detail::resize_taps rows(H, size.h, options), columns(W, size.w, options);
    std::vector<double> across(H * size.w);   // one plane resized along its width
    return detail::map_planes(x, size.h, size.w, [&](const auto* in, auto* out) {
        using T = std::remove_cvref_t<decltype(*out)>;
        for (std::size_t r = 0; r < H; ++r)
            for (std::size_t o = 0; o < size.w; ++o) {
                double sum = 0;
                for (std::size_t t = o * columns.span; t < (o + 1) * columns.span; ++t)
                    sum += columns.weights[t] * double(in[r * W + columns.index[t]]);
                across[r * size.w + o] = sum;
            }
        for (std::size_t o = 0; o < size.h; ++o)
            for (std::size_t c = 0; c < size.w; ++c) {
                double sum = 0;
                for (std::size_t t = o * rows.span; t < (o + 1) * rows.span; ++t)
                    sum += rows.weights[t] * across[rows.index[t] * size.w + c];
                out[o * size.w + c] = T(sum);
            }
    });
}

/// `resize(x, size, {interpolation::bilinear, antialias})`.
template <class X>
auto resize_bilinear(const xt::xexpression<X>& x, size2 size, bool antialias = false) {
    return resize(x, size, {interpolation::bilinear, antialias});
}

}  // namespace nonlocal::nn
