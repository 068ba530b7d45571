// docs/tutorials/non-local-means.md, "From files to a result": an image read from a file (PNG,
// JPEG or .npy; grey or colour), denoised by non-local means for a given noise level, and
// written as an 8-bit PNG.
//   docs_denoise_files IN OUT SIGMA
// The suite runs it on baboon.jpg where the reference data is present, on the demo's noisy
// picture otherwise, and checks its output byte for byte against nonlocal-denoise's.
#include <nonlocal/filter.hpp>
#include <nonlocal/io/image.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s IN OUT SIGMA\n", argv[0]);
        return 2;
    }
    const nonlocal::io::image in = nonlocal::io::read_image(argv[1]);  // pixels [H, W, C], 0..255 for 8 bit
    nonlocal::nlm_options o;  // 7 x 7 patches, 21 x 21 search windows, h = 0.65 sigma
    o.sigma = std::stod(argv[3]);  // the noise's standard deviation, in the pixels' units
    const xt::xtensor<float, 3> denoised = nonlocal::nlm_denoise(in.pixels, o);
    nonlocal::io::write_image(argv[2], denoised, 8);  // rounded and clamped to 0..255
    std::printf("%s: %zu x %zu x %zu, %d bit, denoised for sigma %g\n", argv[2], in.pixels.shape(0),
                in.pixels.shape(1), in.pixels.shape(2), in.bit_depth, o.sigma);
    return 0;
}
