#pragma once
/// @file concepts/detection.hpp
/// What the kernels detect of a policy: its optional members (projections, heads, a
/// positional logit, a data term, a causal bound, ...) and what follows from them (the
/// weight function actually applied, whether weights shift by the row maximum).

#include <algorithm>
#include <concepts>
#include <cmath>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts/neighborhood.hpp"
#include "nonlocal/concepts/normalization.hpp"
#include "nonlocal/concepts/similarity.hpp"
#include "nonlocal/row_matrix.hpp"

namespace nonlocal {

// ---------------------------------------------------------------- detection of optional members

namespace detail {

template <class S, class T>
concept has_projection = requires(const S& s, row_matrix<const T> x) {
    { s.project_queries(x) } -> std::same_as<xt::xtensor<T, 2>>;
    { s.project_keys(x) } -> std::same_as<xt::xtensor<T, 2>>;
};

/// A similarity that declares the logit form `F`.
template <class S, class F>
concept has_logit_form = std::is_same_v<logit_form_t<S>, F>;

template <class S>
concept is_dot_product_similarity = has_logit_form<S, dot_product_form>;

template <class S>
concept has_for_head = requires(const S& s, std::size_t h) {
    { s.for_head(h) };
};

template <class S>
concept positional_logit = requires(const S& s, std::span<const double> a, std::size_t i) {
    s.logit(a, a, i, i);
};

template <class S>
concept symmetric_similarity = traits_of_t<S>::is_symmetric;

/// A similarity whose logit is a sum over feature channels of `channel_logit(q_c - k_c)`
/// (`channel_sum_form`, or a `distance_form` that has `channel_logit`), with no positions
/// and no projection.
template <class S>
concept channel_sum_similarity = (has_logit_form<S, channel_sum_form> || has_logit_form<S, distance_form>) &&
                                 requires(const S& s, float f, double d) {
    { s.channel_logit(f) } -> std::convertible_to<float>;
    { s.channel_logit(d) } -> std::convertible_to<double>;
} && !positional_logit<S> && !has_projection<S, float> && !has_projection<S, double>;

template <class N>
concept has_check = requires(const N& nb, extents e) { nb.check(e); };

template <class N>
concept has_data_term = requires(const N& nm, std::size_t i) {
    { nm.data_weight(i) } -> std::convertible_to<double>;
    { nm.data_value(i, i) } -> std::convertible_to<double>;
};

/// The weight function actually applied: softmax normalization replaces kappa by exp.
template <class S, class Nm>
using effective_weight_function =
    std::conditional_t<Nm::kind == normalizer::softmax, exp_weight, weight_function_t<S>>;

/// Weights are shifted by the running row maximum when that leaves y unchanged.
template <class S, class Nm>
inline constexpr bool shifts_by_row_max =
    std::is_same_v<effective_weight_function<S, Nm>, exp_weight> &&
    (Nm::kind == normalizer::softmax || Nm::kind == normalizer::sum);

/// logit(q_i, k_j) whichever form the similarity has.
template <class S, class T>
T logit(const S& s, std::span<const T> q, std::span<const T> k, std::size_t i, std::size_t j) {
    if constexpr (positional_logit<S>) {
        return static_cast<T>(s.logit(q, k, i, j));
    } else {
        (void)i, (void)j;
        return static_cast<T>(s.logit(q, k));
    }
}

/// Features after the similarity's projection (the input itself when it has none).
template <class S, class T>
class projected_features {
public:
    projected_features(const S& s, row_matrix<const T> x, bool queries) {
        if constexpr (has_projection<S, T>) {
            storage_ = queries ? s.project_queries(x) : s.project_keys(x);
            view_ = {storage_.data(), storage_.shape(0), storage_.shape(1)};
        } else {
            (void)s, (void)queries;
            view_ = x;
        }
    }
    row_matrix<const T> operator*() const noexcept { return view_; }

private:
    xt::xtensor<T, 2> storage_;
    row_matrix<const T> view_;
};

template <class N>
concept has_key_end = requires(const N& nb, std::size_t i, extents e) {
    { nb.key_end(i, e) } -> std::convertible_to<std::size_t>;
};

/// One past the last key any query up to i may admit: `nb.key_end(i, e)` when the
/// neighborhood has it (causal), m otherwise. The tiled kernels stop there.
template <class N>
std::size_t key_end(const N& nb, std::size_t i, extents e) {
    if constexpr (has_key_end<N>) return std::min<std::size_t>(nb.key_end(i, e), e.keys);
    else return (void)nb, (void)i, e.keys;
}

template <class N>
void check(const N& nb, extents e) {
    if constexpr (has_check<N>) nb.check(e);
}

template <class N>
concept has_restrict_tile = requires(const N& nb, std::size_t i, unsigned char* keep) {
    nb.restrict_tile(i, i, i, i, keep, i);
};

/// Clears `keep[c * ld + r]` for the pairs (i0 + r, j0 + c), r < rows and c < cols, that
/// `nb` does not admit: through `nb.restrict_tile` when it has one, pair by pair otherwise.
template <class N>
void restrict_tile(const N& nb, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                   unsigned char* keep, std::size_t ld) {
    if constexpr (has_restrict_tile<N>) {
        nb.restrict_tile(i0, rows, j0, cols, keep, ld);
    } else {
        for (std::size_t c = 0; c < cols; ++c)
            for (std::size_t r = 0; r < rows; ++r)
                if (!nb.admits(i0 + r, j0 + c)) keep[c * ld + r] = 0;
    }
}

/// A policy with one instance per slice: `for_slice(slice_index)` and `check_slices(items, heads)`.
template <class P>
concept sliced_policy = requires(const P& p, slice_index at, std::size_t count) {
    p.for_slice(at);
    p.check_slices(count, count);
};

/// The instance of policy `p` for slice `at`: `p.for_slice(at)` when it has one, `p` otherwise.
template <class P>
auto of_slice(const P& p, slice_index at) {
    if constexpr (sliced_policy<P>) return p.for_slice(at);
    else return (void)at, p;
}

template <class P>
void check_slices(const P& p, std::size_t items, std::size_t heads) {
    if constexpr (sliced_policy<P>) p.check_slices(items, heads);
    else (void)p, (void)items, (void)heads;
}

}  // namespace detail

}  // namespace nonlocal
