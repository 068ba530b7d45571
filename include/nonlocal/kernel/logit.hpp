#pragma once
/// @file kernel/logit.hpp
/// Evaluating a similarity's logit inside a kernel: dot-product similarities
/// go through the kernel's own SIMD dot product for its architecture, others
/// through their `logit` member.

#include <cstddef>
#include <span>

#include "nonlocal/concepts.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal {
namespace detail {

/// A dot-product similarity plus a bias that depends on the key's offset from the query
/// in units of the dilation (`with_position_bias`): `base` is the dot product and
/// `bias_row(dy)[dx]` the bias of offset (dy, dx).
template <class S>
concept offset_biased_dot_product = requires(const S& s, std::ptrdiff_t dy) {
    requires is_dot_product_similarity<decltype(s.base)>;
    { s.bias_row(dy) } -> std::convertible_to<const double*>;
};

/// A dot-product similarity plus a bias per pair (`with_pair_bias`): `base` is the dot
/// product, `bias(i, j)` the bias of query i and key j, and `bias_run(i, j)` points at those
/// of key j for queries i, i + 1, ... up to the end of i's block of 64 queries.
template <class S>
concept pair_biased_dot_product = requires(const S& s, std::size_t i) {
    requires is_dot_product_similarity<decltype(s.base)>;
    { s.bias(i, i) } -> std::convertible_to<double>;
    s.bias_run(i, i)[0];
};

/// The scale of the dot product inside a (possibly biased) dot-product similarity.
template <class S>
double dot_product_scale(const S& s, std::size_t d) {
    if constexpr (offset_biased_dot_product<S> || pair_biased_dot_product<S>) return s.base.scale(d);
    else return s.scale(d);
}

}  // namespace detail

namespace kernel {

/// logit(q_i, k_j) for features of dimension `dim`, precomputing what does not depend on (i, j).
template <class Arch, class T, similarity S>
class logit_evaluator {
public:
    logit_evaluator(const S& s, std::size_t dim) : s_(s), dim_(dim) {
        if constexpr (detail::is_dot_product_similarity<S> || detail::pair_biased_dot_product<S>)
            scale_ = static_cast<T>(detail::dot_product_scale(s, dim));
    }
    T operator()(const T* q, const T* k, std::size_t i, std::size_t j) const {
        if constexpr (detail::is_dot_product_similarity<S>) {
            (void)i, (void)j;
            return scale_ * simd::dot<Arch>(q, k, dim_);
        } else if constexpr (detail::pair_biased_dot_product<S>) {
            return scale_ * simd::dot<Arch>(q, k, dim_) + static_cast<T>(s_.bias(i, j));
        } else {
            return detail::logit(s_, std::span<const T>(q, dim_), std::span<const T>(k, dim_), i, j);
        }
    }

private:
    const S& s_;
    std::size_t dim_;
    T scale_ = T(1);
};

}  // namespace kernel
}  // namespace nonlocal
