#pragma once
/// @file io/image.hpp
/// Images in and out of files: PNG (8 or 16 bit, every colour type) and JPEG (baseline,
/// progressive, grey, colour, CMYK) through libpng and libjpeg, and .npy arrays; written
/// whole or not at all. Optional: link `nonlocal::io` (libpng and libjpeg); the rest of the
/// library needs neither. Every error is a `std::runtime_error` naming the file.
///
///     const nonlocal::io::image guide = nonlocal::io::read_image("guide.png");   // pixels [H, W, C]
///     nonlocal::io::write_image("out.png", guide.pixels, 8);

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <xtensor/xnpy.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/depth/options.hpp"
#include "nonlocal/detail/npy.hpp"

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

/// libjpeg's state while it reads: its error manager and progress monitor, the jump buffer
/// and the first error's words.
struct jpeg_reading {
    jpeg_error_mgr errors;
    jpeg_progress_mgr progress;
    std::jmp_buf jump;
    char error[JMSG_LENGTH_MAX] = "";
};

/// The most scans a progressive JPEG may have: a few dozen in practice; thousands of tiny
/// ones would take minutes to decode.
inline constexpr int max_jpeg_scans = 1000;

inline jpeg_reading& jpeg_state(j_common_ptr jpeg) { return *static_cast<jpeg_reading*>(jpeg->client_data); }

inline void jpeg_fail(j_common_ptr jpeg) {
    jpeg->err->format_message(jpeg, jpeg_state(jpeg).error);
    std::longjmp(jpeg_state(jpeg).jump, 1);
}

/// Warnings are ignored but one: a file that ends early is refused rather than padded grey.
inline void jpeg_warn(j_common_ptr jpeg, int level) {
    if (level < 0 && jpeg->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(jpeg);
}

inline void jpeg_count_scans(j_common_ptr jpeg) {
    if (reinterpret_cast<j_decompress_ptr>(jpeg)->input_scan_number <= max_jpeg_scans) return;
    std::snprintf(jpeg_state(jpeg).error, JMSG_LENGTH_MAX, "more than %d scans", max_jpeg_scans);
    std::longjmp(jpeg_state(jpeg).jump, 1);
}

/// A JPEG as grey or RGB, 8 bits: YCbCr to RGB, and CMYK or YCCK to RGB through the
/// inverted CMYK that Adobe's writers store (marked by their APP14 segment; plain CMYK
/// otherwise). The size is checked before the pixels are allocated.
inline image read_jpeg(const std::string& path, std::FILE* file, std::size_t max_pixels) {
    jpeg_reading reading;
    jpeg_decompress_struct jpeg{};
    jpeg.err = jpeg_std_error(&reading.errors);
    reading.errors.error_exit = jpeg_fail;
    reading.errors.emit_message = jpeg_warn;
    reading.progress.progress_monitor = jpeg_count_scans;
    jpeg.client_data = &reading;
    const auto failure = [&] { return std::runtime_error("cannot read " + path + ": " + reading.error); };
    if (!guarded(reading.jump, [&] { jpeg_create_decompress(&jpeg); })) throw failure();
    const std::unique_ptr<jpeg_decompress_struct, void (*)(jpeg_decompress_struct*)> owner(&jpeg, jpeg_destroy_decompress);
    jpeg.progress = &reading.progress;
    if (!guarded(reading.jump, [&] {
            jpeg_stdio_src(&jpeg, file);
            jpeg_read_header(&jpeg, TRUE);
        }))
        throw failure();
    require_image_size(path, jpeg.image_height, jpeg.image_width, max_pixels);
    const bool cmyk = jpeg.jpeg_color_space == JCS_CMYK || jpeg.jpeg_color_space == JCS_YCCK;
    if (jpeg.jpeg_color_space == JCS_UNKNOWN)
        throw std::runtime_error("cannot read " + path + ": a JPEG of " + std::to_string(jpeg.num_components) +
                                 " components in no colour space");
    jpeg.out_color_space = jpeg.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;
    if (!guarded(reading.jump, [&] { jpeg_start_decompress(&jpeg); })) throw failure();
    const std::size_t height = jpeg.output_height, width = jpeg.output_width, stored = std::size_t(jpeg.output_components);
    std::vector<unsigned char> samples(height * width * stored);
    std::vector<JSAMPROW> rows(height);
    for (std::size_t r = 0; r < height; ++r) rows[r] = samples.data() + r * width * stored;
    if (!guarded(reading.jump, [&] {
            while (jpeg.output_scanline < jpeg.output_height)
                jpeg_read_scanlines(&jpeg, rows.data() + jpeg.output_scanline, jpeg.output_height - jpeg.output_scanline);
        }))
        throw failure();
    image out;
    if (!cmyk) {
        out.pixels = pixels_of(samples, height, width, stored, false);
        return out;
    }
    const bool inverted = jpeg.saw_Adobe_marker;
    out.pixels = xt::empty<float>({height, width, std::size_t(3)});
    for (std::size_t p = 0; p < height * width; ++p) {
        const auto light = [&](std::size_t c) {   // 255 where channel c lays no ink
            return inverted ? float(samples[4 * p + c]) : 255.0f - float(samples[4 * p + c]);
        };
        for (std::size_t c = 0; c < 3; ++c) out.pixels.data()[3 * p + c] = std::nearbyint(light(c) * light(3) / 255.0f);
    }
    return out;
}

}  // namespace codec

