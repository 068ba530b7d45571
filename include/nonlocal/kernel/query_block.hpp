#pragma once
/// @file kernel/query_block.hpp
/// The inner loop of the tiled kernels (flash attention's): a block of up to `Rows`
/// queries folds in tiles of up to `Cols` keys, one at a time, without ever storing
/// a row of weights longer than a tile.
///
/// The queries are packed once, transposed and scaled: Qt [d, Rows]. For each key tile:
///   1. S^T [Cols, Rows] = K_tile Qt (`scores`): keys are broadcast, queries are the
///      vector lanes, so the packing is paid once per block;
///   2. the caller masks what its neighborhood does not admit, adds a bias if any;
///   3. `accumulate`: the online softmax down the columns of S^T, vectorised across
///      queries (running maximum, exp(s - max), running sum, a rescale of the outputs
///      whose maximum grew), then O += P V.
/// `finish` divides by C_i and writes the rows.
///
/// O is [Rows, dv], its rows padded to whole vectors, unless dv is not a whole number of
/// vectors and the block has at least 4 vectors of queries: then O^T [dv, Rows] += V^T P^T
/// keeps queries in the lanes, so that every lane works (MobileViT's heads of 36 features
/// would fill 36 of 48 lanes of a row of O) and V is read in place.
///
/// S^T takes Rows x Cols = 4096 values (16 KiB of floats) for every block shape, so that
/// with d = dv = 64 a tile's operands (K tile with Qt, then S^T with the V tile) stay
/// within L1 and L2. The per-tile softmax costs one exp per 2 (d + dv) flops.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/simd/exp.hpp"
#include "nonlocal/simd/arch/traits.hpp"
#include "nonlocal/simd/gemm.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::kernel {

/// Values of S^T in one tile: Rows x Cols.
inline constexpr std::size_t tile_scores = 4096;

/// Whether a block of `rows` queries keeps its outputs transposed for values of `dv`
/// features in vectors of `lanes` (see the file's comment).
constexpr bool keeps_output_transposed(std::size_t rows, std::size_t dv, std::size_t lanes) noexcept {
    return rows >= 4 * lanes && dv % lanes != 0;
}

/// Whether the weights are exp(logit - running maximum) (softmax, or `sum` with exp weights),
/// and what C_i is: the two facts about the policies a query block needs.
template <class S, class Nm>
struct block_traits {
    static constexpr bool shift = detail::shifts_by_row_max<S, Nm>;
    static constexpr normalizer kind = Nm::kind;
};

/// Queries `Rows` (a multiple of the register block's lanes) against key tiles of
/// `Cols = tile_scores / Rows`.
template <class Arch, class T, std::size_t Rows, bool Shift, normalizer Kind>
class query_block {
    using batch = xsimd::batch<T, Arch>;
    static constexpr std::size_t W = batch::size;
    using tiles = simd::arch_traits<Arch>;

public:
    static constexpr std::size_t rows = Rows, cols = tile_scores / Rows;
    // S^T = K Qt: score_mr keys x score_nv vectors of queries (`tiles::score_key_rows`); 16
    // queries: score_mr x 1 (16 x 1 would need 16 key pointers, more than the integer
    // registers hold beside the loop's own).
    static constexpr std::size_t score_nv = std::min<std::size_t>(2, Rows / W);
    static constexpr std::size_t score_mr = tiles::score_key_rows;
    static_assert(Rows % (score_nv * W) == 0 && cols % score_mr == 0 && Rows % 16 == 0);
    /// Whether a block of this many queries keeps O transposed for some dv (the condition on
    /// the block of `keeps_output_transposed`).
    static constexpr bool can_transpose = Rows >= 4 * W;
    /// What a masked score holds: exp(-inf) = 0 for shifted weights, 0 itself otherwise.
    static constexpr T masked = Shift ? -std::numeric_limits<T>::infinity() : T(0);

    query_block(std::size_t d, std::size_t dv)
        : d_(d), dv_(dv), transposed_(keeps_output_transposed(Rows, dv, W)), dvp_(transposed_ ? dv : (dv + W - 1) / W * W),
          qt_(d * Rows), st_(cols * Rows), o_(Rows * dvp_),
          row_max_(Rows), row_sum_(Rows), alpha_(Rows), admitted_(Rows), key_rows_(cols), value_rows_(cols) {}

