// colour_guides GREY.png RGB.png RGBA.png: the fixtures of the tool tests on guides with an
// alpha channel. From a grey PNG, an RGB image whose channels differ (g, 255 - g, g / 2) and
// the same image with an alpha channel that varies from pixel to pixel, so that a tool that
// used the alpha as colour would refine the two differently.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: colour_guides GREY.png RGB.png RGBA.png\n");
        return 1;
    }
    int w = 0, h = 0, c = 0;
    unsigned char* grey = stbi_load(argv[1], &w, &h, &c, 1);
    if (!grey) {
        std::fprintf(stderr, "colour_guides: cannot read %s\n", argv[1]);
        return 1;
    }
    const std::size_t n = std::size_t(w) * std::size_t(h);
    std::vector<unsigned char> rgb(3 * n), rgba(4 * n);
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned char g = grey[i];
        const unsigned char color[3] = {g, static_cast<unsigned char>(255 - g), static_cast<unsigned char>(g / 2)};
        for (int k = 0; k < 3; ++k) rgb[3 * i + k] = rgba[4 * i + k] = color[k];
        rgba[4 * i + 3] = static_cast<unsigned char>((i * 37) % 256);
    }
    stbi_image_free(grey);
    const bool written = stbi_write_png(argv[2], w, h, 3, rgb.data(), 3 * w) && stbi_write_png(argv[3], w, h, 4, rgba.data(), 4 * w);
    if (!written) std::fprintf(stderr, "colour_guides: cannot write %s or %s\n", argv[2], argv[3]);
    return written ? 0 : 1;
}
