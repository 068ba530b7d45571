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
template <class Arch = default_arch, class T>
xt::xtensor<T, 2> linear_rows(row_matrix<const T> x, row_matrix<const T> weight, const T* bias = nullptr) {
    constexpr std::size_t W = xsimd::batch<T, Arch>::size;
    // 4 rows x NV vectors: 16 accumulators with AVX-512, 8 with 16 registers.
    constexpr std::size_t MR = 4, NV = simd::vector_registers<Arch> >= 32 ? 4 : 2;
    const std::size_t n = x.rows, in = x.cols, out = weight.rows, outp = (out + W - 1) / W * W;
    std::vector<T> wt(in * outp, T(0));
    for (std::size_t o = 0; o < out; ++o)
        for (std::size_t c = 0; c < in; ++c) wt[c * outp + o] = weight(o, c);

    std::vector<T> y(((n + MR - 1) / MR * MR) * outp);
    const std::size_t full = n / MR * MR;
    simd::gemm<Arch, MR, NV, false>(full, outp, in, x.data, in, 1, wt.data(), outp, y.data(), outp);
    if (full < n) {   // the last rows, from a zero-padded copy
        std::vector<T> tail(MR * in, T(0));
        std::copy(x.data + full * in, x.data + n * in, tail.begin());
        simd::gemm<Arch, MR, NV, false>(MR, outp, in, tail.data(), in, 1, wt.data(), outp, y.data() + full * outp,
                                        outp);
    }
    xt::xtensor<T, 2> result = xt::empty<T>({n, out});
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t o = 0; o < out; ++o) result(i, o) = y[i * outp + o] + (bias ? bias[o] : T(0));
    return result;
}

}  // namespace nonlocal::detail
