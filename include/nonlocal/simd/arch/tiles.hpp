#pragma once
/// @file simd/arch/tiles.hpp
/// The register tiles of the kernels, for a register file of 16 or of 32 vectors, and
/// `arch_traits`, which each architecture family (`simd/arch/x86.hpp`, `simd/arch/arm.hpp`)
/// specialises with one of them; the kernels read them through `simd::arch_traits<Arch>`.
///
/// An FMA has 4 cycles of latency and two ports issue one each per cycle, so a loop needs 8
/// independent accumulators to keep both busy; a tile of accumulators also needs registers
/// for what it reads (the loads of one operand, the broadcasts of the other).

#include <cstddef>

namespace nonlocal::simd {

/// Tiles for 16 vector registers (SSE2 to AVX2, 32-bit NEON): half the accumulators.
struct tiles_16 {
    static constexpr std::size_t vector_registers = 16;
    /// Vectors of columns of the projections' GEMM micro-tile (`linear_rows`: 6 rows x 2
    /// vectors, 12 accumulators, 2 loads and a broadcast).
    static constexpr std::size_t gemm_column_vectors = 2;
    /// Keys of the attention kernel's score tile, S^T = K Q^T (4 keys x 2 vectors of queries).
    static constexpr std::size_t score_key_rows = 4;
    /// Vectors of queries of the transposed P V product (6 features x 2 vectors).
    static constexpr std::size_t transposed_value_vectors = 2;
    /// Divides the P V micro-tiles' rows or vectors (16 x 1 becomes 8 x 1, 4 x 4 becomes 4 x 2).
    static constexpr std::size_t value_tile_divisor = 2;
    /// Accumulators of the depthwise convolution (4, beside the 9 taps of a 3 x 3 kernel).
    static constexpr std::size_t depthwise_accumulators = 4;
};

/// Tiles for 32 vector registers (AVX-512, 64-bit NEON).
struct tiles_32 {
    static constexpr std::size_t vector_registers = 32;
    /// 6 rows x 4 vectors: 24 accumulators, 4 loads and a broadcast.
    static constexpr std::size_t gemm_column_vectors = 4;
    /// 8 keys x 2 vectors of queries: 16 accumulators, 2 loads and 8 broadcasts (folded into
    /// the FMAs) per 16 FMAs.
    static constexpr std::size_t score_key_rows = 8;
    /// 6 features x 4 vectors of queries: 24 accumulators for 6 broadcasts and 4 loads.
    static constexpr std::size_t transposed_value_vectors = 4;
    static constexpr std::size_t value_tile_divisor = 1;
    /// 16 lanes x 2 FMA ports x 4 cycles of latency: 8 accumulators.
    static constexpr std::size_t depthwise_accumulators = 8;
};

/// What the kernels need to know of instruction set Arch: its register file and tiles.
template <class Arch, class = void>
struct arch_traits;

}  // namespace nonlocal::simd
