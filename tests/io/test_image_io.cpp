// The tools' image reader on the kinds of file it meets in the wild, each written here by
// libpng or libjpeg from pixels known by hand: palette, grey + alpha, 1-bit, 16-bit and
// interlaced PNGs; baseline, progressive, grey and CMYK JPEGs; 1 x 1 and 1 x N images;
// Fortran-order, NaN and negative .npy arrays; and what it must refuse.
#define BOOST_TEST_MODULE image_io
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "image_io.hpp"

#include <nonlocal/io/depth.hpp>

namespace {

namespace fs = std::filesystem;
using nonlocal::tools::read_image;

std::string scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / "nonlocal-image-io";
    fs::create_directories(dir);
    return (dir / name).string();
}

/// A PNG of `rows` (samples as stored: 8-bit, or 16-bit big-endian pairs), with a palette
/// and a transparency chunk when given.
struct png_spec {
    unsigned width, height;
    int bit_depth, color_type;
    std::vector<std::vector<unsigned char>> rows;
    std::vector<png_color> palette = {};
    std::vector<unsigned char> palette_alpha = {};
    bool interlaced = false;
};

std::string write_png_file(const std::string& name, const png_spec& spec) {
    const std::string path = scratch(name);
    std::FILE* file = std::fopen(path.c_str(), "wb");
    BOOST_TEST_REQUIRE(file != nullptr);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, file);
    png_set_IHDR(png, info, spec.width, spec.height, spec.bit_depth, spec.color_type,
                 spec.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (!spec.palette.empty()) png_set_PLTE(png, info, spec.palette.data(), int(spec.palette.size()));
    if (!spec.palette_alpha.empty())
        png_set_tRNS(png, info, spec.palette_alpha.data(), int(spec.palette_alpha.size()), nullptr);
    png_write_info(png, info);
    std::vector<png_bytep> rows;
    for (const auto& r : spec.rows) rows.push_back(const_cast<png_bytep>(r.data()));
    png_write_image(png, rows.data());
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    return path;
}

/// A JPEG of `samples` [H, W, C] in `space` (CMYK written with Adobe's marker, as libjpeg does).
std::string write_jpeg_file(const std::string& name, unsigned width, unsigned height, int components,
                            J_COLOR_SPACE space, const std::vector<unsigned char>& samples, bool progressive) {
    const std::string path = scratch(name);
    std::FILE* file = std::fopen(path.c_str(), "wb");
    BOOST_TEST_REQUIRE(file != nullptr);
    jpeg_compress_struct jpeg{};
    jpeg_error_mgr errors;
    jpeg.err = jpeg_std_error(&errors);
    jpeg_create_compress(&jpeg);
    jpeg_stdio_dest(&jpeg, file);
    jpeg.image_width = width, jpeg.image_height = height, jpeg.input_components = components;
    jpeg.in_color_space = space;
    jpeg_set_defaults(&jpeg);
    jpeg_set_quality(&jpeg, 95, TRUE);
    if (progressive) jpeg_simple_progression(&jpeg);
    jpeg_start_compress(&jpeg, TRUE);
    while (jpeg.next_scanline < height) {
        auto row = const_cast<JSAMPROW>(&samples[std::size_t(jpeg.next_scanline) * width * std::size_t(components)]);
        jpeg_write_scanlines(&jpeg, &row, 1);
    }
    jpeg_finish_compress(&jpeg);
    jpeg_destroy_compress(&jpeg);
    std::fclose(file);
    return path;
}

