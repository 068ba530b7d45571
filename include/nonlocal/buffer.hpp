#pragma once
/// @file buffer.hpp
/// `buffer<T>`: the storage of the library's large work arrays (the AR system's
/// weights, the solvers' vectors, the depth tasks' intermediates): a `std::vector`
/// whose data starts on a 64-byte boundary, a cache line and an AVX-512 register.
/// The stencil passes start their batches on multiples of the batch width
/// (`ar_system::vector_zone`), so a pixel's own entries (its weights, diagonal,
/// right-hand side and output) load and store without splitting cache lines; only
/// the neighbours' loads do.

#include <cstddef>
#include <vector>

#include <xsimd/xsimd.hpp>

namespace nonlocal {

/// Bytes to which a `buffer`'s data is aligned.
inline constexpr std::size_t buffer_alignment = 64;

/// A contiguous array of T aligned to `buffer_alignment` bytes.
template <class T>
using buffer = std::vector<T, xsimd::aligned_allocator<T, buffer_alignment>>;

}  // namespace nonlocal
