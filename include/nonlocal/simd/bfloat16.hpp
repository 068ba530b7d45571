#pragma once
/// @file simd/bfloat16.hpp
/// bfloat16, the upper half of an IEEE float (8 exponent bits, 7 stored fraction bits), as
/// the operands of products that accumulate in float: values rounded to nearest even, two
/// of them packed in 32 bits along the depth of a product (`bf16_pair`), and the step that
/// multiplies two such pairs into a float accumulator (`dot_bf16_pairs`), one `vdpbf16ps`
/// where the build has AVX512-BF16 and the same arithmetic in float FMAs elsewhere.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace nonlocal {

/// The precision of a product's operands: the value type's own, or bfloat16 (products of
/// float layers with their operands rounded to bfloat16, accumulated in float).
enum class precision { native, bf16 };

}  // namespace nonlocal

namespace nonlocal::simd {

/// A bfloat16 value: the upper 16 bits of the float it stands for.
struct bfloat16 {
    std::uint16_t bits = 0;

    bfloat16() = default;
    /// `value` rounded to nearest, ties to even; infinities kept, NaNs kept quiet (sign kept).
    explicit bfloat16(float value) noexcept : bits(round(value)) {}
    /// The value whose bits are `bits`.
    static bfloat16 from_bits(std::uint16_t bits) noexcept {
        bfloat16 b;
        b.bits = bits;
        return b;
    }
    /// The float this value stands for (exactly).
    explicit operator float() const noexcept { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

    friend bool operator==(bfloat16 a, bfloat16 b) noexcept { return a.bits == b.bits; }

private:
    static std::uint16_t round(float value) noexcept {
        const std::uint32_t u = std::bit_cast<std::uint32_t>(value);
        if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x0040u);   // NaN, quiet
        // Adding 0x7fff plus the lowest kept bit carries into the kept bits exactly when the
        // dropped half is above a half, or a half with the kept value odd.
        return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
};

/// Two bfloat16 values in 32 bits, `low` at depth 2p and `high` at 2p + 1, as
/// `vdpbf16ps` reads its operands.
inline std::uint32_t bf16_pair(float low, float high) noexcept {
    return std::uint32_t(bfloat16(low).bits) | std::uint32_t(bfloat16(high).bits) << 16;
}

/// Pair p of a row of `length` values along the depth: `bf16_pair(row[2 p], row[2 p + 1])`,
/// the value past an odd row's last taken as 0.
inline std::uint32_t bf16_pair_of(const float* row, std::size_t p, std::size_t length) noexcept {
    return bf16_pair(row[2 * p], 2 * p + 1 < length ? row[2 * p + 1] : 0.f);
}

/// Whether `dot_bf16_pairs` is one `vdpbf16ps` on `Arch` in this build (AVX-512 and the
/// compiler's AVX512-BF16, as `-march=native` on a machine that has it), or float FMAs.
template <class Arch>
inline constexpr bool native_bf16 =
#if defined(__AVX512BF16__) && XSIMD_WITH_AVX512F
    std::is_base_of_v<xsimd::avx512f, Arch>;
#else
    false;
#endif

/// The step of a product over bf16 pairs: acc + a.high b.high + a.low b.low in each float
/// lane, the products exact and each sum rounded, the order of `vdpbf16ps` (which also
/// reads and writes subnormals as zero).
struct dot_bf16_pairs {
    template <class Arch>
    xsimd::batch<float, Arch> operator()(xsimd::batch<std::uint32_t, Arch> a, xsimd::batch<std::uint32_t, Arch> b,
                                         xsimd::batch<float, Arch> acc) const noexcept {
#if defined(__AVX512BF16__) && XSIMD_WITH_AVX512F
        if constexpr (native_bf16<Arch>)
            return _mm512_dpbf16_ps(acc, __m512bh(__m512i(a)), __m512bh(__m512i(b)));
        else
#endif
        {
            using floats = xsimd::batch<float, Arch>;
            const xsimd::batch<std::uint32_t, Arch> high_half(0xffff0000u);
            const auto high = [&](auto v) { return xsimd::bitwise_cast<floats>(v & high_half); };
            const auto low = [&](auto v) { return xsimd::bitwise_cast<floats>(v << 16); };
            return xsimd::fma(low(a), low(b), xsimd::fma(high(a), high(b), acc));
        }
    }
};

}  // namespace nonlocal::simd