    /// The length of a row of values the block reads: dv rounded up to whole vectors unless
    /// O is transposed.
    std::size_t padded_dv() const noexcept { return dvp_; }

    /// Starts a block of `count` queries: `query(r)` is the r-th one's features, scaled by `scale`.
    /// Lanes past `count` repeat query 0; their results are never written.
    template <class Query>
    void start(std::size_t count, T scale, Query&& query) {
        count_ = count;
        if (count > 0) {
            std::array<const T*, Rows> rows;
            for (std::size_t r = 0; r < Rows; ++r) rows[r] = query(r < count ? r : 0);
            transpose_queries(rows, scale);
        }
        std::fill(o_.begin(), o_.end(), T(0));
        std::fill(row_max_.begin(), row_max_.end(), -std::numeric_limits<T>::infinity());
        std::fill(row_sum_.begin(), row_sum_.end(), T(0));
        std::fill(admitted_.begin(), admitted_.end(), T(0));
    }

    /// Space for a tile's keys packed as `cols` rows of d (`keys()`) and its values as rows of
    /// `padded_dv()`, zero beyond dv (`values()`); tables of `cols` row pointers for tiles read
    /// where they lie (`key_rows()`, `value_rows()`).
    T* keys() {
        if (keys_.empty()) keys_.resize(cols * d_);
        return keys_.data();
    }
    T* values() {
        if (values_.empty()) values_.assign(cols * dvp_, T(0));
        return values_.data();
    }
    const T** key_rows() noexcept { return key_rows_.data(); }
    const T** value_rows() noexcept { return value_rows_.data(); }

    /// Step 1: S^T = K Qt for `count` keys, row c at `keys[c]` (a `simd::strided_rows` or
    /// `simd::indirect_rows`; rows past `count` up to `padded_keys(count)` are read and their
    /// scores ignored); returns S^T, whose column r of key c is `scores[c * Rows + r]`.
    /// `step(k, q, acc)` folds feature p of key c and of a vector of queries into their scores:
    /// a multiply-add for dot products, the channel's term of a difference for channel sums.
    template <class Keys, class Step = simd::fused_multiply_add>
    T* scores(Keys keys, std::size_t count, Step step = {}) {
        simd::gemm<Arch, score_mr, score_nv, false>(padded_keys(count), Rows, d_, keys, 1,
                                                    simd::strided_rows<T>{qt_.data(), Rows}, st_.data(), Rows, step);
        return st_.data();
    }
    /// The same for keys `key_stride` apart.
    template <class Step = simd::fused_multiply_add>
    T* scores(const T* keys, std::size_t key_stride, std::size_t count, Step step = {}) {
        return scores(simd::strided_rows<T>{keys, key_stride}, count, step);
    }
    /// Keys of a tile that must be padded to a multiple of score_mr rows.
    static std::size_t padded_keys(std::size_t count) noexcept { return (count + score_mr - 1) / score_mr * score_mr; }

    /// A tile's pairs to keep, `keep()[c * Rows + r]` for key c and query r, all set.
    unsigned char* keep() {
        keep_.assign(cols * Rows, 1);
        return keep_.data();
    }
    /// Step 2 for a partial tile: the scores of the `count` keys' pairs whose `keep()` entry
    /// is clear become `masked`, the others are counted as admitted (for `count` alone).
    void mask(std::size_t count) noexcept {
        T* st = st_.data();
        const unsigned char* keep = keep_.data();
        for (std::size_t c = 0; c < count; ++c)
            for (std::size_t r = 0; r < Rows; ++r) st[c * Rows + r] = keep[c * Rows + r] ? st[c * Rows + r] : masked;
        if constexpr (Kind == normalizer::count)
            for (std::size_t c = 0; c < count; ++c)
                for (std::size_t r = 0; r < Rows; ++r) admitted_[r] += T(keep[c * Rows + r]);
    }

