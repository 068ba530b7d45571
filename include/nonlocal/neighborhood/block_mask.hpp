#pragma once
/// @file neighborhood/block_mask.hpp
/// Block-sparse attention: queries and keys are cut into blocks of
/// `block_size`, and a boolean layout says which query block sees which key
/// block (local + global + random blocks as in BigBird, strided patterns as in
/// Sparse Transformers).

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"

namespace nonlocal {

/// N(i) = keys j with layout(i / block_size, j / block_size) set; needs a layout of
/// [ceil(n / block_size), ceil(m / block_size)].
class block_mask {
public:
    /// Throws `std::invalid_argument` when block_size is 0.
    template <class E>
    block_mask(std::size_t block_size, const xt::xexpression<E>& layout)
        : block_(block_size), layout_(xt::cast<bool>(layout.derived_cast())) {
        detail::require(block_ > 0, "block_mask", [] { return std::string("block_size must be positive"); });
    }

    std::size_t block_size() const noexcept { return block_; }
    const xt::xtensor<bool, 2>& layout() const noexcept { return layout_; }

    void check(extents e) const {
        const std::size_t rows = (e.queries + block_ - 1) / block_, cols = (e.keys + block_ - 1) / block_;
        detail::require(layout_.shape(0) == rows && layout_.shape(1) == cols, "block_mask", [&] {
            return "layout " + detail::shape_string(layout_.shape()) + " does not fit " + std::to_string(e.queries) +
                   " queries and " + std::to_string(e.keys) + " keys in blocks of " + std::to_string(block_) +
                   ": expected [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
        });
    }
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        const std::size_t row = i / block_, blocks = layout_.shape(1);
        for (std::size_t b = 0; b < blocks;) {
            if (!layout_(row, b)) {
                ++b;
                continue;
            }
            std::size_t end = b;
            while (end < blocks && layout_(row, end)) ++end;
            const std::size_t first = b * block_;
            f(key_range{first, std::min(end * block_, e.keys) - first, 1});
            b = end;
        }
    }
    tile_coverage coverage(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) const noexcept {
        bool any = false, all = true;
        for (std::size_t r = i0 / block_; r <= (i1 - 1) / block_; ++r)
            for (std::size_t c = j0 / block_; c <= (j1 - 1) / block_; ++c) {
                any = any || layout_(r, c);
                all = all && layout_(r, c);
            }
        return !any ? tile_coverage::none : all ? tile_coverage::full : tile_coverage::partial;
    }
    bool admits(std::size_t i, std::size_t j) const noexcept { return layout_(i / block_, j / block_); }

private:
    std::size_t block_;
    xt::xtensor<bool, 2> layout_;
};

static_assert(tiled_neighborhood<block_mask>);

}  // namespace nonlocal
