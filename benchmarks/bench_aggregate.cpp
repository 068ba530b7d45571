// weighted_aggregate on representative compositions, one thread: dense
// attention (the tiled kernel), 2-D neighborhood attention and non-local means
// on materialised patch features (both the gather kernel; `nlm_denoise` and
// bench_nlm use the running-sum kernel instead).
//
//   build/release/benchmarks/bench_aggregate
//
// Counters: GFLOPS counts 2 flops per multiply-add of the logits (d per pair)
// and of the value update (dv per pair), i.e. 2 (d + dv) per admissible pair.
#include <nonlocal/nonlocal.hpp>

#include <benchmark/benchmark.h>

#include <xtensor/xrandom.hpp>

namespace {

xt::xtensor<float, 2> randn(std::size_t rows, std::size_t cols, unsigned seed) {
    xt::random::seed(seed);
    return xt::random::randn<float>({rows, cols});
}

void set_flops(benchmark::State& state, double pairs, std::size_t d, std::size_t dv) {
    state.counters["GFLOPS"] =
        benchmark::Counter(2.0 * pairs * double(d + dv) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void attention_dense(benchmark::State& state) {
    const std::size_t n = state.range(0), d = state.range(1);
    const auto q = randn(n, d, 1), k = randn(n, d, 2), v = randn(n, d, 3);
    xt::xtensor<float, 2> out = xt::empty<float>({n, d});
    for (auto _ : state) {
        nonlocal::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{}, nonlocal::dense{}, nonlocal::softmax{}, out);
        benchmark::DoNotOptimize(out.data());
    }
    set_flops(state, double(n) * n, d, d);
}
BENCHMARK(attention_dense)->ArgNames({"n", "d"})->Args({512, 64})->Args({1024, 64})->Unit(benchmark::kMillisecond);

void attention_window2d(benchmark::State& state) {
    const std::size_t side = state.range(0), kernel = state.range(1), d = 32, n = side * side;
    const auto q = randn(n, d, 1), k = randn(n, d, 2), v = randn(n, d, 3);
    xt::xtensor<float, 2> out = xt::empty<float>({n, d});
    for (auto _ : state) {
        nonlocal::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{},
                                     nonlocal::window2d{side, side, kernel}, nonlocal::softmax{}, out);
        benchmark::DoNotOptimize(out.data());
    }
    set_flops(state, double(n) * kernel * kernel, d, d);
}
BENCHMARK(attention_window2d)->ArgNames({"side", "kernel"})->Args({64, 7})->Unit(benchmark::kMillisecond);

void nlm_composition(benchmark::State& state) {
    const std::size_t side = state.range(0), patch = state.range(1), search = state.range(2), n = side * side;
    const auto image = randn(side, side, 4);
    const auto features = nonlocal::patch_features(image, patch / 2);
    xt::xtensor<float, 2> values = xt::empty<float>({n, std::size_t(1)});
    std::copy(image.begin(), image.end(), values.begin());
    xt::xtensor<float, 2> out = xt::empty<float>({n, std::size_t(1)});
    for (auto _ : state) {
        nonlocal::weighted_aggregate(features, features, values, nonlocal::gaussian_distance{5.0},
                                     nonlocal::window2d{side, side, search}, nonlocal::sum{}, out);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["Mpix_per_s"] = benchmark::Counter(double(n) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(nlm_composition)->ArgNames({"size", "patch", "search"})->Args({256, 7, 21})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
