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

    /// Slice `index` (= b * heads + h) of contiguous q, k, v and out.
    template <class T>
    slice_matrices<T> slice(std::size_t index, const T* q, const T* k, const T* v, T* o) const noexcept {
        const std::size_t b = index / heads, h = index % heads;
        const std::size_t kv = b * kv_heads + h / (heads / kv_heads);
        return {h, {q + index * n * dq, n, dq}, {k + kv * m * dq, m, dq}, {v + kv * m * dv, m, dv},
                {o + index * n * dv, n, dv}};
    }
};

/// Throws unless the neighborhood (and a data term) fit the shapes.
/// A data term that holds one per batch item: `for_item(b)` and `check(batch, n, dv)`
/// (`sum_with_data`). Other data terms (`data_weight`, `data_value` and `check(n, dv)`) are
/// for [n, d] inputs.
template <class Nm>
concept batched_data_term = requires(const Nm& nm, std::size_t b) {
    nm.for_item(b);
    nm.check(b, b, b);
};

template <std::size_t R, class Nb, class Nm>
void check_policies(const aggregate_shape<R>& shape, const Nb& nb, const Nm& nm) {
    check(nb, extents{shape.n, shape.m});
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

/// Calls f with the similarity of head h: `s.for_head(h)` for [B, H, n, d] inputs
/// when the similarity has it, `s` otherwise.
template <std::size_t R, class S, class F>
void with_head(const S& s, std::size_t h, F&& f) {
    if constexpr (R == 4 && has_for_head<S>) f(s.for_head(h));
    else (void)h, f(s);
}

}  // namespace nonlocal::detail
