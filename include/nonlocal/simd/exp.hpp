#pragma once
/// @file simd/exp.hpp
/// exp(x) for the softmax weights, where x = logit - row maximum <= 0.

#include <cmath>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"

namespace nonlocal::simd {

/// exp(x) for float lanes, to about 2 ulp, and exactly 0 below -87.3 (so
/// exp(-inf) = 0 for masked entries). 14 vector operations, 8 of them FMAs,
/// against about 30 for xsimd::exp, which also handles large positive x:
///   n = round(x / ln 2), r = x - n ln 2 (two-constant Cody-Waite reduction,
///   |r| <= ln 2 / 2), exp(r) by its degree-6 Taylor polynomial (relative error
///   < 2e-7 on that interval), times 2^n assembled in the exponent bits.
/// Valid for x <= 88; the softmax kernels only pass x <= 0. exp(NaN) = NaN, so that a NaN
/// logit (from a NaN query, key or scale) spreads into its row's result as it does in the
/// reference, instead of vanishing as a zero weight.
template <class Arch>
xsimd::batch<float, Arch> exp_nonpositive(xsimd::batch<float, Arch> x) noexcept {
    using batch = xsimd::batch<float, Arch>;
    using ibatch = xsimd::batch<int32_t, Arch>;
    const auto underflow = x < batch(-87.3f);
    // x second: x86's max returns its second operand when either is NaN (NEON's returns NaN),
    // and a NaN stays NaN through the polynomial.
    x = xsimd::max(batch(-87.3f), x);
    const batch n = xsimd::nearbyint(x * batch(1.44269504088896341f));
    batch r = xsimd::fma(n, batch(-0.693359375f), x);
    r = xsimd::fma(n, batch(2.12194440e-4f), r);
    batch p = batch(1.f / 720);
    p = xsimd::fma(p, r, batch(1.f / 120));
    p = xsimd::fma(p, r, batch(1.f / 24));
    p = xsimd::fma(p, r, batch(1.f / 6));
    p = xsimd::fma(p, r, batch(0.5f));
    p = xsimd::fma(p, r, batch(1.f));
    p = xsimd::fma(p, r, batch(1.f));
    const ibatch bits = (xsimd::to_int(n) + ibatch(127)) << 23;
    return xsimd::select(underflow, batch(0.f), p * xsimd::bitwise_cast<batch>(bits));
}

/// exp(x) for double lanes: xsimd's exp (0 for x = -inf).
template <class Arch>
xsimd::batch<double, Arch> exp_nonpositive(xsimd::batch<double, Arch> x) noexcept {
    return xsimd::exp(x);
}

}  // namespace nonlocal::simd
