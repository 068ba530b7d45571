// Fused attention on the CPU, one head, against the measured FMA peak and,
// when a CBLAS is found, against the composition users write today:
// sgemm (S = Q K^T / sqrt(d)) + vectorised row softmax + sgemm (O = P V).
//
//   build/release/benchmarks/bench_attention
//
// Counters: GFLOPS counts 4 n^2 d flops per head for dense attention (2 n^2 d
// for q k^T and 2 n^2 d for P v; half for causal); peak_pct relates it to the
// FMA peak of one core (times the threads, for runs on more than one), measured for 0.1 s
// right after each benchmark's timed loop (peak_GFLOPS); workspace_KiB is the kernel's working memory
// per thread (independent of n); the peer's is the n x n matrix.
#include <nonlocal/nonlocal.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <vector>

#include <xtensor/xrandom.hpp>

#include "fma_peak.hpp"

#if NONLOCAL_HAVE_CBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

namespace {

xt::xtensor<float, 2> randn(std::size_t rows, std::size_t cols, unsigned seed) {
    xt::random::seed(seed);
    return xt::random::randn<float>({rows, cols});
}

/// GFLOPS, peak_pct (of `threads` cores, against the FMA peak measured right after the timed
/// loop, peak_GFLOPS) and the kernel's workspace.
void report(benchmark::State& state, double flops, double workspace_bytes, int threads = 1) {
    nonlocal::bench::report_flops(state, flops, threads);
    state.counters["workspace_KiB"] = workspace_bytes / 1024;
}

template <class Nb, class Policy>
void run_attention(benchmark::State& state, Nb nb, Policy policy, double flop_fraction) {
    const std::size_t n = state.range(0), d = state.range(1);
    const auto q = randn(n, d, 1), k = randn(n, d, 2), v = randn(n, d, 3);
    xt::xtensor<float, 2> out = xt::empty<float>({n, d});
    for (auto _ : state) {
        nonlocal::weighted_aggregate(policy, q, k, v, nonlocal::scaled_dot_product{}, nb, nonlocal::softmax{}, out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    report(state, flop_fraction * 4.0 * n * n * d,
           double(nonlocal::kernel::tiled_workspace_bytes<float>(d, d, nonlocal::simd_width<float>)),
           nonlocal::detail::thread_count(policy));
}

void attention_dense(benchmark::State& state) { run_attention(state, nonlocal::dense{}, nonlocal::execution::seq, 1.0); }
void attention_causal(benchmark::State& state) { run_attention(state, nonlocal::causal{}, nonlocal::execution::seq, 0.5); }
void attention_dense_par(benchmark::State& state) {
    run_attention(state, nonlocal::dense{}, nonlocal::execution::parallel_policy{2}, 1.0);
}

BENCHMARK(attention_dense)->ArgNames({"n", "d"})->ArgsProduct({{512, 1024, 2048, 4096}, {64}})->Unit(benchmark::kMillisecond);
// MobileViT-S's head dimensions (36, 48, 60) on a patch group of 256 tokens and on 1024.
BENCHMARK(attention_dense)->ArgNames({"n", "d"})->ArgsProduct({{256, 1024}, {36, 48, 60}})->Unit(benchmark::kMillisecond);

// Masks: GFLOPS counts the pairs the kernel computes, so that peak_pct compares with
// attention_dense's. The last quarter of the keys padded (a key_mask: its tiles skipped), a
// random half of the pairs masked (an element_mask: every tile masked), a bias per pair.
void attention_key_padding(benchmark::State& state) {
    const std::size_t n = state.range(0);
    xt::xtensor<bool, 1> keep = xt::arange<std::size_t>(n) < 3 * n / 4;
    run_attention(state, nonlocal::key_mask(keep), nonlocal::execution::seq, 0.75);
}
void attention_element_mask(benchmark::State& state) {
    const std::size_t n = state.range(0);
    xt::random::seed(7);
    const xt::xtensor<bool, 2> mask = xt::random::rand<double>({n, n}) < 0.5;
    run_attention(state, nonlocal::element_mask(mask), nonlocal::execution::seq, 1.0);
}
void attention_pair_bias(benchmark::State& state) {
    const std::size_t n = state.range(0), d = state.range(1);
    const auto q = randn(n, d, 1), k = randn(n, d, 2), v = randn(n, d, 3), bias = randn(n, n, 4);
    const nonlocal::with_pair_bias similarity(nonlocal::scaled_dot_product{}, bias);
    xt::xtensor<float, 2> out = xt::empty<float>({n, d});
    for (auto _ : state) {
        nonlocal::weighted_aggregate(q, k, v, similarity, nonlocal::dense{}, nonlocal::softmax{}, out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    report(state, 4.0 * n * n * d, double(nonlocal::kernel::tiled_workspace_bytes<float>(d, d, nonlocal::simd_width<float>)));
}
BENCHMARK(attention_key_padding)->ArgNames({"n", "d"})->ArgsProduct({{1024, 4096}, {64}})->Unit(benchmark::kMillisecond);
BENCHMARK(attention_element_mask)->ArgNames({"n", "d"})->ArgsProduct({{1024, 4096}, {64}})->Unit(benchmark::kMillisecond);
BENCHMARK(attention_pair_bias)->ArgNames({"n", "d"})->ArgsProduct({{1024, 4096}, {64}})->Unit(benchmark::kMillisecond);
BENCHMARK(attention_causal)->ArgNames({"n", "d"})->ArgsProduct({{512, 1024, 2048, 4096}, {64}})->Unit(benchmark::kMillisecond);
BENCHMARK(attention_dense_par)->ArgNames({"n", "d"})->Args({4096, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

void run_mha(benchmark::State& state, const nonlocal::nn::attention_options& options) {
    const std::size_t n = state.range(0), E = state.range(1), h = state.range(2);
    const nonlocal::nn::multi_head_attention m(h, randn(3 * E, E, 4) * 0.05f, xt::zeros<float>({3 * E}),
                                               randn(E, E, 5) * 0.05f, xt::zeros<float>({E}));
    xt::xtensor<float, 3> x = xt::empty<float>({std::size_t(1), n, E});
    const auto x2 = randn(n, E, 6);
    std::copy(x2.begin(), x2.end(), x.begin());
    for (auto _ : state) {
        auto y = m.forward(x, x, x, options);
        benchmark::DoNotOptimize(y.output.data());
    }
    // 4 projections of 2 n E^2 flops and attention's 4 n^2 E over all heads.
    report(state, 8.0 * n * E * E + 4.0 * n * n * E,
           double(nonlocal::kernel::tiled_workspace_bytes<float>(E / h, E / h, nonlocal::simd_width<float>)));
}
void mha(benchmark::State& state) { run_mha(state, {}); }
/// The same with the attention weights, averaged over the heads: what their second pass costs
/// (flops counted as for mha).
void mha_need_weights(benchmark::State& state) {
    nonlocal::nn::attention_options options;
    options.need_weights = true;
    run_mha(state, options);
}
BENCHMARK(mha)->ArgNames({"n", "E", "h"})->Args({1024, 512, 8})->Unit(benchmark::kMillisecond);
BENCHMARK(mha_need_weights)->ArgNames({"n", "E", "h"})->Args({1024, 512, 8})->Unit(benchmark::kMillisecond);

/// nn::linear_layer: x [n, in] W^T + b for W [out, in], the projections of attention layers
/// and MLPs, W^T packed once when the layer is built.
void linear(benchmark::State& state) {
    const std::size_t n = state.range(0), in = state.range(1), out = state.range(2);
    const auto x = randn(n, in, 9);
    const nonlocal::nn::linear_layer<float> layer(randn(out, in, 10), xt::zeros<float>({out}));
    for (auto _ : state) {
        auto y = layer(x);
        benchmark::DoNotOptimize(y.data());
    }
    report(state, 2.0 * n * in * out, 0);
}
/// nn::linear(x, W): the weight packed for each product, as a one-off projection does.
void linear_packing_each_call(benchmark::State& state) {
    const std::size_t n = state.range(0), in = state.range(1), out = state.range(2);
    const auto x = randn(n, in, 9), w = randn(out, in, 10);
    for (auto _ : state) {
        auto y = nonlocal::nn::linear(x, w);
        benchmark::DoNotOptimize(y.data());
    }
    report(state, 2.0 * n * in * out, 0);
}
// ViT-B/16's MLP (197 tokens, 768 -> 3072 -> 768) and QKV projection, and a longer sequence.
#define NONLOCAL_LINEAR_SHAPES ->ArgNames({"n", "in", "out"})->Args({197, 768, 3072})->Args({197, 3072, 768}) \
    ->Args({197, 768, 2304})->Args({1024, 512, 1536})->Unit(benchmark::kMillisecond)
BENCHMARK(linear) NONLOCAL_LINEAR_SHAPES;
BENCHMARK(linear_packing_each_call) NONLOCAL_LINEAR_SHAPES;

/// A Transformer encoder layer (norm first, GELU) of L tokens, E features, h heads and an MLP of
/// 4E; each query sees `keys` keys of the neighborhood.
template <class Nb, class Policy = nonlocal::execution::sequenced_policy>
void run_encoder_layer(benchmark::State& state, std::size_t L, Nb nb, std::size_t keys, Policy policy = {}) {
    const std::size_t E = state.range(1), h = state.range(2), F = 4 * E;
    const nonlocal::nn::transformer_encoder_layer layer(
        nonlocal::nn::multi_head_attention(h, randn(3 * E, E, 4) * 0.05f, xt::zeros<float>({3 * E}),
                                           randn(E, E, 5) * 0.05f, xt::zeros<float>({E})),
        nonlocal::nn::feed_forward(randn(F, E, 6) * 0.05f, xt::zeros<float>({F}), randn(E, F, 7) * 0.05f,
                                   xt::zeros<float>({E}), nonlocal::nn::activation::gelu),
        nonlocal::nn::layer_norm(xt::ones<float>({E}), xt::zeros<float>({E})),
        nonlocal::nn::layer_norm(xt::ones<float>({E}), xt::zeros<float>({E})), true);
    xt::xtensor<float, 3> x = xt::empty<float>({std::size_t(1), L, E});
    const auto x2 = randn(L, E, 8);
    std::copy(x2.begin(), x2.end(), x.begin());
    for (auto _ : state) {
        auto y = layer(policy, x, nb);
        benchmark::DoNotOptimize(y.data());
    }
    // The projections' 8 L E^2, attention's 4 L keys E and the MLP's 2 x 2 L E F flops.
    report(state, 8.0 * L * E * E + 4.0 * L * keys * E + 4.0 * L * E * F,
           double(nonlocal::kernel::tiled_workspace_bytes<float>(E / h, E / h, nonlocal::simd_width<float>)),
           nonlocal::detail::thread_count(policy));
}
/// ViT: L = 197 tokens (196 patches of a 224 x 224 image and the class token), dense attention.
void vit_encoder_layer(benchmark::State& state) {
    const std::size_t L = state.range(0);
    run_encoder_layer(state, L, nonlocal::dense{}, L);
}
/// The same on two threads (projections, attention and MLP).
void vit_encoder_layer_par(benchmark::State& state) {
    const std::size_t L = state.range(0);
    run_encoder_layer(state, L, nonlocal::dense{}, L, nonlocal::execution::parallel_policy{2});
}
/// MobileViT's transformer on an S x S feature map in 2 x 2 patches: the pixels at one offset of
/// every patch attend to each other (patch_group), S^2 / 4 keys each.
void mobilevit_encoder_layer(benchmark::State& state) {
    const std::size_t S = state.range(0);
    run_encoder_layer(state, S * S, nonlocal::patch_group{S, S, 2, 2}, S * S / 4);
}
/// ViT-B/16's encoder: 12 layers (L = 197, E = 768, 12 heads, MLP 3072), each with its
/// own weights, as the whole model runs them (the patch embedding and the head aside).
void vit_b16_encoder(benchmark::State& state) {
    const std::size_t L = 197, E = 768, h = 12, F = 4 * E, depth = 12;
    std::vector<nonlocal::nn::transformer_encoder_layer> layers;
    for (std::size_t l = 0; l < depth; ++l)
        layers.emplace_back(nonlocal::nn::multi_head_attention(h, randn(3 * E, E, unsigned(20 + l)) * 0.05f,
                                                               xt::zeros<float>({3 * E}),
                                                               randn(E, E, unsigned(40 + l)) * 0.05f, xt::zeros<float>({E})),
                            nonlocal::nn::feed_forward(randn(F, E, unsigned(60 + l)) * 0.05f, xt::zeros<float>({F}),
                                                       randn(E, F, unsigned(80 + l)) * 0.05f, xt::zeros<float>({E}),
                                                       nonlocal::nn::activation::gelu),
                            nonlocal::nn::layer_norm(xt::ones<float>({E}), xt::zeros<float>({E})),
                            nonlocal::nn::layer_norm(xt::ones<float>({E}), xt::zeros<float>({E})), true);
    xt::xtensor<float, 3> x = xt::empty<float>({std::size_t(1), L, E});
    const auto x2 = randn(L, E, 8);
    std::copy(x2.begin(), x2.end(), x.begin());
    const nonlocal::execution::parallel_policy policy{int(state.range(0))};
    for (auto _ : state) {
        xt::xtensor<float, 3> y = x;
        for (const auto& layer : layers) y = layer(policy, y, nonlocal::dense{});
        benchmark::DoNotOptimize(y.data());
    }
    report(state, double(depth) * (8.0 * L * E * E + 4.0 * L * L * E + 4.0 * L * E * F), 0, policy.threads);
}
BENCHMARK(vit_b16_encoder)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
// ViT-S/16 and ViT-B/16; MobileViT-S's first transformer (32 x 32 map, E = 144, 4 heads).
BENCHMARK(vit_encoder_layer)->ArgNames({"L", "E", "h"})->Args({197, 384, 6})->Args({197, 768, 12})->Unit(benchmark::kMillisecond);
BENCHMARK(vit_encoder_layer_par)->ArgNames({"L", "E", "h"})->Args({197, 768, 12})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(mobilevit_encoder_layer)->ArgNames({"S", "E", "h"})->Args({32, 144, 4})->Unit(benchmark::kMillisecond);

#if NONLOCAL_HAVE_CBLAS
/// The peer: S = scale Q K^T (sgemm), softmax of each row (xsimd exp), O = P V (sgemm).
void peer_blas_attention(benchmark::State& state) {
    openblas_set_num_threads(1);
    const std::size_t n = state.range(0), d = state.range(1);
    const auto q = randn(n, d, 1), k = randn(n, d, 2), v = randn(n, d, 3);
    std::vector<float> s(n * n);
    xt::xtensor<float, 2> out = xt::empty<float>({n, d});
    using batch = xsimd::batch<float>;
    constexpr std::size_t W = batch::size;
    const float scale = 1.f / std::sqrt(float(d));
    for (auto _ : state) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(n), int(n), int(d), scale, q.data(), int(d),
                    k.data(), int(d), 0.f, s.data(), int(n));
        for (std::size_t i = 0; i < n; ++i) {
            float* row = &s[i * n];
            const float mx = nonlocal::simd::max_element(row, n);
            batch total(0.f);
            std::size_t j = 0;
            for (; j + W <= n; j += W) {
                const batch e = xsimd::exp(batch::load_unaligned(row + j) - batch(mx));
                e.store_unaligned(row + j);
                total += e;
            }
            float sum = xsimd::hadd(total);
            for (; j < n; ++j) sum += (row[j] = std::exp(row[j] - mx));
            nonlocal::simd::scale(1.f / sum, row, n);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(d), int(n), 1.f, s.data(), int(n),
                    v.data(), int(d), 0.f, out.data(), int(d));
        benchmark::DoNotOptimize(out.data());
    }
    report(state, 4.0 * n * n * d, double(n) * n * sizeof(float));
}
BENCHMARK(peer_blas_attention)->ArgNames({"n", "d"})->ArgsProduct({{512, 1024, 2048, 4096}, {64}})->Unit(benchmark::kMillisecond);

/// The peer of `linear`: cblas_sgemm(x, W^T), one thread.
void peer_blas_linear(benchmark::State& state) {
    openblas_set_num_threads(1);
    const std::size_t n = state.range(0), in = state.range(1), out = state.range(2);
    const auto x = randn(n, in, 9), w = randn(out, in, 10);
    for (auto _ : state) {
        xt::xtensor<float, 2> y = xt::empty<float>({n, out});
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(n), int(out), int(in), 1.f, x.data(), int(in),
                    w.data(), int(in), 0.f, y.data(), int(out));
        benchmark::DoNotOptimize(y.data());
    }
    report(state, 2.0 * n * in * out, 0);
}
BENCHMARK(peer_blas_linear) NONLOCAL_LINEAR_SHAPES;
#endif

}  // namespace

int main(int argc, char** argv) {
    std::printf("measured fp32 FMA peak, one core, %s: %.1f GFLOP/s\n", xsimd::default_arch::name(),
                nonlocal::bench::measure_fma_peak_gflops());
#if NONLOCAL_HAVE_CBLAS
    openblas_set_num_threads(1);
#else
    std::printf("no CBLAS found: the peer_blas_attention and peer_blas_linear benchmarks are skipped\n");
#endif
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
