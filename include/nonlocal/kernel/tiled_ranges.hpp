#pragma once
/// @file kernel/tiled_ranges.hpp
/// The tiled kernel over a neighborhood that gives only key ranges (`for_each_range`): a
/// user's neighborhood, a sparse pattern, an explicit graph. Blocks of 16 consecutive
/// queries meet the union of their keys, in increasing order, in tiles of up to 256 read
/// where they lie (through a table of rows, as the window kernel reads a window); each
/// pair outside its query's ranges is masked. A block's union is merged from its queries'
/// ranges, so the work follows the ranges and pairs, never n x m.
///
/// The share of a block's query-key products that its queries admit is its density. With
/// 7 x 7 windows given as ranges on a 64-wide grid, 16 queries of a row meet 7 x 22 keys:
/// 32 %. A block sparser than `ranges_min_density` goes row by row on the gather kernel,
/// which spends nothing on pairs it does not admit.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "nonlocal/concepts.hpp"
#include "nonlocal/kernel/gather.hpp"
#include "nonlocal/kernel/logit.hpp"
#include "nonlocal/kernel/query_block.hpp"

namespace nonlocal::kernel {

/// Queries per block of the ranges kernel.
inline constexpr std::size_t ranges_block_rows = 16;
/// Blocks one task takes in turn, sharing its work arrays.
inline constexpr std::size_t ranges_blocks_per_task = 16;
/// The least density at which a block runs tiled (see the file's comment).
inline constexpr double ranges_min_density = 1.0 / 8;

/// The keys of a block of queries: their union in increasing order and which query admits
/// which, found from the queries' ranges (a strided range counts as its keys one by one):
/// sorted by first key and merged, O(R log R) for R ranges, then a byte per admitted pair.
class block_keys {
public:
    /// Collects the keys that `nb` admits for the `count` queries at `queries`, count <= Rows.
    template <std::size_t Rows, class Nb>
    void collect(const Nb& nb, extents e, const std::size_t* queries, std::size_t count) {
        runs_.clear();
        keys_.clear();
        pairs_ = 0;
        for (std::size_t r = 0; r < count; ++r)
            nb.for_each_range(queries[r], e, [&](key_range range) {
                pairs_ += range.count;
                if (range.stride == 1 || range.count == 1) {
                    if (range.count > 0) runs_.push_back({range.first, range.count, r, 0});
                } else {
                    for (std::size_t t = 0; t < range.count; ++t) runs_.push_back({range.first + t * range.stride, 1, r, 0});
                }
            });
        std::sort(runs_.begin(), runs_.end(), [](const run& a, const run& b) { return a.first < b.first; });
        // Merge: each run's keys start at union position `position`.
        keys_.resize(pairs_);   // the union has at most as many keys as pairs
        std::size_t end = 0, size = 0;
        for (run& x : runs_) {
            const std::size_t to = x.first + x.count;
            for (std::size_t j = std::max(end, x.first); j < to; ++j) keys_[size++] = j;
            end = std::max(end, to);
            x.position = size - (end - x.first);
        }
        keys_.resize(size);
        keep_.assign(size * Rows, 0);
        for (const run& x : runs_) {
            unsigned char* keep = keep_.data() + x.position * Rows + x.query;
            for (std::size_t t = 0; t < x.count; ++t) keep[t * Rows] = 1;
        }
    }

    /// The union, in increasing order.
    const std::vector<std::size_t>& keys() const noexcept { return keys_; }
    /// The pairs admitted.
    std::size_t pairs() const noexcept { return pairs_; }
    /// Whether query r admits the key at union position p: `keep()[p * Rows + r]`.
    const unsigned char* keep() const noexcept { return keep_.data(); }

private:
    /// Keys [first, first + count) of query `query`, at union positions from `position`.
    struct run {
        std::size_t first, count, query, position;
    };
    std::vector<run> runs_;
    std::vector<std::size_t> keys_;
    std::vector<unsigned char> keep_;
    std::size_t pairs_ = 0;
};

/// Whether a block of `rows` queries admitting `pairs` of their union of `keys` runs tiled.
constexpr bool runs_tiled(std::size_t pairs, std::size_t rows, std::size_t keys) noexcept {
    return double(pairs) >= ranges_min_density * double(rows * keys);
}

/// How a slice's n queries are dealt into blocks of `height` x `width` = 16: as rows of `pitch`
/// queries (query i at row i / pitch, column i % pitch). Tasks take `ranges_blocks_per_task`
/// blocks of one band of `height` rows.
struct block_layout {
    std::size_t n = 0, pitch = 1, height = 1, width = ranges_block_rows;

