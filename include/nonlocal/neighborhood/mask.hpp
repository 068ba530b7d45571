#pragma once
/// @file neighborhood/mask.hpp
/// Boolean masks as neighborhoods: a mask per key (`key_mask`, the padding of a batch of
/// sequences of different lengths) and a mask per pair (`element_mask`). Either holds one
/// mask for every slice, one per batch item, or one per slice of a batched, multi-head input.
/// A set entry admits the pair: PyTorch's masks mean the opposite (True there is "not
/// attended"), so pass `!key_padding_mask` and `!attn_mask`.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/pair_table.hpp"
#include "nonlocal/detail/slices.hpp"

namespace nonlocal {

namespace detail {

/// The entries of a boolean (or numeric: non-zero is set) expression as bytes, 1 where set.
template <class E>
xt::xarray<unsigned char> mask_bytes(const xt::xexpression<E>& mask) {
    return xt::cast<unsigned char>(xt::not_equal(mask.derived_cast(), 0));
}

}  // namespace detail

/// N(i) = keys j with keep[j] set, for every query: `keep` is [m], or [B, m] for a batch of B
/// items (one per batch item, as PyTorch's key_padding_mask), or [B * H, m] (one per slice).
/// A default-constructed mask admits every key.
class key_mask {
public:
    key_mask() = default;

    /// Throws `std::invalid_argument` unless `keep` has rank 1 or 2.
    template <class E>
    explicit key_mask(const xt::xexpression<E>& keep) {
        const auto bytes = detail::mask_bytes(keep);
        detail::require(bytes.dimension() == 1 || bytes.dimension() == 2, "key_mask", [&] {
            return "mask must be [m] or [slices, m], got " + detail::shape_string(bytes.shape());
        });
        count_ = bytes.dimension() == 1 ? 1 : bytes.shape(0), m_ = bytes.shape().back();
        // kept_before[s (m + 1) + j]: keys kept before j in mask s, for coverage in O(1).
        masks_storage masks{{bytes.begin(), bytes.end()}, std::vector<std::size_t>(count_ * (m_ + 1), 0)};
        for (std::size_t s = 0; s < count_; ++s)
            for (std::size_t j = 0; j < m_; ++j)
                masks.kept_before[s * (m_ + 1) + j + 1] = masks.kept_before[s * (m_ + 1) + j] + masks.keep[s * m_ + j];
        masks_ = std::make_shared<const masks_storage>(std::move(masks));
    }

    void check(extents e) const {
        detail::require(!masks_ || e.keys == m_, "key_mask", [&] {
            return "mask of " + std::to_string(m_) + " keys for " + std::to_string(e.keys) + " keys";
        });
    }
    void check_slices(std::size_t items, std::size_t heads) const {
        if (masks_) detail::check_slice_count("key_mask", "masks", count_, items, heads);
    }
    key_mask for_slice(slice_index at) const {
        key_mask copy = *this;
        copy.slice_ = detail::slice_of(count_, at);
        return copy;
    }

    template <class F>
    void for_each_range(std::size_t, extents e, F&& f) const {
        if (!masks_) return f(key_range{0, e.keys, 1});
        for (std::size_t j = 0; j < e.keys;) {
            if (!keeps(j)) {
                ++j;
                continue;
            }
            const std::size_t first = j;
            while (j < e.keys && keeps(j)) ++j;
            f(key_range{first, j - first, 1});
        }
    }
    tile_coverage coverage(std::size_t, std::size_t, std::size_t j0, std::size_t j1) const noexcept {
        if (!masks_) return tile_coverage::full;
        const std::size_t* before = masks_->kept_before.data() + slice_ * (m_ + 1);
        const std::size_t admitted = before[j1] - before[j0];
        return admitted == 0 ? tile_coverage::none : admitted == j1 - j0 ? tile_coverage::full : tile_coverage::partial;
    }
    bool admits(std::size_t, std::size_t j) const noexcept { return !masks_ || keeps(j); }
    void restrict_tile(std::size_t, std::size_t rows, std::size_t j0, std::size_t cols, unsigned char* keep,
                       std::size_t ld) const noexcept {
        if (!masks_) return;
        for (std::size_t c = 0; c < cols; ++c)
            if (!keeps(j0 + c)) std::fill(keep + c * ld, keep + c * ld + rows, 0);
    }

private:
    struct masks_storage {
        std::vector<unsigned char> keep;
        std::vector<std::size_t> kept_before;
    };
    bool keeps(std::size_t j) const noexcept { return masks_->keep[slice_ * m_ + j]; }

