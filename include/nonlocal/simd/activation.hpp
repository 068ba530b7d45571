#pragma once
/// @file simd/activation.hpp
/// The activations of feed-forward layers on xsimd batches, so that a GEMM applies
/// them as it stores its results, and on arrays.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numbers>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::simd {

/// An elementwise activation.
enum class activation {
    identity,   ///< x
    relu,       ///< x < 0 ? 0 : x (NaN stays NaN)
    gelu,       ///< x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, PyTorch's exact GELU; 0 at -infinity, its limit
};

/// a(v) lane by lane.
template <class Batch>
Batch activate(activation a, const Batch& v) noexcept {
    using T = typename Batch::value_type;
    switch (a) {
    case activation::identity: return v;
    case activation::relu: return xsimd::select(v < Batch(T(0)), Batch(T(0)), v);
    case activation::gelu: break;
    }
    const Batch half(T(0.5)), one(T(1)), inverse_sqrt2(T(std::numbers::sqrt2 / 2));
    return xsimd::select(v == Batch(-std::numeric_limits<T>::infinity()), Batch(T(0)),
                         half * v * (one + xsimd::erf(v * inverse_sqrt2)));
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
