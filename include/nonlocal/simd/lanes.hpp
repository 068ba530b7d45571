#pragma once
/// @file simd/lanes.hpp
/// The first lanes of a batch loaded from or stored to a row's end: AVX-512's and AVX2's
/// masked moves where the architecture has them, element by element elsewhere; nothing
/// past the lanes asked for is read or written.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"

namespace nonlocal::simd {

/// Whether a batch's partial loads and stores are AVX-512's masked moves, or AVX2's.
template <class Batch>
inline constexpr bool avx512_masked = std::is_base_of_v<xsimd::avx512f, typename Batch::arch_type>;
template <class Batch>
inline constexpr bool avx2_masked = std::is_base_of_v<xsimd::avx2, typename Batch::arch_type> && !avx512_masked<Batch>;

#if XSIMD_WITH_AVX2
/// AVX2's mask of the first `lanes` of 8 x 32 or 4 x 64 bits, for vmaskmov (which, as
/// AVX-512's masked moves, never touches the lanes left out, even past an array's end).
template <class T>
inline __m256i avx2_first_lanes(std::size_t lanes) noexcept {
    if constexpr (sizeof(T) == 4)
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(lanes)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    else
        return _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(lanes)), _mm256_setr_epi64x(0, 1, 2, 3));
}
#endif

/// Lanes [0, lanes) of `from` in a batch, the others 0; nothing past from + lanes is read.
template <class Batch, class T>
Batch load_lanes(const T* from, std::size_t lanes) noexcept {
    if (lanes == Batch::size) return Batch::load_unaligned(from);
#if XSIMD_WITH_AVX512F
    if constexpr (avx512_masked<Batch>) {
        if constexpr (sizeof(T) == 4) return _mm512_maskz_loadu_ps(__mmask16((1u << lanes) - 1), from);
        else return _mm512_maskz_loadu_pd(__mmask8((1u << lanes) - 1), from);
    }
#endif
#if XSIMD_WITH_AVX2
    if constexpr (avx2_masked<Batch>) {
        if constexpr (sizeof(T) == 4) return _mm256_maskload_ps(from, avx2_first_lanes<T>(lanes));
        else return _mm256_maskload_pd(from, avx2_first_lanes<T>(lanes));
    }
#endif
    alignas(64) T values[Batch::size] = {};
    for (std::size_t l = 0; l < lanes; ++l) values[l] = from[l];
    return Batch::load_aligned(values);
}

/// Lanes [0, lanes) of v to to[0, lanes); nothing past to + lanes is written.
template <class Batch, class T>
void store_lanes(const Batch& v, std::size_t lanes, T* to) noexcept {
    if (lanes == Batch::size) return v.store_unaligned(to);
#if XSIMD_WITH_AVX512F
    if constexpr (avx512_masked<Batch>) {
        if constexpr (sizeof(T) == 4) return _mm512_mask_storeu_ps(to, __mmask16((1u << lanes) - 1), v);
        else return _mm512_mask_storeu_pd(to, __mmask8((1u << lanes) - 1), v);
    }
#endif
#if XSIMD_WITH_AVX2
    if constexpr (avx2_masked<Batch>) {
        if constexpr (sizeof(T) == 4) return _mm256_maskstore_ps(to, avx2_first_lanes<T>(lanes), v);
        else return _mm256_maskstore_pd(to, avx2_first_lanes<T>(lanes), v);
    }
#endif
    alignas(64) T values[Batch::size];
    v.store_aligned(values);
    for (std::size_t l = 0; l < lanes; ++l) to[l] = values[l];
}

/// Lanes [first, last) of v to to[0, last - first); nothing else is written (first <= last
/// <= the batch's size).
template <class Batch, class T>
void store_lanes(const Batch& v, std::size_t first, std::size_t last, T* to) noexcept {
    if (first == 0) return store_lanes(v, last, to);
    // A masked move of the whole batch to where its lane 0 would go, which it never touches;
    // that address is computed as an integer, so that no pointer leaves `to`'s array.
    [[maybe_unused]] T* const lane_zero = reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(to) - first * sizeof(T));
#if XSIMD_WITH_AVX512F
    if constexpr (avx512_masked<Batch>) {
        const unsigned mask = ((1u << last) - 1) & ~((1u << first) - 1);
        if constexpr (sizeof(T) == 4) return _mm512_mask_storeu_ps(lane_zero, __mmask16(mask), v);
        else return _mm512_mask_storeu_pd(lane_zero, __mmask8(mask), v);
    }
#endif
#if XSIMD_WITH_AVX2
    if constexpr (avx2_masked<Batch>) {
        const __m256i mask = _mm256_andnot_si256(avx2_first_lanes<T>(first), avx2_first_lanes<T>(last));
        if constexpr (sizeof(T) == 4) return _mm256_maskstore_ps(lane_zero, mask, v);
        else return _mm256_maskstore_pd(lane_zero, mask, v);
    }
#endif
    alignas(64) T values[Batch::size];
    v.store_aligned(values);
    for (std::size_t l = first; l < std::min(last, Batch::size); ++l) to[l - first] = values[l];
}

}  // namespace nonlocal::simd
