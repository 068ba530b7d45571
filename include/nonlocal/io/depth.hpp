#pragma once
/// @file io/depth.hpp
/// Depth maps in and out of files: one-channel PNGs (8 or 16 bits, the values as stored: a
/// sensor's millimetres, a matcher's disparity times its scale) and .npy arrays, as the depth
/// tasks take them. Part of `nonlocal::io` (libpng and libjpeg).
///
///     const auto depth = nonlocal::io::read_depth("depth.png");     // [H, W], 0 where missing
///     const auto guide = nonlocal::io::read_guide("colour.png");    // [H, W, 3] on the 8-bit scale
///     nonlocal::io::write_depth("filled.png", nonlocal::fill_depth(depth, guide).depth);

#include <algorithm>
#include <cstdint>
#include <string>

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/io/image.hpp"

namespace nonlocal::io {

/// The depth map at `path`: a PNG of one channel (grey, 8 or 16 bits) or a .npy [H, W] or
/// [H, W, 1] of any element type `read_image` reads, its values as stored. Throws
/// std::runtime_error naming the file when it cannot be read or holds more than one channel.
inline xt::xtensor<float, 2> read_depth(const std::string& path, std::size_t max_pixels = max_image_pixels) {
    const image img = read_image(path, max_pixels);
    if (img.pixels.shape(2) != 1)
        throw std::runtime_error(path + ": a depth map has one channel, this image has " + std::to_string(img.pixels.shape(2)));
    return xt::view(img.pixels, xt::all(), xt::all(), 0);
}

/// The image at `path` as the depth tasks' guide: its colour channels (`without_alpha`) as
/// float pixels [H, W, C] on the 8-bit scale of `depth_options::sigma_r`. Values of 16 bits
/// (a 16-bit PNG, a uint16 .npy) are multiplied by 255 / 65535, as the tasks scale a uint16
/// guide; others are as stored. Throws std::runtime_error as `read_image` does.
inline xt::xtensor<float, 3> read_guide(const std::string& path, std::size_t max_pixels = max_image_pixels) {
    image img = without_alpha(read_image(path, max_pixels));
    if (img.bit_depth == 16) img.pixels *= float(guide_scale<std::uint16_t>());
    return std::move(img.pixels);
}

/// Writes `depth` [H, W] to `path` whole or not at all: a 16-bit grey PNG of its values
/// rounded and clamped to 0 .. 65535 for a name ending in .png, the float32 array [H, W] for
/// one ending in .npy. Throws std::runtime_error naming the file for another name or when it
/// cannot be written.
inline void write_depth(const std::string& path, const xt::xtensor<float, 2>& depth) {
    if (path.ends_with(".npy")) return write_npy(path, depth);
    xt::xtensor<float, 3> plane = xt::empty<float>({depth.shape(0), depth.shape(1), std::size_t(1)});
    std::copy(depth.begin(), depth.end(), plane.begin());
    write_image(path, plane, 16);
}

}  // namespace nonlocal::io
