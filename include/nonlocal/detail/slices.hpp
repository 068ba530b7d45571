#pragma once
/// @file detail/slices.hpp
/// Shape checks of the aggregate's inputs and the [n, d] slices of [n, d],
/// [B, n, d] and [B, H, n, d] inputs, shared by the fast path and the
/// reference. Keys and values may have fewer heads than queries
/// (grouped-query attention: query head h reads key/value head h / (H / H_kv)).

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"

namespace nonlocal::detail {

/// The rank shared by q, k and v, which must be known at compile time for one of them.
template <class Q, class K, class V>
constexpr std::size_t common_rank() {
    constexpr std::size_t ranks[] = {static_rank<Q>, static_rank<K>, static_rank<V>};
    for (std::size_t r : ranks)
        if (r != dynamic_rank) return r;
    return dynamic_rank;
}

/// The matrices of one slice.
template <class T>
struct slice_matrices {
    std::size_t head;
    row_matrix<const T> q, k, v;
    row_matrix<T> out;
};

template <std::size_t R>
struct aggregate_shape {
    static_assert(R >= 2 && R <= 4, "nonlocal: inputs must be [n, d], [B, n, d] or [B, H, n, d]");

    std::size_t batch = 1, heads = 1, kv_heads = 1, n = 0, m = 0, dq = 0, dv = 0;
    std::array<std::size_t, R> out{};

    aggregate_shape(std::string_view where, const std::array<std::size_t, R>& q, const std::array<std::size_t, R>& k,
                    const std::array<std::size_t, R>& v) {
        const auto fail_with = [&](const char* reason) {
            fail(where, std::string(reason) + " (q " + shape_string(q) + ", k " + shape_string(k) + ", v " +
                            shape_string(v) + ")");
        };
        n = q[R - 2], m = k[R - 2], dq = q[R - 1], dv = v[R - 1];
        if (q[R - 1] != k[R - 1]) fail_with("q and k must have the same feature dimension");
        if (k[R - 2] != v[R - 2]) fail_with("k and v must have the same number of rows");
        if (dq == 0) fail_with("the feature dimension of q and k must be positive");
        if constexpr (R >= 3) {
            if (q[0] != k[0] || k[0] != v[0]) fail_with("q, k and v must have the same batch size");
            batch = q[0];
        }
        if constexpr (R == 4) {
            heads = q[1], kv_heads = k[1];
            if (k[1] != v[1]) fail_with("k and v must have the same number of heads");
            if (kv_heads == 0 ? heads != 0 : heads % kv_heads != 0)
                fail_with("the heads of k and v must divide the heads of q");
        }
        out = q;
        out[R - 1] = dv;
    }

    std::size_t slices() const noexcept { return batch * heads; }

    /// Where slice `index` lies: its batch item and head.
    slice_index at(std::size_t index) const noexcept { return {index / heads, index % heads, batch, heads}; }

    /// Slice `index` (= b * heads + h) of contiguous q, k, v and out.
    template <class T>
    slice_matrices<T> slice(std::size_t index, const T* q, const T* k, const T* v, T* o) const noexcept {
        const std::size_t b = index / heads, h = index % heads;
        const std::size_t kv = b * kv_heads + h / (heads / kv_heads);
        return {h, {q + index * n * dq, n, dq}, {k + kv * m * dq, m, dq}, {v + kv * m * dv, m, dv},
                {o + index * n * dv, n, dv}};
    }
};

/// Which of `count` tensors held per slice serves slice `at`: the only one, its batch item's
/// (count = items), or its own (count = items x heads).
inline std::size_t slice_of(std::size_t count, slice_index at) noexcept {
    return count == 1 ? 0 : count == at.items ? at.item : at.item * at.heads + at.head;
}

/// Throws unless `count` tensors of `what` serve `items` batch items of `heads` heads: one for
/// all, one per item, or one per slice.
inline void check_slice_count(std::string_view where, std::string_view what, std::size_t count, std::size_t items,
                              std::size_t heads) {
    require(count == 1 || count == items || count == items * heads, where, [&] {
        return "holds " + std::to_string(count) + " " + std::string(what) + " for " + std::to_string(items) +
               " batch items of " + std::to_string(heads) + " heads: expected 1, " + std::to_string(items) + " or " +
               std::to_string(items * heads);
    });
}

/// Throws unless the neighborhood (and a data term) fit the shapes.
/// A data term that holds one per batch item: `for_item(b)` and `check(batch, n, dv)`
/// (`sum_with_data`). Other data terms (`data_weight`, `data_value` and `check(n, dv)`) are
/// for [n, d] inputs.
template <class Nm>
concept batched_data_term = requires(const Nm& nm, std::size_t b) {
    nm.for_item(b);
    nm.check(b, b, b);
};

template <std::size_t R, class S, class Nb, class Nm>
void check_policies(const aggregate_shape<R>& shape, const S& s, const Nb& nb, const Nm& nm) {
    check(s, extents{shape.n, shape.m});
    check(nb, extents{shape.n, shape.m});
    check_slices(s, shape.batch, shape.heads);
    check_slices(nb, shape.batch, shape.heads);
    if constexpr (batched_data_term<Nm>) {
        nm.check(shape.batch, shape.n, shape.dv);
    } else if constexpr (has_data_term<Nm>) {
        static_assert(R == 2, "nonlocal: this data term needs [n, d] inputs (sum_with_data takes batches)");
        nm.check(shape.n, shape.dv);
    } else {
        (void)nm;
    }
}

/// Calls f with the normalization of batch item b: its data term's `for_item(b)`, or `nm`.
template <class Nm, class F>
void with_item(const Nm& nm, std::size_t b, F&& f) {
    if constexpr (batched_data_term<Nm>) f(nm.for_item(b));
    else (void)b, f(nm);
}

/// Calls f with the similarity of slice `at`: `s.for_slice(at)` when it has one, else
/// `s.for_head(at.head)` for [B, H, n, d] inputs when it has that, else `s`.
template <std::size_t R, class S, class F>
void with_head(const S& s, slice_index at, F&& f) {
    if constexpr (sliced_policy<S>) f(s.for_slice(at));
    else if constexpr (R == 4 && has_for_head<S>) f(s.for_head(at.head));
    else (void)at, f(s);
}

/// Calls f with the neighborhood of slice `at`: `nb.for_slice(at)` when it has one, `nb` otherwise.
template <class Nb, class F>
void with_neighborhood(const Nb& nb, slice_index at, F&& f) {
    if constexpr (sliced_policy<Nb>) f(nb.for_slice(at));
    else (void)at, f(nb);
}

/// Calls f(similarity, neighborhood, normalization) with the policies of slice `index`.
template <std::size_t R, class S, class Nb, class Nm, class F>
void with_slice_policies(const aggregate_shape<R>& shape, std::size_t index, const S& s, const Nb& nb, const Nm& nm,
                         F&& f) {
    const slice_index at = shape.at(index);
    with_head<R>(s, at, [&](const auto& sh) {
        with_neighborhood(nb, at, [&](const auto& nbi) {
            with_item(nm, at.item, [&](const auto& nmi) { f(sh, nbi, nmi); });
        });
    });
}

}  // namespace nonlocal::detail
