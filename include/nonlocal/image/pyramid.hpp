#pragma once
/// @file image/pyramid.hpp
/// An image at half resolution, the step of a coarse-to-fine pyramid.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "nonlocal/image/pixels.hpp"

namespace nonlocal::detail {

/// The image at half resolution: pixel (r, c) is the mean of the 3 x 3 box around
/// (2r, 2c) (its part inside the image), the position an upsampling by 2 observes.
/// Each output row sums its 3 (or 2) input rows per column, in double, then 3 (or 2) of
/// those sums per output pixel.
template <class T>
image_planes<T> half_resolution(const image_planes<T>& g) {
    image_planes<T> h{(g.height + 1) / 2, (g.width + 1) / 2, g.channels, {}};
    h.values.resize(h.pixels() * h.channels);
    std::vector<double> column_sums(g.width);
    for (std::size_t k = 0; k < g.channels; ++k)
        for (std::size_t r = 0; r < h.height; ++r) {
            const std::size_t r0 = 2 * r > 0 ? 2 * r - 1 : 0, r1 = std::min(g.height, 2 * r + 2);
            const T* first = g.channel(k) + r0 * g.width;
            for (std::size_t c = 0; c < g.width; ++c) column_sums[c] = double(first[c]);
            for (std::size_t rr = r0 + 1; rr < r1; ++rr)
                for (std::size_t c = 0; c < g.width; ++c) column_sums[c] += double(g.channel(k)[rr * g.width + c]);
            T* out = h.channel(k) + r * h.width;
            for (std::size_t c = 0; c < h.width; ++c) {
                const std::size_t c0 = 2 * c > 0 ? 2 * c - 1 : 0, c1 = std::min(g.width, 2 * c + 2);
                double sum = 0;
                for (std::size_t cc = c0; cc < c1; ++cc) sum += column_sums[cc];
                out[c] = T(sum / double((r1 - r0) * (c1 - c0)));
            }
        }
    return h;
}

}  // namespace nonlocal::detail
