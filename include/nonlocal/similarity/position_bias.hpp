#pragma once
/// @file similarity/position_bias.hpp
/// A learned relative position bias added to a similarity's logit inside a
/// 2-D window, as in neighborhood attention and Swin.

#include <cstddef>
#include <span>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/neighborhood/window.hpp"

namespace nonlocal {

/// logit = base.logit(q, k) + table[head, dr + kernel - 1, dc + kernel - 1], where
/// (dr, dc) is the key's offset from the query in units of the dilation. With
/// windows shifted inward at borders the offset lies in [-(kernel - 1), kernel - 1],
/// hence a table of [heads, 2 kernel - 1, 2 kernel - 1]. Head h of a [B, H, n, d]
/// input uses table[h].
template <similarity Base>
struct with_position_bias {
    using weight_function = weight_function_t<Base>;

    Base base;
    xt::xtensor<double, 3> table;
    window2d window;
    std::size_t head = 0;

    /// Throws `std::invalid_argument` unless table is [heads, 2 kernel - 1, 2 kernel - 1].
    template <class E>
    with_position_bias(Base base_similarity, const xt::xexpression<E>& bias_table, window2d win)
        : base(base_similarity), table(xt::cast<double>(bias_table.derived_cast())), window(win) {
        const std::size_t side = 2 * window.kernel - 1;
        detail::require(table.shape(0) > 0 && table.shape(1) == side && table.shape(2) == side,
                        "with_position_bias", [&] {
                            return "table " + detail::shape_string(table.shape()) + " must be [heads, " +
                                   std::to_string(side) + ", " + std::to_string(side) + "] for kernel " +
                                   std::to_string(window.kernel);
                        });
    }

    template <class T>
    T logit(std::span<const T> q, std::span<const T> k, std::size_t i, std::size_t j) const {
        const std::size_t w = window.width, d = window.dilation, r = window.kernel - 1;
        // Offsets in dilation units, shifted to be non-negative.
        const std::size_t dr = (j / w + r * d - i / w) / d, dc = (j % w + r * d - i % w) / d;
        return static_cast<T>(base.logit(q, k) + table(head, dr, dc));
    }

    /// The biases of offset (dy, dx) for dx in [-(kernel - 1), kernel - 1], at [dx], for
    /// |dy| <= kernel - 1: the tiled window kernel adds them a row of the window at a time.
    const double* bias_row(std::ptrdiff_t dy) const noexcept {
        const auto r = std::ptrdiff_t(window.kernel) - 1;
        return &table(head, std::size_t(dy + r), std::size_t(r));
    }

    /// Throws `std::invalid_argument` unless `nb` is the window the table was made for
    /// (its width, kernel and dilation), so that every offset has its bias.
    void check_window(const window2d& nb) const {
        detail::require(nb.width == window.width && nb.kernel == window.kernel && nb.dilation == window.dilation,
                        "with_position_bias", [&] {
                            return "the table is for a window of kernel " + std::to_string(window.kernel) +
                                   " and dilation " + std::to_string(window.dilation) + " on rows of " +
                                   std::to_string(window.width) + " pixels, the neighborhood has kernel " +
                                   std::to_string(nb.kernel) + ", dilation " + std::to_string(nb.dilation) +
                                   " and rows of " + std::to_string(nb.width);
                        });
    }

    /// The same bias with table[h]; throws when h is not a head of the table.
    with_position_bias for_head(std::size_t h) const {
        detail::require(h < table.shape(0), "with_position_bias", [&] {
            return "head " + std::to_string(h) + " but the table has " + std::to_string(table.shape(0)) + " heads";
        });
        with_position_bias copy = *this;
        copy.head = h;
        return copy;
    }
};

}  // namespace nonlocal
