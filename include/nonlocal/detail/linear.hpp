#pragma once
/// @file detail/linear.hpp
/// y = x W^T (+ b) on row matrices, the projection behind `nn::linear` and the
/// projected similarities, on the tiled kernels' micro-kernel: W^T is packed
/// once, [in, out] padded to whole vectors, then each block of rows of x is
/// broadcast against it.

#include <algorithm>
#include <cstddef>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/simd/gemm.hpp"

namespace nonlocal::detail {

/// x [n, in] times weight^T, weight [out, in] (PyTorch's layout), plus bias [out] when given.
///
/// W^T is packed in panels of NV vectors of columns, each [in, NV W] contiguous,
/// so the micro-kernel streams a panel row by row; a panel (in = 512 floats:
/// 128 KiB) stays in L2 while every block of 4 rows of x passes over it. Reading
/// W^T unpacked instead would stride by whole rows of W^T (2 KiB for out = 512),
/// which maps every step of the micro-kernel onto the same few L1 sets.
template <class Arch = default_arch, class T>
xt::xtensor<T, 2> linear_rows(row_matrix<const T> x, row_matrix<const T> weight, const T* bias = nullptr) {
    constexpr std::size_t W = xsimd::batch<T, Arch>::size;
    // AVX-512: 6 rows x 4 vectors = 24 accumulators + 4 panel loads + 1 broadcast of
    // 32 registers, so each panel vector loaded serves 6 FMAs. 16 registers: 4 x 2.
    constexpr std::size_t MR = simd::vector_registers<Arch> >= 32 ? 6 : 4;
    constexpr std::size_t NV = simd::vector_registers<Arch> >= 32 ? 4 : 2, P = NV * W;
    // Depth is cut in blocks of 64: a block of the panel (64 x 64 floats = 16 KiB)
    // stays in the 32 KiB L1 while all rows of x pass over it.
    constexpr std::size_t depth_block = 64;
    const std::size_t n = x.rows, in = x.cols, out = weight.rows, outp = (out + W - 1) / W * W;
    const std::size_t padded_rows = (n + MR - 1) / MR * MR;

    // x with its rows padded to a multiple of MR (a copy only when needed).
    std::vector<T> x_padded;
    const T* a = x.data;
    if (padded_rows != n) {
        x_padded.assign(padded_rows * in, T(0));
        std::copy(x.data, x.data + n * in, x_padded.begin());
        a = x_padded.data();
    }
    std::vector<T> y(padded_rows * outp, T(0)), panel(in * P);
    for (std::size_t col = 0; col < outp; col += P) {
        const std::size_t width = std::min(P, outp - col);
        std::fill(panel.begin(), panel.end(), T(0));
        for (std::size_t c = 0; c < in; ++c)
            for (std::size_t o = col; o < std::min(col + width, out); ++o) panel[c * width + (o - col)] = weight(o, c);
        for (std::size_t k0 = 0; k0 < in; k0 += depth_block) {
            const std::size_t depth = std::min(depth_block, in - k0);
            const T* b = panel.data() + k0 * width;
            for (std::size_t r = 0; r < padded_rows; r += MR) {
                const T* ar = a + r * in + k0;
                T* yr = y.data() + r * outp + col;
                if (width == P) {
                    simd::micro_gemm<Arch, MR, NV, true>(depth, ar, in, 1, b, width, yr, outp);
                } else {
                    for (std::size_t v = 0; v < width; v += W)
                        simd::micro_gemm<Arch, MR, 1, true>(depth, ar, in, 1, b + v, width, yr + v, outp);
                }
            }
        }
    }
    xt::xtensor<T, 2> result = xt::empty<T>({n, out});
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t o = 0; o < out; ++o) result(i, o) = y[i * outp + o] + (bias ? bias[o] : T(0));
    return result;
}

}  // namespace nonlocal::detail