/// Reads a PNG or JPEG (told by their first bytes, whatever the name says) or, by its name,
/// a .npy [H, W] / [H, W, C] of float32, float64 or integers. PNGs keep their channels and
/// their 8 or 16 bits (palettes expanded, a transparency chunk as alpha); JPEGs come as grey
/// or RGB. Throws std::runtime_error naming the file when it cannot be read, is not such an
/// image, is truncated, or declares more than `max_pixels` (before any pixel is allocated).
inline image read_image(const std::string& path, std::size_t max_pixels = max_image_pixels) {
    image out;
    std::error_code status;   // a symlink loop or a missing file: fopen's words below
    if (std::filesystem::is_directory(path, status)) throw std::runtime_error("cannot read " + path + ": it is a directory");
    if (path.ends_with(".npy")) {
        const detail::npy_header header = detail::read_npy_header(path);
        if (header.shape.size() >= 2) require_image_size(path, header.shape[0], header.shape[1], max_pixels);
        const std::string& type = header.type;
        xt::xarray<float> a;
        try {
            a = detail::read_npy<float>(path, header, "io::read_image");
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
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!file) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
    unsigned char magic[8] = {};
    const std::size_t got = std::fread(magic, 1, sizeof magic, file.get());
    std::rewind(file.get());
    if (got == 8 && png_sig_cmp(magic, 0, 8) == 0) return codec::read_png(path, file.get(), max_pixels);
    if (got >= 3 && magic[0] == 0xff && magic[1] == 0xd8 && magic[2] == 0xff) return codec::read_jpeg(path, file.get(), max_pixels);
    throw std::runtime_error("cannot read " + path + ": not a PNG, JPEG or .npy file");
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

/// Writes `array` to `path` as a .npy file of its element type, whole or not at all. Throws
/// std::runtime_error naming the file when it cannot be written.
template <class E>
void write_npy(const std::string& path, const E& array) {
    write_whole(path, [&](const std::string& partial) {
        std::ofstream file(partial, std::ios::binary);
        file << xt::dump_npy(array);
        if (!file.flush()) throw std::runtime_error("cannot write " + partial);
    });
}

/// Writes pixels [H, W, C] to `path` whole or not at all: a PNG of `bit_depth` 8 or 16
/// (rounded, clamped to 0 .. 2^bits - 1) for a name ending in .png, the float32 array
/// [H, W, C] for one ending in .npy. Throws std::runtime_error naming the file for another
/// name or when it cannot be written.
inline void write_image(const std::string& path, const xt::xtensor<float, 3>& pixels, int bit_depth = 8) {
    if (!path.ends_with(".png") && !path.ends_with(".npy"))
        throw std::runtime_error("cannot write " + path + ": expected a name ending in .png or .npy");
    if (bit_depth != 8 && bit_depth != 16)
        throw std::runtime_error("cannot write " + path + ": PNG holds 8 or 16 bits, not " + std::to_string(bit_depth));
    if (path.ends_with(".npy")) return write_npy(path, pixels);
    write_whole(path, [&](const std::string& partial) { write_png(partial, pixels, bit_depth); });
}

}  // namespace nonlocal::io
