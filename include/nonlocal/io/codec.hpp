#pragma once
/// @file io/codec.hpp
/// What the image readers share: the `image` they return, the size a file may declare, and
/// the guard around libpng's and libjpeg's error jumps.

#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/depth/options.hpp"

namespace nonlocal::io {

/// An image as float pixels [H, W, C] with the bit depth it was stored in: 8 or 16 (for .npy
/// arrays, 8 for uint8, 16 for uint16 and 32 for every other element type); `array` tells an
/// image read from .npy, whose channels are all data.
struct image {
    xt::xtensor<float, 3> pixels;
    int bit_depth = 8;
    bool array = false;
};

/// The largest image `read_image` reads unless told otherwise: 2^28 pixels (268 Mpix, 16384 x
/// 16384), whose depth task takes up to `depth_task_bytes_per_pixel` x 2^28 = 69 GB. A file
/// that declares more is refused before its pixels are allocated.
inline constexpr std::size_t max_image_pixels = std::size_t(1) << 28;

/// A number of bytes in words: "21 MB".
inline std::string bytes_in_words(double bytes) {
    const double scale = bytes >= 1e9 ? 1e9 : bytes >= 1e6 ? 1e6 : 1e3;
    char words[48];
    std::snprintf(words, sizeof words, "%.0f %s", bytes / scale, bytes >= 1e9 ? "GB" : bytes >= 1e6 ? "MB" : "kB");
    return words;
}

/// Throws std::runtime_error naming the file, its size and the memory its depth task would
/// take, when it has more than `max_pixels` pixels.
inline void require_image_size(const std::string& path, std::size_t height, std::size_t width,
                               std::size_t max_pixels = max_image_pixels) {
    if (width != 0 && height > max_pixels / width)
        throw std::runtime_error(path + ": " + std::to_string(width) + " x " + std::to_string(height) +
                                 " pixels, more than the " + std::to_string(max_pixels) + " read_image reads (a depth task takes up to " +
                                 std::to_string(depth_task_bytes_per_pixel) + " bytes a pixel: " +
                                 bytes_in_words(double(width) * double(height) * double(depth_task_bytes_per_pixel)) + ")");
}

namespace codec {

/// Runs `step`, a few calls into libpng or libjpeg, under `jump`, the buffer their error
/// handlers jump back to: false when they did. `step` holds no object with a destructor,
/// which the jump would skip.
template <class Step>
bool guarded(std::jmp_buf& jump, Step&& step) {
    if (setjmp(jump)) return false;
    step();
    return true;
}

/// Samples [H, W, C] of 8 bits, or of 16 bits in this machine's byte order, as float pixels.
inline xt::xtensor<float, 3> pixels_of(const std::vector<unsigned char>& samples, std::size_t height,
                                       std::size_t width, std::size_t channels, bool sixteen) {
    xt::xtensor<float, 3> pixels = xt::empty<float>({height, width, channels});
    float* out = pixels.data();
    for (std::size_t t = 0; t < pixels.size(); ++t) {
        std::uint16_t wide;
        if (sixteen) std::memcpy(&wide, &samples[2 * t], 2);
        out[t] = sixteen ? float(wide) : float(samples[t]);
    }
    return pixels;
}

}  // namespace codec

}  // namespace nonlocal::io
