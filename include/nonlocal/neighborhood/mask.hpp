#pragma once
/// @file neighborhood/mask.hpp
/// Boolean masks as neighborhoods: a mask per key (`key_mask`, the padding of a batch of
/// sequences of different lengths) and a mask per pair (`element_mask`). Either holds one
/// mask for every slice, one per batch item, or one per slice of a batched, multi-head input.
/// A set entry admits the pair: PyTorch's masks mean the opposite (True there is "not
/// attended"), so pass `!key_padding_mask` and `!attn_mask`.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/slices.hpp"

namespace nonlocal {

namespace detail {

/// Masks stored once and shared by copies: `count` slices of `size` bytes, 1 where admitted.
class shared_masks {
public:
    shared_masks() = default;
    shared_masks(std::size_t count, std::size_t size, std::vector<unsigned char> bytes)
        : bytes_(std::make_shared<const std::vector<unsigned char>>(std::move(bytes))), count_(count), size_(size) {}

    bool empty() const noexcept { return !bytes_; }
    std::size_t count() const noexcept { return count_; }
    const unsigned char* data() const noexcept { return bytes_->data() + offset_; }
    /// Which of the masks `data()` points at.
    std::size_t slice() const noexcept { return size_ == 0 ? 0 : offset_ / size_; }

    /// The same storage, pointing at the mask that serves slice `at`.
    shared_masks for_slice(slice_index at) const noexcept {
        shared_masks copy = *this;
        copy.offset_ = empty() ? 0 : slice_of(count_, at) * size_;
        return copy;
    }

    /// Throws unless there is one mask, one per batch item, or one per slice.
    void check_slices(const char* where, std::size_t items, std::size_t heads) const {
        if (!empty()) check_slice_count(where, "masks", count_, items, heads);
    }

private:
    std::shared_ptr<const std::vector<unsigned char>> bytes_;
    std::size_t count_ = 0, size_ = 0, offset_ = 0;
};

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
        m_ = bytes.shape().back();
        const std::size_t count = bytes.dimension() == 1 ? 1 : bytes.shape(0);
        masks_ = {count, m_, {bytes.begin(), bytes.end()}};
        // kept_[s (m + 1) + j]: keys kept before j in slice s, for coverage in O(1).
        std::vector<std::size_t> kept(count * (m_ + 1), 0);
        for (std::size_t s = 0; s < count; ++s)
            for (std::size_t j = 0; j < m_; ++j) kept[s * (m_ + 1) + j + 1] = kept[s * (m_ + 1) + j] + bytes.data()[s * m_ + j];
        kept_ = std::make_shared<const std::vector<std::size_t>>(std::move(kept));
    }

    void check(extents e) const {
        detail::require(masks_.empty() || e.keys == m_, "key_mask", [&] {
            return "mask of " + std::to_string(m_) + " keys for " + std::to_string(e.keys) + " keys";
        });
    }
    void check_slices(std::size_t items, std::size_t heads) const { masks_.check_slices("key_mask", items, heads); }
    key_mask for_slice(slice_index at) const {
        key_mask copy = *this;
        copy.masks_ = masks_.for_slice(at);
        return copy;
    }

