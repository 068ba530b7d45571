#pragma once
/// @file kernel/tiled_window.hpp
/// The tiled kernel over windowed neighborhoods (`window1d`, `window2d`, any box on a
/// grid): neighborhood attention and sliding-window attention, with dilation, causal
/// windows, either border rule, and a relative position bias.
///
/// Queries are taken in blocks of 16 neighbouring pixels of one dilation group, and the
/// keys of a block are the union of its windows: a rectangle of the group, cut into tiles
/// of at most 256 keys (`query_block`'s S^T of 16 x 256). A pair outside the query's own
/// window is masked, lane by lane across the block's queries; tiles inside every window
/// of the block need no mask.
///
/// The block shape is the one of 1 x 16, 2 x 8, 4 x 4, 8 x 2 and 16 x 1 whose rectangle
/// holds the fewest keys per query, which is the share of the work that is wasted: with
/// a 7 x 7 window, 4 x 4 queries touch 10 x 10 keys, 49 % of the pairs needed (8 x 8
/// queries touch 14 x 14, 25 %; a row of 64 queries 7 x 70, 11 %). A 1-D window of
/// radius r takes 1 x 16: 16 + 2 r keys, of which 2 r + 1 per query (98.5 % at r = 512).
/// 16 queries are one AVX-512 vector of floats: the score micro-kernel broadcasts 16
/// keys against it, as the dense kernel broadcasts 8 against two.
///
/// Keys and values are read where they lie: a tile that is one run of keys (1-D windows)
/// with its stride, any other through a table of its rows, so that no key is copied
/// (only value rows that are not whole vectors are, to pad them). Extra memory per
/// thread: one query block, independent of n.

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/kernel/logit.hpp"
#include "nonlocal/kernel/query_block.hpp"
#include "nonlocal/neighborhood/window.hpp"

namespace nonlocal {
namespace kernel {

/// Queries per block of the window kernel.
inline constexpr std::size_t window_block_rows = 16;

/// Bytes of working memory one thread uses for features of dimension d and dv.
template <class T>
constexpr std::size_t tiled_window_workspace_bytes(std::size_t d, std::size_t dv, std::size_t lanes) {
    return query_block_bytes<T, window_block_rows>(d, dv, lanes) + 4 * window_block_rows * sizeof(T);
}

/// Query blocks of a window_grid: rows x cols pixels of the dilation group (group_row,
/// group_col), the block_row-th row of such blocks.
struct window_job {
    std::size_t group_row, group_col, block_row, rows, cols;
};

/// The block shape with bh x bw = `block` of the fewest keys per query for a group of
/// gh x gw positions whose windows span kh x kw of them.
inline std::array<std::size_t, 2> window_block_shape(std::size_t gh, std::size_t gw, std::size_t kh, std::size_t kw,
                                                     std::size_t block) {
    std::array<std::size_t, 2> best{1, block};
    double best_cost = 0;
    for (std::size_t bh = 1; bh <= block; bh *= 2) {
        const std::size_t bw = block / bh, h = std::min(bh, gh), w = std::min(bw, gw);
        const double cost = double((h + kh - 1) * (w + kw - 1)) / double(h * w);
        if (bh == 1 || cost < best_cost) best = {bh, bw}, best_cost = cost;
    }
    return best;
}

/// One [n, d] slice; `run(t)` computes job t, a row of query blocks.
template <class Arch, class T, class S, class Nb, class Nm>
class tiled_window_slice {
    using traits = block_traits<S, Nm>;
    using block = query_block<Arch, T, window_block_rows, traits::shift, traits::kind>;
    using batch = xsimd::batch<T, Arch>;
    static constexpr std::size_t Br = block::rows, Bc = block::cols, W = batch::size;
    static constexpr bool biased = detail::offset_biased_dot_product<S>;

public:
    tiled_window_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s,
                       const Nb& nb, row_matrix<T> out, T* lse)
        : q_(q), k_(k), v_(v), s_(s), grid_(nb.grid(extents{q.rows, k.rows})), out_(out), lse_(lse),
          scores_(s, q.cols) {
        const window_axis &R = grid_.rows, &C = grid_.cols;
        if (q.rows == 0) return;
        for (std::size_t i = 0; i < R.length; ++i) row_windows_.push_back(R.group_window(i));
        for (std::size_t i = 0; i < C.length; ++i) col_windows_.push_back(C.group_window(i));
        for (std::size_t gr = 0; gr < std::min(R.dilation, R.length); ++gr)
            for (std::size_t gc = 0; gc < std::min(C.dilation, C.length); ++gc) {
                const std::size_t gh = R.group_length(gr), gw = C.group_length(gc);
                const std::size_t kh = std::min(gh, (R.causal ? 1 : 2) * R.radius + 1);
                const std::size_t kw = std::min(gw, (C.causal ? 1 : 2) * C.radius + 1);
                const auto [bh, bw] = window_block_shape(gh, gw, kh, kw, Br);
                for (std::size_t br = 0; br * bh < gh; ++br) jobs_.push_back({gr, gc, br, bh, bw});
            }
    }