std::string write_bytes(const std::string& name, const std::string& bytes) {
    const std::string path = scratch(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

/// A little-endian float32 .npy [rows, cols] in Fortran order when asked: `values` as stored.
std::string write_npy_f4(const std::string& name, int rows, int cols, bool fortran, const std::vector<float>& values) {
    std::string dict = "{'descr': '<f4', 'fortran_order': " + std::string(fortran ? "True" : "False") + ", 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
    dict.append(63 - (10 + dict.size()) % 64, ' ').push_back('\n');
    std::string bytes = "\x93NUMPY\x01";
    bytes.push_back('\0');
    bytes.push_back(char(dict.size() & 0xff)), bytes.push_back(char(dict.size() >> 8));
    bytes += dict;
    bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    return write_bytes(name, bytes);
}

std::vector<unsigned char> gradient(unsigned width, unsigned height, int components) {
    std::vector<unsigned char> s(std::size_t(width) * height * unsigned(components));
    for (std::size_t t = 0; t < s.size(); ++t) s[t] = static_cast<unsigned char>((t * 37 + t / 7 * 11) % 256);
    return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(png_palette_expands_to_rgb) {
    const std::string path = write_png_file("palette.png", {3, 1, 8, PNG_COLOR_TYPE_PALETTE, {{2, 0, 1}},
                                                             {{10, 20, 30}, {40, 50, 60}, {70, 80, 90}}});
    const auto img = read_image(path);
    BOOST_TEST(img.pixels.shape(2) == 3u);
    BOOST_TEST(img.bit_depth == 8);
    const std::vector<float> expected = {70, 80, 90, 10, 20, 30, 40, 50, 60};
    BOOST_TEST(std::vector<float>(img.pixels.begin(), img.pixels.end()) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(png_palette_with_transparency_gains_alpha) {
    const std::string path = write_png_file("palette_alpha.png", {2, 1, 8, PNG_COLOR_TYPE_PALETTE, {{1, 0}},
                                                                   {{10, 20, 30}, {40, 50, 60}}, {255, 7}});
    const auto img = read_image(path);
    const std::vector<float> expected = {40, 50, 60, 7, 10, 20, 30, 255};
    BOOST_TEST(std::vector<float>(img.pixels.begin(), img.pixels.end()) == expected, boost::test_tools::per_element());
    BOOST_TEST(nonlocal::tools::without_alpha(img).pixels.shape(2) == 3u);
}

BOOST_AUTO_TEST_CASE(png_grey_alpha_keeps_both_channels) {
    const std::string path = write_png_file("grey_alpha.png", {2, 1, 8, PNG_COLOR_TYPE_GRAY_ALPHA, {{9, 200, 250, 3}}});
    const auto img = read_image(path);
    const std::vector<float> expected = {9, 200, 250, 3};
    BOOST_TEST(img.pixels.shape(2) == 2u);
    BOOST_TEST(std::vector<float>(img.pixels.begin(), img.pixels.end()) == expected, boost::test_tools::per_element());
    const auto color = nonlocal::tools::without_alpha(img);
    BOOST_TEST(color.pixels.shape(2) == 1u);
    BOOST_TEST(color.pixels(0, 1, 0) == 250.0f);
}

BOOST_AUTO_TEST_CASE(png_one_bit_grey_expands_to_0_and_255) {
    // 1 0 1 1 0 0 0 0 | 1: nine pixels, the first row byte holding eight of them
    const std::string path = write_png_file("one_bit.png", {9, 1, 1, PNG_COLOR_TYPE_GRAY, {{0b10110000, 0b10000000}}});
    const auto img = read_image(path);
    const std::vector<float> expected = {255, 0, 255, 255, 0, 0, 0, 0, 255};
    BOOST_TEST(img.bit_depth == 8);
    BOOST_TEST(std::vector<float>(img.pixels.begin(), img.pixels.end()) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(png_16_bit_keeps_every_bit) {
    // 1, 256 and 65535, stored big-endian
    const std::string path = write_png_file("sixteen.png", {3, 1, 16, PNG_COLOR_TYPE_GRAY, {{0, 1, 1, 0, 255, 255}}});
    const auto img = read_image(path);
    const std::vector<float> expected = {1, 256, 65535};
    BOOST_TEST(img.bit_depth == 16);
    BOOST_TEST(std::vector<float>(img.pixels.begin(), img.pixels.end()) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(png_interlaced_reads_as_progressive_rows) {
    // 7 x 5 RGB, every Adam7 pass non-empty: the same pixels as the plain file
    png_spec spec{7, 5, 8, PNG_COLOR_TYPE_RGB, {}};
    const auto samples = gradient(7, 5, 3);
    for (unsigned r = 0; r < 5; ++r) spec.rows.emplace_back(samples.begin() + r * 21, samples.begin() + (r + 1) * 21);
    const auto plain = read_image(write_png_file("plain.png", spec));
    spec.interlaced = true;
    const auto interlaced = read_image(write_png_file("interlaced.png", spec));
    BOOST_TEST(interlaced.pixels == plain.pixels);
    BOOST_TEST(std::vector<float>(plain.pixels.begin(), plain.pixels.end()) ==
                   std::vector<float>(samples.begin(), samples.end()),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(png_one_by_one_and_one_by_n) {
    const auto dot = read_image(write_png_file("dot.png", {1, 1, 8, PNG_COLOR_TYPE_GRAY, {{42}}}));
    BOOST_TEST(dot.pixels.size() == 1u);
    BOOST_TEST(dot.pixels(0, 0, 0) == 42.0f);
    const auto column = read_image(write_png_file("column.png", {1, 3, 8, PNG_COLOR_TYPE_GRAY, {{1}, {2}, {3}}}));
    BOOST_TEST(column.pixels.shape(0) == 3u);
    BOOST_TEST(column.pixels.shape(1) == 1u);
    BOOST_TEST(column.pixels(2, 0, 0) == 3.0f);
}

BOOST_AUTO_TEST_CASE(jpeg_progressive_decodes_as_baseline) {
    // the same coefficients, sent in several scans: the same pixels
    const auto samples = gradient(19, 11, 3);
    const auto baseline = read_image(write_jpeg_file("baseline.jpg", 19, 11, 3, JCS_RGB, samples, false));
    const auto progressive = read_image(write_jpeg_file("progressive.jpg", 19, 11, 3, JCS_RGB, samples, true));
    BOOST_TEST(baseline.pixels.shape(2) == 3u);
    BOOST_TEST(progressive.pixels == baseline.pixels);
}

BOOST_AUTO_TEST_CASE(jpeg_grey_has_one_channel) {
    const std::vector<unsigned char> samples(16 * 8, 77);
    const auto img = read_image(write_jpeg_file("grey.jpg", 16, 8, 1, JCS_GRAYSCALE, samples, false));
    BOOST_TEST(img.pixels.shape(2) == 1u);
    for (float v : img.pixels) BOOST_TEST(std::abs(v - 77.0f) <= 1.0f);
}

BOOST_AUTO_TEST_CASE(jpeg_cmyk_becomes_rgb) {
    // Adobe's CMYK stores 255 - ink. Inks C 0, M 102, Y 204, K 51 (0, 40, 80, 20 %):
    // R = 255 (1 - 0)(1 - 0.2) = 204, G = 255 (0.6)(0.8) = 122.4, B = 255 (0.2)(0.8) = 40.8.
    std::vector<unsigned char> samples;
    for (int p = 0; p < 16 * 16; ++p) samples.insert(samples.end(), {255, 153, 51, 204});
    const auto img = read_image(write_jpeg_file("cmyk.jpg", 16, 16, 4, JCS_CMYK, samples, false));
    BOOST_TEST(img.pixels.shape(2) == 3u);
    const float expected[3] = {204.0f, 122.4f, 40.8f};
    for (std::size_t p = 0; p < 16 * 16; ++p)
        for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(std::abs(img.pixels.data()[3 * p + c] - expected[c]) <= 2.0f);
}

BOOST_AUTO_TEST_CASE(jpeg_truncated_is_refused) {
    const auto samples = gradient(32, 32, 3);
    const std::string whole = write_jpeg_file("whole.jpg", 32, 32, 3, JCS_RGB, samples, false);
    std::ifstream in(whole, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), {}};
    const std::string cut = write_bytes("cut.jpg", bytes.substr(0, bytes.size() * 2 / 3));
    BOOST_CHECK_EXCEPTION(read_image(cut), std::runtime_error, [&](const std::runtime_error& e) {
        return std::string(e.what()).find("cannot read " + cut + ": Premature end of JPEG file") != std::string::npos;
    });
}

BOOST_AUTO_TEST_CASE(format_is_told_by_content) {
    // a PNG named .jpg reads as the PNG it is; text named .png is refused in words
    const std::string png = write_png_file("named.jpg", {1, 1, 8, PNG_COLOR_TYPE_GRAY, {{5}}});
    BOOST_TEST(read_image(png).pixels(0, 0, 0) == 5.0f);
    const std::string text = write_bytes("text.png", "not an image");
    BOOST_CHECK_EXCEPTION(read_image(text), std::runtime_error, [&](const std::runtime_error& e) {
        return std::string(e.what()) == "cannot read " + text + ": not a PNG, JPEG or .npy file";
    });
}

BOOST_AUTO_TEST_CASE(size_limit_is_the_callers) {
    const std::string path = write_png_file("four.png", {2, 2, 8, PNG_COLOR_TYPE_GRAY, {{1, 2}, {3, 4}}});
    BOOST_TEST(read_image(path, 4).pixels.size() == 4u);
    BOOST_CHECK_EXCEPTION(read_image(path, 3), std::runtime_error, [&](const std::runtime_error& e) {
        return std::string(e.what()) ==
               path + ": 2 x 2 pixels, more than the 3 read_image reads (a depth task takes up to 256 bytes a pixel: 1 kB)";
    });
}

BOOST_AUTO_TEST_CASE(npy_fortran_order_is_transposed) {
    // [2, 3] holding 0 1 2 / 3 4 5 stored column by column: 0 3 1 4 2 5
    const auto img = read_image(write_npy_f4("fortran.npy", 2, 3, true, {0, 3, 1, 4, 2, 5}));
    BOOST_TEST(img.array);
    for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 3; ++x) BOOST_TEST(img.pixels(y, x, 0) == float(3 * y + x));
}

BOOST_AUTO_TEST_CASE(npy_nan_infinity_and_negative_values_are_kept) {
    // the reader reads; the tasks decide (a depth task takes NaN and 0 as missing)
    const float nan = std::nanf(""), inf = INFINITY;
    const auto img = read_image(write_npy_f4("special.npy", 1, 4, false, {nan, inf, -2.5f, 1.0f}));
    BOOST_TEST(std::isnan(img.pixels(0, 0, 0)));
    BOOST_TEST(img.pixels(0, 1, 0) == inf);
    BOOST_TEST(img.pixels(0, 2, 0) == -2.5f);
    BOOST_TEST(img.bit_depth == 32);
}

BOOST_AUTO_TEST_CASE(depth_maps_round_trip_through_png_and_npy) {
    // 16-bit PNGs keep whole values 0 .. 65535 (rounded, clamped beyond); .npy keeps floats.
    const xt::xtensor<float, 2> depth{{0, 1, 2.4f, 2.6f}, {1000, 40000, 65535, 70000}, {-3, 7, 8, 9}};
    const xt::xtensor<float, 2> stored{{0, 1, 2, 3}, {1000, 40000, 65535, 65535}, {0, 7, 8, 9}};
    nonlocal::io::write_depth(scratch("depth.png"), depth);
    BOOST_TEST((nonlocal::io::read_depth(scratch("depth.png")) == stored));
    BOOST_TEST(read_image(scratch("depth.png")).bit_depth == 16);
    nonlocal::io::write_depth(scratch("depth.npy"), depth);
    BOOST_TEST((nonlocal::io::read_depth(scratch("depth.npy")) == depth));
    // A colour image is no depth map; another extension is no file the writers write.
    xt::xtensor<float, 3> color = xt::zeros<float>({2, 2, 3});
    nonlocal::io::write_image(scratch("colour.png"), color);
    BOOST_CHECK_EXCEPTION(nonlocal::io::read_depth(scratch("colour.png")), std::runtime_error, [&](const std::runtime_error& e) {
        return std::string(e.what()) == scratch("colour.png") + ": a depth map has one channel, this image has 3";
    });
    BOOST_CHECK_EXCEPTION(nonlocal::io::write_depth(scratch("depth.tif"), depth), std::runtime_error, [&](const std::runtime_error& e) {
        return std::string(e.what()) == "cannot write " + scratch("depth.tif") + ": expected a name ending in .png or .npy";
    });
    BOOST_TEST(!fs::exists(scratch("depth.tif")));
    BOOST_TEST(!fs::exists(scratch("depth.png.partial")));
}
