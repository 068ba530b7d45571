#pragma once
/// @file similarity/pair_bias.hpp
/// A bias per (query, key) pair added to a similarity's logit: PyTorch's float attn_mask
/// (-inf entries drop their pair), ALiBi's distance penalties written out, or any learned
/// or computed additive term.

#include <cstddef>
#include <span>
#include <type_traits>

#include <xtensor/xarray.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/pair_table.hpp"

namespace nonlocal {

/// logit(q_i, k_j) = base.logit(q_i, k_j) + bias(i, j), with `bias` [n, m] for every slice,
/// [B, n, m] one per batch item, or [B * H, n, m] one per slice of a multi-head input, stored
/// in its own element type U (float or double) in blocks of 64 queries, key by key
/// (`detail::pair_table`), so that the tiled kernel adds a tile's biases a key at a time.
template <similarity Base, class U = double>
class with_pair_bias {
public:
    using weight_function = weight_function_t<Base>;
    Base base;

    /// Throws `std::invalid_argument` unless `bias` has rank 2 or 3.
    template <class E>
    with_pair_bias(Base base_similarity, const xt::xexpression<E>& bias)
        : base(base_similarity), bias_(xt::xarray<U>(xt::cast<U>(bias.derived_cast())), "with_pair_bias", "bias") {}

    template <class T>
    T logit(std::span<const T> q, std::span<const T> k, std::size_t i, std::size_t j) const {
        return static_cast<T>(base.logit(q, k) + bias_(i, j));
    }

    /// The bias of query i and key j, and (`bias_run`) those of key j for queries i, i + 1, ...
    /// up to the end of i's block of 64, contiguous.
    U bias(std::size_t i, std::size_t j) const noexcept { return bias_(i, j); }
    const U* bias_run(std::size_t i, std::size_t j) const noexcept { return bias_.run(i, j); }

    void check(extents e) const { bias_.check("with_pair_bias", "bias", e); }
    void check_slices(std::size_t items, std::size_t heads) const {
        bias_.check_slices("with_pair_bias", "biases", items, heads);
    }
    /// The same similarity with the bias of slice `at` (its own, its batch item's or the only one).
    with_pair_bias for_slice(slice_index at) const {
        with_pair_bias copy = *this;
        copy.bias_ = bias_.for_slice(at);
        detail::with_head<4>(base, at, [&](const Base& b) { copy.base = b; });
        return copy;
    }

private:
    detail::pair_table<U> bias_;
};

/// A bias of floats is kept in float, any other in double.
template <class Base, class E>
with_pair_bias(Base, const xt::xexpression<E>&)
    -> with_pair_bias<Base, std::conditional_t<std::is_same_v<typename E::value_type, float>, float, double>>;

}  // namespace nonlocal
