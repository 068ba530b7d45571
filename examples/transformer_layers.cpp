// A ViT-Tiny forward pass and a MobileViT transformer from nonlocal's nn layers: the
// model (nn::vision_transformer: its conv patch embedding, class token and position
// embedding, encoder layers, final norm and head) built from random weights; then
// MobileViT's transformer over a 32 x 32 feature map, its attention restricted by
// patch_group instead of unfolding the map.
//
//   transformer_layers [PREFIX ARCH]
//
// Weights are random (ViT's initialisation, N(0, 0.02)); with PREFIX and ARCH (vit_b_16, ...),
// the ViT is torchvision's, loaded strictly from its state_dict saved as PREFIX*.npy (see
// nn/checkpoint.hpp).
#include <nonlocal/nn.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <xtensor/xnorm.hpp>
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
    // ViT-Tiny/16: 224 x 224 RGB images in 14 x 14 patches of 16 x 16, E = 192, 3 heads.
    const std::size_t size = 224, patch = 16, grid = size / patch, E = 192, heads = 3, depth = 2;
    std::vector<nn::transformer_encoder_layer> layers;
    for (std::size_t l = 0; l < depth; ++l) layers.push_back(random_layer(E, heads));
    // The classification head: a linear layer, its W^T packed once when it is built.
    nn::linear_layer<float> head(random_weight(1000, E), xt::zeros<float>({1000}));
    const nn::vision_transformer vit =
        argc > 2 ? nn::load_torchvision(argv[1], nn::vit_config::named(argv[2]))
                 : nn::vision_transformer(
                       nn::conv2d<float>(xt::random::randn<float>({E, std::size_t(3), patch, patch}, 0.f, 0.02f),
                                         xt::zeros<float>({E}), {.stride = patch}),
                       xt::zeros<float>({E}), random_weight(grid * grid + 1, E), std::move(layers),
                       nn::layer_norm(xt::ones<float>({E}), xt::zeros<float>({E}), 1e-6), std::move(head));
    const std::size_t side = vit.image_size();
    const xt::xtensor<float, 4> images = xt::random::rand<float>({std::size_t(1), std::size_t(3), side, side});
    const auto t0 = std::chrono::steady_clock::now();
    const auto logits = vit(images);   // [1, classes]
    std::printf("ViT, %zu layers of %zu features on a %zu x %zu image in %.1f ms: %zu logits, the largest for class "
                "%zu\n",
                vit.depth(), vit.embed_dim(), side, side, seconds_since(t0) * 1e3, logits.shape(1),
                std::size_t(xt::argmax(logits)()));
    // The same model in bfloat16: the linear maps' weights rounded once, their inputs as the
    // products pack them, the sums in float.
    nn::vision_transformer in_bf16 = vit;
    in_bf16.to(nonlocal::precision::bf16);
    const auto t2 = std::chrono::steady_clock::now();
    const auto logits_bf16 = in_bf16(images);
    const double bf16_ms = seconds_since(t2) * 1e3;
    const double bf16_error = double(xt::norm_l2(logits_bf16 - logits)() / xt::norm_l2(logits)());
    std::printf("The same in bfloat16 in %.1f ms (%s): logits within %.2g of float's (relative L2)\n", bf16_ms,
                nonlocal::simd::native_bf16<nonlocal::default_arch> ? "vdpbf16ps" : "float FMAs, no AVX512-BF16",
                bf16_error);

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
    return largest_difference < 1e-4f && bf16_error < 2e-2 ? 0 : 1;
}
