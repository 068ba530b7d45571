#pragma once
/// @file kernel/gather.hpp
/// The general kernel: any similarity over any neighborhood, one query row at
/// a time. It collects the neighborhood's keys in chunks of up to `gather_chunk`
/// (across ranges), computes a chunk of logits, and folds it into the row's
/// accumulator with an online (running-maximum) softmax when the weights are
/// exponentials, so that no row of n x m weights is ever stored: working memory
/// is one chunk per call.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "nonlocal/concepts.hpp"
#include "nonlocal/kernel/logit.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::kernel {

/// Keys per chunk: 256 logits and their indices, 3 KiB of a 32 KiB L1, leaving room for
/// the value rows the chunk touches.
inline constexpr std::size_t gather_chunk = 256;

/// Rows [first, last) of the weighted aggregate of one [n, dq] x [m, dq] x [m, dv]
/// slice; q and k are already projected by the similarity. `lse`, when given,
/// receives log C_i (for exponential weights: log sum_j exp(logit_ij)).
template <class Arch, class T, similarity S, neighborhood Nb, normalization Nm>
void gather(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
            const Nm& nm, row_matrix<T> out, T* lse, std::size_t first, std::size_t last) {
    using kappa = detail::effective_weight_function<S, Nm>;
    constexpr bool shift = detail::shifts_by_row_max<S, Nm>;
    constexpr T minus_inf = -std::numeric_limits<T>::infinity();
    const logit_evaluator<Arch, T, S> logit(s, q.cols);
    const extents e{q.rows, k.rows};
    const std::size_t dv = v.cols;
    T weights[gather_chunk];
    std::size_t neighbors[gather_chunk];

    for (std::size_t i = first; i < last; ++i) {
        T* acc = out.row(i).data();
        std::fill(acc, acc + dv, T(0));
        T row_max = minus_inf, total = T(0);
        std::size_t keys = 0, len = 0;
        // Folds the chunk's `len` keys into the row: their logits, weights and values.
        const auto fold = [&] {
            for (std::size_t t = 0; t < len; ++t) weights[t] = logit(q.row(i).data(), k.row(neighbors[t]).data(), i, neighbors[t]);
            keys += len;
            if constexpr (shift) {
                const T chunk_max = simd::max_element<Arch>(weights, len);
                if (chunk_max == minus_inf) return void(len = 0);   // every weight is exp(-inf) = 0
                if (chunk_max > row_max) {
                    const T rescale = std::exp(row_max - chunk_max);   // 0 for the first chunk
                    simd::scale<Arch>(rescale, acc, dv);
                    total *= rescale;
                    row_max = chunk_max;
                }
                total += simd::exp_shifted_sum<Arch>(weights, row_max, len);
            } else {
                for (std::size_t t = 0; t < len; ++t) {
                    weights[t] = kappa::apply(weights[t]);
                    total += weights[t];
                }
            }
            simd::accumulate_rows<Arch>(weights, len, [&](std::size_t t) { return v.row(neighbors[t]).data(); }, acc, dv);
            len = 0;
        };
        // Chunks span ranges, so that a neighborhood of many short ranges (a sparse pattern, a
        // graph) pays the chunk's maximum and rescaling once per chunk, not once per range.
        nb.for_each_range(i, e, [&](key_range r) {
            for (std::size_t t = 0, j = r.first; t < r.count; ++t, j += r.stride) {
                neighbors[len++] = j;
                if (len == gather_chunk) fold();
            }
        });
        fold();

        // C_i, and the data term alpha_i t_i: with shifted weights both sums are
        // relative to exp(row_max), so alpha is too.
        T normalizer = T(1);
        if constexpr (Nm::kind == normalizer::count) {
            normalizer = static_cast<T>(keys);
        } else if constexpr (Nm::kind == normalizer::softmax || Nm::kind == normalizer::sum) {
            normalizer = total;
            if constexpr (detail::has_data_term<Nm>) {
                const double alpha = nm.data_weight(i);
                // alpha = 0 adds nothing, even where exp(-row_max) overflows (0 x inf would be NaN).
                const double relative = shift && alpha > 0 ? alpha * std::exp(-static_cast<double>(row_max)) : alpha;
                if (alpha > 0 && std::isinf(relative)) {   // the neighbours' weights vanish beside alpha
                    for (std::size_t c = 0; c < dv; ++c) acc[c] = static_cast<T>(nm.data_value(i, c));
                    continue;
                }
                for (std::size_t c = 0; c < dv; ++c) acc[c] += static_cast<T>(relative * nm.data_value(i, c));
                normalizer += static_cast<T>(relative);
            }
        }
        if (lse) lse[i] = shift ? (total == T(0) ? minus_inf : row_max + std::log(total)) : std::log(normalizer);
        if (normalizer == T(0)) std::fill(acc, acc + dv, T(0));
        else simd::scale<Arch>(T(1) / normalizer, acc, dv);
    }
}

/// What a slice's kernel reads and writes: the projected queries and keys, the values, the
/// policies, the output and log C_i (when wanted).
template <class T, class S, class Nb, class Nm>
struct slice_operands {
    row_matrix<const T> q, k, v;
    const S& s;
    const Nb& nb;
    const Nm& nm;
    row_matrix<T> out;
    T* lse;

    /// Rows [first, last) on the gather kernel.
    template <class Arch>
    void gather_rows(std::size_t first, std::size_t last) const {
        gather<Arch>(q, k, v, s, nb, nm, out, lse, first, last);
    }
};

/// One slice for the gather kernel, in tiles of `gather_rows` queries.
inline constexpr std::size_t gather_rows = 64;

template <class Arch, class T, class S, class Nb, class Nm>
class gather_slice {
public:
    gather_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                 const Nm& nm, row_matrix<T> out, T* lse)
        : a_{q, k, v, s, nb, nm, out, lse} {}
    std::size_t tiles() const noexcept { return (a_.q.rows + gather_rows - 1) / gather_rows; }
    void run(std::size_t tile) const {
        a_.template gather_rows<Arch>(tile * gather_rows, std::min(a_.q.rows, (tile + 1) * gather_rows));
    }

private:
    slice_operands<T, S, Nb, Nm> a_;
};

}  // namespace nonlocal::kernel
