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

/// A similarity the tiled kernels score from differences of features, a channel at a time:
/// a sum over channels (`channel_sum_form`), or a distance (`distance_form`) when its logit as
/// a dot product would lose too much to cancellation (kernel/lowering.hpp).
template <class S>
concept difference_scored = (has_logit_form<S, channel_sum_form> || has_logit_form<S, distance_form>) &&
                            !positional_logit<S>;

/// The scale of the dot product inside a (possibly biased) dot-product similarity.
template <class S>
double dot_product_scale(const S& s, std::size_t d) {
    if constexpr (offset_biased_dot_product<S> || pair_biased_dot_product<S>) return s.base.scale(d);
    else return s.scale(d);
}

}  // namespace detail

namespace kernel {

/// A channel's term of a channel sum: acc + channel_logit(q - k) for a key's feature `k`
/// broadcast and a vector of queries' `q` (simd::gemm's step, keys being its A).
template <class S>
struct channel_step {
    const S* s;
    template <class V>
    V operator()(V k, V q, V acc) const noexcept {
        return acc + s->channel_logit(q - k);
    }
};

/// A distance's term: acc + (q - k)^2, the scale applied to the tile after.
struct squared_difference_step {
    template <class V>
    V operator()(V k, V q, V acc) const noexcept {
        const V difference = q - k;
        return xsimd::fma(difference, difference, acc);
    }
};

/// How the tiled kernels form a tile's scores S^T [keys, queries] from a query block:
/// - dot products (plain or biased): S^T = K (scale Q)^T, one FMA per pair and feature, the
///   scale folded into the queries as the block packs them;
/// - channel sums: sum_p channel_logit(q_p - k_p), a subtraction and the channel's logit per
///   pair and feature;
/// - distances: scale(d) sum_p (q_p - k_p)^2, a subtraction and an FMA per pair and feature,
///   the scale applied to the tile after.
template <class Arch, class T, class S>
class tile_scorer {
public:
    tile_scorer(const S& s, std::size_t dim) : s_(s) {
        if constexpr (!detail::difference_scored<S>)
            query_scale_ = static_cast<T>(detail::dot_product_scale(s, dim));
        else if constexpr (detail::has_logit_form<S, distance_form>)
            tile_scale_ = static_cast<T>(s.scale(dim));
    }
    /// What the block multiplies its queries by as it packs them.
    T query_scale() const noexcept { return query_scale_; }

    /// S^T of `count` keys of `keys` (an accessor of rows) for the block `b`.
    template <class Block, class Keys>
    T* operator()(Block& b, Keys keys, std::size_t count) const {
        if constexpr (requires(const S& s, T x) { s.activation(x); }) {
            T* st = b.scores(keys, count);   // a separable logit's sum, lowered
            using batch = xsimd::batch<T, Arch>;
            for (std::size_t t = 0; t < Block::padded_keys(count) * Block::rows; t += batch::size)
                s_.activation(batch::load_unaligned(st + t)).store_unaligned(st + t);
            return st;
        } else if constexpr (!detail::difference_scored<S>) {
            return b.scores(keys, count);
        } else if constexpr (detail::has_logit_form<S, channel_sum_form>) {
            return b.scores(keys, count, channel_step<S>{&s_});
        } else {
            T* st = b.scores(keys, count, squared_difference_step{});
            simd::scale<Arch>(tile_scale_, st, Block::padded_keys(count) * Block::rows);
            return st;
        }
    }

private:
    const S& s_;
    T query_scale_ = T(1), tile_scale_ = T(1);
};

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
            const T dot = scale_ * simd::dot<Arch>(q, k, dim_);
            if constexpr (requires { s_.activation(dot); }) return s_.activation(dot);   // a lowered separable logit
            else return dot;
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
