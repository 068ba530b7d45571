// The tools' image reader on any bytes: a file starting with .npy's magic is read as .npy,
// anything else as PNG or JPEG as its first bytes say. Whatever it reads must come back as a
// whole image of a known bit depth; whatever it refuses, it refuses with std::runtime_error.
// The limit is 2^22 pixels rather than the tools' 2^28: the refusal above `max_image_pixels`
// is a hostile case of the test suite, and decoding a quarter of a gigapixel is too slow for
// one fuzzing step.
#include "../../tools/image_io.hpp"
#include "fuzz_support.hpp"

#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const bool npy = size >= 6 && std::memcmp(data, "\x93NUMPY", 6) == 0;
    const std::string path = nonlocal::fuzz::scratch_file(npy ? "image.npy" : "image.img", data, size);
    nonlocal::tools::image img;
    if (!nonlocal::fuzz::completed<std::runtime_error>([&] { img = nonlocal::tools::read_image(path, std::size_t(1) << 22); })) return 0;
    const auto& shape = img.pixels.shape();
    nonlocal::fuzz::require(img.pixels.size() == shape[0] * shape[1] * shape[2], "the pixels fill the image");
    nonlocal::fuzz::require(img.bit_depth == 8 || img.bit_depth == 16 || img.bit_depth == 32, "a known bit depth");
    nonlocal::fuzz::require(img.array == npy, "arrays come from .npy files only");
    const auto color = nonlocal::tools::without_alpha(img);
    nonlocal::fuzz::require(color.pixels.shape(0) == shape[0] && color.pixels.shape(1) == shape[1],
                            "dropping the alpha keeps the size");
    return 0;
}
