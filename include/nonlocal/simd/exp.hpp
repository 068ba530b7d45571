#pragma once
/// @file simd/exp.hpp
/// exp(x) for the softmax weights, where x = logit - row maximum <= 0, and for any x.

#include <cmath>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"

namespace nonlocal::simd {

/// exp(r) for |r| <= ln 2 / 2, by its degree-6 Taylor polynomial (relative error < 2e-7).
template <class Arch>
xsimd::batch<float, Arch> exp_reduced(xsimd::batch<float, Arch> r) noexcept {
    using batch = xsimd::batch<float, Arch>;
    batch p = batch(1.f / 720);
    p = xsimd::fma(p, r, batch(1.f / 120));
    p = xsimd::fma(p, r, batch(1.f / 24));
    p = xsimd::fma(p, r, batch(1.f / 6));
    p = xsimd::fma(p, r, batch(0.5f));
    p = xsimd::fma(p, r, batch(1.f));
    return xsimd::fma(p, r, batch(1.f));
}

/// exp(x) for float lanes of x in [-87.3, 89] (callers clamp): to about 2 ulp up to 88.37,
/// at least 2^127 above (+inf from 88.73, where exp overflows), NaN for NaN:
///   n = round(x / ln 2), r = x - n ln 2 (two-constant Cody-Waite reduction,
///   |r| <= ln 2 / 2), exp(r) by `exp_reduced`, times 2^n, n in [-126, 128].
/// 2^n is assembled in the exponent bits, where 2^128 is the pattern of +inf (so x from 88.37
/// gives +inf), or on AVX-512 formed by vscalefps, exact up to the overflow, which also takes
/// any other x: below the range subnormals, then 0, and NaN for x = -inf. 11 vector
/// operations on AVX-512, 14 elsewhere, 8 of them FMAs.
template <class Arch>
xsimd::batch<float, Arch> exp_bounded(xsimd::batch<float, Arch> x) noexcept {
    using batch = xsimd::batch<float, Arch>;
    using ibatch = xsimd::batch<int32_t, Arch>;
    constexpr float log2e = 1.44269504088896341f, ln2_high = 0.693359375f, ln2_low = -2.12194440e-4f;
#if XSIMD_WITH_AVX512F
    if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
        const batch n(_mm512_roundscale_ps(x * batch(log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const batch r = xsimd::fma(n, batch(-ln2_low), xsimd::fma(n, batch(-ln2_high), x));
        return _mm512_scalef_ps(exp_reduced(r), n);
    }
#endif
    const batch n = xsimd::nearbyint(x * batch(log2e));
    const batch r = xsimd::fma(n, batch(-ln2_low), xsimd::fma(n, batch(-ln2_high), x));
    const ibatch bits = (xsimd::to_int(n) + ibatch(127)) << 23;
    return exp_reduced(r) * xsimd::bitwise_cast<batch>(bits);
}

/// exp(x) for float lanes, to about 2 ulp, and exactly 0 below -87.3 (so exp(-inf) = 0 for
/// masked entries): `exp_bounded` of x, clamped to -87.3 from below but on AVX-512, with the
/// lanes below -87.3 set to 0 (13 operations on AVX-512, 17 elsewhere, against about 30 for
/// xsimd::exp, which also handles large positive x).
/// Valid for x <= 88; the softmax kernels only pass x <= 0. exp(NaN) = NaN, so that a NaN
/// logit (from a NaN query, key or scale) spreads into its row's result as it does in the
/// reference, instead of vanishing as a zero weight.
template <class Arch>
xsimd::batch<float, Arch> exp_nonpositive(xsimd::batch<float, Arch> x) noexcept {
    using batch = xsimd::batch<float, Arch>;
    const auto underflow = x < batch(-87.3f);
#if XSIMD_WITH_AVX512F
    if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>)
        return _mm512_mask_mov_ps(exp_bounded(x), underflow, _mm512_setzero_ps());
#endif
    // x second: x86's max returns its second operand when either is NaN (NEON's returns NaN),
    // and a NaN stays NaN through the polynomial.
    return xsimd::select(underflow, batch(0.f), exp_bounded(xsimd::max(batch(-87.3f), x)));
}

/// exp(x) lane by lane for any x: xsimd's exp where it is finite and nonzero, 0 below,
/// +inf above (for float from 88.38, where xsimd's bound is), NaN for NaN. xsimd's exp
/// converts round(x / ln 2) to an integer, which is undefined for NaN and infinities where
/// the conversion is scalar (double lanes without AVX512DQ's conversions): double lanes are
/// clamped first to [-750, 710], where exp is already 0 and +inf, and a NaN put back. Float
/// lanes convert in one instruction everywhere and go to xsimd's exp as they are.
template <class T, class Arch>
xsimd::batch<T, Arch> exp(xsimd::batch<T, Arch> x) noexcept {
    using batch = xsimd::batch<T, Arch>;
    if constexpr (std::is_same_v<T, float>) {
        return xsimd::exp(x);
    } else {
        const batch low(T(-750)), high(T(710));
        const batch inside = xsimd::select(x > low, xsimd::select(x < high, x, high), low);
        return xsimd::select(xsimd::isnan(x), x, xsimd::exp(inside));
    }
}

/// exp(x) for double lanes: `exp` (0 for x = -inf, +inf where it overflows).
template <class Arch>
xsimd::batch<double, Arch> exp_nonpositive(xsimd::batch<double, Arch> x) noexcept {
    return simd::exp(x);
}

}  // namespace nonlocal::simd
