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

#include <xtensor/xnpy.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/detail/npy.hpp"
#include "nonlocal/io/codec.hpp"
#include "nonlocal/io/jpeg.hpp"
#include "nonlocal/io/png.hpp"

namespace nonlocal::io {

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
