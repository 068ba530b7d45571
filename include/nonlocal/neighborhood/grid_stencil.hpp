#pragma once
/// @file neighborhood/grid_stencil.hpp
/// The 4- or 8-neighbours of a pixel, without the pixel itself: the graph of
/// the linear AR model.

#include <cstddef>
#include <string>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/neighborhood/window.hpp"

namespace nonlocal {

/// N(i) = the 4 (edge) or 8 (edge and corner) neighbours of pixel i inside a
/// height x width grid; needs n = m = height * width.
struct grid_stencil {
    std::size_t height = 0;
    std::size_t width = 0;
    int connectivity = 4;

    void check(extents e) const {
        detail::require(height > 0 && width > 0 && (connectivity == 4 || connectivity == 8), "grid_stencil", [&] {
            return "needs height, width > 0 and connectivity 4 or 8, got height = " + std::to_string(height) +
                   ", width = " + std::to_string(width) + ", connectivity = " + std::to_string(connectivity);
        });
        detail::require_square_grid("grid_stencil", height, width, e);
    }
    template <class F>
    void for_each_range(std::size_t i, extents, F&& f) const {
        const std::size_t r = i / width, c = i % width;
        const std::size_t c0 = c > 0 ? c - 1 : c, c1 = c + 1 < width ? c + 1 : c;
        const auto other_row = [&](std::size_t row) {
            if (connectivity == 8) f(key_range{row * width + c0, c1 - c0 + 1, 1});
            else f(key_range{row * width + c, 1, 1});
        };
        if (r > 0) other_row(r - 1);
        if (c0 < c && c < c1) f(key_range{i - 1, 2, 2});   // left and right in one range
        else if (c0 < c) f(key_range{i - 1, 1, 1});
        else if (c < c1) f(key_range{i + 1, 1, 1});
        if (r + 1 < height) other_row(r + 1);
    }
};

static_assert(neighborhood<grid_stencil>);

}  // namespace nonlocal
