#pragma once
/// @file concepts/neighborhood.hpp
/// The neighborhood concept: the key ranges N(i) of each query, and the types it speaks in
/// (`key_range`, `extents`, `slice_index`).

#include <concepts>
#include <cstddef>

namespace nonlocal {

// ---------------------------------------------------------------- neighborhood

/// The keys `first, first + stride, ..., first + (count - 1) * stride`.
struct key_range {
    std::size_t first = 0;
    std::size_t count = 0;
    std::size_t stride = 1;
};

/// Sizes of one aggregate: n queries, m keys.
struct extents {
    std::size_t queries = 0;
    std::size_t keys = 0;
};

/// Which [n, d] slice of a batched, multi-head aggregate: head `head` of batch item `item`,
/// of `items` items with `heads` heads each (slice `item * heads + head`).
struct slice_index {
    std::size_t item = 0;
    std::size_t head = 0;
    std::size_t items = 1;
    std::size_t heads = 1;
};

/// Stands for the callback a neighborhood is handed, in the `neighborhood` concept's check:
/// a neighborhood's `for_each_range` must take any function of a `key_range`.
struct key_range_sink {
    void operator()(key_range) const noexcept {}
};

/// A neighborhood policy: a member
/// `template <class F> void for_each_range(std::size_t i, extents e, F&& f) const`
/// that calls `f(key_range{...})` for the keys of query i, in increasing order
/// and without repeats. Optional: `void check(extents e) const` throwing
/// `std::invalid_argument` when the policy does not fit n and m; `for_slice(slice_index)`
/// returning the neighborhood of one slice of a batched or multi-head input (a mask per
/// batch item), with `void check_slices(std::size_t items, std::size_t heads) const`.
///
/// If you see "the required expression nb.for_each_range(i, e, sink) is
/// invalid", check the name and that the member is `const`.
template <class N>
concept neighborhood = requires(const N& nb, std::size_t i, extents e, key_range_sink sink) {
    nb.for_each_range(i, e, sink);
};

/// How much of a tile of queries x keys a neighborhood admits.
enum class tile_coverage {
    none,     ///< no pair: the tile is skipped
    partial,  ///< some pairs: `admits(i, j)` masks the tile
    full,     ///< every pair: no mask
};

/// A neighborhood that can also classify tiles [i0, i1) x [j0, j1) and test
/// single pairs, which lets the tiled kernels skip empty tiles and mask only
/// the partial ones: members `tile_coverage coverage(i0, i1, j0, j1) const` and
/// `bool admits(i, j) const`. Optional: `std::size_t key_end(i, e) const`, one past
/// the last key that queries 0..i admit, so that the kernels stop there (causal);
/// `void restrict_tile(i0, rows, j0, cols, unsigned char* keep, std::size_t ld) const`,
/// which clears `keep[c * ld + r]` for each pair (i0 + r, j0 + c) it does not admit, a
/// whole key column at a time (masks), instead of asking `admits` pair by pair.
template <class N>
concept tiled_neighborhood = neighborhood<N> && requires(const N& nb, std::size_t i) {
    { nb.coverage(i, i, i, i) } -> std::same_as<tile_coverage>;
    { nb.admits(i, i) } -> std::convertible_to<bool>;
};

}  // namespace nonlocal
