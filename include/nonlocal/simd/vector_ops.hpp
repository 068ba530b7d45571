#pragma once
/// @file simd/vector_ops.hpp
/// Level-1 vector operations on unaligned rows, written against
/// `xsimd::batch<T, Arch>` with hand-written scalar tails.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/simd/exp.hpp"
#include "nonlocal/simd/lanes.hpp"

namespace nonlocal::simd {

/// to[0, n) = from[0, n), in batches of `Arch` (short copies without a call to memmove).
template <class Arch = default_arch, class T>
void copy(const T* from, std::size_t n, T* to) noexcept {
    using batch = xsimd::batch<T, Arch>;
    std::size_t i = 0;
    for (; i + batch::size <= n; i += batch::size) batch::load_unaligned(from + i).store_unaligned(to + i);
    if (i < n) store_lanes(load_lanes<batch>(from + i, n - i), n - i, to + i);
}

/// even[j] = from[2 j] and odd[j] = from[2 j + 1] for the n values of `from`: (n + 1) / 2
/// even ones and n / 2 odd ones (a stride-2 convolution's columns dealt into its phases).
/// Float batches of AVX-512 and AVX2 deal 2 vectors at a time by two permutes; the rest
/// value by value.
template <class Arch = default_arch, class T>
void deinterleave(const T* from, std::size_t n, T* even, T* odd) noexcept {
    std::size_t j = 0;
#if XSIMD_WITH_AVX512F
    if constexpr (std::is_same_v<T, float> && std::is_base_of_v<xsimd::avx512f, Arch>) {
        const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
        for (; 2 * j + 32 <= n; j += 16) {
            const __m512 a = _mm512_loadu_ps(from + 2 * j), b = _mm512_loadu_ps(from + 2 * j + 16);
            _mm512_storeu_ps(even + j, _mm512_permutex2var_ps(a, evens, b));
            _mm512_storeu_ps(odd + j, _mm512_permutex2var_ps(a, odds, b));
        }
    }
#endif
#if XSIMD_WITH_AVX2
    if constexpr (std::is_same_v<T, float> && std::is_base_of_v<xsimd::avx2, Arch> &&
                  !std::is_base_of_v<xsimd::avx512f, Arch>) {
        for (; 2 * j + 16 <= n; j += 8) {
            const __m256 a = _mm256_loadu_ps(from + 2 * j), b = _mm256_loadu_ps(from + 2 * j + 8);
            // [a0 a2 b0 b2 | a4 a6 b4 b6], then its 64-bit quarters in the order 0, 2, 1, 3.
            const auto in_order = [](__m256 v) {
                return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
            };
            _mm256_storeu_ps(even + j, in_order(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))));
            _mm256_storeu_ps(odd + j, in_order(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))));
        }
    }
#endif
    for (; 2 * j + 1 < n; ++j) even[j] = from[2 * j], odd[j] = from[2 * j + 1];
    if (2 * j < n) even[j] = from[2 * j];
}

/// Deals the n values of `from` into s phases: from[i + k s] to start(i)[k] for each i < s
/// (the columns of a row of a stride-s convolution into its phases). A copy for s = 1,
/// `deinterleave` for s = 2, value by value beyond.
template <class Arch = default_arch, class T, class Start>
void deal(const T* from, std::size_t n, std::size_t s, const Start& start) noexcept {
    if (s == 1) return copy<Arch>(from, n, start(0));
    if (s == 2) return deinterleave<Arch>(from, n, start(0), start(1));
    for (std::size_t i = 0; i < std::min(s, n); ++i) {
        T* to = start(i);
        for (std::size_t k = 0; i + k * s < n; ++k) to[k] = from[i + k * s];
    }
}

/// to[0, n) = value, in batches of `Arch` (short runs without a call to memset).
template <class Arch = default_arch, class T>
void fill(T* to, std::size_t n, T value) noexcept {
    using batch = xsimd::batch<T, Arch>;
    const batch v(value);
    std::size_t i = 0;
    for (; i + batch::size <= n; i += batch::size) v.store_unaligned(to + i);
    if (i < n) store_lanes(v, n - i, to + i);
}

/// Dot product of `a[0, n)` and `b[0, n)`.
///
/// Each FMA needs two loads and Zen 4 / Ice Lake issue two loads per cycle, so
/// the loop is load-bound at one FMA per cycle; the FMA latency is 4 cycles,
/// hence 4 independent accumulators hide it.
template <class Arch = default_arch, class T>
T dot(const T* a, const T* b, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    batch acc0(T(0)), acc1(T(0)), acc2(T(0)), acc3(T(0));
    std::size_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W) {
        acc0 = xsimd::fma(batch::load_unaligned(a + i), batch::load_unaligned(b + i), acc0);
        acc1 = xsimd::fma(batch::load_unaligned(a + i + W), batch::load_unaligned(b + i + W), acc1);
        acc2 = xsimd::fma(batch::load_unaligned(a + i + 2 * W), batch::load_unaligned(b + i + 2 * W), acc2);
        acc3 = xsimd::fma(batch::load_unaligned(a + i + 3 * W), batch::load_unaligned(b + i + 3 * W), acc3);
    }
    for (; i + W <= n; i += W)
        acc0 = xsimd::fma(batch::load_unaligned(a + i), batch::load_unaligned(b + i), acc0);
    T sum = xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

