#pragma once
/// @file detail/slices.hpp
/// Shape checks of the aggregate's inputs and the loop over batch items and
/// heads, shared by the fast path and the reference: [n, d], [B, n, d] and
/// [B, H, n, d], where keys and values may have fewer heads than queries
/// (grouped-query attention: query head h reads key/value head h / (H / H_kv)).

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"

namespace nonlocal::detail {

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

    /// Calls f(head, q offset, k/v head offset in rows, out offset) for every slice.
    template <class F>
    void for_each_slice(F&& f) const {
        const std::size_t group = kv_heads == 0 ? 1 : heads / kv_heads;
        for (std::size_t b = 0; b < batch; ++b)
            for (std::size_t h = 0; h < heads; ++h) {
                const std::size_t qh = b * heads + h, kh = b * kv_heads + h / group;
                f(h, qh * n, kh * m, qh * n);
            }
    }
};

/// Runs `slice_fn(similarity for the head, q, k, v, out)` on every [n, d] slice.
template <class T, std::size_t R, class S, class Nb, class Nm, class SliceFn>
void aggregate_slices(const contiguous<T, R>& q, const contiguous<T, R>& k,
                      const contiguous<T, R>& v, const S& s, const Nb& nb, const Nm& nm, T* out,
                      const aggregate_shape<R>& shape, SliceFn&& slice_fn) {
    check(nb, extents{shape.n, shape.m});
    if constexpr (has_data_term<Nm>) {
        static_assert(R == 2, "nonlocal: a data term needs [n, d] inputs");
        nm.check(shape.n, shape.dv);
    }
    shape.for_each_slice([&](std::size_t h, std::size_t q_row, std::size_t kv_row, std::size_t out_row) {
        const row_matrix<const T> qs{q.data() + q_row * shape.dq, shape.n, shape.dq};
        const row_matrix<const T> ks{k.data() + kv_row * shape.dq, shape.m, shape.dq};
        const row_matrix<const T> vs{v.data() + kv_row * shape.dv, shape.m, shape.dv};
        const row_matrix<T> os{out + out_row * shape.dv, shape.n, shape.dv};
        if constexpr (R == 4) slice_fn(for_head(s, h), qs, ks, vs, os);
        else slice_fn(s, qs, ks, vs, os);
    });
}

}  // namespace nonlocal::detail
