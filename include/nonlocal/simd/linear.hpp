#pragma once
/// @file simd/linear.hpp
/// y = x W^T (+ b) on row matrices, the projection behind `nn::linear` and the
/// projected similarities, on the tiled kernels' micro-kernel: W^T is packed
/// once, [in, out] padded to whole vectors, then each block of rows of x is
/// broadcast against it.

#include <algorithm>
#include <cstddef>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/simd/gemm.hpp"

namespace nonlocal::simd {

/// x [n, in] times weight^T, weight [out, in] (PyTorch's layout), plus bias [out] when given.
///
/// The loops of a Goto / BLIS matrix product, sized for the caches:
/// - W^T is packed once into panels of P = NV vectors of columns, each [in, P]
///   contiguous, so a panel's rows stream in order.
/// - The depth is cut in blocks of KC, so that a panel's block (KC x P values,
///   16 KiB) stays in the 32 KiB L1 while every row of x passes over it.
/// - Rows come in blocks of MC, packed as micro-panels of MR rows, [KC][MR] each,
///   so the micro-kernel's broadcasts read one sequential stream: the block
///   (MC x KC values, 96 KiB with AVX2) stays in L2 while every panel passes over it.
///   Reading x's rows unpacked instead gives MR short strided streams per call
///   (MR rows of KC values, a few cache lines each), which the prefetchers miss.
/// On `threads` threads the panels are shared out (each writes its own columns of y),
/// so the result is the same, bit for bit, on any number of threads.
template <class Arch = default_arch, class T>
xt::xtensor<T, 2> linear_rows(row_matrix<const T> x, row_matrix<const T> weight, const T* bias = nullptr,
                              int threads = 1) {
    constexpr std::size_t W = xsimd::batch<T, Arch>::size;
    // MR x NV accumulators + NV panel loads + 1 broadcast within the registers, enough
    // independent FMAs to cover their latency (2 FMA ports x 4 cycles: at least 8):
    // AVX-512, 32 registers: 6 rows x 4 vectors = 24 accumulators + 4 + 1 = 29;
    // 16 registers: 6 x 2 = 12 accumulators + 2 + 1 = 15, each panel load serving 6 FMAs.
    constexpr std::size_t MR = 6;
    constexpr std::size_t NV = simd::vector_registers<Arch> >= 32 ? 4 : 2, P = NV * W;
    constexpr std::size_t KC = std::max<std::size_t>(64, 16384 / (P * sizeof(T)));   // 16 KiB of a panel
    constexpr std::size_t MC = MR * std::max<std::size_t>(1, 98304 / (KC * sizeof(T)) / MR);   // 96 KiB of x
    const std::size_t n = x.rows, in = x.cols, out = weight.rows, outp = (out + W - 1) / W * W;
    const std::size_t padded_rows = (n + MR - 1) / MR * MR;
    // y's rows one vector longer than its columns: rows of a power-of-two multiple of
    // 1 KiB (out = 768, 3072) would put the MR rows a micro-kernel updates in one L1 set.
    const std::size_t ldy = outp + W;

    // W^T in panels of P columns (the last one `outp - col` wide, padded with zeros to whole vectors).
    const std::size_t panel_count = (outp + P - 1) / P;
    buffer<T> panels(in * outp, T(0));
    detail::parallel_for(panel_count, threads, [&](std::size_t j) {
        const std::size_t col = j * P, width = std::min(P, outp - col);
        T* panel = panels.data() + col * in;
        for (std::size_t c = 0; c < in; ++c)
            for (std::size_t o = col; o < std::min(col + width, out); ++o) panel[c * width + (o - col)] = weight(o, c);
    });
    buffer<T> y(padded_rows * ldy, T(0)), block(MC * KC);
    for (std::size_t k0 = 0; k0 < in; k0 += KC) {
        const std::size_t depth = std::min(KC, in - k0);
        for (std::size_t r0 = 0; r0 < padded_rows; r0 += MC) {
            const std::size_t rows = std::min(MC, padded_rows - r0);
            // Rows [r0, r0 + rows) of x's depth block as micro-panels: element (r, p) of
            // micro-panel m at m MR depth + p MR + r (rows past n are 0).
            for (std::size_t m = 0; m < rows / MR; ++m)
                for (std::size_t r = 0; r < MR; ++r) {
                    const std::size_t row = r0 + m * MR + r;
                    T* to = block.data() + m * MR * depth + r;
                    if (row < n) {
                        const T* from = x.data + row * in + k0;
                        for (std::size_t p = 0; p < depth; ++p) to[p * MR] = from[p];
                    } else {
                        for (std::size_t p = 0; p < depth; ++p) to[p * MR] = T(0);
                    }
                }
            detail::parallel_for(panel_count, threads, [&](std::size_t j) {
                const std::size_t col = j * P, width = std::min(P, outp - col);
                const T* b = panels.data() + col * in + k0 * width;
                for (std::size_t m = 0; m < rows / MR; ++m) {
                    const T* a = block.data() + m * MR * depth;
                    T* c = y.data() + (r0 + m * MR) * ldy + col;
                    if (width == P) {
                        simd::micro_gemm<Arch, MR, NV, true>(depth, a, 1, MR, b, width, c, ldy);
                    } else {
                        for (std::size_t v = 0; v < width; v += W)
                            simd::micro_gemm<Arch, MR, 1, true>(depth, a, 1, MR, b + v, width, c + v, ldy);
                    }
                }
            });
        }
    }
    xt::xtensor<T, 2> result = xt::empty<T>({n, out});
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t o = 0; o < out; ++o) result(i, o) = y[i * ldy + o] + (bias ? bias[o] : T(0));
    return result;
}

}  // namespace nonlocal::simd
