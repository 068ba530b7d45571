#pragma once
/// @file simd/activation.hpp
/// The activations of feed-forward layers on xsimd batches, so that a GEMM applies
/// them as it stores its results, and on arrays.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numbers>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/simd/exp.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::simd {

/// An elementwise activation, as PyTorch's modules of the same names compute it. At
/// -infinity each gives its limit, 0 (PyTorch gives NaN for SiLU and both GELUs).
enum class activation {
    identity,    ///< x
    relu,        ///< x < 0 ? 0 : x (NaN stays NaN)
    relu6,       ///< min(max(x, 0), 6) (NaN stays NaN)
    silu,        ///< x sigmoid(x) = x / (1 + exp(-x)), also called swish
    gelu,        ///< x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, PyTorch's exact GELU; 0 at -infinity, its limit
    gelu_tanh,   ///< x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2, `nn.GELU(approximate='tanh')`
};

/// x / (1 + e^-x) lane by lane: 0 at -infinity (x is held at the lowest finite value, over
/// e^-x = +inf), NaN for NaN. Float: e^-x by `exp_bounded` of -x clamped to [-87.3, 89]
/// (+inf for x below -88.73, or -88.37 but on AVX-512; 1 + e^-x = 1 above 87.3); 17
/// operations on AVX-512, one a division.
template <class Batch>
[[gnu::always_inline]] inline Batch silu(const Batch& x) noexcept {
    using T = typename Batch::value_type;
    // max and min with the constant first keep a NaN: x86 returns the second operand when
    // either is NaN (NEON returns NaN).
    const Batch lowest(std::numeric_limits<T>::lowest()), one(T(1));
    if constexpr (std::is_same_v<T, float>)
        return divide(xsimd::max(lowest, x), one + exp_bounded(xsimd::min(Batch(89.f), xsimd::max(Batch(-87.3f), -x))));
    else return divide(xsimd::max(lowest, x), one + simd::exp(Batch(-x)));
}

/// a(v) lane by lane. Always inlined: GEMMs call it on each vector they store, and a call
/// would cost more than identity or ReLU (and spill the caller's vector registers).
template <class Batch>
[[gnu::always_inline]] inline Batch activate(activation a, const Batch& v) noexcept {
    using T = typename Batch::value_type;
    const Batch zero(T(0)), half(T(0.5)), one(T(1));
    const Batch minus_infinity(-std::numeric_limits<T>::infinity());
    switch (a) {
    case activation::identity: return v;
    case activation::relu: return xsimd::select(v < zero, zero, v);
    case activation::relu6: return xsimd::select(v > Batch(T(6)), Batch(T(6)), xsimd::select(v < zero, zero, v));
    case activation::silu: return silu(v);
    case activation::gelu:
        return xsimd::select(v == minus_infinity, zero,
                             half * v * (one + xsimd::erf(v * Batch(T(std::numbers::sqrt2 / 2)))));
    case activation::gelu_tanh: {
        const Batch c(T(0.7978845608028654)), k(T(0.044715));   // sqrt(2 / pi)
        return xsimd::select(v == minus_infinity, zero, half * v * (one + xsimd::tanh(c * (v + k * v * v * v))));
    }
    }
    return v;
}

/// The identity as a type: an epilogue or a store with no activation, none chosen at run time.
using no_activation = std::integral_constant<activation, activation::identity>;

/// f(std::integral_constant<activation, a>{}): code that applies an activation to each
/// vector it stores, compiled for each one, so that none is chosen vector by vector.
template <class F>
decltype(auto) with_activation(activation a, F&& f) {
    using enum activation;
    switch (a) {
    case relu: return f(std::integral_constant<activation, relu>{});
    case relu6: return f(std::integral_constant<activation, relu6>{});
    case silu: return f(std::integral_constant<activation, silu>{});
    case gelu: return f(std::integral_constant<activation, gelu>{});
    case gelu_tanh: return f(std::integral_constant<activation, gelu_tanh>{});
    case identity: break;
    }
    return f(std::integral_constant<activation, identity>{});
}

/// x[i] = a(x[i]) for i < n, batches of `Arch` throughout: the last n mod lanes values
/// go through a padded batch, so every value's result is the same wherever it stands.
template <class Arch = default_arch, class T>
void activate(activation a, T* x, std::size_t n) {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t lanes = batch::size;
    for (std::size_t i = 0; i < n; i += lanes) {
        const std::size_t count = std::min(lanes, n - i);
        store_lanes(activate(a, load_lanes<batch>(x + i, count)), count, x + i);
    }
}

}  // namespace nonlocal::simd