    template <class F>
    void for_each_range(std::size_t, extents e, F&& f) const {
        if (masks_.empty()) return f(key_range{0, e.keys, 1});
        const unsigned char* keep = masks_.data();
        for (std::size_t j = 0; j < e.keys;) {
            if (!keep[j]) {
                ++j;
                continue;
            }
            const std::size_t first = j;
            while (j < e.keys && keep[j]) ++j;
            f(key_range{first, j - first, 1});
        }
    }
    tile_coverage coverage(std::size_t, std::size_t, std::size_t j0, std::size_t j1) const noexcept {
        if (masks_.empty()) return tile_coverage::full;
        const std::size_t* kept = kept_->data() + masks_.slice() * (m_ + 1);
        const std::size_t admitted = kept[j1] - kept[j0];
        return admitted == 0 ? tile_coverage::none : admitted == j1 - j0 ? tile_coverage::full : tile_coverage::partial;
    }
    bool admits(std::size_t, std::size_t j) const noexcept { return masks_.empty() || masks_.data()[j]; }
    void restrict_tile(std::size_t, std::size_t rows, std::size_t j0, std::size_t cols, unsigned char* keep,
                       std::size_t ld) const noexcept {
        if (masks_.empty()) return;
        for (std::size_t c = 0; c < cols; ++c)
            if (!masks_.data()[j0 + c]) std::fill(keep + c * ld, keep + c * ld + rows, 0);
    }

private:
    detail::shared_masks masks_;
    std::shared_ptr<const std::vector<std::size_t>> kept_;
    std::size_t m_ = 0;
};

/// N(i) = keys j with mask(i, j) set: `mask` is [n, m], or [B, n, m] (one per batch item), or
/// [B * H, n, m] (one per slice, as PyTorch's 3-D attn_mask). Stored key by key, so that a
/// tile's mask is copied a key column at a time. A default-constructed mask admits every pair.
class element_mask {
public:
    element_mask() = default;

    /// Throws `std::invalid_argument` unless `mask` has rank 2 or 3.
    template <class E>
    explicit element_mask(const xt::xexpression<E>& mask) {
        auto stack = detail::key_major(detail::mask_bytes(mask), "element_mask", "mask");
        n_ = stack.n, m_ = stack.m;
        masks_ = {stack.count, n_ * m_, std::move(stack.values)};
    }

    void check(extents e) const {
        detail::require(masks_.empty() || (e.queries == n_ && e.keys == m_), "element_mask", [&] {
            return "mask [" + std::to_string(n_) + ", " + std::to_string(m_) + "] for " + std::to_string(e.queries) +
                   " queries and " + std::to_string(e.keys) + " keys";
        });
    }
    void check_slices(std::size_t items, std::size_t heads) const { masks_.check_slices("element_mask", items, heads); }
    element_mask for_slice(slice_index at) const {
        element_mask copy = *this;
        copy.masks_ = masks_.for_slice(at);
        return copy;
    }

    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        if (masks_.empty()) return f(key_range{0, e.keys, 1});
        for (std::size_t j = 0; j < e.keys;) {
            if (!admits(i, j)) {
                ++j;
                continue;
            }
            const std::size_t first = j;
            while (j < e.keys && admits(i, j)) ++j;
            f(key_range{first, j - first, 1});
        }
    }
    tile_coverage coverage(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) const noexcept {
        if (masks_.empty()) return tile_coverage::full;
        std::size_t admitted = 0;
        for (std::size_t j = j0; j < j1; ++j) {
            const unsigned char* column = masks_.data() + j * n_;
            for (std::size_t i = i0; i < i1; ++i) admitted += column[i];
        }
        return admitted == 0 ? tile_coverage::none
               : admitted == (i1 - i0) * (j1 - j0) ? tile_coverage::full
                                                   : tile_coverage::partial;
    }
    bool admits(std::size_t i, std::size_t j) const noexcept { return masks_.empty() || masks_.data()[j * n_ + i]; }
    void restrict_tile(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, unsigned char* keep,
                       std::size_t ld) const noexcept {
        if (masks_.empty()) return;
        for (std::size_t c = 0; c < cols; ++c) {
            const unsigned char* column = masks_.data() + (j0 + c) * n_ + i0;
            for (std::size_t r = 0; r < rows; ++r) keep[c * ld + r] &= column[r];
        }
    }

private:
    detail::shared_masks masks_;
    std::size_t n_ = 0, m_ = 0;
};

static_assert(tiled_neighborhood<key_mask> && detail::sliced_policy<key_mask>);
static_assert(tiled_neighborhood<element_mask> && detail::sliced_policy<element_mask>);

}  // namespace nonlocal
