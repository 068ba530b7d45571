// The code blocks of docs/tutorials/convolutions.md, compiled and run by the test suite
// (docs_example_convolutions): a convolution with its batch norm folded in, a depthwise
// convolution, pooling. Exits 0 when the results have the shapes and values expected.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <cstdio>

#include <xtensor/xrandom.hpp>

int main() {
    namespace nn = nonlocal::nn;
    using nonlocal::simd::activation;
    xt::xtensor<float, 4> image = xt::random::randn<float>({2, 16, 32, 32});

    // nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.SiLU(): the norm
    // folded into the convolution's weights, SiLU applied as the convolution stores.
    const nn::conv2d<float> conv(xt::random::randn<float>({32, 16, 3, 3}) * 0.1f, {}, {.padding = 1},
                                 activation::silu);
    const nn::batch_norm2d<float> norm(xt::ones<float>({32}), xt::zeros<float>({32}),   // weight, bias
                                       xt::zeros<float>({32}), xt::ones<float>({32}));  // running mean, var
    const nn::conv2d<float> stem = nn::fold(conv, norm);
    auto features = stem(image);                                        // [2, 32, 32, 32]

    // A depthwise 3 x 3 convolution at stride 2 (groups = channels) on two threads.
    const nn::conv2d<float> depthwise(xt::random::randn<float>({32, 1, 3, 3}) * 0.1f, xt::zeros<float>({32}),
                                      {.stride = 2, .padding = 1, .groups = 32}, activation::relu6);
    auto reduced = depthwise(nonlocal::execution::parallel_policy{2}, features);   // [2, 32, 16, 16]

    // Pooling as PyTorch's: 3 x 3 max pooling at stride 2, and global average pooling.
    auto pooled = nn::max_pool2d(features, {.kernel = 3, .stride = 2, .padding = 1});   // [2, 32, 16, 16]
    auto global = nn::adaptive_avg_pool2d(reduced, 1);                                  // [2, 32, 1, 1]

    std::printf("stem [%zu, %zu, %zu, %zu], depthwise [%zu, %zu, %zu, %zu], pooled [%zu, %zu, %zu, %zu], "
                "global [%zu, %zu, %zu, %zu]\n",
                features.shape(0), features.shape(1), features.shape(2), features.shape(3), reduced.shape(0),
                reduced.shape(1), reduced.shape(2), reduced.shape(3), pooled.shape(0), pooled.shape(1),
                pooled.shape(2), pooled.shape(3), global.shape(0), global.shape(1), global.shape(2), global.shape(3));
    // The norm above is the identity but for its eps (1e-5): the folded stem gives what the
    // convolution alone gives, scaled by 1 / sqrt(1 + 1e-5).
    const auto plain = nn::conv2d<float>(conv.weight(), {}, {.padding = 1})(image);
    const float x = plain(1, 7, 5, 9) / std::sqrt(1 + 1e-5f);
    const bool folded = std::abs(features(1, 7, 5, 9) - x / (1 + std::exp(-x))) < 1e-5f;
    const bool shapes = features.shape(1) == 32 && reduced.shape(2) == 16 && pooled.shape(3) == 16 &&
                        global.shape(2) == 1;
    return folded && shapes && xt::all(xt::greater_equal(reduced, 0.0f)) && xt::all(xt::less_equal(reduced, 6.0f))
               ? 0
               : 1;
}
