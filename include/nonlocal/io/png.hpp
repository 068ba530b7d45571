#pragma once
/// @file io/png.hpp
/// PNG files through libpng: every colour type of 1 to 16 bits read as its own channels, 8 or
/// 16 bits written.

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <png.h>
#include <xtensor/xtensor.hpp>

#include "nonlocal/io/codec.hpp"

namespace nonlocal::io {

namespace codec {

/// libpng's state while it reads: the file, the jump buffer and the first error's words.
struct png_reading {
    std::FILE* file;
    std::jmp_buf jump;
    char error[160] = "";
};

inline void png_fail(png_structp png, png_const_charp message) {
    auto* reading = static_cast<png_reading*>(png_get_error_ptr(png));
    std::snprintf(reading->error, sizeof reading->error, "%s", message);
    std::longjmp(reading->jump, 1);
}

inline void png_ignore_warning(png_structp, png_const_charp) {}

inline void png_read_bytes(png_structp png, png_bytep bytes, std::size_t count) {
    auto* reading = static_cast<png_reading*>(png_get_error_ptr(png));
    if (std::fread(bytes, 1, count, reading->file) != count) png_fail(png, "the file ends before its image does");
}

/// The largest ancillary chunk read (a colour profile or text, compressed or not): 8 MiB.
inline constexpr std::size_t max_png_chunk_bytes = std::size_t(8) << 20;

/// A PNG as its own channels (grey, grey + alpha, RGB or RGBA): palettes and grey of 1, 2 or
/// 4 bits expanded to 8, a transparency chunk to an alpha channel, 16-bit samples kept,
/// interlaced images de-interlaced. The size is checked before the pixels are allocated.
inline image read_png(const std::string& path, std::FILE* file, std::size_t max_pixels) {
    png_reading reading{file, {}, ""};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reading, png_fail, png_ignore_warning);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    struct destroyer {
        png_structp& png;
        png_infop& info;
        ~destroyer() { png_destroy_read_struct(&png, &info, nullptr); }
    } destroy{png, info};
    const auto failure = [&] { return std::runtime_error("cannot read " + path + ": " + reading.error); };
    if (!info) throw std::runtime_error("cannot read " + path + ": out of memory");
    png_uint_32 width = 0, height = 0;
    if (!guarded(reading.jump, [&] {
            png_set_read_fn(png, nullptr, png_read_bytes);
            png_set_chunk_malloc_max(png, max_png_chunk_bytes);
            png_read_info(png, info);
            width = png_get_image_width(png, info), height = png_get_image_height(png, info);
        }))
        throw failure();
    require_image_size(path, height, width, max_pixels);
    int bit_depth = 8, channels = 0;
    std::size_t row_bytes = 0;
    if (!guarded(reading.jump, [&] {
            png_set_expand(png);
            if (std::endian::native == std::endian::little) png_set_swap(png);
            png_set_interlace_handling(png);
            png_read_update_info(png, info);
            bit_depth = png_get_bit_depth(png, info), channels = png_get_channels(png, info);
            row_bytes = png_get_rowbytes(png, info);
        }))
        throw failure();
    std::vector<unsigned char> samples(height * row_bytes);
    std::vector<png_bytep> rows(height);
    for (std::size_t r = 0; r < height; ++r) rows[r] = samples.data() + r * row_bytes;
    if (!guarded(reading.jump, [&] { png_read_image(png, rows.data()); })) throw failure();
    image out;
    out.bit_depth = bit_depth == 16 ? 16 : 8;
    out.pixels = pixels_of(samples, height, width, std::size_t(channels), bit_depth == 16);
    return out;
}

}  // namespace codec

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
/// Throws std::runtime_error naming the file when it cannot be written.
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

}  // namespace nonlocal::io
