#pragma once
/// @file simd/convolution/pointwise.hpp
/// The GEMM algorithm of 1 x 1 convolutions: y [Cout / g, Ho Wo] = W [Cout / g, Cin / g]
/// times the image's pixels, gathered a panel at a time (a panel in L2) as the product
/// reaches them.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/simd/convolution/geometry.hpp"
#include "nonlocal/simd/convolution/weights.hpp"
#include "nonlocal/simd/packing.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::simd {

/// y [B, Cout, Ho, Wo] = the convolution of x [B, Cin, H, W] by a 1 x 1 kernel's packed
/// weights, on the threads of `policy`; x and y raw arrays, y's shape that of `conv.output_size`.
/// Each panel of output pixels gathers its channels' pixels as the product reaches it, which
/// packs them into the micro-kernel's panels.
template <class Arch, execution_policy Ex, class T>
void convolve_pointwise(Ex policy, const conv_geometry& conv, const conv_weights<T>& w, const T* x, std::size_t B,
                        std::size_t H, std::size_t W, T* y) {
    const std::size_t g = conv.groups, cin = conv.in_per_group, cout = conv.out_per_group;
    size2 out = conv.output_size(H, W);
    const size2 s = conv.stride, p = conv.padding;
    const std::size_t P = out.h * out.w, plane_size = H * W;
    // Stride 1 without padding maps each channel's H x W pixels in order to as many
    // outputs: the map as one row of H W, so that a panel of outputs is one contiguous run
    // of every channel.
    if (s == size2(1) && p == size2(0)) W = plane_size, H = 1, out = {1, P};
    // The outputs [inside.first, inside.second) of a row that fall inside the image.
    const std::pair<std::size_t, std::size_t> inside = detail::outputs_inside(out.w, W, s.w, 0, p.w);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t group = 0; group < g; ++group) {
            const T* image = x + (b * conv.in_channels() + group * cin) * plane_size;
            // Channels [c0, c0 + depth) at the pixels of outputs [first, first + count),
            // written as [depth][width], zeros where an output falls in the padding. Along a
            // row of outputs the pixels are s.w apart: consecutive for s.w = 1, one copy.
            const auto columns = simd::pack_on_demand<T>(
                cin, P, [&](std::size_t first, std::size_t count, std::size_t c0, std::size_t depth, std::size_t width, T* to) {
                    for (std::size_t j = 0; j < count;) {
                        const std::size_t oy = (first + j) / out.w, ox0 = (first + j) % out.w;
                        const std::size_t end = ox0 + std::min(count - j, out.w - ox0);   // outputs [ox0, end)
                        const std::size_t iy = oy * s.h;   // in padded rows
                        const bool in_image = iy >= p.h && iy < p.h + H;
                        const std::size_t from = in_image ? std::clamp(inside.first, ox0, end) : end;
                        const std::size_t to_ = in_image ? std::clamp(inside.second, from, end) : end;
                        for (std::size_t k = 0; k < depth; ++k) {
                            const T* row = image + (c0 + k) * plane_size + (in_image ? iy - p.h : 0) * W;
                            T* target = to + k * width + j - ox0;
                            simd::fill<Arch>(target + ox0, from - ox0, T(0));   // short: no call to memset
                            if (s.w == 1) simd::copy<Arch>(row + from - p.w, to_ - from, target + from);
                            else
                                for (std::size_t ox = from; ox < to_; ++ox) target[ox] = row[ox * s.w - p.w];
                            simd::fill<Arch>(target + to_, end - to_, T(0));
                        }
                        j += end - ox0;
                    }
                });
            T* planes = y + (b * conv.out_channels() + group * cout) * P;
            group_product<Arch>(policy, w, conv.out_per_group, group, columns,
                                [&](const auto& v, std::size_t channel, std::size_t pixel, std::size_t lanes) {
                                    simd::store_lanes(v, lanes, planes + channel * P + pixel);
                                });
        }
}

}  // namespace nonlocal::simd
