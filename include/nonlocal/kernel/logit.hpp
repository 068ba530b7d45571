#pragma once
/// @file kernel/logit.hpp
/// Evaluating a similarity's logit inside a kernel: dot-product similarities
/// go through the kernel's own SIMD dot product for its architecture, others
/// through their `logit` member.

#include <cstddef>
#include <span>

#include "nonlocal/concepts.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::kernel {

/// logit(q_i, k_j) for features of dimension `dim`, precomputing what does not depend on (i, j).
template <class Arch, class T, similarity S>
class logit_evaluator {
public:
    logit_evaluator(const S& s, std::size_t dim) : s_(s), dim_(dim) {
        if constexpr (detail::is_dot_product_similarity<S>) scale_ = static_cast<T>(s.scale(dim));
    }
    T operator()(const T* q, const T* k, std::size_t i, std::size_t j) const {
        if constexpr (detail::is_dot_product_similarity<S>) {
            (void)i, (void)j;
            return scale_ * simd::dot<Arch>(q, k, dim_);
        } else {
            return detail::logit(s_, std::span<const T>(q, dim_), std::span<const T>(k, dim_), i, j);
        }
    }

private:
    const S& s_;
    std::size_t dim_;
    T scale_ = T(1);
};

}  // namespace nonlocal::kernel
