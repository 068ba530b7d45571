#pragma once
/// @file simd/gemm.hpp
/// The register-blocked micro-kernel of the tiled kernels:
///
///     C[r][c] (+)= sum_p A(r, p) * B[p][c],   r < MR, c < NV * W
///
/// with A(r, p) = A[r * a_row + p * a_k], so that one kernel reads A row-major
/// (keys of a tile, a_k = 1) or column-major (a transposed tile, a_row = 1).
/// Each step p loads NV vectors of B, broadcasts MR values of A and issues
/// MR x NV independent FMAs into MR x NV accumulators held in registers.

#include <cstddef>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"

namespace nonlocal::simd {

/// Vector registers of an architecture: 32 with AVX-512, 16 before.
template <class Arch>
inline constexpr std::size_t vector_registers = std::is_base_of_v<xsimd::avx512f, Arch> ? 32 : 16;

template <class Arch, std::size_t MR, std::size_t NV, bool Accumulate, class T>
inline void micro_gemm(std::size_t depth, const T* a, std::size_t a_row, std::size_t a_k, const T* b,
                       std::size_t ldb, T* c, std::size_t ldc) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    static_assert(MR * NV + NV + 1 <= vector_registers<Arch>, "micro-kernel does not fit the registers");
    batch acc[MR][NV];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v)
            acc[r][v] = Accumulate ? batch::load_unaligned(c + r * ldc + v * W) : batch(T(0));
    for (std::size_t p = 0; p < depth; ++p) {
        batch bv[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) bv[v] = batch::load_unaligned(b + p * ldb + v * W);
        const T* ap = a + p * a_k;
#pragma GCC unroll 16
        for (std::size_t r = 0; r < MR; ++r) {
            const batch ar(ap[r * a_row]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(ar, bv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_unaligned(c + r * ldc + v * W);
}

/// C[rows][cols] (+)= A(rows x depth) B(depth x cols) for rows a multiple of MR and
/// cols a multiple of W. Column panels of NV vectors are the outer loop, so a
/// panel of B (depth x NV W) stays in cache while every block of rows passes
/// over it; columns past the last full panel go one vector at a time.
template <class Arch, std::size_t MR, std::size_t NV, bool Accumulate, class T>
void gemm(std::size_t rows, std::size_t cols, std::size_t depth, const T* a, std::size_t a_row, std::size_t a_k,
          const T* b, std::size_t ldb, T* c, std::size_t ldc) noexcept {
    constexpr std::size_t W = xsimd::batch<T, Arch>::size;
    std::size_t col = 0;
    for (; col + NV * W <= cols; col += NV * W)
        for (std::size_t r = 0; r < rows; r += MR)
            micro_gemm<Arch, MR, NV, Accumulate>(depth, a + r * a_row, a_row, a_k, b + col, ldb, c + r * ldc + col, ldc);
    for (; col < cols; col += W)
        for (std::size_t r = 0; r < rows; r += MR)
            micro_gemm<Arch, MR, 1, Accumulate>(depth, a + r * a_row, a_row, a_k, b + col, ldb, c + r * ldc + col, ldc);
}

}  // namespace nonlocal::simd
