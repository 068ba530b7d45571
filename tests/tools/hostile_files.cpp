// hostile_files DIR GOOD.png: writes the broken, odd and hostile files of the hostile-input
// tests into DIR, from one good PNG: truncated, corrupt and mislabelled images, PNG headers that
// declare enormous or empty sizes, .npy files of every kind the readers must refuse, a symlink
// loop, and batch lists with CRLF endings, a byte-order mark and broken lines.
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<unsigned char> read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}
void write(const std::string& path, const std::vector<unsigned char>& bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}
void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

/// The PNG with its IHDR's width and height replaced (the chunk's CRC made right again).
std::vector<unsigned char> with_size(std::vector<unsigned char> png, std::uint32_t width, std::uint32_t height) {
    const auto put = [&](std::size_t at, std::uint32_t v) {
        for (int b = 0; b < 4; ++b) png[at + std::size_t(b)] = static_cast<unsigned char>(v >> (24 - 8 * b));
    };
    put(16, width), put(20, height);   // IHDR data starts at byte 16, after the signature, length and type
    put(29, std::uint32_t(crc32(0, &png[12], 17)));
    return png;
}

/// A .npy file: the header dictionary `dict` padded as numpy pads it, then `data` zero bytes
/// (or the bytes `payload`).
void npy_of_dict(const std::string& path, std::string dict, std::size_t data, const std::string& payload = "") {
    dict.append(63 - (10 + dict.size()) % 64, ' ').push_back('\n');
    std::string bytes = "\x93NUMPY\x01";
    bytes.push_back('\0');
    bytes.push_back(char(dict.size() & 0xff)), bytes.push_back(char(dict.size() >> 8));
    write(path, bytes + dict + (payload.empty() ? std::string(data, '\0') : payload));
}

/// A float32 .npy [192, 256] (the demo's size) of ones but `value` at pixel (r, c), little-endian.
void ones_but(const std::string& path, std::size_t r, std::size_t c, float value) {
    std::vector<float> values(192 * 256, 1.0f);
    values[r * 256 + c] = value;
    std::string payload(values.size() * 4, '\0');
    for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &values[i], 4);
        for (int b = 0; b < 4; ++b) payload[4 * i + std::size_t(b)] = char((bits >> (8 * b)) & 0xff);
    }
    npy_of_dict(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (192, 256), }", 0, payload);
}

/// A .npy file of a well-formed header.
void npy(const std::string& path, const std::string& descr, const std::string& shape, bool fortran, std::size_t data) {
    npy_of_dict(path, "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }", data);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: hostile_files DIR GOOD.png\n");
        return 2;
    }
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir);
    const std::vector<unsigned char> good = read(argv[2]);
    if (good.size() < 100) {
        std::fprintf(stderr, "hostile_files: cannot read %s\n", argv[2]);
        return 2;
    }
    write(dir + "/truncated.png", std::vector<unsigned char>(good.begin(), good.begin() + 120));
    std::vector<unsigned char> corrupt = good;
    for (std::size_t i = 60; i < corrupt.size() - 20; i += 7) corrupt[i] ^= 0x5a;
    write(dir + "/corrupt.png", corrupt);
    std::vector<unsigned char> magic = good;
    magic[1] = 'X';
    write(dir + "/magic.png", magic);
    write(dir + "/empty.png", std::string());
    write(dir + "/text.png", std::string("this is not an image\n"));
    write(dir + "/huge.png", with_size(good, 100000, 100000));
    write(dir + "/zero.png", with_size(good, 0, 0));
    write(dir + "/jpeg_truncated.jpg", std::string("\xff\xd8\xff\xe0\x00\x10JFIF\x00", 11));
    npy(dir + "/short.npy", "<f4", "(192, 256)", false, 64);
    npy(dir + "/huge.npy", "<f4", "(100000, 100000)", false, 0);
    npy(dir + "/overflow.npy", "<f8", "(4294967296, 4294967296, 4294967296)", false, 0);
    npy(dir + "/big_endian.npy", ">f4", "(192, 256)", false, 192 * 256 * 4);
    npy(dir + "/bool.npy", "|b1", "(192, 256)", false, 192 * 256);
    npy(dir + "/object.npy", "|O", "(192, 256)", false, 192 * 256 * 8);
    npy(dir + "/complex.npy", "<c8", "(192, 256)", false, 192 * 256 * 8);
    npy(dir + "/rank1.npy", "<f4", "(49152,)", false, 49152 * 4);
    npy(dir + "/rank4.npy", "<f4", "(1, 1, 192, 256)", false, 49152 * 4);
    npy(dir + "/small.npy", "<f4", "(16, 16)", false, 16 * 16 * 4);
    ones_but(dir + "/negative_confidence.npy", 5, 7, -0.25f);
    ones_but(dir + "/nan_confidence.npy", 100, 200, std::nanf(""));
    npy(dir + "/garbage_shape.npy", "<f4", "(192, x)", false, 64);
    npy_of_dict(dir + "/no_colon.npy", "{'descr': '<f8', 'fortran_order': False, 'shape'> (3, 4), }", 96);
    npy_of_dict(dir + "/no_order.npy", "{'descr': '<f8', 'shape': (3, 4), }", 96);
    write(dir + "/magic.npy", std::string("\x93NUMPX\x01\x00\x10\x00{}              \n", 26));
    std::error_code ignored;
    std::filesystem::remove(dir + "/loop.png", ignored);
    std::filesystem::create_symlink("loop.png", dir + "/loop.png");
    std::filesystem::create_directories(dir + "/a_directory.png");
    write(dir + "/a_file", std::string("x"));
    // Batch lists (GOOD stands for the good image, made the guide and the depth by the tests).
    const std::string g = argv[2];
    write(dir + "/crlf.txt", "# guide depth out\r\n" + g + " " + g + " " + dir + "/crlf_out.npy\r\n\r\n");
    write(dir + "/bom.txt", "\xef\xbb\xbf" + g + " " + g + " " + dir + "/bom_out.npy\n");
    write(dir + "/unclosed.txt", "\"" + g + " " + g + " " + dir + "/never.npy\n");
    write(dir + "/two_fields.txt", g + " " + dir + "/never.npy\n");
    write(dir + "/duplicate.txt", g + " " + g + " " + dir + "/dup.npy\n" + g + " " + g + " " + dir + "/./dup.npy\n");
    write(dir + "/overwrites.txt", g + " " + dir + "/depth_copy.png " + dir + "/depth_copy.png\n");
    write(dir + "/comments_only.txt", "# nothing here\n\n   \n");
    write(dir + "/bad_extension.txt", g + " " + g + " " + dir + "/never.tif\n");
    write(dir + "/not_numbers.csv", "1,2\n3,four\n");
    return 0;
}
