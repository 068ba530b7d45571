#pragma once
/// @file similarity/pair_bias.hpp
/// A bias per (query, key) pair added to a similarity's logit: PyTorch's float attn_mask
/// (-inf entries drop their pair), ALiBi's distance penalties written out, or any learned
/// or computed additive term.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/slices.hpp"

namespace nonlocal {

/// logit(q_i, k_j) = base.logit(q_i, k_j) + bias(i, j), with `bias` [n, m] for every slice,
/// [B, n, m] one per batch item, or [B * H, n, m] one per slice of a multi-head input.
/// Stored in double, key by key, so that the tiled kernel adds a tile's biases a key at a time.
template <similarity Base>
class with_pair_bias {
public:
    using kernel = typename Base::kernel;
    Base base;

    /// Throws `std::invalid_argument` unless `bias` has rank 2 or 3.
    template <class E>
    with_pair_bias(Base base_similarity, const xt::xexpression<E>& bias) : base(base_similarity) {
        auto stack = detail::key_major(xt::xarray<double>(xt::cast<double>(bias.derived_cast())), "with_pair_bias",
                                       "bias");
        count_ = stack.count, n_ = stack.n, m_ = stack.m;
        biases_ = std::make_shared<const std::vector<double>>(std::move(stack.values));
    }

    template <class T>
    T logit(std::span<const T> q, std::span<const T> k, std::size_t i, std::size_t j) const {
        return static_cast<T>(base.logit(q, k) + bias_column(j)[i]);
    }

    /// The biases of key j for queries 0, ..., n - 1 of the current slice.
    const double* bias_column(std::size_t j) const noexcept { return biases_->data() + offset_ + j * n_; }

    void check(extents e) const {
        detail::require(e.queries == n_ && e.keys == m_, "with_pair_bias", [&] {
            return "bias [" + std::to_string(n_) + ", " + std::to_string(m_) + "] for " + std::to_string(e.queries) +
                   " queries and " + std::to_string(e.keys) + " keys";
        });
    }
    void check_slices(std::size_t items, std::size_t heads) const {
        detail::check_slice_count("with_pair_bias", "biases", count_, items, heads);
    }
    /// The same similarity with the bias of slice `at` (its own, its batch item's or the only one).
    with_pair_bias for_slice(slice_index at) const {
        with_pair_bias copy = *this;
        copy.offset_ = detail::slice_of(count_, at) * n_ * m_;
        if constexpr (detail::sliced_policy<Base>) copy.base = base.for_slice(at);
        else if constexpr (detail::has_for_head<Base>) copy.base = base.for_head(at.head);
        return copy;
    }

private:
    std::shared_ptr<const std::vector<double>> biases_;
    std::size_t count_ = 1, n_ = 0, m_ = 0, offset_ = 0;
};

}  // namespace nonlocal
