#pragma once
/// @file similarity/distance.hpp
/// Similarities built on distances between features: dissimilarity matrices,
/// non-local means (patch features) and bilateral weights ((position, colour) features).

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal {

namespace detail {
/// h, or `std::invalid_argument` from `who` unless it is finite and positive.
inline double checked_bandwidth(double h, std::string_view who) {
    require(std::isfinite(h) && h > 0, who, [&] { return "h must be finite and positive, got h = " + std::to_string(h); });
    return h;
}
}  // namespace detail

/// The logit of a similarity that is a sum over channels, from its `channel_logit`:
/// sum_c s.channel_logit(q_c - k_c). For similarities that declare `channel_logit` (the
/// AR system then computes their weights a channel at a time) and need no faster `logit`.
template <class S, class T>
T channel_sum_logit(const S& s, std::span<const T> q, std::span<const T> k) {
    T sum = 0;
    for (std::size_t c = 0; c < q.size(); ++c) sum += s.channel_logit(q[c] - k[c]);
    return sum;
}

/// logit = |q - k|^2, kappa = identity: a dissimilarity.
struct squared_euclidean {
    using weight_function = identity_weight;
    using traits = similarity_traits<distance_form, symmetric>;
    static double scale(std::size_t) noexcept { return 1.0; }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        return simd::squared_distance(q.data(), k.data(), q.size());
    }
    template <class V>
    V channel_logit(V difference) const { return difference * difference; }
};

/// s = exp(-|q - k|^2 / h^2): non-local means on patch features, bilateral
/// weights on scaled (position, colour) features, the AR model's colour weights.
struct gaussian_distance {
    using weight_function = exp_weight;
    using traits = similarity_traits<distance_form, symmetric>;
    double h = 1.0;

    /// Throws `std::invalid_argument` unless h is finite and positive.
    explicit gaussian_distance(double bandwidth = 1.0) : h(detail::checked_bandwidth(bandwidth, "gaussian_distance")) {}
    double scale(std::size_t) const noexcept { return -1.0 / (h * h); }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        return -simd::squared_distance(q.data(), k.data(), q.size()) / static_cast<T>(h * h);
    }
    template <class V>
    V channel_logit(V difference) const { return simd::divide(-(difference * difference), V(h * h)); }
};

/// s = exp(-|q - k|_1 / h), the Laplacian kernel: the L1 colour weight of the
/// fast global smoother, and of the AR model's default colour weights. Its
/// weight falls off more slowly than the Gaussian's for large differences and
/// faster for small ones, so textures stay connected and real edges still cut.
struct laplacian_distance {
    using weight_function = exp_weight;
    using traits = similarity_traits<channel_sum_form, symmetric>;
    double h = 1.0;

    /// Throws `std::invalid_argument` unless h is finite and positive.
    explicit laplacian_distance(double bandwidth = 1.0)
        : h(detail::checked_bandwidth(bandwidth, "laplacian_distance")) {}
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return channel_sum_logit(*this, q, k); }
    template <class V>
    V channel_logit(V difference) const { return xsimd::abs(difference) * V(-1 / h); }
};

/// logit = <q, k> / (|q| |k|), kappa = identity; 0 when either vector is zero.
struct cosine {
    using weight_function = identity_weight;
    using traits = similarity_traits<cosine_form, symmetric>;
    static double scale(std::size_t) noexcept { return 1.0; }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        const T qq = simd::dot(q.data(), q.data(), q.size());
        const T kk = simd::dot(k.data(), k.data(), k.size());
        if (qq == T(0) || kk == T(0)) return T(0);
        return simd::dot(q.data(), k.data(), q.size()) / std::sqrt(qq * kk);
    }
};

static_assert(similarity<squared_euclidean>);
static_assert(similarity<gaussian_distance>);
static_assert(similarity<laplacian_distance>);
static_assert(similarity<cosine>);
static_assert(detail::channel_sum_similarity<laplacian_distance> && detail::channel_sum_similarity<gaussian_distance> &&
              detail::channel_sum_similarity<squared_euclidean> && !detail::channel_sum_similarity<cosine>);

}  // namespace nonlocal
