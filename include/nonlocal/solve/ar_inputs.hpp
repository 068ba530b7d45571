#pragma once
/// @file solve/ar_inputs.hpp
/// What the AR system is built from and the checks it must pass: its data term (the
/// confidences alpha and b = alpha xhat per pixel) from observations, the check of a data
/// term, and the check of the edge weights.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/neighborhood/grid_stencil.hpp"

namespace nonlocal::detail {

/// alpha and b = alpha xhat per pixel, in row order.
template <class T>
struct ar_data_term {
    buffer<T> alpha, b;
};

/// The data term of observations `xhat` with confidences `confidence`, both h x w. Throws
/// `std::invalid_argument` unless their sizes are h x w and xhat is finite where
/// confidence is positive (alpha itself is checked by `check_ar_data_term`).
template <class T, class X, class A>
ar_data_term<T> ar_observations(std::size_t h, std::size_t w, const xt::xexpression<X>& xhat,
                                const xt::xexpression<A>& confidence) {
    const xt::xtensor<double, 2> x = xt::cast<double>(xhat.derived_cast());
    const xt::xtensor<double, 2> a = xt::cast<double>(confidence.derived_cast());
    require(x.shape(0) == h && x.shape(1) == w && a.shape() == x.shape(), "ar_system", [&] {
        return "guide " + std::to_string(h) + " x " + std::to_string(w) + ", xhat " + shape_string(x.shape()) +
               " and alpha " + shape_string(a.shape()) + " must have the same size";
    });
    ar_data_term<T> d{buffer<T>(h * w), buffer<T>(h * w, T(0))};
    for (std::size_t i = 0; i < h * w; ++i) {
        const double ai = a.data()[i];
        d.alpha[i] = T(ai);
        if (ai > 0) {
            require(std::isfinite(x.data()[i]), "ar_system",
                    [&] { return "xhat is not finite at observed pixel " + std::to_string(i); });
            d.b[i] = T(ai * x.data()[i]);
        }
    }
    return d;
}

/// Throws `std::invalid_argument` unless alpha and b have an entry per pixel of the h x w
/// grid, alpha is finite and >= 0, b is finite, and something is observed.
template <class T>
void check_ar_data_term(std::size_t h, std::size_t w, const buffer<T>& alpha, const buffer<T>& b) {
    const std::size_t n = h * w;
    require(alpha.size() == n && b.size() == n, "ar_system", [&] {
        return "guide " + std::to_string(h) + " x " + std::to_string(w) + " has " + std::to_string(n) +
               " pixels, alpha " + std::to_string(alpha.size()) + " and b " + std::to_string(b.size());
    });
    bool observed = false;
    for (std::size_t i = 0; i < n; ++i) {
        require(std::isfinite(alpha[i]) && alpha[i] >= 0 && std::isfinite(b[i]), "ar_system", [&] {
            return "alpha must be finite and >= 0 and b finite, got alpha = " + std::to_string(alpha[i]) +
                   ", b = " + std::to_string(b[i]) + " at pixel " + std::to_string(i);
        });
        observed = observed || alpha[i] > 0;
    }
    require(observed, "ar_system",
            [] { return std::string("nothing is observed (alpha is 0 everywhere): the system has no data term"); });
}

/// Throws `std::invalid_argument` (from `ar_system::set_rhs`) unless every entry of b is finite.
template <class T>
void check_rhs_finite(const buffer<T>& b) {
    const auto bad = std::find_if(b.begin(), b.end(), [](T v) { return not_finite(v) != 0; });
    require(bad == b.end(), "ar_system::set_rhs", [&] {
        return "b must be finite, got " + std::to_string(double(*bad)) + " at pixel " + std::to_string(bad - b.begin());
    });
}

/// Throws `std::invalid_argument` unless every edge weight is finite and >= 0, as the
/// Laplacian needs: a custom similarity's kernel may give anything, and the floor min_weight
/// keeps a NaN. Weights are at least the floor or NaN, and any weight that is NaN or infinite
/// makes its pixels' diagonal so: the diagonal is checked (which also catches finite weights
/// too large to add up), the weights [direction][pixel] of a grid `width` wide only to report.
template <class T>
void check_ar_weights(const buffer<T>& diagonal, const std::vector<buffer<T>>& weights,
                      const std::vector<stencil_offset>& offsets, std::size_t width) {
    int bad = 0;
    for (const T d : diagonal) bad |= not_finite(d);
    if (!bad) return;
    for (std::size_t o = 0; o < offsets.size(); ++o) {
        const buffer<T>& w = weights[o];
        const std::size_t i =
            std::size_t(std::find_if(w.begin(), w.end(), [](T v) { return not_finite(v) || v < T(0); }) - w.begin());
        require(i == w.size(), "ar_system", [&] {
            return "by the similarity, the edge from pixel (" + std::to_string(i / width) + ", " +
                   std::to_string(i % width) + ") to its neighbour at offset (" + std::to_string(offsets[o].dy) + ", " +
                   std::to_string(offsets[o].dx) + ") has the weight " + std::to_string(double(w[i])) +
                   "; edge weights must be finite and >= 0";
        });
    }
    const std::size_t i = std::size_t(
        std::find_if(diagonal.begin(), diagonal.end(), [](T d) { return not_finite(d) != 0; }) - diagonal.begin());
    require(false, "ar_system", [&] {
        return "the edge weights of pixel (" + std::to_string(i / width) + ", " + std::to_string(i % width) +
               ") and its alpha add up to " + std::to_string(double(diagonal[i])) + ", which is not finite";
    });
}

}  // namespace nonlocal::detail
