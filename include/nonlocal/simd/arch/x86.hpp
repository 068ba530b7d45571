#pragma once
/// @file simd/arch/x86.hpp
/// The x86 family: SSE2 to AVX2 have 16 vector registers (xmm0-15, ymm0-15), AVX-512 32
/// (zmm0-31).

#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "nonlocal/simd/arch/tiles.hpp"

namespace nonlocal::simd {

/// Whether Arch is one of xsimd's x86 instruction sets.
template <class Arch>
inline constexpr bool is_x86 = std::is_base_of_v<xsimd::sse2, Arch> || std::is_base_of_v<xsimd::avx, Arch> ||
                               std::is_base_of_v<xsimd::avx512f, Arch>;

/// AVX-512 (F, CD, DQ, BW): 32 registers.
template <class Arch>
struct arch_traits<Arch, std::enable_if_t<is_x86<Arch> && std::is_base_of_v<xsimd::avx512f, Arch>>> : tiles_32 {};

/// SSE2 to AVX2 (FMA3 included): 16 registers.
template <class Arch>
struct arch_traits<Arch, std::enable_if_t<is_x86<Arch> && !std::is_base_of_v<xsimd::avx512f, Arch>>> : tiles_16 {};

}  // namespace nonlocal::simd
