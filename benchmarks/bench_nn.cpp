// The networks of the nn layers and their convolutions, against the FMA peak measured with
// each benchmark: ViT-B/16 and MobileViT-S forward passes, one MobileViT block, the non-local
// block at the paper's res4 placement, and 2-D convolutions by each algorithm of
// nn::conv2d (the image's columns gathered into the GEMM's panels, or rows of taps for
// depthwise ones). Random weights of the real models' shapes.
//
//   build/release/benchmarks/bench_nn
//
// Counters: GFLOPS counts the multiply-adds of the convolutions, projections and attention
// products as 2 flops each (2 Cout (Cin / groups) kh kw Ho Wo per convolution, 2 n in out per
// linear layer, 4 n m d per attention of n queries over m keys of width d); peak_pct relates
// it to the FMA peak of one core (times the threads, for runs on more than one), measured
// for 0.1 s right after each benchmark's timed loop (peak_GFLOPS).
#include <nonlocal/nonlocal.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <random>

#include "fma_peak.hpp"

namespace {

using nonlocal::bench::report_flops;

/// Weights drawn from N(0, scale^2), the same for a seed.
template <std::size_t N>
xt::xtensor<float, N> randn(const std::array<std::size_t, N>& shape, unsigned seed, float scale = 0.05f) {
    std::mt19937 engine(seed);
    std::normal_distribution<float> normal(0.f, scale);
    xt::xtensor<float, N> t = xt::empty<float>(shape);
    for (float& v : t) v = normal(engine);
    return t;
}

/// Builds layers of random weights and counts their flops for the input sizes they see.
struct network_builder {
    double flops = 0;
    unsigned seed = 1;

    /// The first of `count` seeds no layer has used.
    unsigned take(unsigned count) { return (seed += count) - count; }

