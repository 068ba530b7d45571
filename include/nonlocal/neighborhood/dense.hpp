#pragma once
/// @file neighborhood/dense.hpp
/// Every key (`dense`), or every key up to the query's own position (`causal`).

#include <algorithm>
#include <cstddef>

#include "nonlocal/concepts.hpp"

namespace nonlocal {

/// N(i) = all keys.
struct dense {
    template <class F>
    void for_each_range(std::size_t, extents e, F&& f) const {
        f(key_range{0, e.keys, 1});
    }
    tile_coverage coverage(std::size_t, std::size_t, std::size_t, std::size_t) const noexcept {
        return tile_coverage::full;
    }
    bool admits(std::size_t, std::size_t) const noexcept { return true; }
};

/// N(i) = keys j <= i (the decoder's mask; top-left aligned when n != m).
struct causal {
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        f(key_range{0, std::min(i + 1, e.keys), 1});
    }
    /// Tiles above the diagonal are skipped, tiles below it need no mask.
    tile_coverage coverage(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) const noexcept {
        if (j0 > i1 - 1) return tile_coverage::none;
        return j1 - 1 <= i0 ? tile_coverage::full : tile_coverage::partial;
    }
    bool admits(std::size_t i, std::size_t j) const noexcept { return j <= i; }
    /// Queries up to i see keys up to i: the tiles past the diagonal are never visited.
    std::size_t key_end(std::size_t i, extents) const noexcept { return i + 1; }
};

static_assert(tiled_neighborhood<dense>);
static_assert(tiled_neighborhood<causal>);

}  // namespace nonlocal
