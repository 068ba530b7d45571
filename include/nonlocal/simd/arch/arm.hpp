#pragma once
/// @file simd/arch/arm.hpp
/// The Arm family: 64-bit NEON (AArch64) has 32 vector registers (v0-v31), 32-bit NEON 16
/// quad registers (q0-q15). SVE has 32 (z0-z31), the tiles of `tiles_32`; xsimd 8.1, which
/// the library builds on, has no SVE instruction set, so an SVE build runs the NEON kernels.

#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "nonlocal/simd/arch/tiles.hpp"

namespace nonlocal::simd {

/// Whether Arch is one of xsimd's Arm instruction sets.
template <class Arch>
inline constexpr bool is_arm = std::is_base_of_v<xsimd::neon, Arch>;

/// 64-bit NEON: 32 registers.
template <class Arch>
struct arch_traits<Arch, std::enable_if_t<is_arm<Arch> && std::is_base_of_v<xsimd::neon64, Arch>>> : tiles_32 {};

/// 32-bit NEON: 16 registers.
template <class Arch>
struct arch_traits<Arch, std::enable_if_t<is_arm<Arch> && !std::is_base_of_v<xsimd::neon64, Arch>>> : tiles_16 {};

}  // namespace nonlocal::simd
