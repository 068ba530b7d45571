// npy_depths DEPTH.png F64.npy U16.npy GUIDE16.png GUIDE16.npy: the fixtures of the tool tests
// on arrays that numpy writes as often as float32 ones: the same depth (an 8-bit grey PNG) as
// a float64 and as a uint16 .npy, and a 16-bit PNG guide as a uint16 .npy [H, W, C].
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include <xtensor/xnpy.hpp>
#include <xtensor/xtensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: npy_depths DEPTH.png F64.npy U16.npy GUIDE16.png GUIDE16.npy\n");
        return 1;
    }
    int w = 0, h = 0, c = 0;
    unsigned char* depth = stbi_load(argv[1], &w, &h, &c, 1);
    if (!depth) {
        std::fprintf(stderr, "npy_depths: cannot read %s\n", argv[1]);
        return 1;
    }
    xt::xtensor<double, 2> wide = xt::empty<double>({std::size_t(h), std::size_t(w)});
    xt::xtensor<std::uint16_t, 2> integers = xt::empty<std::uint16_t>({std::size_t(h), std::size_t(w)});
    for (std::size_t i = 0; i < wide.size(); ++i) wide.data()[i] = integers.data()[i] = depth[i];
    stbi_image_free(depth);
    xt::dump_npy(argv[2], wide);
    xt::dump_npy(argv[3], integers);
    stbi_us* guide = stbi_load_16(argv[4], &w, &h, &c, 0);
    if (!guide) {
        std::fprintf(stderr, "npy_depths: cannot read %s\n", argv[4]);
        return 1;
    }
    xt::xtensor<std::uint16_t, 3> pixels = xt::empty<std::uint16_t>({std::size_t(h), std::size_t(w), std::size_t(c)});
    std::copy(guide, guide + pixels.size(), pixels.begin());
    stbi_image_free(guide);
    xt::dump_npy(argv[5], pixels);
    return 0;
}
