#pragma once
/// @file neighborhood/window.hpp
/// Sliding windows: a 1-D band and a 2-D k x k window, with dilation, as in
/// neighborhood attention and sliding-window language models.
///
/// Both are boxes on a grid: N(i) = (window of i's row) x (window of i's column),
/// each given by a `window_axis`. With dilation d, the positions p = g (mod d) of
/// an axis form group g, and a window lives inside the query's group. Within its
/// group, the window of k = 2r + 1 keys is centred on the query, and at the ends
///   - `border::shift` (NATTEN's rule, the default) shifts it inward, so that every
///     query sees exactly k keys; a group of fewer than k positions is one window;
///   - `border::clip` (Longformer's and Mistral's sliding window) cuts it, so that
///     the first and last r queries see fewer keys.
/// A causal window holds the query and the r keys before it in its group (fewer
/// near the start, under either rule: it cannot be shifted into the future).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <string>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"

namespace nonlocal {

/// What a window does at the ends of its axis.
enum class border {
    shift,  ///< moved inward: every query sees 2r + 1 keys (NATTEN)
    clip,   ///< cut: queries near the ends see fewer keys (Longformer, Mistral)
};

/// One axis of a window: `length` positions, windows of `radius` in units of `dilation`.
struct window_axis {
    std::size_t length = 1;
    std::size_t radius = 0;
    std::size_t dilation = 1;
    bool causal = false;
    border edges = border::shift;

    /// Positions in dilation group g.
    std::size_t group_length(std::size_t g) const noexcept { return (length - g + dilation - 1) / dilation; }

    /// The window of position i as [first, first + count) in its group's positions.
    key_range group_window(std::size_t i) const noexcept {
        const std::size_t index = i / dilation, size = group_length(i % dilation);
        const std::size_t below = index >= radius ? index - radius : 0;
        if (causal) return {below, index - below + 1, 1};
        if (edges == border::clip) return {below, std::min(size, index + radius + 1) - below, 1};
        const std::size_t kernel = 2 * radius + 1;
        if (kernel >= size) return {0, size, 1};
        return {std::min(below, size - kernel), kernel, 1};
    }

    /// The window of position i as positions of the axis (stride = dilation).
    key_range window(std::size_t i) const noexcept {
        const key_range w = group_window(i);
        return {i % dilation + w.first * dilation, w.count, dilation};
    }
};

/// A box neighborhood on a rows.length x cols.length grid of pixels in row-major order:
/// N(i) = rows.window(i / cols.length) x cols.window(i % cols.length).
struct window_grid {
    window_axis rows, cols;

    /// Calls f(key_range) for each row of i's box, top to bottom.
    template <class F>
    void for_each_range(std::size_t i, F&& f) const {
        const std::size_t w = cols.length;
        const key_range r = rows.window(i / w), c = cols.window(i % w);
        for (std::size_t t = 0; t < r.count; ++t) f(key_range{(r.first + t * r.stride) * w + c.first, c.count, c.stride});
    }
};

/// A neighborhood that is a box on a grid (`window1d`, `window2d`, or a user's own):
/// member `window_grid grid(extents e) const`, which lets the tiled window kernel take
/// blocks of neighbouring queries and the union of their windows as key tiles.
template <class N>
concept windowed_neighborhood = neighborhood<N> && requires(const N& nb, extents e) {
    { nb.grid(e) } -> std::same_as<window_grid>;
};

namespace detail {

inline void require_square_grid(std::string_view who, std::size_t height, std::size_t width, extents e) {
    require(e.queries == height * width && e.keys == height * width, who, [&] {
        return "a " + std::to_string(height) + " x " + std::to_string(width) + " grid needs " +
               std::to_string(height * width) + " queries and keys, got " + std::to_string(e.queries) +
               " queries and " + std::to_string(e.keys) + " keys";
    });
}

}  // namespace detail

/// N(i) = {i + t * dilation : t in [-radius, radius]} (or t in [-radius, 0] when
/// causal), shifted inward or clipped at the ends (`edges`); needs n = m.
struct window1d {
    std::size_t radius = 1;
    std::size_t dilation = 1;
    bool causal = false;
    border edges = border::shift;

    void check(extents e) const {
        detail::require(dilation >= 1, "window1d", [] { return std::string("dilation must be at least 1"); });
        detail::require(e.queries == e.keys, "window1d", [&] {
            return "needs as many queries as keys, got " + std::to_string(e.queries) + " queries and " +
                   std::to_string(e.keys) + " keys";
        });
    }
    window_grid grid(extents e) const noexcept {
        return {window_axis{}, window_axis{e.keys, radius, dilation, causal, edges}};
    }
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        grid(e).for_each_range(i, f);
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
    border edges = border::shift;

    std::size_t radius() const noexcept { return kernel / 2; }

    void check(extents e) const {
        detail::require(height > 0 && width > 0 && kernel % 2 == 1 && dilation >= 1, "window2d", [&] {
            return "needs height, width > 0, an odd kernel and dilation >= 1, got height = " +
                   std::to_string(height) + ", width = " + std::to_string(width) +
                   ", kernel = " + std::to_string(kernel) + ", dilation = " + std::to_string(dilation);
        });
        detail::require_square_grid("window2d", height, width, e);
    }
    window_grid grid(extents) const noexcept {
        return {window_axis{height, radius(), dilation, causal, edges}, window_axis{width, radius(), dilation, causal, edges}};
    }
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        grid(e).for_each_range(i, f);
    }
};

static_assert(windowed_neighborhood<window1d>);
static_assert(windowed_neighborhood<window2d>);

}  // namespace nonlocal