    std::size_t blocks_per_band() const noexcept { return (pitch + width - 1) / width; }
    std::size_t bands() const noexcept { return ((n + pitch - 1) / pitch + height - 1) / height; }
    std::size_t tasks_per_band() const noexcept {
        return (blocks_per_band() + ranges_blocks_per_task - 1) / ranges_blocks_per_task;
    }
    std::size_t tasks() const noexcept { return n == 0 ? 0 : bands() * tasks_per_band(); }
    std::size_t blocks() const noexcept { return n == 0 ? 0 : bands() * blocks_per_band(); }

    /// The queries of block `b` (band b / blocks_per_band()) into `to`; returns their count.
    std::size_t queries(std::size_t b, std::size_t* to) const noexcept {
        const std::size_t band = b / blocks_per_band(), column = b % blocks_per_band() * width;
        std::size_t count = 0;
        for (std::size_t y = band * height; y < (band + 1) * height; ++y)
            for (std::size_t x = column; x < std::min(pitch, column + width); ++x)
                if (y * pitch + x < n) to[count++] = y * pitch + x;
        return count;
    }
};

/// Blocks a slice samples, evenly spaced, to choose its layout and between blocks and rows.
inline constexpr std::size_t ranges_samples = 8;

/// How many of `ranges_samples` evenly spaced blocks of `layout` run tiled, of how many
/// looked at, and their keys' unions' total size.
template <class Nb>
std::array<std::size_t, 3> sample_blocks(const Nb& nb, extents e, const block_layout& layout) {
    const std::size_t blocks = layout.blocks(), looked = std::min(blocks, ranges_samples);
    block_keys keys;
    std::array<std::size_t, ranges_block_rows> queries;
    std::size_t tiled = 0, union_size = 0;
    for (std::size_t s = 0; s < looked; ++s) {
        const std::size_t count = layout.queries(blocks * s / looked, queries.data());
        keys.template collect<ranges_block_rows>(nb, e, queries.data(), count);
        tiled += runs_tiled(keys.pairs(), count, keys.keys().size());
        union_size += keys.keys().size();
    }
    return {tiled, looked, union_size};
}

/// The layout of least work for `nb`, from the data: when most sampled queries' ranges start
/// the same distance p apart, one after the other (the rows of a 2-D window given as ranges),
/// queries are rows of p, and the block shape of 1 x 16, 2 x 8, 4 x 4, 8 x 2 and 16 x 1 whose sampled blocks meet
/// the fewest keys wins; otherwise blocks are 16 consecutive queries.
template <class Nb>
block_layout choose_layout(const Nb& nb, extents e) {
    block_layout best{e.queries, std::max<std::size_t>(e.queries, 1), 1, ranges_block_rows};
    std::vector<std::size_t> votes;
    for (std::size_t s = 0; s < std::min(e.queries, ranges_samples); ++s) {
        // A query votes for the distance between its ranges when they are equally spaced.
        std::size_t ranges = 0, previous = 0, step = 0;
        bool even = true;
        nb.for_each_range(e.queries * s / std::min(e.queries, ranges_samples), e, [&](key_range r) {
            if (r.count == 0) return;
            if (ranges == 1) step = r.first - previous;
            else if (ranges > 1) even = even && r.first - previous == step;
            previous = r.first, ++ranges;
        });
        if (ranges >= 2 && even) votes.push_back(step);
    }
    std::sort(votes.begin(), votes.end());
    std::size_t pitch = 0, most = 0;
    for (std::size_t a = 0, b = 0; a < votes.size(); a = b) {
        while (b < votes.size() && votes[b] == votes[a]) ++b;
        if (b - a > most) most = b - a, pitch = votes[a];
    }
    if (2 * most < ranges_samples || pitch < 2 || pitch >= e.queries) return best;
    std::size_t least = sample_blocks(nb, e, best)[2];
    for (std::size_t height = 2; height <= ranges_block_rows; height *= 2) {
        const block_layout layout{e.queries, pitch, height, ranges_block_rows / height};
        const std::size_t keys = sample_blocks(nb, e, layout)[2];
        if (keys < least) least = keys, best = layout;
    }
    return best;
}

/// One [n, d] slice; `run(t)` computes task t, `ranges_blocks_per_task` blocks of queries.
template <class Arch, class T, class S, class Nb, class Nm>
class tiled_ranges_slice {
    using traits = block_traits<S, Nm>;
    using block = query_block<Arch, T, ranges_block_rows, traits::shift, traits::kind>;
    static constexpr std::size_t Br = block::rows, Bc = block::cols;

public:
    tiled_ranges_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                       const Nm& nm, row_matrix<T> out, T* lse)
        : a_{q, k, v, s, nb, nm, out, lse}, scores_(s, q.cols),
          layout_(choose_layout(nb, extents{q.rows, k.rows})) {
        const auto [tiled, looked, keys] = sample_blocks(nb, extents{q.rows, k.rows}, layout_);
        rows_only_ = 2 * tiled < looked;
    }