    std::shared_ptr<const masks_storage> masks_;
    std::size_t count_ = 0, m_ = 0, slice_ = 0;
};

/// N(i) = keys j with mask(i, j) set: `mask` is [n, m], or [B, n, m] (one per batch item), or
/// [B * H, n, m] (one per slice, as PyTorch's 3-D attn_mask). Stored in blocks of 64 queries,
/// key by key (`detail::pair_table`), so that a tile is masked a key column at a time from
/// consecutive bytes. A default-constructed mask admits every pair.
class element_mask {
public:
    element_mask() = default;

    /// Throws `std::invalid_argument` unless `mask` has rank 2 or 3.
    template <class E>
    explicit element_mask(const xt::xexpression<E>& mask) : mask_(detail::mask_bytes(mask), "element_mask", "mask") {
        // Pairs admitted in each tile of 64 x 64, so that the tiled kernel's tiles are
        // classified without reading their masks.
        const std::size_t n = mask_.queries(), m = mask_.keys();
        std::vector<std::size_t> counts(mask_.count() * tiles(n) * tiles(m), 0);
        for (std::size_t s = 0; s < mask_.count(); ++s) {
            const auto table = mask_.for_slice({s, 0, mask_.count(), 1});
            for (std::size_t i0 = 0; i0 < n; i0 += tile)
                for (std::size_t j = 0; j < m; ++j)
                    counts[(s * tiles(n) + i0 / tile) * tiles(m) + j / tile] +=
                        count_run(table.run(i0, j), std::min(tile, n - i0));
        }
        tile_counts_ = std::make_shared<const std::vector<std::size_t>>(std::move(counts));
    }

    void check(extents e) const { mask_.check("element_mask", "mask", e); }
    void check_slices(std::size_t items, std::size_t heads) const {
        mask_.check_slices("element_mask", "masks", items, heads);
    }
    element_mask for_slice(slice_index at) const {
        element_mask copy = *this;
        copy.mask_ = mask_.for_slice(at);
        return copy;
    }

    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        if (mask_.empty()) return f(key_range{0, e.keys, 1});
        for (std::size_t j = 0; j < e.keys;) {
            if (!mask_(i, j)) {
                ++j;
                continue;
            }
            const std::size_t first = j;
            while (j < e.keys && mask_(i, j)) ++j;
            f(key_range{first, j - first, 1});
        }
    }
    tile_coverage coverage(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) const noexcept {
        if (mask_.empty()) return tile_coverage::full;
        const std::size_t n = mask_.queries(), m = mask_.keys();
        std::size_t admitted = 0;
        if (i0 % tile == 0 && j0 % tile == 0 && i1 == std::min(i0 + tile, n) && j1 == std::min(j0 + tile, m)) {
            admitted = (*tile_counts_)[(mask_.slice() * tiles(n) + i0 / tile) * tiles(m) + j0 / tile];
        } else {
            for (std::size_t j = j0; j < j1; ++j)
                mask_.for_each_run(i0, i1 - i0, j, [&](const unsigned char* run, std::size_t, std::size_t length) {
                    admitted += count_run(run, length);
                });
        }
        return admitted == 0 ? tile_coverage::none
               : admitted == (i1 - i0) * (j1 - j0) ? tile_coverage::full
                                                   : tile_coverage::partial;
    }
    bool admits(std::size_t i, std::size_t j) const noexcept { return mask_.empty() || mask_(i, j); }
    void restrict_tile(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, unsigned char* keep,
                       std::size_t ld) const noexcept {
        if (mask_.empty()) return;
        for (std::size_t c = 0; c < cols; ++c)
            mask_.for_each_run(i0, rows, j0 + c, [&](const unsigned char* run, std::size_t r, std::size_t length) {
                for (std::size_t t = 0; t < length; ++t) keep[c * ld + r + t] &= run[t];
            });
    }

private:
    static constexpr std::size_t tile = detail::pair_table<unsigned char>::block;
    static std::size_t tiles(std::size_t length) noexcept { return (length + tile - 1) / tile; }
    static std::size_t count_run(const unsigned char* run, std::size_t length) noexcept {
        unsigned count = 0;   // bytes summed in 32 bits: the loop vectorises
        for (std::size_t t = 0; t < length; ++t) count += run[t];
        return count;
    }

    detail::pair_table<unsigned char> mask_;
    std::shared_ptr<const std::vector<std::size_t>> tile_counts_;
};

static_assert(tiled_neighborhood<key_mask> && detail::sliced_policy<key_mask>);
static_assert(tiled_neighborhood<element_mask> && detail::sliced_policy<element_mask>);

}  // namespace nonlocal
