#pragma once
/// @file attention.hpp
/// Scaled dot-product attention, softmax(q k^T * scale) v, over any neighborhood.

#include <xtensor/xtensor.hpp>

#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/normalization.hpp"
#include "nonlocal/similarity/dot_product.hpp"
#include "nonlocal/weighted_aggregate.hpp"

namespace nonlocal {

/// softmax(q k^T / sqrt(d)) v with keys restricted to `neighborhood` (dense by
/// default; `causal{}`, `key_mask(...)`, `element_mask(...)`, `block_mask{...}`,
/// `window1d{...}`, `window2d{...}`, `patch_group{...}` ...). Pass
/// `scaled_dot_product{scale}` for another scale, `with_pair_bias(...)` to add a bias to
/// each logit, and `execution::par` first to use several threads. Shapes as in `weighted_aggregate`.
template <class Arch = default_arch, execution_policy Ex, class Q, class K, class V, neighborhood Nb = dense,
          similarity S = scaled_dot_product>
auto attention(Ex policy, const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
               const Nb& neighborhood = {}, const S& similarity = {}) {
    return weighted_aggregate<Arch>(policy, q, k, v, similarity, neighborhood, softmax{});
}

/// @copydoc attention
template <class Arch = default_arch, class Q, class K, class V, neighborhood Nb = dense,
          similarity S = scaled_dot_product>
auto attention(const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
               const Nb& neighborhood = {}, const S& similarity = {}) {
    return weighted_aggregate<Arch>(execution::seq, q, k, v, similarity, neighborhood, softmax{});
}

/// `attention` that also returns the log-sum-exp of each query's logits
/// (`.out`, `.lse`), as FlashAttention does, to merge partial results.
template <class Arch = default_arch, execution_policy Ex, class Q, class K, class V,
          neighborhood Nb = dense, similarity S = scaled_dot_product>
auto attention_lse(Ex policy, const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
                   const Nb& neighborhood = {}, const S& similarity = {}) {
    return weighted_aggregate_lse<Arch>(policy, q, k, v, similarity, neighborhood, softmax{});
}
/// The same on the calling thread.
template <class Arch = default_arch, class Q, class K, class V, neighborhood Nb = dense,
          similarity S = scaled_dot_product>
auto attention_lse(const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
                   const Nb& neighborhood = {}, const S& similarity = {}) {
    return attention_lse<Arch>(execution::seq, q, k, v, neighborhood, similarity);
}

}  // namespace nonlocal
