#pragma once
/// @file similarity/dot_product.hpp
/// Similarities whose logit is a scaled dot product of the features.

#include <cmath>
#include <cstddef>
#include <optional>
#include <span>

#include "nonlocal/concepts.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal {

namespace detail {
/// The common part of every dot-product similarity: logit = scale(d) * <q, k> (scale 1 unless
/// `factor` is set; kernel/lowering.hpp aggregates lowered features with it).
template <class Kernel>
struct scaled_dot {
    using weight_function = Kernel;
    using traits = similarity_traits<dot_product_form>;

    /// Multiplier of <q, k> for features of dimension d.
    std::optional<double> factor;
    double scale(std::size_t) const { return factor ? *factor : 1.0; }

    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        return static_cast<T>(scale(q.size())) * simd::dot(q.data(), k.data(), q.size());
    }
};
}  // namespace detail

/// logit = <q, k>, kappa = identity (the non-local block's "dot product").
struct dot_product : detail::scaled_dot<identity_weight> {};

/// logit = <q, k> * scale, with scale = 1 / sqrt(d) unless given: Transformer attention
/// (use with `softmax`).
struct scaled_dot_product : detail::scaled_dot<identity_weight> {
    scaled_dot_product() = default;
    /// An explicit scale instead of 1 / sqrt(d).
    explicit scaled_dot_product(double scale_factor) { factor = scale_factor; }
    double scale(std::size_t d) const { return factor ? *factor : 1.0 / std::sqrt(static_cast<double>(d)); }

    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        return static_cast<T>(scale(q.size())) * simd::dot(q.data(), k.data(), q.size());
    }
};

/// s = exp(<q, k>): the non-local block's "Gaussian" (use with `sum`).
struct gaussian : detail::scaled_dot<exp_weight> {};

static_assert(similarity<dot_product>);
static_assert(similarity<scaled_dot_product>);
static_assert(similarity<gaussian>);
static_assert(detail::is_dot_product_similarity<scaled_dot_product>);

}  // namespace nonlocal
