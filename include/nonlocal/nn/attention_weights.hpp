#pragma once
/// @file nn/attention_weights.hpp
/// The attention weights `nn.MultiheadAttention` returns when asked (`need_weights`), from
/// the log-sum-exp of the attention's own pass.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/attention.hpp"
#include "nonlocal/buffer.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/simd/exp.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/simd/vector_ops.hpp"
#include "nonlocal/similarity/pair_bias.hpp"

namespace nonlocal::detail {

/// softmax(q k^T / sqrt(hd) + bias) of every head, 0 where the neighborhood drops a pair,
/// from the log-sum-exp of the attention's own pass: each weight is exp(logit - lse), one
/// more pass over the scores (q k^T by the projections' GEMM, the scale applied as it
/// stores; the exponentials a row at a time in vectors, written where they belong, each
/// element of the result written once). [B, L, S] averaged over the heads or
/// [B, h, L, S]; without B for unbatched inputs.
template <class Arch, class T, class QH, class KH, class S, class Nb>
xt::xarray<T> attention_weights(const QH& q, const KH& k, const xt::xtensor<T, 3>& lse, const S& similarity,
                                 const Nb& nb, bool average, bool batched) {
    const std::size_t B = q.shape(0), h = q.shape(1), L = q.shape(2), S_ = k.shape(2), hd = q.shape(3);
    const std::size_t group = h / k.shape(1);
    constexpr T minus_inf = -std::numeric_limits<T>::infinity();
    std::vector<std::size_t> shape;
    if (batched) shape.push_back(B);
    if (!average) shape.push_back(h);
    shape.insert(shape.end(), {L, S_});
    auto weights = xt::xarray<T>::from_shape(shape);
    const T scale = static_cast<T>(scaled_dot_product{}.scale(hd));
    buffer<T> logits(L * S_);
    std::vector<T> row(average ? S_ : 0);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t head = 0; head < h; ++head) {
            const slice_index at{b, head, B, h};
            simd::linear_rows<Arch>(execution::seq, row_matrix<const T>{&q(b, head, 0, 0), L, hd},
                                    simd::packed_weight<T>(execution::seq,
                                                           row_matrix<const T>{&k(b, head / group, 0, 0), S_, hd}),
                                    [&](std::size_t i, std::size_t j, const auto& v, std::size_t lanes) {
                                        simd::store_lanes(v * std::decay_t<decltype(v)>(scale), lanes,
                                                          logits.data() + i * S_ + j);
                                    });
            T* out = weights.data() + (b * (average ? 1 : h) + (average ? 0 : head)) * L * S_;
            with_head<4>(similarity, at, [&](const auto& s) {
                constexpr bool biased = pair_biased_dot_product<std::decay_t<decltype(s)>>;
                with_neighborhood(nb, at, [&](const auto& n) {
                    for (std::size_t i = 0; i < L; ++i) {
                        const T top = lse(b, head, i);
                        // The first head of an average writes its row; the others add theirs.
                        const bool write = !average || head == 0;
                        if (std::isinf(top)) {   // no key admitted: the row is 0
                            if (write) std::fill(out + i * S_, out + (i + 1) * S_, T(0));
                            continue;
                        }
                        // The admitted pairs' logits, -inf elsewhere, then exp(logit - lse).
                        T* target = average ? row.data() : out + i * S_;
                        const T* l = logits.data() + i * S_;
                        std::fill(target, target + S_, minus_inf);
                        n.for_each_range(i, extents{L, S_}, [&](key_range r) {
                            if (!biased && r.stride == 1) return void(std::copy_n(l + r.first, r.count, target + r.first));
                            for (std::size_t t = 0; t < r.count; ++t) {
                                const std::size_t j = r.first + t * r.stride;
                                target[j] = l[j];
                                if constexpr (biased) target[j] += static_cast<T>(s.bias(i, j));
                            }
                        });
                        simd::exp_shifted_sum<Arch>(target, top, S_);
                        if (!average) continue;
                        if (head == 0) std::fill(out + i * S_, out + (i + 1) * S_, T(0));
                        simd::axpy<Arch>(T(1) / T(h), target, out + i * S_, S_);
                    }
                });
            });
        }
    return weights;
}

}  // namespace nonlocal::detail
