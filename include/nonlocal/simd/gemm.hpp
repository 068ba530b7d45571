#pragma once
/// @file simd/gemm.hpp
/// The register-blocked micro-kernel of the tiled kernels:
///
///     C[r][c] (+)= sum_p A(r, p) * B(p, c),   r < MR, c < NV * W
///
/// with A(r, p) = a[r][p * a_k] and B(p, c) = b[p][c] for row accessors a and b: rows a
/// fixed stride apart (`strided_rows`), or anywhere (`indirect_rows`, a table of row
/// pointers, which lets a kernel read the keys of a window where they lie instead of
/// packing them). One kernel thus reads A row-major (keys of a tile, a_k = 1) or
/// column-major (a transposed tile, rows one element apart, a_k = its leading dimension).
/// Each step p loads NV vectors of B, broadcasts MR values of A and issues MR x NV
/// independent FMAs into MR x NV accumulators held in registers. Another `Step` than the
/// multiply-add folds each pair otherwise, C[r][c] (+)= sum_p step(A(r, p), B(p, c)): the
/// channel sums of distances, step(a, b, acc) = acc + f(b - a).

#include <cstddef>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/simd/arch/traits.hpp"

namespace nonlocal::simd {

/// Rows `stride` elements apart: row i is data + i * stride.
template <class T>
struct strided_rows {
    const T* data;
    std::size_t stride;
    const T* operator[](std::size_t i) const noexcept { return data + i * stride; }
    strided_rows from(std::size_t first) const noexcept { return {data + first * stride, stride}; }
};

/// Rows anywhere: row i is rows[i].
template <class T>
struct indirect_rows {
    const T* const* rows;
    const T* operator[](std::size_t i) const noexcept { return rows[i]; }
    indirect_rows from(std::size_t first) const noexcept { return {rows + first}; }
};

/// Keeps `x` in a register: without it GCC folds each use of a loaded B vector into its
/// FMA as a memory operand, reloading it MR times, and the micro-kernel waits on loads
/// (MR x NV + MR loads per MR x NV FMAs, instead of NV + MR).
template <class Batch>
inline void keep_in_register(Batch& x) noexcept {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if constexpr (sizeof(Batch) >= 16) {
        typename Batch::register_type r = x;
        __asm__("" : "+v"(r));
        x = r;
    }
#endif
}

/// The step of the product: acc + a b, one FMA.
struct fused_multiply_add {
    template <class V>
    V operator()(V a, V b, V acc) const noexcept { return xsimd::fma(a, b, acc); }
};

/// The micro-kernel. A and B hold elements of one type, read as batches of that type
/// (the operands) which `step` folds into accumulators of T: T itself, or pairs of
/// bfloat16 along the depth in 32 bits (`dot_bf16_pairs`), the same number of lanes.
template <class Arch, std::size_t MR, std::size_t NV, bool Accumulate, class T, class A, class B,
          class Step = fused_multiply_add>
inline void micro_gemm(std::size_t depth, A a, std::size_t a_k, B b, std::size_t b_col, T* c, std::size_t ldc,
                       Step step = {}) noexcept {
    using batch = xsimd::batch<T, Arch>;
    using element = std::remove_cvref_t<decltype(*b[0])>;
    using operand = xsimd::batch<element, Arch>;
    constexpr std::size_t W = batch::size;
    static_assert(operand::size == W, "operands and accumulators must have as many lanes");
    static_assert(MR * NV + NV + 1 <= vector_registers<Arch>, "micro-kernel does not fit the registers");
    batch acc[MR][NV];
    const element* ar[MR];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r) {
        ar[r] = a[r];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v)
            acc[r][v] = Accumulate ? batch::load_unaligned(c + r * ldc + v * W) : batch(T(0));
    }
    for (std::size_t p = 0; p < depth; ++p) {
        operand bv[NV];
        const element* bp = b[p] + b_col;
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            bv[v] = operand::load_unaligned(bp + v * W);
            if constexpr (MR > 1) keep_in_register(bv[v]);
        }
#pragma GCC unroll 16
        for (std::size_t r = 0; r < MR; ++r) {
            const operand av(ar[r][p * a_k]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) acc[r][v] = step(av, bv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_unaligned(c + r * ldc + v * W);
}

/// The micro-kernel with A(r, p) = a[r * a_row + p * a_k] and B(p, c) = b[p * ldb + c].
template <class Arch, std::size_t MR, std::size_t NV, bool Accumulate, class T>
inline void micro_gemm(std::size_t depth, const T* a, std::size_t a_row, std::size_t a_k, const T* b, std::size_t ldb,
                       T* c, std::size_t ldc) noexcept {
    micro_gemm<Arch, MR, NV, Accumulate>(depth, strided_rows<T>{a, a_row}, a_k, strided_rows<T>{b, ldb}, 0, c, ldc);
}

/// C[rows][cols] (+)= A(rows x depth) B(depth x cols) for cols a multiple of W. Column
/// panels of NV vectors are the outer loop, so a panel of B (depth x NV W) stays in
/// cache while every block of rows passes over it; columns past the last full panel go
/// one vector at a time, rows past the last block of MR one at a time (one kernel more to
/// compile, not MR - 1).
template <class Arch, std::size_t MR, std::size_t NV, bool Accumulate, class T, class A, class B,
          class Step = fused_multiply_add>
void gemm(std::size_t rows, std::size_t cols, std::size_t depth, A a, std::size_t a_k, B b, T* c, std::size_t ldc,
          Step step = {}) noexcept {
    constexpr std::size_t W = xsimd::batch<T, Arch>::size;
    const std::size_t whole_rows = rows / MR * MR;
    const auto panel = [&]<std::size_t nv>(std::integral_constant<std::size_t, nv>, std::size_t col) {
        for (std::size_t r = 0; r < whole_rows; r += MR)
            micro_gemm<Arch, MR, nv, Accumulate>(depth, a.from(r), a_k, b, col, c + r * ldc + col, ldc, step);
        for (std::size_t r = whole_rows; r < rows; ++r)
            micro_gemm<Arch, 1, nv, Accumulate>(depth, a.from(r), a_k, b, col, c + r * ldc + col, ldc, step);
    };
    std::size_t col = 0;
    for (; col + NV * W <= cols; col += NV * W) panel(std::integral_constant<std::size_t, NV>{}, col);
    for (; col < cols; col += W) panel(std::integral_constant<std::size_t, 1>{}, col);
}

/// The same with A(r, p) = a[r * a_row + p * a_k] and B(p, c) = b[p * ldb + c].
template <class Arch, std::size_t MR, std::size_t NV, bool Accumulate, class T>
void gemm(std::size_t rows, std::size_t cols, std::size_t depth, const T* a, std::size_t a_row, std::size_t a_k,
          const T* b, std::size_t ldb, T* c, std::size_t ldc) noexcept {
    gemm<Arch, MR, NV, Accumulate>(rows, cols, depth, strided_rows<T>{a, a_row}, a_k, strided_rows<T>{b, ldb}, c, ldc);
}

}  // namespace nonlocal::simd
