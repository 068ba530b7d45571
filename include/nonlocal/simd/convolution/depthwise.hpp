#pragma once
/// @file simd/convolution/depthwise.hpp
/// The direct algorithm for convolutions of one input channel per group (depthwise):
/// vectors of outputs accumulated in registers over the kh kw taps from a zero-padded copy
/// of the input plane (a stride-2 plane's columns dealt into two phases). Kernels of 3 x 3
/// and 5 x 5 whose rows are not dilated sweep blocks of rows: each padded row is loaded once
/// per tap column and serves every output row of the block it is a tap of. The channels are
/// shared out among the threads in blocks, each block padding its planes in one work array.

#include <algorithm>
#include <cstddef>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/execution.hpp"
#include "nonlocal/simd/activation.hpp"
#include "nonlocal/simd/arch/traits.hpp"
#include "nonlocal/simd/convolution/geometry.hpp"
#include "nonlocal/simd/convolution/weights.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::detail {

// The accumulators of the direct algorithm (`simd::arch_traits`).
template <class Arch>
inline constexpr std::size_t depthwise_accumulators = simd::arch_traits<Arch>::depthwise_accumulators;
// `depthwise_rows` holds that many rows of outputs, 2 vectors each, in its accumulators.
template <class Arch>
inline constexpr std::size_t depthwise_row_block = depthwise_accumulators<Arch> / 2;

/// One padded plane of the direct algorithm and the output plane it gives.
template <class T>
struct depthwise_plane {
    const T* padded;
    std::size_t row_stride;         // between padded rows (their s.w phases)
    const std::size_t* column_of;   // where tap (0, kx) starts in a padded row
    const T* taps;                  // [KH KW]
    T* plane;                       // [Ho, Wo]
    size2 out;
    std::size_t vectors;            // of a row of outputs
};

/// The direct algorithm's plane for a KH x KW kernel with rows SH apart and no dilation
/// along them, by blocks of R = depthwise_row_block rows x 2 vectors of outputs: each
/// padded row a block reads is loaded once, at each tap kx, and serves every output row it
/// is a tap of: (R - 1) SH + KH loads a column of taps for R outputs, where output by output
/// takes KH.
template <class Arch, std::size_t KH, std::size_t KW, std::size_t SH, class T, class Act>
void depthwise_rows(const depthwise_plane<T>& sw, xsimd::batch<T, Arch> bias, Act act) {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t lanes = batch::size, R = depthwise_row_block<Arch>, V = 2, reach = (R - 1) * SH + KH;
    batch taps[KH * KW];
    for (std::size_t t = 0; t < KH * KW; ++t) taps[t] = batch(sw.taps[t]);
    for (std::size_t oy0 = 0; oy0 < sw.out.h; oy0 += R)
        for (std::size_t v0 = 0; v0 < sw.vectors; v0 += V) {
            batch acc[R][V];
            std::size_t column[V];   // a block past the last vector repeats it, unstored
#pragma GCC unroll 2
            for (std::size_t c = 0; c < V; ++c) column[c] = std::min(v0 + c, sw.vectors - 1) * lanes;
#pragma GCC unroll 4
            for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 2
                for (std::size_t c = 0; c < V; ++c) acc[r][c] = bias;
            const T* top = sw.padded + oy0 * SH * sw.row_stride;
#pragma GCC unroll 16
            for (std::size_t i = 0; i < reach; ++i)
#pragma GCC unroll 5
                for (std::size_t kx = 0; kx < KW; ++kx)
#pragma GCC unroll 2
                    for (std::size_t c = 0; c < V; ++c) {
                        const batch x = batch::load_unaligned(top + i * sw.row_stride + sw.column_of[kx] + column[c]);
#pragma GCC unroll 4
                        for (std::size_t r = 0; r < R; ++r)
                            if (i >= r * SH && i - r * SH < KH) acc[r][c] = xsimd::fma(taps[(i - r * SH) * KW + kx], x, acc[r][c]);
                    }
            for (std::size_t r = 0; r < R && oy0 + r < sw.out.h; ++r)
                for (std::size_t c = 0; c < V && v0 + c < sw.vectors; ++c) {
                    const std::size_t ox = (v0 + c) * lanes;
                    simd::store_lanes(simd::activate(act(), acc[r][c]), std::min(lanes, sw.out.w - ox),
                                      sw.plane + (oy0 + r) * sw.out.w + ox);
                }
        }
}

