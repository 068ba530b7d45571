#pragma once
/// @file neighborhood/intersection.hpp
/// The keys two neighborhoods both admit: a causal decoder over padded sequences is
/// `intersect(causal{}, key_mask(keep))`, a window under a mask `intersect(window1d{...}, mask)`.

#include <algorithm>
#include <cstddef>
#include <utility>

#include "nonlocal/concepts.hpp"

namespace nonlocal {

/// N(i) = first's N(i) and second's N(i). The second must test single pairs (`admits`);
/// when both classify tiles, so does the intersection, and the tiled kernels run it.
template <neighborhood First, tiled_neighborhood Second>
struct intersection {
    First first;
    Second second;

    /// first's ranges, cut where second does not admit a key.
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        first.for_each_range(i, e, [&](key_range r) {
            for (std::size_t t = 0; t < r.count;) {
                if (!second.admits(i, r.first + t * r.stride)) {
                    ++t;
                    continue;
                }
                const std::size_t start = t;
                while (t < r.count && second.admits(i, r.first + t * r.stride)) ++t;
                f(key_range{r.first + start * r.stride, t - start, r.stride});
            }
        });
    }

    tile_coverage coverage(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) const noexcept
        requires tiled_neighborhood<First>
    {
        const tile_coverage a = first.coverage(i0, i1, j0, j1);
        if (a == tile_coverage::none) return a;
        const tile_coverage b = second.coverage(i0, i1, j0, j1);
        if (b == tile_coverage::none) return b;
        return a == tile_coverage::full && b == tile_coverage::full ? tile_coverage::full : tile_coverage::partial;
    }
    bool admits(std::size_t i, std::size_t j) const noexcept
        requires tiled_neighborhood<First>
    {
        return first.admits(i, j) && second.admits(i, j);
    }
    void restrict_tile(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, unsigned char* keep,
                       std::size_t ld) const
        requires tiled_neighborhood<First>
    {
        detail::restrict_tile(first, i0, rows, j0, cols, keep, ld);
        detail::restrict_tile(second, i0, rows, j0, cols, keep, ld);
    }
    std::size_t key_end(std::size_t i, extents e) const
        requires detail::has_key_end<First> || detail::has_key_end<Second>
    {
        return std::min(detail::key_end(first, i, e), detail::key_end(second, i, e));
    }

    void check(extents e) const {
        detail::check(first, e);
        detail::check(second, e);
    }
    void check_slices(std::size_t items, std::size_t heads) const
        requires detail::sliced_policy<First> || detail::sliced_policy<Second>
    {
        detail::check_slices(first, items, heads);
        detail::check_slices(second, items, heads);
    }
    /// The intersection of both neighborhoods of slice `at`.
    auto for_slice(slice_index at) const
        requires detail::sliced_policy<First> || detail::sliced_policy<Second>
    {
        auto a = detail::of_slice(first, at);
        auto b = detail::of_slice(second, at);
        return intersection<decltype(a), decltype(b)>{std::move(a), std::move(b)};
    }
};

/// `intersection{first, second}` deduces both types (compilers without C++20's deduction
/// for aggregates, Clang before 17, need the guide).
template <class First, class Second>
intersection(First, Second) -> intersection<First, Second>;

/// The keys both `first` and `second` admit.
template <neighborhood First, tiled_neighborhood Second>
intersection<First, Second> intersect(First first, Second second) {
    return {std::move(first), std::move(second)};
}

}  // namespace nonlocal
