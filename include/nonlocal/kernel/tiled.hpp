#pragma once
/// @file kernel/tiled.hpp
/// The flash-style tiled kernel over neighborhoods that classify tiles (dense, causal,
/// block masks): softmax(scale q k^T) v, or an identity-kernel aggregate, without ever
/// storing an n x m matrix. Blocks of 64 consecutive queries (`query_block`) meet tiles
/// of 64 consecutive keys; tiles the neighborhood marks empty are skipped, full ones
/// need no mask, partial ones are masked pair by pair. A last block of at most 16
/// queries (ViT's 197 tokens leave 5, MobileViT-S's last stage has groups of 16) is a
/// block of 16 queries meeting tiles of 256 keys: a quarter of the work of a block of 64.
/// Keys and values are read in place, but for a last tile that is short of a whole
/// register block of keys or a dv that is not a whole number of vectors. A bias per pair
/// (`with_pair_bias`) is added to every tile computed, a key at a time. Extra memory per
/// thread: one query block, independent of n and m.

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/pair_table.hpp"
#include "nonlocal/kernel/logit.hpp"
#include "nonlocal/kernel/query_block.hpp"

namespace nonlocal::kernel {

/// Queries per block and keys per tile. A block's queries are one run of a pair table's.
inline constexpr std::size_t tile_rows = 64;
static_assert(tile_rows == detail::pair_table<float>::block);
inline constexpr std::size_t tile_cols = tile_scores / tile_rows;
/// Queries of a last block that runs as a small one (starting, as every block, at a multiple
/// of `tile_rows`: within one run of a pair table).
inline constexpr std::size_t small_tile_rows = 16;

/// Bytes of working memory one thread uses for features of dimension d and dv: the larger of
/// the two blocks'.
template <class T>
constexpr std::size_t tiled_workspace_bytes(std::size_t d, std::size_t dv, std::size_t lanes) {
    return std::max(query_block_bytes<T, tile_rows>(d, dv, lanes), query_block_bytes<T, small_tile_rows>(d, dv, lanes));
}

/// One [n, d] slice; `run(t)` computes query block t.
template <class Arch, class T, class S, class Nb, class Nm>
class tiled_slice {
    using traits = block_traits<S, Nm>;
    template <std::size_t Rows>
    using block = query_block<Arch, T, Rows, traits::shift, traits::kind>;

public:
    tiled_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                row_matrix<T> out, T* lse)
        : q_(q), k_(k), v_(v), s_(s), nb_(nb), out_(out), lse_(lse), scores_(s, q.cols) {}

    std::size_t tiles() const noexcept { return (q_.rows + tile_rows - 1) / tile_rows; }

    /// Queries [64 tile, 64 tile + 64); a last block of at most 16 as a small block (two small
    /// ones for up to 32 were not faster for every dv: see the performance page).
    void run(std::size_t tile) const {
        const std::size_t i0 = tile * tile_rows, rows = std::min(tile_rows, q_.rows - i0);
        if (rows <= small_tile_rows) run_block(block<small_tile_rows>(q_.cols, v_.cols), i0, rows);
        else run_block(block<tile_rows>(q_.cols, v_.cols), i0, rows);
    }

private:
    /// Queries [i0, i0 + rows) in `b`, against tiles of its width.
    template <class Block>
    void run_block(Block&& b, std::size_t i0, std::size_t rows) const {
        constexpr std::size_t Br = std::decay_t<Block>::rows, Bc = std::decay_t<Block>::cols;
        const std::size_t d = q_.cols, dv = v_.cols, m = k_.rows;
        const std::size_t dvp = b.padded_dv();
        b.start(rows, scores_.query_scale(), [&](std::size_t r) { return q_.row(i0 + r).data(); });
        const std::size_t key_end = detail::key_end(nb_, i0 + rows - 1, extents{q_.rows, m});

        for (std::size_t j0 = 0; j0 < m; j0 += Bc) {
            const std::size_t cols = std::min(Bc, m - j0);
            const tile_coverage coverage = nb_.coverage(i0, i0 + rows, j0, j0 + cols);
            if (coverage == tile_coverage::none) continue;

            // Keys in place; a last tile reaching past them reads a zero-padded copy.
            const T* keys = k_.data + j0 * d;
            if (j0 + b.padded_keys(cols) > m) {
                std::fill(b.keys(), b.keys() + Bc * d, T(0));
                std::copy(keys, keys + cols * d, b.keys());
                keys = b.keys();
            }
            T* st = scores_(b, simd::strided_rows<T>{keys, d}, cols);

            if constexpr (detail::pair_biased_dot_product<S>)
                for (std::size_t c = 0; c < cols; ++c) {
                    const auto* bias = s_.bias_run(i0, j0 + c);   // a block's queries: one run
                    for (std::size_t r = 0; r < rows; ++r) st[c * Br + r] += T(bias[r]);
                }
            if (coverage == tile_coverage::partial) {
                detail::restrict_tile(nb_, i0, rows, j0, cols, b.keep(), Br);
                b.mask(cols);
            } else {
                b.admit_all(cols);
            }

            // Values in place when their rows are whole vectors.
            const T* values = v_.data + j0 * dv;
            std::size_t ldv = dv;
            if (dv != dvp) {
                for (std::size_t c = 0; c < cols; ++c) std::copy(values + c * dv, values + (c + 1) * dv, b.values() + c * dvp);
                values = b.values();
                ldv = dvp;
            }
            b.accumulate(values, ldv, cols);
            if (j0 + cols >= key_end) break;   // the keys past the block's last admitted one
        }
        b.finish([&](std::size_t r) { return out_.row(i0 + r).data(); },
                 [&](std::size_t r) { return lse_ ? lse_ + i0 + r : nullptr; });
    }

    row_matrix<const T> q_, k_, v_;
    const S& s_;
    const Nb& nb_;
    row_matrix<T> out_;
    T* lse_;
    tile_scorer<Arch, T, S> scores_;
};

}  // namespace nonlocal::kernel
