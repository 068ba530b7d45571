#pragma once
/// @file nn/resize.hpp
/// Bilinear resizing of feature maps and images [B, C, H, W] or [C, H, W], as PyTorch's
/// `F.interpolate(x, size, mode="bilinear", align_corners=False)` computes it, with or
/// without its `antialias` (which torchvision's `Resize` uses on tensors, and which matches
/// PIL's bilinear resampling of pictures).
///
/// Each output pixel is a weighted sum of input pixels, separably along the height and the
/// width. Along an axis of n inputs resized to m, output o sits at input coordinate
/// c = (o + 0.5) n / m - 0.5. Without antialias it blends the two inputs around c (the
/// first one clamped at 0 when c < 0, the second at n - 1); with antialias, when shrinking
/// (n > m), it averages the inputs within n / m of c under a triangle n / m wide, its
/// weights normalised to sum to 1.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/nn/conv2d.hpp"

namespace nonlocal::detail {

/// The inputs and weights of each output along one axis: output o reads inputs first[o],
/// first[o] + 1, ... with weights[o * span ...] (zeros past its count).
struct resize_taps {
    std::vector<std::size_t> first;
    std::vector<double> weights;
    std::size_t span = 0;

    resize_taps(std::size_t inputs, std::size_t outputs, bool antialias) : first(outputs) {
        const double scale = double(inputs) / double(outputs);
        if (antialias && scale > 1) {   // a triangle of half-width `scale`, as PyTorch and PIL
            span = std::size_t(std::ceil(scale)) * 2 + 1;
            weights.assign(outputs * span, 0.0);
            for (std::size_t o = 0; o < outputs; ++o) {
                const double centre = scale * (double(o) + 0.5);
                const auto lo = std::size_t(std::max(0.0, std::floor(centre - scale + 0.5)));
                const std::size_t hi = std::min(inputs, std::size_t(std::floor(centre + scale + 0.5)));
                double sum = 0;
                for (std::size_t i = lo; i < hi && i - lo < span; ++i)
                    sum += weights[o * span + i - lo] = std::max(0.0, 1 - std::abs((double(i) - centre + 0.5) / scale));
                for (std::size_t t = 0; t < span; ++t) weights[o * span + t] /= sum > 0 ? sum : 1;
                first[o] = lo;
            }
            return;
        }
        span = 2;
        weights.assign(outputs * span, 0.0);
        for (std::size_t o = 0; o < outputs; ++o) {
            const double c = std::max(0.0, scale * (double(o) + 0.5) - 0.5);
            const auto i = std::min(std::size_t(c), inputs - 1);
            const double l = i + 1 < inputs ? c - double(i) : 0.0;
            first[o] = i;
            weights[o * span] = 1 - l;
            weights[o * span + 1] = l;
        }
    }
};

}  // namespace nonlocal::detail

namespace nonlocal::nn {

/// x [B, C, H, W] or [C, H, W] resized bilinearly to `size` (see the file's comment); sums
/// in double. Throws `std::invalid_argument` naming the shapes when the input or the size
/// is empty.
template <class X>
auto resize_bilinear(const xt::xexpression<X>& x, size2 size, bool antialias = false) {
    constexpr std::size_t R = detail::static_rank<X>;
    static_assert(R == 3 || R == 4, "nonlocal::nn::resize_bilinear: x is [B, C, H, W] or [C, H, W]");
    const auto& shape = x.derived_cast().shape();
    const std::size_t H = shape[R - 2], W = shape[R - 1];
    detail::require(H > 0 && W > 0 && size.h > 0 && size.w > 0, "nn::resize_bilinear", [&] {
        return "x " + detail::shape_string(shape) + " and the size (" + std::to_string(size.h) + ", " +
               std::to_string(size.w) + ") must not be empty";
    });
    const detail::resize_taps rows(H, size.h, antialias), columns(W, size.w, antialias);
    std::vector<double> across(H * size.w);   // one plane resized along its width
    return detail::map_planes(x, size.h, size.w, [&](const auto* in, auto* out) {
        using T = std::remove_cvref_t<decltype(*out)>;
        for (std::size_t r = 0; r < H; ++r)
            for (std::size_t o = 0; o < size.w; ++o) {
                double sum = 0;
                for (std::size_t t = 0; t < columns.span && columns.first[o] + t < W; ++t)
                    sum += columns.weights[o * columns.span + t] * double(in[r * W + columns.first[o] + t]);
                across[r * size.w + o] = sum;
            }
        for (std::size_t o = 0; o < size.h; ++o)
            for (std::size_t c = 0; c < size.w; ++c) {
                double sum = 0;
                for (std::size_t t = 0; t < rows.span && rows.first[o] + t < H; ++t)
                    sum += rows.weights[o * rows.span + t] * across[(rows.first[o] + t) * size.w + c];
                out[o * size.w + c] = T(sum);
            }
    });
}

}  // namespace nonlocal::nn
