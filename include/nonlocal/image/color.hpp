#pragma once
/// @file image/color.hpp
/// Colour spaces of image planes.

#include <cstddef>

#include "nonlocal/image/pixels.hpp"

namespace nonlocal::detail {

/// An RGB image's planes as Y, c Cb, c Cr of ITU-R BT.601 (Cb = 0.564 (B - Y),
/// Cr = 0.713 (R - Y)), c = `chroma_weight`; images of other channel counts as they are.
template <class T>
image_planes<T> luma_chroma(image_planes<T> g, double chroma_weight) {
    if (g.channels != 3) return g;
    T *first = g.channel(0), *second = g.channel(1), *third = g.channel(2);   // R, G, B in; Y, c Cb, c Cr out
    const T cb = T(0.564 * chroma_weight), cr = T(0.713 * chroma_weight);
    for (std::size_t i = 0; i < g.pixels(); ++i) {
        const T red = first[i], green = second[i], blue = third[i];
        const T y = T(0.299) * red + T(0.587) * green + T(0.114) * blue;
        first[i] = y, second[i] = cb * (blue - y), third[i] = cr * (red - y);
    }
    return g;
}

}  // namespace nonlocal::detail
