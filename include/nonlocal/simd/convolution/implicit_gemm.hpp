#pragma once
/// @file simd/convolution/implicit_gemm.hpp
/// The GEMM algorithm of convolutions with more than one tap: y [Cout / g, Ho Wo] = W
/// [Cout / g, K] times the image's columns [K, Ho Wo] (K = Cin / g kh kw), the columns read
/// where they lie in one zero-padded copy of the image (an implicit GEMM).

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

/// y [B, Cout, Ho, Wo] = the convolution of x [B, Cin, H, W] by the packed weights, on
/// the threads of `policy`; x and y raw arrays, y's shape that of `conv.output_size`. Each group's
/// channels are copied once into a zero-padded work array, where row (c, ky, kx) of the
/// columns is read in place, from tap (ky, kx) of channel c on. The padded plane is dealt
/// into s.h x s.w phases, phase (r, t) holding the padded rows r, r + s.h, ... and of
/// each their columns t, t + s.w, ... (one phase for stride 1): tap (ky, kx) of output
/// (oy, ox) is then row oy + ky d.h / s.h and column ox + kx d.w / s.w of phase
/// (ky d.h mod s.h, kx d.w mod s.w). The outputs go along a phase's rows, q = oy Wq + ox;
/// the Wq - Wo past each row's end are computed and not stored. Each input value is copied
/// once, where gathering the columns would copy it up to kh kw times.
template <class Arch, execution_policy Ex, class T>
void convolve_implicit_gemm(Ex policy, const conv_geometry& conv, const conv_weights<T>& w, const T* x, std::size_t B,
                            std::size_t H, std::size_t W, T* y) {
    const int threads = detail::thread_count(policy);
    const std::size_t g = conv.groups, cin = conv.in_per_group, cout = conv.out_per_group;
    const std::size_t kh = conv.kernel.h, kw = conv.kernel.w, K = cin * kh * kw;
    const size2 out = conv.output_size(H, W), s = conv.stride, p = conv.padding, d = conv.dilation;
    const std::size_t P = out.h * out.w;
    if (P == 0) return;
    // Rows and columns of a phase, and the values of one and of a channel's s.h s.w.
    const std::size_t Hq = (H + 2 * p.h + s.h - 1) / s.h, Wq = (W + 2 * p.w + s.w - 1) / s.w;
    const std::size_t phase = Hq * Wq, plane = s.h * s.w * phase;
    const std::size_t Q = (out.h - 1) * Wq + out.w;
    // The last tap of the last phase is read up to Q rounded up to a stored panel's width:
    // less than 64 bytes past the last plane.
    uninitialized_buffer<T> padded(cin * plane + simd::panel_layout<T>::width_step);
    simd::fill<Arch>(padded.data() + cin * plane, simd::panel_layout<T>::width_step, T(0));
    const auto phase_of = [&](std::size_t c, std::size_t py, std::size_t px) {   // padded row and column
        return padded.data() + c * plane + ((py % s.h) * s.w + px % s.w) * phase + py / s.h * Wq + px / s.w;
    };
    // Zeros where channel c's phases hold no pixel of the image: the padding, and the
    // rows and columns a phase has past the padded plane. Phase (r, t)'s row i is padded
    // row i s.h + r and its column j padded column j s.w + t; the image's are [top,
    // bottom) and [first, last).
    const auto zero_padding = [&](std::size_t c) {
        for (std::size_t r = 0; r < s.h; ++r)
            for (std::size_t t = 0; t < s.w; ++t) {
                const auto [top, bottom] = detail::outputs_inside(Hq, H, s.h, r, p.h);
                const auto [first, last] = detail::outputs_inside(Wq, W, s.w, t, p.w);
                for (std::size_t i = 0; i < Hq; ++i) {
                    T* row = padded.data() + c * plane + (r * s.w + t) * phase + i * Wq;
                    if (i < top || i >= bottom) {
                        simd::fill<Arch>(row, Wq, T(0));
                        continue;
                    }
                    simd::fill<Arch>(row, first, T(0));
                    simd::fill<Arch>(row + last, Wq - last, T(0));
                }
            }
    };
    std::vector<const T*> rows(K);
    for (std::size_t c = 0; c < cin; ++c)
        for (std::size_t ky = 0; ky < kh; ++ky)
            for (std::size_t kx = 0; kx < kw; ++kx) rows[(c * kh + ky) * kw + kx] = phase_of(c, ky * d.h, kx * d.w);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t group = 0; group < g; ++group) {
            const T* image = x + (b * conv.in_channels() + group * cin) * H * W;
            detail::parallel_for(cin, threads, [&](std::size_t c) {
                if (b == 0 && group == 0) zero_padding(c);   // the same places for every image
                for (std::size_t iy = 0; iy < H; ++iy)
                    simd::deal<Arch>(image + (c * H + iy) * W, W, s.w,
                                     [&](std::size_t ix) { return phase_of(c, iy + p.h, ix + p.w); });
            }, detail::task_costs::even);
            T* planes = y + (b * conv.out_channels() + group * cout) * P;
            group_product<Arch>(policy, w, conv.out_per_group, group, simd::rows_in_place<T>{K, Q, rows.data()},
                           [&](const auto& v, std::size_t channel, std::size_t q, std::size_t lanes) {
                               // Lanes [l, end) of one output row each, past the columns not stored.
                               T* to = planes + channel * P;
                               for (std::size_t l = 0; l < lanes;) {
                                   const std::size_t oy = (q + l) / Wq, ox = (q + l) % Wq;
                                   if (ox >= out.w) {
                                       l += Wq - ox;
                                       continue;
                                   }
                                   const std::size_t end = std::min(lanes, l + out.w - ox);
                                   simd::store_lanes(v, l, end, to + oy * out.w + ox);
                                   l = end;
                               }
                           });
        }
}

}  // namespace nonlocal::simd
