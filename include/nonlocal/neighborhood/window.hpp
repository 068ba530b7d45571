#pragma once
/// @file neighborhood/window.hpp
/// Sliding windows: a 1-D band and a 2-D k x k window, with dilation, as in
/// neighborhood attention.
///
/// Border rule. With dilation d, the positions p = g (mod d) form group g, and
/// a window lives inside the query's group. Within its group the window of
/// k = 2r + 1 keys is centred on the query and shifted inward at the borders,
/// so every query sees exactly k keys per axis. When a group has fewer than k
/// positions, the window is the whole group. A causal window holds the query
/// and the r keys before it in its group (fewer near the start: it cannot be
/// shifted into the future).

#include <algorithm>
#include <cstddef>
#include <string>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"

namespace nonlocal {

namespace detail {

/// The window of position `i` on an axis of `length` positions, as a key range
/// in axis coordinates (stride = dilation).
inline key_range axis_window(std::size_t i, std::size_t length, std::size_t radius, std::size_t dilation,
                             bool is_causal) noexcept {
    const std::size_t group = i % dilation;
    const std::size_t index = i / dilation;                                  // position inside the group
    const std::size_t group_length = (length - group + dilation - 1) / dilation;
    const std::size_t kernel = 2 * radius + 1;
    std::size_t start = 0, count = 0;
    if (is_causal) {
        start = index >= radius ? index - radius : 0;
        count = index - start + 1;
    } else if (kernel >= group_length) {
        start = 0;
        count = group_length;
    } else {
        start = std::min(index >= radius ? index - radius : 0, group_length - kernel);
        count = kernel;
    }
    return {group + start * dilation, count, dilation};
}

inline void require_square_grid(std::string_view who, std::size_t height, std::size_t width, extents e) {
    require(e.queries == height * width && e.keys == height * width, who, [&] {
        return "a " + std::to_string(height) + " x " + std::to_string(width) + " grid needs " +
               std::to_string(height * width) + " queries and keys, got " + std::to_string(e.queries) +
               " queries and " + std::to_string(e.keys) + " keys";
    });
}

}  // namespace detail

/// N(i) = {i + t * dilation : t in [-radius, radius]} (or t in [-radius, 0] when
/// causal), shifted inward at the ends; needs n = m.
struct window1d {
    std::size_t radius = 1;
    std::size_t dilation = 1;
    bool causal = false;

    void check(extents e) const {
        detail::require(dilation >= 1, "window1d", [] { return std::string("dilation must be at least 1"); });
        detail::require(e.queries == e.keys, "window1d", [&] {
            return "needs as many queries as keys, got " + std::to_string(e.queries) + " queries and " +
                   std::to_string(e.keys) + " keys";
        });
    }
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        f(detail::axis_window(i, e.keys, radius, dilation, causal));
    }
};

/// N(i) = a kernel x kernel window (kernel odd) around pixel i of a
/// height x width grid, rows and columns each following the border rule above;
/// needs n = m = height * width, pixels in row-major order.
struct window2d {
    std::size_t height = 0;
    std::size_t width = 0;
    std::size_t kernel = 3;
    std::size_t dilation = 1;
    bool causal = false;

    std::size_t radius() const noexcept { return kernel / 2; }

    void check(extents e) const {
        detail::require(height > 0 && width > 0 && kernel % 2 == 1 && dilation >= 1, "window2d", [&] {
            return "needs height, width > 0, an odd kernel and dilation >= 1, got height = " +
                   std::to_string(height) + ", width = " + std::to_string(width) +
                   ", kernel = " + std::to_string(kernel) + ", dilation = " + std::to_string(dilation);
        });
        detail::require_square_grid("window2d", height, width, e);
    }
    template <class F>
    void for_each_range(std::size_t i, extents, F&& f) const {
        const key_range rows = detail::axis_window(i / width, height, radius(), dilation, causal);
        const key_range cols = detail::axis_window(i % width, width, radius(), dilation, causal);
        for (std::size_t t = 0; t < rows.count; ++t)
            f(key_range{(rows.first + t * rows.stride) * width + cols.first, cols.count, cols.stride});
    }
};

static_assert(neighborhood<window1d>);
static_assert(neighborhood<window2d>);

}  // namespace nonlocal
