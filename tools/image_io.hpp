#pragma once
// Reading and writing images for the command-line tools: the library's readers and writers
// (nonlocal/io/image.hpp) under the names the tools use, and what only the tools need.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <xtensor/xtensor.hpp>

#include <nonlocal/io/image.hpp>

#include "cli.hpp"
#include "color_map.hpp"

namespace nonlocal::tools {

using io::image;
using io::max_image_pixels;
using io::read_image;
using io::require_image_size;
using io::without_alpha;
using io::write_png;
using io::write_whole;

/// A closed interval of values.
struct value_range {
    float lo = 0, hi = 0;
};

/// The finite range [lo, hi] of `values` where `shown(v)` (lo = hi = 0 when there is none).
template <class Shown>
value_range finite_range(const xt::xtensor<float, 2>& values, Shown&& shown) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (float v : values)
        if (std::isfinite(v) && shown(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    return lo <= hi ? value_range{lo, hi} : value_range{};
}

}  // namespace nonlocal::tools
