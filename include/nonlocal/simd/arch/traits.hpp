#pragma once
/// @file simd/arch/traits.hpp
/// What the kernels need to know of an instruction set: `simd::arch_traits<Arch>`, one
/// header per architecture family (`x86.hpp`, `arm.hpp`; xsimd's `arch/` is the model), each
/// giving its register file and the register tiles it takes (`tiles.hpp`). An instruction
/// set of no family here gets the tiles of 16 registers, which fit every register file.

#include <cstddef>
#include <type_traits>

#include "nonlocal/simd/arch/arm.hpp"
#include "nonlocal/simd/arch/tiles.hpp"
#include "nonlocal/simd/arch/x86.hpp"

namespace nonlocal::simd {

/// An instruction set of no family above.
template <class Arch>
struct arch_traits<Arch, std::enable_if_t<!is_x86<Arch> && !is_arm<Arch>>> : tiles_16 {};

/// Vector registers of an architecture.
template <class Arch>
inline constexpr std::size_t vector_registers = arch_traits<Arch>::vector_registers;

}  // namespace nonlocal::simd
