#pragma once
// Reading and writing images for the command-line tools: PNG (8 or 16 bit) and
// JPEG in through stb_image, PNG out through libpng (8 or 16 bit), float32
// .npy through xtensor.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <png.h>
#include <stb/stb_image.h>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>
#include <xtensor/xtensor.hpp>

#include <nonlocal/detail/npy.hpp>

#include "cli.hpp"
#include "colour_map.hpp"

namespace nonlocal::tools {

/// An image as float pixels [H, W, C] with the bit depth it was stored in: 8 or 16 (for .npy
/// arrays, 8 for uint8, 16 for uint16 and 32 for every other element type); `array` tells an
/// image read from .npy, whose channels are all data.
struct image {
    xt::xtensor<float, 3> pixels;
    int bit_depth = 8;
    bool array = false;
};

/// The largest image the tools read: 2^28 pixels (268 Mpix, 16384 x 16384 and beyond), whose
/// depth task would need some 30 GB. A file that declares more is refused before its pixels
/// are allocated.
inline constexpr std::size_t max_image_pixels = std::size_t(1) << 28;

inline void require_image_size(const std::string& path, std::size_t height, std::size_t width) {
    if (width != 0 && height > max_image_pixels / width)
        throw std::runtime_error(path + ": " + std::to_string(width) + " x " + std::to_string(height) +
                                 " pixels, more than the " + std::to_string(max_image_pixels) + " the tools read");
}

/// Reads a PNG or JPEG (any number of channels, 8 or 16 bit) or a .npy [H, W] / [H, W, C] of
/// float32, float64 or integers. Throws std::runtime_error naming the file when it cannot be
/// read, is not such an image, or is larger than `max_image_pixels`.
inline image read_image(const std::string& path) {
    image out;
    std::error_code status;   // a symlink loop or a missing file: stb_image's own message below
    if (std::filesystem::is_directory(path, status)) throw std::runtime_error("cannot read " + path + ": it is a directory");
    if (ends_with(path, ".npy")) {
        const detail::npy_header header = detail::read_npy_header(path);
        if (header.shape.size() >= 2) require_image_size(path, header.shape[0], header.shape[1]);
        const std::string type = header.type;
        xt::xarray<float> a;
        try {
            a = detail::load_npy_of_type<float>(path, type, "tools::read_image");
        } catch (const std::invalid_argument& e) {   // an element type the library does not read
            throw std::runtime_error(e.what());
        }
        if (a.dimension() == 2) a.reshape({a.shape(0), a.shape(1), std::size_t(1)});
        if (a.dimension() != 3)
            throw std::runtime_error(path + ": expected a [H, W] or [H, W, C] array, got " + detail::shape_string(a.shape()));
        out.pixels = xt::xtensor<float, 3>(a);
        out.bit_depth = type == "|u1" ? 8 : type == "<u2" ? 16 : 32;
        out.array = true;
        return out;
    }
    int w = 0, h = 0, c = 0;
    if (stbi_info(path.c_str(), &w, &h, &c)) require_image_size(path, std::size_t(h), std::size_t(w));
    const bool sixteen = stbi_is_16_bit(path.c_str());
    void* data = sixteen ? static_cast<void*>(stbi_load_16(path.c_str(), &w, &h, &c, 0))
                         : static_cast<void*>(stbi_load(path.c_str(), &w, &h, &c, 0));
    if (!data) throw std::runtime_error("cannot read " + path + ": " + stbi_failure_reason());
    std::unique_ptr<void, void (*)(void*)> owner(data, stbi_image_free);
    out.bit_depth = sixteen ? 16 : 8;
    out.pixels = xt::empty<float>({std::size_t(h), std::size_t(w), std::size_t(c)});
    const std::size_t count = out.pixels.size();
    for (std::size_t t = 0; t < count; ++t)
        out.pixels.data()[t] = sixteen ? float(static_cast<const std::uint16_t*>(data)[t])
                                       : float(static_cast<const std::uint8_t*>(data)[t]);
    return out;
}

/// The colour channels of an image read from a PNG or JPEG: grey + alpha and RGBA lose
/// their last channel, the alpha, which holds coverage rather than colour. Arrays read from
/// .npy keep every channel (a fourth one may be a measurement).
inline image without_alpha(image img) {
    const std::size_t channels = img.pixels.shape(2);
    if (img.array || (channels != 2 && channels != 4)) return img;
    img.pixels = xt::view(img.pixels, xt::all(), xt::all(), xt::range(0, channels - 1));
    return img;
}

/// What libpng needs to write an image.
struct png_rows {
    const std::string& path;
    png_uint_32 width, height;
    int bit_depth, color_type;
    std::size_t row_bytes;
    const std::vector<unsigned char>& bytes;
};

/// Writes rows of samples as a PNG. Nothing here changes after setjmp, so the
/// error path (a longjmp back into this function) sees consistent values.
inline void write_png_rows(const png_rows& job) {
    std::FILE* file = std::fopen(job.path.c_str(), "wb");
    if (!file) throw std::runtime_error("cannot write " + job.path);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        std::fclose(file);
        throw std::runtime_error("libpng failed to write " + job.path);
    }
    png_init_io(png, file);
    png_set_IHDR(png, info, job.width, job.height, job.bit_depth, job.color_type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (png_uint_32 r = 0; r < job.height; ++r)
        png_write_row(png, const_cast<unsigned char*>(&job.bytes[r * job.row_bytes]));
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
}

/// Writes pixels [H, W, C] (C = 1 to 4) as a PNG of 8 or 16 bits, rounding and clamping.
inline void write_png(const std::string& path, const xt::xtensor<float, 3>& pixels, int bit_depth) {
    const std::size_t H = pixels.shape(0), W = pixels.shape(1), C = pixels.shape(2);
    if (C < 1 || C > 4) throw std::runtime_error(path + ": PNG holds 1 to 4 channels, not " + std::to_string(C));
    const int color = C == 1 ? PNG_COLOR_TYPE_GRAY : C == 2 ? PNG_COLOR_TYPE_GRAY_ALPHA : C == 3 ? PNG_COLOR_TYPE_RGB
                                                                                               : PNG_COLOR_TYPE_RGBA;
    const double top = bit_depth == 16 ? 65535.0 : 255.0;
    const std::size_t bytes = bit_depth == 16 ? 2 : 1;
    std::vector<unsigned char> rows(H * W * C * bytes);
    for (std::size_t t = 0; t < pixels.size(); ++t) {
        const double x = std::clamp(std::nearbyint(double(pixels.data()[t])), 0.0, top);
        if (bytes == 2) {   // PNG stores 16-bit samples big-endian
            const auto v = static_cast<std::uint16_t>(x);
            rows[2 * t] = static_cast<unsigned char>(v >> 8), rows[2 * t + 1] = static_cast<unsigned char>(v & 0xff);
        } else {
            rows[t] = static_cast<unsigned char>(x);
        }
    }
    write_png_rows({path, png_uint_32(W), png_uint_32(H), bit_depth == 16 ? 16 : 8, color, W * C * bytes, rows});
}

/// Writes `path` whole or not at all: `write(partial)` writes a file beside it, renamed to
/// `path` when complete and removed when writing fails, so that an interrupted run leaves no
/// half-written file for a later one to take as finished.
template <class Write>
void write_whole(const std::string& path, Write&& write) {
    const std::string partial = path + ".partial";
    const auto remove_partial = [&] {
        std::error_code ignored;
        std::filesystem::remove(partial, ignored);
    };
    try {
        write(partial);
        std::filesystem::rename(partial, path);
    } catch (const std::exception& e) {   // said of the output the user named, not of its temporary name
        remove_partial();
        std::string message = e.what();
        for (std::size_t at; (at = message.find(partial)) != std::string::npos;) message.replace(at, partial.size(), path);
        throw std::runtime_error(message);
    } catch (...) {
        remove_partial();
        throw;
    }
}

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
