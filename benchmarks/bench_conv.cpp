// 2-D convolutions of the shapes of CNNs and MobileViT, one thread, against the FMA peak
// measured at start-up, by each algorithm of nn::conv2d: the image's columns gathered
// into the GEMM's panels (gemm) and, for depthwise convolutions, rows of taps (direct).
//
//   build/release/benchmarks/bench_conv
//
// Counters: GFLOPS counts 2 Cout (Cin / groups) kh kw Ho Wo flops per image; peak_pct
// relates it to the FMA peak.
#include <nonlocal/nonlocal.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>

#include "fma_peak.hpp"

namespace {

double fma_peak = 0;

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
    const double flops = 2.0 * Cout * (Cin / groups) * k * k * out.h * out.w;
    state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["peak_pct"] =
        benchmark::Counter(flops * 1e-9 / fma_peak * 100, benchmark::Counter::kIsIterationInvariantRate);
}
void conv_gemm(benchmark::State& state) { conv(state, nonlocal::nn::conv_algorithm::gemm); }
void conv_direct(benchmark::State& state) { conv(state, nonlocal::nn::conv_algorithm::direct); }

// Cin, Cout, size, kernel, stride, groups: ResNet's 3 x 3 and 1 x 1 at 56 x 56, MobileViT-S's
// local representation (3 x 3, then 1 x 1 to the transformer's width) at 32 x 32, and depthwise
// 3 x 3 (MobileNetV2 / MV2 blocks) at stride 1 and 2.
BENCHMARK(conv_gemm)
    ->ArgNames({"Cin", "Cout", "S", "k", "stride", "groups"})
    ->Args({64, 64, 56, 3, 1, 1})
    ->Args({64, 256, 56, 1, 1, 1})
    ->Args({96, 96, 32, 3, 1, 1})
    ->Args({96, 144, 32, 1, 1, 1})
    ->Args({256, 256, 28, 3, 1, 256})
    ->Args({256, 256, 56, 3, 2, 256})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(conv_direct)
    ->ArgNames({"Cin", "Cout", "S", "k", "stride", "groups"})
    ->Args({256, 256, 28, 3, 1, 256})
    ->Args({256, 256, 56, 3, 2, 256})
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
    fma_peak = nonlocal::bench::measure_fma_peak_gflops();
    std::printf("measured fp32 FMA peak, one core, %s: %.1f GFLOP/s\n", xsimd::default_arch::name(), fma_peak);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