/// The direct algorithm for a kernel of KH x KW taps (0 x 0: any size, known at run time)
/// and the activation `Act` (a std::integral_constant).
template <class Arch, std::size_t KH, std::size_t KW, class T, class Act>
void convolve_depthwise(const simd::conv_geometry& conv, const simd::conv_weights<T>& w, const T* x, std::size_t B,
                        std::size_t H, std::size_t W, T* y, int threads, Act act) {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t lanes = batch::size;
    const std::size_t C = conv.out_channels(), per_input = C / conv.groups;
    const std::size_t kh = KH ? KH : conv.kernel.h, kw = KW ? KW : conv.kernel.w;
    const size2 out = conv.output_size(H, W), s = conv.stride, p = conv.padding, d = conv.dilation;
    // The input plane padded with zeros and its columns dealt into s.w phases, phase r
    // holding padded columns r, r + s.w, ...: the tap (ky, kx) of outputs ox .. ox + lanes
    // is then one contiguous load, at row oy s.h + ky d.h, phase kx d.w mod s.w, from
    // ox + kx d.w / s.w. A phase is long enough for the last vector's lanes past Wo.
    const std::size_t rows = H + 2 * p.h, vectors = (out.w + lanes - 1) / lanes;
    const std::size_t phase = vectors * lanes + (kw - 1) * d.w / s.w + 1;
    std::vector<std::size_t> column_of(kw);   // where tap (0, kx) starts in a padded row
    for (std::size_t kx = 0; kx < kw; ++kx) column_of[kx] = (kx * d.w % s.w) * phase + kx * d.w / s.w;
    // Known kernels with rows neither dilated nor more than 2 apart sweep blocks of rows
    // (`depthwise_rows`); the others go output vector by output vector, with the tables below.
    const bool sweeps = KH != 0 && d.h == 1 && (s.h == 1 || s.h == 2);
    constexpr std::size_t accumulators = depthwise_accumulators<Arch>;
    const std::size_t count = out.h * vectors;
    // Where tap (ky, kx) starts from its output's, and where output vector k (row oy,
    // vector v, in order) reads the padded plane; it is stored at plane + oy Wo + v lanes.
    std::vector<std::size_t> offset_of, read_at;
    if (!sweeps) {
        offset_of.resize(kh * kw);
        for (std::size_t ky = 0; ky < kh; ++ky)
            for (std::size_t kx = 0; kx < kw; ++kx) offset_of[ky * kw + kx] = ky * d.h * s.w * phase + column_of[kx];
        read_at.resize(count);
        for (std::size_t k = 0; k < count; ++k) read_at[k] = k / vectors * s.h * s.w * phase + k % vectors * lanes;
    }
    // The channels in as many blocks as threads can share; each block pads its planes in
    // one work array, whose zeros (the padding) stay as the planes are copied in.
    const std::size_t planes = B * C, blocks = std::min(planes, std::size_t(std::max(threads, 1)) * 4);
    // Blocks of R = depthwise_row_block rows of outputs read up to (R - 1) s.h rows past the
    // last output's.
    const std::size_t spare_rows = (depthwise_row_block<Arch> - 1) * s.h;
    detail::parallel_for(blocks, threads, [&](std::size_t part) {
        std::vector<T> padded((rows + spare_rows) * s.w * phase, T(0));
        for (std::size_t bc = part * planes / blocks; bc < (part + 1) * planes / blocks; ++bc) {
            const std::size_t b = bc / C, c = bc % C;
            const T* image = x + (b * conv.in_channels() + c / per_input) * H * W;
            // Input column ix is padded column ix + p.w: phase (ix + p.w) mod s.w, at (ix + p.w) / s.w.
            for (std::size_t iy = 0; iy < H; ++iy)
                simd::deal<Arch>(image + iy * W, W, s.w, [&](std::size_t ix) {
                    return padded.data() + ((iy + p.h) * s.w + (ix + p.w) % s.w) * phase + (ix + p.w) / s.w;
                });
            const T* tap = w.taps + c * kh * kw;
            const batch bias(w.bias ? w.bias[c] : T(0));
            T* plane = y + bc * out.h * out.w;
            if constexpr (KH != 0)
                if (sweeps) {
                    const depthwise_plane<T> sw{padded.data(), s.w * phase, column_of.data(), tap, plane, out, vectors};
                    if (s.h == 1) depthwise_rows<Arch, KH, KW, 1>(sw, bias, act);
                    else depthwise_rows<Arch, KH, KW, 2>(sw, bias, act);
                    continue;
                }
            batch taps[KH ? KH * KW : 1];   // held in registers when the size is known
            if constexpr (KH != 0)
                for (std::size_t t = 0; t < KH * KW; ++t) taps[t] = batch(tap[t]);
            // The output vectors (row oy, vector v) in order, `accumulators` at a time, each
            // in a register of its own, so that their FMAs are independent.
            for (std::size_t k0 = 0, oy = 0, v = 0; k0 < count; k0 += accumulators) {
                const std::size_t n = std::min(accumulators, count - k0);
                const T* from[accumulators];
                batch acc[accumulators];
#pragma GCC unroll 8
                for (std::size_t j = 0; j < accumulators; ++j) {
                    from[j] = padded.data() + read_at[k0 + std::min(j, n - 1)];
                    acc[j] = bias;
                }
#pragma GCC unroll 25
                for (std::size_t t = 0; t < kh * kw; ++t) {
                    batch weight;
                    if constexpr (KH != 0) weight = taps[t];
                    else weight = batch(tap[t]);
#pragma GCC unroll 8
                    for (std::size_t j = 0; j < accumulators; ++j)
                        acc[j] = xsimd::fma(weight, batch::load_unaligned(from[j] + offset_of[t]), acc[j]);
                }
                for (std::size_t j = 0; j < n; ++j) {
                    const std::size_t ox = v * lanes;
                    simd::store_lanes(simd::activate(act(), acc[j]), std::min(lanes, out.w - ox),
                                      plane + oy * out.w + ox);
                    if (++v == vectors) v = 0, ++oy;
                }
            }
        }
    }, detail::task_costs::even);
}

}  // namespace nonlocal::detail

