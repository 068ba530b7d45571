#pragma once
/// @file image/box_interpolation.hpp
/// A normalised interpolation of scattered observations on a grid from integral images.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "nonlocal/buffer.hpp"

namespace nonlocal::detail {

/// x0 = box(alpha xhat) / box(alpha), the box growing until it covers an observation:
/// a cheap normalised interpolation from integral images, of `alpha` and
/// `rhs` = alpha xhat on an H x W grid, evaluated at any pixel. Whether a box covers an
/// observation is decided by an exact count (a sum of alphas can leave a rounding residue
/// instead of 0).
class box_interpolation {
public:
    template <class Alpha, class Rhs>
    box_interpolation(std::size_t H, std::size_t W, const Alpha* alpha, const Rhs* rhs)
        : height(H), width(W), stride(W + 1), sw((H + 1) * stride, 0.0), swx((H + 1) * stride, 0.0),
          count((H + 1) * stride, 0) {
        // Each row's running sums plus the row above's integral: one dependent add per pixel
        // and sum, where adding the left and upper integrals and subtracting the corner chains three.
        for (std::size_t r = 0; r < H; ++r) {
            double row_w = 0, row_wx = 0;
            std::uint32_t row_count = 0;
            for (std::size_t c = 0; c < W; ++c) {
                const std::size_t i = (r + 1) * stride + c + 1, k = r * W + c;
                row_w += double(alpha[k]), row_wx += double(rhs[k]), row_count += std::uint32_t(alpha[k] > 0);
                sw[i] = sw[i - stride] + row_w, swx[i] = swx[i - stride] + row_wx, count[i] = count[i - stride] + row_count;
            }
        }
    }
    /// x0 at pixel (r, c); the grid must hold an observation.
    double operator()(std::size_t r, std::size_t c) const {
        for (std::size_t radius = 2;; radius *= 2) {
            const std::size_t r0 = r > radius ? r - radius : 0, c0 = c > radius ? c - radius : 0;
            const std::size_t r1 = std::min(height, r + radius + 1), c1 = std::min(width, c + radius + 1);
            if (box(count, r0, c0, r1, c1) > 0) return box(swx, r0, c0, r1, c1) / box(sw, r0, c0, r1, c1);
        }
    }

private:
    std::size_t height, width, stride;
    buffer<double> sw, swx;
    buffer<std::uint32_t> count;

    template <class S>
    typename S::value_type box(const S& s, std::size_t r0, std::size_t c0, std::size_t r1, std::size_t c1) const {
        return s[r1 * stride + c1] - s[r0 * stride + c1] - s[r1 * stride + c0] + s[r0 * stride + c0];
    }
};

/// `box_interpolation` at every pixel.
template <class T>
buffer<double> normalized_interpolation(std::size_t H, std::size_t W, const T* alpha, const T* rhs) {
    const box_interpolation x0(H, W, alpha, rhs);
    buffer<double> x(H * W);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) x[r * W + c] = x0(r, c);
    return x;
}

}  // namespace nonlocal::detail