    std::size_t tiles() const noexcept { return jobs_.size(); }

    void run(std::size_t t) const {
        const window_job job = jobs_[t];
        const std::size_t gw = grid_.cols.group_length(job.group_col);
        block b(q_.cols, v_.cols);
        for (std::size_t first_col = 0; first_col < gw; first_col += job.cols) run_block(b, job, first_col);
    }

private:
    /// The pixel at (a, b) of dilation group (gr, gc).
    std::size_t pixel(std::size_t gr, std::size_t gc, std::size_t a, std::size_t b) const noexcept {
        return (gr + a * grid_.rows.dilation) * grid_.cols.length + gc + b * grid_.cols.dilation;
    }

    void run_block(block& b, const window_job& job, std::size_t first_col) const {
        const window_axis &R = grid_.rows, &C = grid_.cols;
        const std::size_t gh = R.group_length(job.group_row), gw = C.group_length(job.group_col);
        const std::size_t a0 = job.block_row * job.rows, rows = std::min(job.rows, gh - a0);
        const std::size_t cols = std::min(job.cols, gw - first_col), count = rows * cols;
        const std::size_t d = q_.cols, dv = v_.cols, dvp = b.padded_dv();

        // Each query's pixel, and its window as a box of group positions; the block's
        // rectangle is their union.
        std::array<std::size_t, Br> pixels{};
        std::array<T, Br> row_lo, row_hi, col_lo, col_hi;
        row_lo.fill(T(1)), row_hi.fill(T(0)), col_lo.fill(T(1)), col_hi.fill(T(0));   // empty boxes past the block
        std::size_t r0 = gh, r1 = 0, c0 = gw, c1 = 0, inner_r0 = 0, inner_r1 = gh, inner_c0 = 0, inner_c1 = gw;
        for (std::size_t a = 0, r = 0; a < rows; ++a) {
            const std::size_t y = job.group_row + (a0 + a) * R.dilation;
            const key_range wr = row_windows_[y];
            for (std::size_t c = 0; c < cols; ++c, ++r) {
                const std::size_t x = job.group_col + (first_col + c) * C.dilation;
                const key_range wc = col_windows_[x];
                pixels[r] = y * C.length + x;
                row_lo[r] = T(wr.first), row_hi[r] = T(wr.first + wr.count);
                col_lo[r] = T(wc.first), col_hi[r] = T(wc.first + wc.count);
                c0 = std::min(c0, wc.first), c1 = std::max(c1, wc.first + wc.count);
                inner_c0 = std::max(inner_c0, wc.first), inner_c1 = std::min(inner_c1, wc.first + wc.count);
            }
            r0 = std::min(r0, wr.first), r1 = std::max(r1, wr.first + wr.count);
            inner_r0 = std::max(inner_r0, wr.first), inner_r1 = std::min(inner_r1, wr.first + wr.count);
        }
        const auto query = [&](std::size_t r) { return pixels[r]; };
        b.start(count, scores_.query_scale(), [&](std::size_t r) { return q_.row(query(r)).data(); });

        // Tiles of whole rows of the rectangle when a row fits, else pieces of one row.
        const std::size_t width = c1 - c0;
        const std::size_t tile_rows = std::max<std::size_t>(1, Bc / width), tile_width = std::min(width, Bc);
        for (std::size_t tr = r0; tr < r1; tr += tile_rows)
            for (std::size_t tc = c0; tc < c1; tc += tile_width) {
                const std::size_t tr1 = std::min(r1, tr + tile_rows), tc1 = std::min(c1, tc + tile_width);
                const std::size_t tw = tc1 - tc, keys = (tr1 - tr) * tw;
                const std::size_t first_key = pixel(job.group_row, job.group_col, tr, tc);
                const std::size_t key_step = C.dilation;

                // 1. Scores: a run of keys with stride, any other tile through a table of its
                // rows (rows past the tile point at its first key); values the same way unless
                // their rows are not whole vectors, which are copied and padded.
                const bool run_of_keys = tr1 - tr == 1 && first_key + (block::padded_keys(keys) - 1) * key_step < k_.rows;
                const bool values_in_place = dv == dvp && run_of_keys;
                const T** key_rows = b.key_rows();
                const T** value_rows = b.value_rows();
                if (!values_in_place) {
                    T* padded = dv == dvp ? nullptr : b.values();
                    for (std::size_t a = tr, c = 0; a < tr1; ++a) {
                        const std::size_t first = pixel(job.group_row, job.group_col, a, tc);
                        const T* key = k_.data + first * d;
                        const T* value = v_.data + first * dv;
                        for (std::size_t t = 0; t < tw; ++t, ++c, key += key_step * d, value += key_step * dv) {
                            key_rows[c] = key;
                            if (padded) {
                                simd::copy<Arch>(value, dv, padded + c * dvp);
                                value_rows[c] = padded + c * dvp;
                            } else {
                                value_rows[c] = value;
                            }
                        }
                    }
                }
                T* st = nullptr;
                if (run_of_keys) {
                    st = scores_(b, simd::strided_rows<T>{k_.data + first_key * d, key_step * d}, keys);
                } else {
                    std::fill(key_rows + keys, key_rows + block::padded_keys(keys), key_rows[0]);
                    st = scores_(b, simd::indirect_rows<T>{key_rows}, keys);
                }
                // 2. The bias of each admitted pair, then the mask, unless every window holds the tile.
                if constexpr (biased) add_bias(st, query, count, row_lo, row_hi, col_lo, col_hi, tr, tr1, tc, tc1);
                if (inner_r0 <= tr && tr1 <= inner_r1 && inner_c0 <= tc && tc1 <= inner_c1) b.admit_all(keys);
                else mask(b, st, tr, tr1, tc, tc1, row_lo, row_hi, col_lo, col_hi);

                // 3. Softmax and values.
                if (values_in_place) b.accumulate(v_.data + first_key * dv, key_step * dv, keys);
                else b.accumulate(simd::indirect_rows<T>{value_rows}, keys);
            }
        b.finish([&](std::size_t r) { return out_.row(query(r)).data(); },
                 [&](std::size_t r) { return lse_ ? lse_ + query(r) : nullptr; });
    }