namespace nonlocal::simd {

/// y [B, C, Ho, Wo] = the convolution of x [B, C, H, W] whose groups have one input channel
/// each (depthwise), on the threads of `policy`; x and y raw arrays, y's shape that of
/// `conv.output_size`. Compiled for the kernel's size (3 x 3, 5 x 5 or any) and for each
/// activation (`simd::with_activation`), so that neither is decided in the loop, whose
/// accumulators stay in registers.
template <class Arch, execution_policy Ex, class T>
void convolve_depthwise(Ex policy, const conv_geometry& conv, const conv_weights<T>& w, const T* x, std::size_t B,
                        std::size_t H, std::size_t W, T* y) {
    const int threads = detail::thread_count(policy);
    const std::size_t kh = conv.kernel.h, kw = conv.kernel.w;
    simd::with_activation(w.act, [&](auto act) {
        if (kh == 3 && kw == 3) detail::convolve_depthwise<Arch, 3, 3>(conv, w, x, B, H, W, y, threads, act);
        else if (kh == 5 && kw == 5) detail::convolve_depthwise<Arch, 5, 5>(conv, w, x, B, H, W, y, threads, act);
        else detail::convolve_depthwise<Arch, 0, 0>(conv, w, x, B, H, W, y, threads, act);
    });
}

}  // namespace nonlocal::simd