/// Squared Euclidean distance between `a[0, n)` and `b[0, n)`.
template <class Arch = default_arch, class T>
T squared_distance(const T* a, const T* b, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    batch acc0(T(0)), acc1(T(0));
    std::size_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        const batch d0 = batch::load_unaligned(a + i) - batch::load_unaligned(b + i);
        const batch d1 = batch::load_unaligned(a + i + W) - batch::load_unaligned(b + i + W);
        acc0 = xsimd::fma(d0, d0, acc0);
        acc1 = xsimd::fma(d1, d1, acc1);
    }
    for (; i + W <= n; i += W) {
        const batch d = batch::load_unaligned(a + i) - batch::load_unaligned(b + i);
        acc0 = xsimd::fma(d, d, acc0);
    }
    T sum = xsimd::hadd(acc0 + acc1);
    for (; i < n; ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
    return sum;
}

/// `y[0, n) += alpha * x[0, n)`.
template <class Arch = default_arch, class T>
void axpy(T alpha, const T* x, T* y, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    const batch a(alpha);
    std::size_t i = 0;
    for (; i + W <= n; i += W)
        xsimd::fma(a, batch::load_unaligned(x + i), batch::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += alpha * x[i];
}

/// accumulate_rows' step: acc[0, V W) += sum_t w[t] row(t)[offset, offset + V W), V vectors of W lanes, the last holding only
/// `last_lanes` of them when `Partial`.
template <std::size_t V, bool Partial, class Arch, class T, class Row>
void accumulate_block(const T* w, std::size_t count, const Row& row, std::size_t offset, T* acc,
                      std::size_t last_lanes) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    const auto load = [&](const T* p, std::size_t v) {
        if constexpr (Partial) return v + 1 == V ? load_lanes<batch>(p + v * W, last_lanes) : batch::load_unaligned(p + v * W);
        else return batch::load_unaligned(p + v * W);
    };
    batch even[V], odd[V];
    for (std::size_t v = 0; v < V; ++v) even[v] = load(acc, v), odd[v] = batch(T(0));
    std::size_t t = 0;
    for (; t + 2 <= count; t += 2) {
        const T *r0 = row(t) + offset, *r1 = row(t + 1) + offset;
        const batch w0(w[t]), w1(w[t + 1]);
        for (std::size_t v = 0; v < V; ++v) {
            even[v] = xsimd::fma(w0, load(r0, v), even[v]);
            odd[v] = xsimd::fma(w1, load(r1, v), odd[v]);
        }
    }
    if (t < count) {
        const T* r0 = row(t) + offset;
        for (std::size_t v = 0; v < V; ++v) even[v] = xsimd::fma(batch(w[t]), load(r0, v), even[v]);
    }
    for (std::size_t v = 0; v < V; ++v) {
        const batch sum = even[v] + odd[v];
        if (Partial && v + 1 == V) store_lanes(sum, last_lanes, acc + v * W);
        else sum.store_unaligned(acc + v * W);
    }
}

/// acc[0, n) += sum_{t < count} w[t] row(t)[0, n), where `row(t)` points at a row of n values
/// (a weighted sum of gathered rows). The accumulator stays in registers across the rows, up to
/// 4 vectors of it at a time, in two sets taking alternate rows: up to 8 independent FMAs in
/// flight for a 4-cycle latency on 2 ports, where an axpy per row would chain every row's update
/// through a store and a load of the accumulator.
template <class Arch = default_arch, class T, class Row>
void accumulate_rows(const T* w, std::size_t count, const Row& row, T* acc, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size, V = 4;
    std::size_t c = 0;
    for (; c + V * W <= n; c += V * W) accumulate_block<V, false, Arch>(w, count, row, c, acc + c, W);
    const std::size_t rest = n - c, lanes = rest % W, vectors = (rest + W - 1) / W;
    const auto block = [&]<std::size_t Vs>(std::integral_constant<std::size_t, Vs>) {
        if (lanes == 0) accumulate_block<Vs, false, Arch>(w, count, row, c, acc + c, W);
        else accumulate_block<Vs, true, Arch>(w, count, row, c, acc + c, lanes);
    };
    switch (vectors) {
    case 1: block(std::integral_constant<std::size_t, 1>{}); break;
    case 2: block(std::integral_constant<std::size_t, 2>{}); break;
    case 3: block(std::integral_constant<std::size_t, 3>{}); break;
    case 4: block(std::integral_constant<std::size_t, 4>{}); break;   // 3 full vectors and a part
    default: break;                                                     // nothing left
    }
}