    /// Counts `keys` admitted keys for every query (for `count`).
    void admit_all(std::size_t keys) noexcept {
        for (std::size_t r = 0; r < count_; ++r) admitted_[r] += T(keys);
    }
    /// The counts as batches, for masks that count a vector of queries at once.
    T* admitted() noexcept { return admitted_.data(); }

    /// Step 3: folds the `count` masked scores into the block with values `values` (rows
    /// `ldv` apart, each readable to padded_dv()).
    void accumulate(const T* values, std::size_t ldv, std::size_t count) {
        accumulate(simd::strided_rows<T>{values, ldv}, count);
    }
    /// The same with value row c at `values[c]` (an accessor as for `scores`).
    template <class Values>
    void accumulate(Values values, std::size_t count) {
        softmax_step(count);
        value_product(values, count);
    }

    /// Writes y_i = O_i / C_i of the block's query r to `out(r)` (dv values), and log C_i to
    /// `*lse(r)` when `lse(r)` is not null.
    template <class Out, class Lse>
    void finish(Out&& out, Lse&& lse) const {
        constexpr T minus_inf = -std::numeric_limits<T>::infinity();
        for (std::size_t r = 0; r < count_; ++r) {
            T normalizer = row_sum_[r];
            if constexpr (Kind == normalizer::count) normalizer = admitted_[r];
            if constexpr (Kind == normalizer::none) normalizer = T(1);
            T* y = out(r);
            if (normalizer == T(0)) {
                std::fill(y, y + dv_, T(0));
            } else if (transposed_) {
                const T inverse = T(1) / normalizer;
                for (std::size_t p = 0; p < dv_; ++p) y[p] = o_[p * Rows + r] * inverse;
            } else {
                simd::scale<Arch>(T(1) / normalizer, o_.data() + r * dvp_, y, dv_);
            }
            if (T* l = lse(r))
                *l = Shift ? (row_sum_[r] == T(0) ? minus_inf : row_max_[r] + std::log(row_sum_[r])) : std::log(normalizer);
        }
    }

private:
    /// Qt [d, Rows] = scale x Q^T for the queries at `rows`.
    void transpose_queries(const std::array<const T*, Rows>& rows, T scale) {
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t p = 0; p < d_; ++p) qt_[p * Rows + r] = scale * rows[r][p];
    }

    /// The online softmax over a tile's `count` keys: S^T becomes the weights P^T, the running
    /// maximum, sum and the outputs so far follow.
    void softmax_step(std::size_t count) {
        T* st = st_.data();
        for (std::size_t r = 0; r < Rows; r += W) {
            batch total(T(0));
            if constexpr (Shift) {
                batch tile_max = batch::load_unaligned(&st[r]);
                for (std::size_t c = 1; c < count; ++c) tile_max = xsimd::max(tile_max, batch::load_unaligned(&st[c * Rows + r]));
                const batch old_max = batch::load_unaligned(&row_max_[r]);
                const batch new_max = xsimd::max(old_max, tile_max);
                // Rows with nothing admitted yet keep -inf; shift them by 0 so that exp(-inf) = 0.
                const batch shift_by = xsimd::select(new_max == batch(masked), batch(T(0)), new_max);
                simd::exp_nonpositive(old_max - shift_by).store_unaligned(&alpha_[r]);
                for (std::size_t c = 0; c < count; ++c) {
                    const batch p = simd::exp_nonpositive(batch::load_unaligned(&st[c * Rows + r]) - shift_by);
                    p.store_unaligned(&st[c * Rows + r]);
                    total += p;
                }
                new_max.store_unaligned(&row_max_[r]);
                (batch::load_unaligned(&row_sum_[r]) * batch::load_unaligned(&alpha_[r]) + total)
                    .store_unaligned(&row_sum_[r]);
            } else {
                for (std::size_t c = 0; c < count; ++c) total += batch::load_unaligned(&st[c * Rows + r]);
                (batch::load_unaligned(&row_sum_[r]) + total).store_unaligned(&row_sum_[r]);
            }
        }
        if constexpr (Shift) {
            if (transposed_)
                for (std::size_t r = 0; r < Rows; r += W) {
                    const batch alpha = batch::load_unaligned(&alpha_[r]);
                    if (xsimd::all(alpha == batch(T(1)))) continue;
                    for (std::size_t p = 0; p < dv_; ++p)
                        (alpha * batch::load_unaligned(&o_[p * Rows + r])).store_unaligned(&o_[p * Rows + r]);
                }
            else
                for (std::size_t r = 0; r < count_; ++r)
                    if (alpha_[r] != T(1)) simd::scale<Arch>(alpha_[r], o_.data() + r * dvp_, dvp_);
        }
    }

    /// O += P V. Unless O is transposed, O [Rows, dvp] += P V: P read from S^T (a broadcast
    /// per query), V rows in place. The register block follows dv: 4 queries x 4 vectors when a
    /// row has 4 vectors or more, 8 x 3 for three (heads of 48 features, as MobileViT-S's
    /// second stage has: 24 accumulators), 8 x 2 for two, 16 x 1 for one (16 accumulators
    /// each with 32 registers; half with 16, and 8 x 2 for three).
    template <class Values>
    void value_product(Values values, std::size_t count) {
        if constexpr (can_transpose)
            if (transposed_) return transposed_value_product(values, count);
        constexpr std::size_t half = tiles::value_tile_divisor;
        const auto run = [&](auto mr, auto nv) {
            simd::gemm<Arch, decltype(mr)::value, decltype(nv)::value, true>(
                Rows, dvp_, count, simd::strided_rows<T>{st_.data(), 1}, Rows, values, o_.data(), dvp_);
        };
        using std::integral_constant;
        if constexpr (half == 1)
            if (dvp_ == 3 * W) return run(integral_constant<std::size_t, 8>{}, integral_constant<std::size_t, 3>{});
        if (dvp_ >= 4 * W) run(integral_constant<std::size_t, 4>{}, integral_constant<std::size_t, 4 / half>{});
        else if (dvp_ >= 2 * W) run(integral_constant<std::size_t, 8 / half>{}, integral_constant<std::size_t, 2>{});
        else run(integral_constant<std::size_t, 16 / half>{}, integral_constant<std::size_t, 1>{});
    }

    /// O^T [dv, Rows] += V^T P^T: V broadcast from its rows in place (element (p, c) of V^T is
    /// values[c][p]), P^T is S^T: 6 features x `tiles::transposed_value_vectors` vectors of
    /// queries.
    void transposed_value_product(simd::strided_rows<T> values, std::size_t count) {
        constexpr std::size_t nv = tiles::transposed_value_vectors;
        simd::gemm<Arch, 6, nv, true>(dv_, Rows, count, simd::strided_rows<T>{values.data, 1}, values.stride,
                                      simd::strided_rows<T>{st_.data(), Rows}, o_.data(), Rows);
    }
    /// Value rows anywhere: packed into rows one after the other first.
    void transposed_value_product(simd::indirect_rows<T> values, std::size_t count) {
        T* packed = this->values();
        for (std::size_t c = 0; c < count; ++c) simd::copy<Arch>(values[c], dv_, packed + c * dv_);
        transposed_value_product(simd::strided_rows<T>{packed, dv_}, count);
    }

    std::size_t d_, dv_;
    bool transposed_;
    std::size_t dvp_, count_ = 0;
    std::vector<T> qt_, st_, o_, keys_, values_, row_max_, row_sum_, alpha_, admitted_;
    std::vector<unsigned char> keep_;
    std::vector<const T*> key_rows_, value_rows_;
};

/// Bytes of working memory one query block uses for features of dimension d and dv.
template <class T, std::size_t Rows>
constexpr std::size_t query_block_bytes(std::size_t d, std::size_t dv, std::size_t lanes) {
    const std::size_t dvp = keeps_output_transposed(Rows, dv, lanes) ? dv : (dv + lanes - 1) / lanes * lanes;
    const std::size_t cols = tile_scores / Rows;
    return sizeof(T) * (d * Rows + cols * Rows + Rows * dvp + cols * d + cols * dvp + 4 * Rows) + cols * Rows;
}

}  // namespace nonlocal::kernel
