// A ViT-Tiny forward pass and a MobileViT transformer from nonlocal's nn layers:
// patch embedding (nn::linear over flattened 16 x 16 patches), class token and
// position embedding, encoder layers (nn::transformer_encoder_layer, pre-norm, GELU)
// the final norm and the classification head (nn::linear_layer); then MobileViT's transformer over a 32 x 32 feature map, its
// attention restricted by patch_group instead of unfolding the map.
//
//   transformer_layers [PREFIX]
//
// Weights are random (ViT's initialisation, N(0, 0.02)); with PREFIX, the first
// ViT layer is loaded from PyTorch files PREFIX*.npy instead (see nn/transformer.hpp).
#include <nonlocal/nonlocal.hpp>

#include <chrono>
#include <cstdio>
#include <string>

#include <xtensor/xrandom.hpp>
#include <xtensor/xsort.hpp>
#include <xtensor/xview.hpp>

namespace nn = nonlocal::nn;

namespace {
xt::xtensor<float, 2> random_weight(std::size_t rows, std::size_t cols) {
    return xt::random::randn<float>({rows, cols}, 0.f, 0.02f);
}

/// An encoder layer of E features, h heads and an MLP of 4 E, norm first, GELU.
nn::transformer_encoder_layer random_layer(std::size_t E, std::size_t h) {
    const std::size_t F = 4 * E;
    return {nn::multi_head_attention(h, random_weight(3 * E, E), xt::zeros<float>({3 * E}), random_weight(E, E),
                                     xt::zeros<float>({E})),
            nn::feed_forward(random_weight(F, E), xt::zeros<float>({F}), random_weight(E, F), xt::zeros<float>({E}),
                             nn::activation::gelu),
            nn::layer_norm(xt::ones<float>({E}), xt::zeros<float>({E})),
            nn::layer_norm(xt::ones<float>({E}), xt::zeros<float>({E})), /*norm_first=*/true};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
    xt::random::seed(7);
    // ViT-Tiny/16: a 224 x 224 RGB image in 14 x 14 patches of 16 x 16 x 3 = 768 values.
    const std::size_t size = 224, patch = 16, grid = size / patch, E = 192, heads = 3, depth = 2;
    const xt::xtensor<float, 3> image = xt::random::rand<float>({size, size, std::size_t(3)});
    xt::xtensor<float, 2> patches = xt::empty<float>({grid * grid, patch * patch * 3});
    for (std::size_t r = 0; r < grid; ++r)
        for (std::size_t c = 0; c < grid; ++c) {
            const xt::xtensor<float, 3> p =
                xt::view(image, xt::range(r * patch, (r + 1) * patch), xt::range(c * patch, (c + 1) * patch), xt::all());
            std::copy(p.begin(), p.end(), &patches(r * grid + c, 0));
        }
    const auto t0 = std::chrono::steady_clock::now();
    const auto embedded = nn::linear(patches, random_weight(E, patch * patch * 3), xt::zeros<float>({E}));
    xt::xtensor<float, 2> tokens = xt::empty<float>({grid * grid + 1, E});   // class token first
    xt::view(tokens, 0) = xt::view(random_weight(1, E), 0);
    xt::view(tokens, xt::range(1, grid * grid + 1)) = embedded;
    tokens += random_weight(grid * grid + 1, E);   // position embedding
    for (std::size_t l = 0; l < depth; ++l) {
        const auto layer = l == 0 && argc > 1
                               ? nn::transformer_encoder_layer::load_npy(argv[1], heads, {nn::activation::gelu, true})
                               : random_layer(E, heads);
        tokens = layer(tokens);
    }
    const nn::layer_norm final_norm(xt::ones<float>({E}), xt::zeros<float>({E}));
    const xt::xtensor<float, 1> class_token = xt::view(final_norm(tokens), 0);
    // The classification head: a linear layer, its W^T packed once when it is built.
    const nn::linear_layer<float> head(random_weight(1000, E), xt::zeros<float>({1000}));
    const auto logits = head(xt::xtensor<float, 2>(xt::view(class_token, xt::newaxis(), xt::all())));
    std::printf("ViT-Tiny/16, %zu layers: %zu tokens of %zu features in %.1f ms; class token [%zu], first values "
                "%.4f %.4f; %zu logits, the largest for class %zu\n",
                depth, tokens.shape(0), E, seconds_since(t0) * 1e3, class_token.size(), class_token(0), class_token(1),
                logits.shape(1), std::size_t(xt::argmax(logits)()));

    // MobileViT: a 32 x 32 map of 96 features, 2 x 2 patches. Its transformer unfolds the map
    // into 4 sequences of 256 patches, one per offset in the patch; patch_group attends within
    // each offset directly, and the norms and the MLP act on every pixel alone.
    const std::size_t S = 32, C = 96;
    const auto mobile = random_layer(C, 4);
    const xt::xtensor<float, 2> map = xt::random::randn<float>({S * S, C});
    const auto t1 = std::chrono::steady_clock::now();
    const auto folded = mobile(map, nonlocal::patch_group{S, S, 2, 2});
    const double mobile_ms = seconds_since(t1) * 1e3;
    // The same by unfolding: [4, 256, C], offset (a, b) of patch (I, K) = pixel (2 I + a, 2 K + b).
    xt::xtensor<float, 3> unfolded = xt::empty<float>({std::size_t(4), S * S / 4, C});
    const auto pixel = [&](std::size_t offset, std::size_t p) {
        return (2 * (p / (S / 2)) + offset / 2) * S + 2 * (p % (S / 2)) + offset % 2;
    };
    for (std::size_t o = 0; o < 4; ++o)
        for (std::size_t p = 0; p < S * S / 4; ++p) xt::view(unfolded, o, p) = xt::view(map, pixel(o, p));
    const auto attended = mobile(unfolded);
    float largest_difference = 0;
    for (std::size_t o = 0; o < 4; ++o)
        for (std::size_t p = 0; p < S * S / 4; ++p)
            for (std::size_t c = 0; c < C; ++c)
                largest_difference = std::max(largest_difference, std::abs(attended(o, p, c) - folded(pixel(o, p), c)));
    std::printf("MobileViT transformer on a %zu x %zu map of %zu features: %.1f ms; unfold / attend / fold differs by at most %.2g\n",
                S, S, C, mobile_ms, largest_difference);
    return largest_difference < 1e-4f ? 0 : 1;
}
