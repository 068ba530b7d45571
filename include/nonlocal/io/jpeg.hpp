#pragma once
/// @file io/jpeg.hpp
/// JPEG files through libjpeg: baseline and progressive, grey, colour and CMYK, read as grey
/// or RGB.

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <jerror.h>
#include <jpeglib.h>

#include "nonlocal/io/codec.hpp"

namespace nonlocal::io {

namespace codec {

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

}  // namespace nonlocal::io
