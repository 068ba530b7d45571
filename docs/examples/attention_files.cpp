// docs/tutorials/attention.md, "From an image": an image's 16 x 16 patches as tokens, as a
// Vision Transformer cuts them, attend to each other: each patch becomes the softmax-weighted
// mean of the patches most like it, and the image is put together again from them.
//   docs_attention_files IN OUT
// The suite runs it on fruits.jpg where the reference data is present, on the demo's picture
// otherwise.
#include <nonlocal/attention.hpp>
#include <nonlocal/io/image.hpp>

#include <algorithm>
#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s IN OUT\n", argv[0]);
        return 2;
    }
    const nonlocal::io::image in = nonlocal::io::read_image(argv[1]);  // pixels [H, W, C]
    const float white = in.bit_depth == 16 ? 65535.f : 255.f;
    const std::size_t P = 16, C = in.pixels.shape(2), rows = in.pixels.shape(0) / P, cols = in.pixels.shape(1) / P;

    // tokens [rows * cols, P * P * C]: patch t = (r, c) flattened row by row, on 0..1
    xt::xtensor<float, 2> tokens = xt::empty<float>({rows * cols, P * P * C});
    for (std::size_t t = 0; t < rows * cols; ++t)
        for (std::size_t y = 0; y < P; ++y)
            for (std::size_t x = 0; x < P; ++x)
                for (std::size_t k = 0; k < C; ++k)
                    tokens(t, (y * P + x) * C + k) = in.pixels(t / cols * P + y, t % cols * P + x, k) / white;

    // softmax(q k^T / sqrt(d)) v with the patches as queries, keys and values
    const xt::xtensor<float, 2> mixed = nonlocal::attention(tokens, tokens, tokens);  // [rows * cols, P * P * C]

    xt::xtensor<float, 3> out = xt::empty<float>({rows * P, cols * P, C});
    for (std::size_t t = 0; t < rows * cols; ++t)
        for (std::size_t y = 0; y < P; ++y)
            for (std::size_t x = 0; x < P; ++x)
                for (std::size_t k = 0; k < C; ++k)
                    out(t / cols * P + y, t % cols * P + x, k) = 255.f * mixed(t, (y * P + x) * C + k);
    nonlocal::io::write_image(argv[2], out, 8);

    // Each output is a weighted mean of the patches: within their range.
    const bool within = *std::min_element(mixed.begin(), mixed.end()) >= *std::min_element(tokens.begin(), tokens.end()) - 1e-5f &&
                        *std::max_element(mixed.begin(), mixed.end()) <= *std::max_element(tokens.begin(), tokens.end()) + 1e-5f;
    std::printf("%s: %zu patches of %zu features attended; outputs within the patches' range: %s\n", argv[2],
                rows * cols, P * P * C, within ? "yes" : "no");
    return within ? 0 : 1;
}
