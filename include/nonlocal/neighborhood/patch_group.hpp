#pragma once
/// @file neighborhood/patch_group.hpp
/// MobileViT's global representation: the image is cut into patch_h x patch_w
/// patches and each pixel attends to the pixels at the same offset in every
/// patch. This is MobileViT's unfold -> attention -> fold, without the copies.

#include <cstddef>
#include <string>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/neighborhood/window.hpp"

namespace nonlocal {

/// N(i) = pixels j of the height x width grid with j_row = i_row (mod patch_h)
/// and j_col = i_col (mod patch_w); needs the patch to divide the grid and n = m = height * width.
struct patch_group {
    std::size_t height = 0;
    std::size_t width = 0;
    std::size_t patch_h = 2;
    std::size_t patch_w = 2;

    void check(extents e) const {
        detail::require(height > 0 && width > 0 && patch_h > 0 && patch_w > 0 && height % patch_h == 0 &&
                            width % patch_w == 0,
                        "patch_group", [&] {
                            return "the " + std::to_string(patch_h) + " x " + std::to_string(patch_w) +
                                   " patch must divide the " + std::to_string(height) + " x " +
                                   std::to_string(width) + " grid";
                        });
        detail::require_square_grid("patch_group", height, width, e);
    }
    /// The pixels at one offset of every patch attend densely among themselves: a partition
    /// of the grid into `groups()` groups of `group_size()` pixels, `member(g, t)` the t-th
    /// pixel (in row-major order) at offset (g / patch_w, g % patch_w). The dot-product
    /// similarities run on it as on `dense` over each group (see `weighted_aggregate`).
    std::size_t groups() const noexcept { return patch_h * patch_w; }
    std::size_t group_size() const noexcept { return (height / patch_h) * (width / patch_w); }
    std::size_t member(std::size_t g, std::size_t t) const noexcept {
        const std::size_t patches_per_row = width / patch_w;
        return ((t / patches_per_row) * patch_h + g / patch_w) * width + (t % patches_per_row) * patch_w + g % patch_w;
    }

    template <class F>
    void for_each_range(std::size_t i, extents, F&& f) const {
        const std::size_t row_offset = (i / width) % patch_h, col_offset = (i % width) % patch_w;
        for (std::size_t row = row_offset; row < height; row += patch_h)
            f(key_range{row * width + col_offset, width / patch_w, patch_w});
    }
};

static_assert(neighborhood<patch_group>);

}  // namespace nonlocal
