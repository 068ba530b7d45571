// png_channels_equal A.png FIRST_A B.png FIRST_B COUNT: exits 0 when channels
// [FIRST_A, FIRST_A + COUNT) of A equal channels [FIRST_B, FIRST_B + COUNT) of B at every pixel
// (8 or 16 bit), for the tool tests that compare images of different channel counts.
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: png_channels_equal A.png FIRST_A B.png FIRST_B COUNT\n");
        return 2;
    }
    const int first_a = std::atoi(argv[2]), first_b = std::atoi(argv[4]), count = std::atoi(argv[5]);
    int wa = 0, ha = 0, ca = 0, wb = 0, hb = 0, cb = 0;
    const std::unique_ptr<stbi_us, void (*)(void*)> a(stbi_load_16(argv[1], &wa, &ha, &ca, 0), stbi_image_free),
        b(stbi_load_16(argv[3], &wb, &hb, &cb, 0), stbi_image_free);
    if (!a || !b) {
        std::fprintf(stderr, "png_channels_equal: cannot read %s\n", a ? argv[3] : argv[1]);
        return 2;
    }
    if (wa != wb || ha != hb || first_a + count > ca || first_b + count > cb) {
        std::fprintf(stderr, "png_channels_equal: %dx%dx%d and %dx%dx%d do not hold those channels\n", wa, ha, ca, wb,
                     hb, cb);
        return 1;
    }
    for (long i = 0; i < long(wa) * ha; ++i)
        for (int k = 0; k < count; ++k)
            if (a.get()[i * ca + first_a + k] != b.get()[i * cb + first_b + k]) {
                std::fprintf(stderr, "png_channels_equal: pixel %ld differs in channel %d\n", i, k);
                return 1;
            }
    return 0;
}
