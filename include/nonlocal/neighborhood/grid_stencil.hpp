#pragma once
/// @file neighborhood/grid_stencil.hpp
/// The neighbours of a pixel within a fixed distance, without the pixel itself:
/// the graph of the linear AR model.

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/neighborhood/window.hpp"

namespace nonlocal {

/// One direction of a stencil: the edge from pixel (r, c) to (r + dy, c + dx).
struct stencil_offset {
    std::ptrdiff_t dy = 0, dx = 0;
};

/// N(i) = the pixels of a height x width grid within `radius` of pixel i, i
/// excluded: with connectivity 8 the square max(|dy|, |dx|) <= radius (radius 1:
/// the 8 edge and corner neighbours, radius r: a (2r + 1)^2 window), with
/// connectivity 4 the diamond |dy| + |dx| <= radius (radius 1: the 4 edge
/// neighbours). Needs n = m = height * width.
struct grid_stencil {
    std::size_t height = 0;
    std::size_t width = 0;
    int connectivity = 4;
    std::size_t radius = 1;

    void check(extents e) const {
        detail::require(height > 0 && width > 0 && (connectivity == 4 || connectivity == 8) && radius >= 1,
                        "grid_stencil", [&] {
                            return "needs height, width > 0, connectivity 4 or 8 and radius >= 1, got height = " +
                                   std::to_string(height) + ", width = " + std::to_string(width) +
                                   ", connectivity = " + std::to_string(connectivity) +
                                   ", radius = " + std::to_string(radius);
                        });
        detail::require_square_grid("grid_stencil", height, width, e);
    }

    /// How far the stencil reaches along a row at vertical distance |dy|.
    std::size_t reach(std::size_t dy) const noexcept { return connectivity == 8 ? radius : radius - dy; }

    /// The forward half of the stencil, each undirected edge once: (0, 1..reach)
    /// then the rows below, left to right; directions that cannot fit in the
    /// grid are left out, so every shift dy * width + dx is positive.
    std::vector<stencil_offset> forward_offsets() const {
        std::vector<stencil_offset> out;
        for (std::size_t dy = 0; dy <= radius && dy < height; ++dy) {
            const auto k = std::ptrdiff_t(reach(dy));
            for (std::ptrdiff_t dx = dy == 0 ? 1 : -k; dx <= k; ++dx)
                if (std::size_t(std::abs(dx)) < width) out.push_back({std::ptrdiff_t(dy), dx});
        }
        return out;
    }

    template <class F>
    void for_each_range(std::size_t i, extents, F&& f) const {
        const std::size_t r = i / width, c = i % width;
        const std::size_t r0 = r > radius ? r - radius : 0, r1 = std::min(height - 1, r + radius);
        for (std::size_t row = r0; row <= r1; ++row) {
            const std::size_t k = reach(row > r ? row - r : r - row);
            const std::size_t c0 = c > k ? c - k : 0, c1 = std::min(width - 1, c + k);
            if (row != r) {
                f(key_range{row * width + c0, c1 - c0 + 1, 1});
            } else {
                if (c0 < c) f(key_range{row * width + c0, c - c0, 1});
                if (c < c1) f(key_range{i + 1, c1 - c, 1});
            }
        }
    }
};

static_assert(neighborhood<grid_stencil>);

}  // namespace nonlocal