    /// A k x k convolution (padding as timm pads) with a bias, on a map of S x S; S becomes Ho.
    nonlocal::nn::conv2d<float> conv(std::size_t cin, std::size_t cout, std::size_t k, std::size_t& S,
                                     std::size_t stride = 1, std::size_t groups = 1,
                                     nonlocal::simd::activation act = nonlocal::simd::activation::silu) {
        const unsigned at = take(2);
        nonlocal::nn::conv2d<float> c(randn<4>({cout, cin / groups, k, k}, at, 0.1f), randn<1>({cout}, at + 1),
                                      {.stride = stride, .padding = (stride - 1 + k - 1) / 2, .groups = groups}, act);
        S = c.output_size(S, S).h;
        flops += 2.0 * cout * (cin / groups) * k * k * S * S;
        return c;
    }
    nonlocal::nn::linear_layer<float> linear(std::size_t in, std::size_t out, std::size_t rows) {
        flops += 2.0 * rows * in * out;
        const unsigned at = take(2);
        return nonlocal::nn::linear_layer<float>(randn<2>({out, in}, at), randn<1>({out}, at + 1));
    }
    /// A norm-first encoder layer over `tokens` tokens attending in groups of `group`.
    nonlocal::nn::transformer_encoder_layer layer(std::size_t E, std::size_t heads, std::size_t hidden, std::size_t tokens,
                                                  std::size_t group, nonlocal::simd::activation act) {
        flops += 2.0 * tokens * E * (4 * E + 2 * hidden) + 4.0 * tokens * group * E;
        const unsigned at = take(8);
        return {nonlocal::nn::multi_head_attention(heads, randn<2>({3 * E, E}, at), randn<1>({3 * E}, at + 1),
                                                   randn<2>({E, E}, at + 2), randn<1>({E}, at + 3)),
                nonlocal::nn::feed_forward(randn<2>({hidden, E}, at + 4), randn<1>({hidden}, at + 5),
                                           randn<2>({E, hidden}, at + 6), randn<1>({E}, at + 7), act),
                norm(E), norm(E), true};
    }
    static nonlocal::nn::layer_norm norm(std::size_t E, double eps = 1e-5) {
        return {xt::ones<float>({E}), xt::zeros<float>({E}), eps};
    }
    /// An inverted residual cin -> cout, 3 x 3 depthwise, expansion `ratio`.
    nonlocal::nn::inverted_residual mv2(std::size_t cin, std::size_t cout, std::size_t stride, std::size_t ratio,
                                        std::size_t& S) {
        const std::size_t mid = cin * ratio;
        auto expand = conv(cin, mid, 1, S);
        auto depthwise = conv(mid, mid, 3, S, stride, mid);
        return {std::move(expand), std::move(depthwise), conv(mid, cout, 1, S, 1, 1, nonlocal::simd::activation::identity)};
    }
    /// MobileViT's block of C channels, transformer width D, `depth` layers (MLP 2 D), 2 x 2 patches.
    nonlocal::nn::mobilevit_block mobilevit_block(std::size_t C, std::size_t D, std::size_t depth, std::size_t& S) {
        auto kxk = conv(C, C, 3, S);
        auto one = conv(C, D, 1, S, 1, 1, nonlocal::simd::activation::identity);
        std::vector<nonlocal::nn::transformer_encoder_layer> layers;
        for (std::size_t i = 0; i < depth; ++i)
            layers.push_back(layer(D, 4, 2 * D, S * S, S * S / 4, nonlocal::simd::activation::silu));
        auto proj = conv(D, C, 1, S);
        auto fusion = conv(2 * C, C, 3, S);
        return {std::move(kxk), std::move(one), std::move(layers), norm(D), std::move(proj), std::move(fusion), 2};
    }
};

/// x [1, Cin, S, S], a k x k kernel to Cout channels in `groups` groups, stride, padding k / 2.
void conv(benchmark::State& state, nonlocal::nn::conv_algorithm algorithm) {
    const std::size_t Cin = state.range(0), Cout = state.range(1), S = state.range(2), k = state.range(3);
    const std::size_t stride = state.range(4), groups = state.range(5);
    const nonlocal::nn::conv2d<float> layer(xt::ones<float>({Cout, Cin / groups, k, k}) * 0.01f,
                                            xt::zeros<float>({Cout}),
                                            {.stride = stride, .padding = k / 2, .groups = groups, .algorithm = algorithm});
    const xt::xtensor<float, 4> x = xt::ones<float>({std::size_t(1), Cin, S, S});
    const auto out = layer.output_size(S, S);
    for (auto _ : state) {
        auto y = layer(x);
        benchmark::DoNotOptimize(y.data());
    }
    report_flops(state, 2.0 * Cout * (Cin / groups) * k * k * out.h * out.w);
}
void conv_gemm(benchmark::State& state) { conv(state, nonlocal::nn::conv_algorithm::gemm); }
void conv_direct(benchmark::State& state) { conv(state, nonlocal::nn::conv_algorithm::direct); }

// Cin, Cout, size, kernel, stride, groups: ResNet's 3 x 3 and 1 x 1 at 56 x 56 and its
// stride-2 3 x 3 into the next stage, MobileViT-S's stem and local representation (3 x 3,
// then 1 x 1 to the transformer's width) at 32 x 32, an MV2 block's expansion at 128 x 128
// and projection at 64 x 64 (inputs of 2 and 4 MiB), and depthwise 3 x 3 (MobileNetV2 / MV2
// blocks) at stride 1 and 2.
BENCHMARK(conv_gemm)
    ->ArgNames({"Cin", "Cout", "S", "k", "stride", "groups"})
    ->Args({64, 64, 56, 3, 1, 1})
    ->Args({64, 128, 56, 3, 2, 1})
    ->Args({3, 16, 256, 3, 2, 1})
    ->Args({64, 256, 56, 1, 1, 1})
    ->Args({96, 96, 32, 3, 1, 1})
    ->Args({96, 144, 32, 1, 1, 1})
    ->Args({32, 128, 128, 1, 1, 1})
    ->Args({256, 64, 64, 1, 1, 1})
    ->Args({256, 256, 28, 3, 1, 256})
    ->Args({256, 256, 56, 3, 2, 256})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(conv_direct)
    ->ArgNames({"Cin", "Cout", "S", "k", "stride", "groups"})
    ->Args({256, 256, 28, 3, 1, 256})
    ->Args({256, 256, 56, 3, 2, 256})
    ->Unit(benchmark::kMillisecond);

/// ViT-B/16 on one 224 x 224 image: patches, 12 layers, the norm and the 1000-class head, its
/// linear maps in precision `p`.
void vit_b16(benchmark::State& state, nonlocal::precision p) {
    const std::size_t E = 768, L = 197, depth = 12;
    network_builder b;
    std::size_t S = 224;
    const unsigned at = b.take(2);
    nonlocal::nn::conv2d<float> patches(randn<4>({E, 3, 16, 16}, at), randn<1>({E}, at + 1), {.stride = 16});
    S = 14;
    b.flops += 2.0 * E * 3 * 256 * S * S;
    std::vector<nonlocal::nn::transformer_encoder_layer> layers;
    for (std::size_t i = 0; i < depth; ++i) layers.push_back(b.layer(E, 12, 4 * E, L, L, nonlocal::simd::activation::gelu));
    auto head = b.linear(E, 1000, 1);
    nonlocal::nn::vision_transformer vit(std::move(patches), randn<1>({E}, 90), randn<2>({L, E}, 91), std::move(layers),
                                         network_builder::norm(E, 1e-6), std::move(head));
    vit.to(p);
    const auto images = randn<4>({1, 3, 224, 224}, 92, 1.0f);
    const int threads = int(state.range(0));
    for (auto _ : state) {
        auto logits = vit(nonlocal::execution::parallel_policy{threads}, images);
        benchmark::DoNotOptimize(logits.data());
    }
    report_flops(state, b.flops, threads);
}
void vit_b16_forward(benchmark::State& state) { vit_b16(state, nonlocal::precision::native); }
BENCHMARK(vit_b16_forward)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
/// The same in bfloat16 (`vision_transformer::to(precision::bf16)`): peak_pct still relates
/// the flops to the float FMA peak, which bfloat16 products may pass.
void vit_b16_forward_bf16(benchmark::State& state) { vit_b16(state, nonlocal::precision::bf16); }
BENCHMARK(vit_b16_forward_bf16)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

/// MobileViT-S (timm's mobilevit_s) on a batch of 256 x 256 images. A batch of 4 holds
/// maps of 32 MB, which the C library maps afresh on every call: the network keeps its
/// maps in `buffer`s, so that a batch costs no more per image than one image. On two
/// threads a batch of 4 is shared out image by image.
void mobilevit_s_forward(benchmark::State& state) {
    network_builder b;
    std::size_t S = 256;
    auto stem = b.conv(3, 16, 3, S, 2);
    std::vector<nonlocal::nn::mobilevit::block> blocks;
    blocks.emplace_back(b.mv2(16, 32, 1, 4, S));
    blocks.emplace_back(b.mv2(32, 64, 2, 4, S));
    blocks.emplace_back(b.mv2(64, 64, 1, 4, S));
    blocks.emplace_back(b.mv2(64, 64, 1, 4, S));
    for (const auto& [in, C, D, depth] : {std::array<std::size_t, 4>{64, 96, 144, 2}, std::array<std::size_t, 4>{96, 128, 192, 4},
                                         std::array<std::size_t, 4>{128, 160, 240, 3}}) {
        blocks.emplace_back(b.mv2(in, C, 2, 4, S));
        blocks.emplace_back(b.mobilevit_block(C, D, depth, S));
    }
    auto final_conv = b.conv(160, 640, 1, S);
    auto head = b.linear(640, 1000, 1);
    const nonlocal::nn::mobilevit net(std::move(stem), std::move(blocks), std::move(final_conv), std::move(head));
    const int threads = int(state.range(0));
    const std::size_t batch = state.range(1);
    const auto images = randn<4>({batch, 3, 256, 256}, 93, 1.0f);
    for (auto _ : state) {
        auto logits = net(nonlocal::execution::parallel_policy{threads}, images);
        benchmark::DoNotOptimize(logits.data());
    }
    report_flops(state, b.flops * double(batch), threads);
}
BENCHMARK(mobilevit_s_forward)
    ->ArgNames({"threads", "batch"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({1, 4})
    ->Args({2, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// MobileViT-S's first MobileViT block: [1, 96, 32, 32], D = 144, two layers.
void mobilevit_block(benchmark::State& state) {
    network_builder b;
    std::size_t S = 32;
    const auto block = b.mobilevit_block(96, 144, 2, S);
    const auto x = randn<4>({1, 96, 32, 32}, 94, 1.0f);
    for (auto _ : state) {
        auto y = block(x);
        benchmark::DoNotOptimize(y.data());
    }
    report_flops(state, b.flops);
}
BENCHMARK(mobilevit_block)->Unit(benchmark::kMillisecond);

/// The non-local block (embedded Gaussian) at res4 of a ResNet-50: [1, 1024, 14, 14],
/// e = 512, with phi and g sub-sampled by 2 x 2 max pooling or not.
void nonlocal_block_2d(benchmark::State& state) {
    const bool sub_sample = state.range(0) != 0;
    const std::size_t C = 1024, e = 512, S = 14, n = S * S, m = sub_sample ? n / 4 : n;
    const auto pointwise = [&](std::size_t in, std::size_t out, unsigned seed) {
        return nonlocal::nn::conv2d<float>(randn<4>({out, in, 1, 1}, seed, 0.03f), randn<1>({out}, seed + 1));
    };
    const nonlocal::nn::nonlocal_feature_block block(nonlocal::nn::nonlocal_form::embedded_gaussian, pointwise(C, e, 1),
                                                     pointwise(C, e, 3), pointwise(C, e, 5), pointwise(e, C, 7), sub_sample);
    const auto x = randn<4>({1, C, S, S}, 95, 1.0f);
    for (auto _ : state) {
        auto z = block(x);
        benchmark::DoNotOptimize(z.data());
    }
    report_flops(state, 2.0 * n * C * e * 4 + 4.0 * n * m * e);
}
BENCHMARK(nonlocal_block_2d)->ArgNames({"sub_sample"})->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
    std::printf("measured fp32 FMA peak, one core, %s: %.1f GFLOP/s\n", xsimd::default_arch::name(),
                nonlocal::bench::measure_fma_peak_gflops());
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