    std::size_t tiles() const noexcept { return layout_.tasks(); }

    void run(std::size_t task) const {
        const std::size_t band = task / layout_.tasks_per_band();
        const std::size_t first = band * layout_.blocks_per_band() + task % layout_.tasks_per_band() * ranges_blocks_per_task;
        const std::size_t last = std::min((band + 1) * layout_.blocks_per_band(), first + ranges_blocks_per_task);
        block b(a_.q.cols, a_.v.cols);
        block_keys keys;
        std::array<std::size_t, Br> queries;
        for (std::size_t index = first; index < last; ++index) {
            const std::size_t count = layout_.queries(index, queries.data());
            if (!rows_only_) {
                keys.template collect<Br>(a_.nb, extents{a_.q.rows, a_.k.rows}, queries.data(), count);
                if (runs_tiled(keys.pairs(), count, keys.keys().size())) {
                    run_block(b, keys, queries, count);
                    continue;
                }
            }
            for (std::size_t r = 0; r < count; ++r) a_.template gather_rows<Arch>(queries[r], queries[r] + 1);
        }
    }

private:
    void run_block(block& b, const block_keys& keys, const std::array<std::size_t, Br>& queries,
                   std::size_t count) const {
        const std::size_t dv = a_.v.cols, dvp = b.padded_dv();
        b.start(count, scores_.query_scale(), [&](std::size_t r) { return a_.q.row(queries[r]).data(); });
        const std::vector<std::size_t>& all = keys.keys();
        const T** key_rows = b.key_rows();
        const T** value_rows = b.value_rows();
        for (std::size_t p0 = 0; p0 < all.size(); p0 += Bc) {
            const std::size_t tile = std::min(Bc, all.size() - p0);
            T* padded = dv == dvp ? nullptr : b.values();
            for (std::size_t c = 0; c < tile; ++c) {
                const std::size_t j = all[p0 + c];
                key_rows[c] = a_.k.row(j).data();
                if (padded) {
                    simd::copy<Arch>(a_.v.row(j).data(), dv, padded + c * dvp);
                    value_rows[c] = padded + c * dvp;
                } else {
                    value_rows[c] = a_.v.row(j).data();
                }
            }
            std::fill(key_rows + tile, key_rows + block::padded_keys(tile), key_rows[0]);
            scores_(b, simd::indirect_rows<T>{key_rows}, tile);
            std::memcpy(b.keep(), keys.keep() + p0 * Br, tile * Br);
            b.mask(tile);
            b.accumulate(simd::indirect_rows<T>{value_rows}, tile);
        }
        b.finish([&](std::size_t r) { return a_.out.row(queries[r]).data(); },
                 [&](std::size_t r) { return a_.lse ? a_.lse + queries[r] : nullptr; });
    }

    slice_operands<T, S, Nb, Nm> a_;
    tile_scorer<Arch, T, S> scores_;
    block_layout layout_;
    bool rows_only_ = false;
};

}  // namespace nonlocal::kernel