    /// Masks the pairs of the tile outside their query's box, a vector of queries at a time:
    /// a key at (a, c) is inside when row a and column c are, each tested once per tile.
    /// Counts the admitted keys per query.
    static void mask(block& b, T* st, std::size_t tr, std::size_t tr1, std::size_t tc, std::size_t tc1,
                     const std::array<T, Br>& row_lo, const std::array<T, Br>& row_hi,
                     const std::array<T, Br>& col_lo, const std::array<T, Br>& col_hi) {
        using mask_batch = xsimd::batch_bool<T, Arch>;
        std::array<mask_batch, Bc> column_inside;
        for (std::size_t r = 0; r < Br; r += W) {
            const batch rlo = batch::load_unaligned(&row_lo[r]), rhi = batch::load_unaligned(&row_hi[r]);
            const batch clo = batch::load_unaligned(&col_lo[r]), chi = batch::load_unaligned(&col_hi[r]);
            for (std::size_t c = tc; c < tc1; ++c) column_inside[c - tc] = (clo <= batch(T(c))) & (batch(T(c)) < chi);
            batch admitted(T(0));
            T* s = st + r;
            for (std::size_t a = tr; a < tr1; ++a) {
                const mask_batch row_inside = (rlo <= batch(T(a))) & (batch(T(a)) < rhi);
                for (std::size_t c = 0; c < tc1 - tc; ++c, s += Br) {
                    const mask_batch inside = row_inside & column_inside[c];
                    xsimd::select(inside, batch::load_unaligned(s), batch(block::masked)).store_unaligned(s);
                    if constexpr (traits::kind == normalizer::count) admitted += xsimd::select(inside, batch(T(1)), batch(T(0)));
                }
            }
            if constexpr (traits::kind == normalizer::count)
                (batch::load_unaligned(b.admitted() + r) + admitted).store_unaligned(b.admitted() + r);
        }
    }

    /// Adds the position bias of each pair inside its query's box.
    template <class Query>
    void add_bias(T* st, const Query& query, std::size_t count, const std::array<T, Br>& row_lo,
                  const std::array<T, Br>& row_hi, const std::array<T, Br>& col_lo, const std::array<T, Br>& col_hi,
                  std::size_t tr, std::size_t tr1, std::size_t tc, std::size_t tc1) const {
        const std::size_t tw = tc1 - tc;
        for (std::size_t r = 0; r < count; ++r) {
            const std::size_t i = query(r);   // at group position (qr, qc)
            const auto qr = std::ptrdiff_t(i / grid_.cols.length / grid_.rows.dilation);
            const auto qc = std::ptrdiff_t(i % grid_.cols.length / grid_.cols.dilation);
            const std::size_t a0 = std::max(tr, std::size_t(row_lo[r])), a1 = std::min(tr1, std::size_t(row_hi[r]));
            const std::size_t b0 = std::max(tc, std::size_t(col_lo[r])), b1 = std::min(tc1, std::size_t(col_hi[r]));
            for (std::size_t a = a0; a < a1; ++a) {
                const double* bias = s_.bias_row(std::ptrdiff_t(a) - qr);
                for (std::size_t c = b0; c < b1; ++c)
                    st[((a - tr) * tw + (c - tc)) * Br + r] += T(bias[std::ptrdiff_t(c) - qc]);
            }
        }
    }

    row_matrix<const T> q_, k_, v_;
    const S& s_;
    window_grid grid_;
    row_matrix<T> out_;
    T* lse_;
    tile_scorer<Arch, T, S> scores_;
    std::vector<window_job> jobs_;
    std::vector<key_range> row_windows_, col_windows_;   // each position's window in its group
};

}  // namespace kernel
}  // namespace nonlocal
