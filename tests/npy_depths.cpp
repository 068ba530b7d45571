// npy_depths DEPTH.png F64.npy U16.npy: the fixtures of the tool tests on depth arrays that
// numpy writes as often as float32 ones: the same depth (an 8-bit grey PNG) as a float64 and
// as a uint16 .npy.
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include <xtensor/xnpy.hpp>
#include <xtensor/xtensor.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: npy_depths DEPTH.png F64.npy U16.npy\n");
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
    return 0;
}
