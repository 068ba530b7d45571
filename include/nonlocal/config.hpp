#pragma once
/// @file config.hpp
/// Version and feature macros of nonlocal.

#define NONLOCAL_VERSION_MAJOR 0
#define NONLOCAL_VERSION_MINOR 1
#define NONLOCAL_VERSION_PATCH 0

#define NONLOCAL_VERSION_STRING "0.1.0"

#include <xsimd/xsimd.hpp>

namespace nonlocal {

/// The SIMD architecture the library compiles its kernels for unless told otherwise:
/// the best one the compiler flags enable (SSE2 with no flags on x86-64, AVX2 with
/// `-mavx2 -mfma`, AVX-512 with `-march=native` on a machine that has it).
using default_arch = xsimd::default_arch;

/// Number of lanes of a batch of `T` on `Arch`.
template <class T, class Arch = default_arch>
inline constexpr std::size_t simd_width = xsimd::batch<T, Arch>::size;

}  // namespace nonlocal