/// `y[t] += a[t] * b[t]` for t in [0, n); `Sign` = -1 subtracts instead.
template <int Sign = 1, class Arch = default_arch, class T>
void multiply_add(const T* a, const T* b, T* y, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    std::size_t i = 0;
    for (; i + W <= n; i += W) {
        const batch ab = batch::load_unaligned(a + i) * batch::load_unaligned(b + i);
        const batch yi = batch::load_unaligned(y + i);
        (Sign > 0 ? yi + ab : yi - ab).store_unaligned(y + i);
    }
    for (; i < n; ++i) y[i] += Sign > 0 ? a[i] * b[i] : -(a[i] * b[i]);
}

/// `y[0, n) = alpha * x[0, n)` (x may be y).
template <class Arch = default_arch, class T>
void scale(T alpha, const T* x, T* y, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    const batch a(alpha);
    std::size_t i = 0;
    for (; i + W <= n; i += W) (a * batch::load_unaligned(x + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] = alpha * x[i];
}

/// `y[0, n) *= alpha`.
template <class Arch = default_arch, class T>
void scale(T alpha, T* y, std::size_t n) noexcept {
    scale<Arch>(alpha, static_cast<const T*>(y), y, n);
}

/// a / b rounded as IEEE division rounds, for a scalar or lane by lane for a batch, on every
/// architecture. xsimd 8 divides float batches on 64-bit Arm as on 32-bit NEON, by a reciprocal
/// estimate and two Newton steps (up to 2 ulp off); 64-bit Arm has a division instruction,
/// used here, so that a kernel's batches and its scalar ends round alike.
template <class V>
V divide(V a, V b) noexcept {
#if XSIMD_WITH_NEON64
    if constexpr (std::is_same_v<V, xsimd::batch<float, xsimd::neon64>>) return V(vdivq_f32(a, b));
#endif
    return a / b;
}

/// 1 / d where d > 0, else 0: for a scalar, or lane by lane for a batch.
template <class V>
V inverse_or_zero(V d) noexcept {
    if constexpr (std::is_arithmetic_v<V>) return d > V(0) ? V(1) / d : V(0);
    else return xsimd::select(d > V(0), divide(V(1), d), V(0));
}

/// Largest of `x[0, n)`; `-infinity` for n = 0, NaN when any is NaN (so that the softmax
/// kernels carry a NaN logit into their result rather than skip it).
template <class Arch = default_arch, class T>
T max_element(const T* x, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    T best = -std::numeric_limits<T>::infinity();
    bool nan = false;
    std::size_t i = 0;
    if (n >= W) {
        batch m = batch::load_unaligned(x);
        auto unordered = xsimd::isnan(m);
        for (i = W; i + W <= n; i += W) {
            const batch b = batch::load_unaligned(x + i);
            m = xsimd::max(m, b);
            unordered = unordered || xsimd::isnan(b);
        }
        nan = xsimd::any(unordered);
        alignas(64) T lanes[W];
        m.store_unaligned(lanes);
        for (std::size_t l = 0; l < W; ++l) best = lanes[l] > best ? lanes[l] : best;
    }
    for (; i < n; ++i) {
        nan = nan || x[i] != x[i];
        best = x[i] > best ? x[i] : best;
    }
    return nan ? std::numeric_limits<T>::quiet_NaN() : best;
}

/// `x[t] = exp(x[t])` for t in [0, n).
template <class Arch = default_arch, class T>
void exp_in_place(T* x, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    std::size_t i = 0;
    for (; i + W <= n; i += W) simd::exp(batch::load_unaligned(x + i)).store_unaligned(x + i);
    for (; i < n; ++i) x[i] = std::exp(x[i]);
}

/// `x[t] = exp(x[t] - shift)` for t in [0, n); returns the sum of the results.
template <class Arch = default_arch, class T>
T exp_shifted_sum(T* x, T shift, std::size_t n) noexcept {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    const batch s(shift);
    batch acc(T(0));
    std::size_t i = 0;
    for (; i + W <= n; i += W) {
        const batch e = simd::exp(batch(batch::load_unaligned(x + i) - s));
        e.store_unaligned(x + i);
        acc += e;
    }
    T sum = xsimd::hadd(acc);
    for (; i < n; ++i) {
        x[i] = std::exp(x[i] - shift);
        sum += x[i];
    }
    return sum;
}

}  // namespace nonlocal::simd
