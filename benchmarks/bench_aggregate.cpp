// weighted_aggregate on representative compositions, one thread: dense attention
// (the tiled kernel), 2-D neighborhood attention and 1-D sliding-window attention (the
// tiled window kernel), a Jacobi sweep of the AR system as an aggregate and as the system's
// own step (the stencil kernel), and non-local means on materialised patch features (the
// gather kernel; `nlm_denoise` and bench_nlm use the running-sum kernel instead).
//
//   build/release/benchmarks/bench_aggregate
//
// Counters: GFLOPS counts 2 flops per multiply-add of the logits (d per pair) and of the
// value update (dv per pair), i.e. 2 (d + dv) per admissible pair: the flops the
// composition needs, not the ones a kernel spends on masked pairs; workspace_KiB is the
// kernel's working memory per thread.
#include <nonlocal/nonlocal.hpp>

#include <benchmark/benchmark.h>

#include <xtensor/xadapt.hpp>
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

/// The pairs (i, j) a neighborhood admits among n queries and keys.
template <class Nb>
double admissible_pairs(const Nb& nb, std::size_t n) {
    double pairs = 0;
    for (std::size_t i = 0; i < n; ++i) nb.for_each_range(i, nonlocal::extents{n, n}, [&](nonlocal::key_range r) { pairs += double(r.count); });
    return pairs;
}

/// softmax(q k^T / sqrt(d)) v over `nb` for [heads, n, d] inputs (one slice when heads = 1).
template <class Nb>
void run_attention(benchmark::State& state, std::size_t heads, std::size_t n, std::size_t d, const Nb& nb) {
    xt::random::seed(1);
    const xt::xtensor<float, 3> q = xt::random::randn<float>({heads, n, d}), k = xt::random::randn<float>({heads, n, d}),
                                v = xt::random::randn<float>({heads, n, d});
    xt::xtensor<float, 3> out = xt::empty<float>({heads, n, d});
    for (auto _ : state) {
        nonlocal::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{}, nb, nonlocal::softmax{}, out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_flops(state, double(heads) * admissible_pairs(nb, n), d, d);
    const std::size_t lanes = nonlocal::simd_width<float>;
    state.counters["workspace_KiB"] =
        double(nonlocal::kernel::tiled_applies<nonlocal::scaled_dot_product, Nb, nonlocal::softmax>
                   ? nonlocal::kernel::tiled_workspace_bytes<float>(d, d, lanes)
                   : nonlocal::kernel::tiled_window_workspace_bytes<float>(d, d, lanes)) / 1024;
}

void attention_dense(benchmark::State& state) {
    run_attention(state, 1, state.range(0), state.range(1), nonlocal::dense{});
}
BENCHMARK(attention_dense)->ArgNames({"n", "d"})->Args({4096, 32})->Args({4096, 64})->Unit(benchmark::kMillisecond);

// d = 32 per head; a NAT-Tiny stage: 56 x 56 tokens, 4 heads.
void attention_window2d(benchmark::State& state) {
    const std::size_t side = state.range(0), kernel = state.range(1), heads = state.range(2);
    run_attention(state, heads, side * side, 32, nonlocal::window2d{side, side, kernel});
}
BENCHMARK(attention_window2d)->ArgNames({"side", "kernel", "heads"})
    ->Args({64, 7, 1})->Args({64, 13, 1})->Args({64, 21, 1})->Args({56, 7, 4})->Unit(benchmark::kMillisecond);

// A sliding-window language model's attention: d = 64, each token sees the 512 before it.
void attention_window1d(benchmark::State& state) {
    const std::size_t n = state.range(0), radius = state.range(1);
    run_attention(state, 1, n, 64, nonlocal::window1d{radius, 1, state.range(2) != 0});
}
BENCHMARK(attention_window1d)->ArgNames({"n", "radius", "causal"})->Args({8192, 512, 1})->Unit(benchmark::kMillisecond);

/// A colour-guided AR system of 1282 x 1110 pixels (Aloe's size; a synthetic guide of smooth
/// regions and noise, so that the benchmark needs no data), 30 % of them observed.
struct stencil_problem {
    std::size_t H = 1110, W = 1282, n = H * W;
    nonlocal::grid_stencil stencil;
    xt::xtensor<float, 1> alpha;
    xt::xtensor<float, 2> xhat, x;
    nonlocal::ar_system<float> A;

    explicit stencil_problem(int connectivity)
        : stencil{H, W, connectivity}, alpha(xt::zeros<float>({n})), xhat(xt::zeros<float>({n, std::size_t(1)})),
          x(randn(n, 1, 3) * 10.f + 100.f), A(system(connectivity)) {}

    nonlocal::ar_system<float> system(int connectivity) {
        xt::random::seed(5);
        xt::xtensor<float, 3> guide = xt::random::randn<float>({H, W, std::size_t(3)}) * 8.f;
        for (std::size_t r = 0; r < H; ++r)
            for (std::size_t c = 0; c < W; ++c)
                for (std::size_t ch = 0; ch < 3; ++ch) guide(r, c, ch) += float((r / 97 + c / 61 + ch) % 4) * 60.f;
        const xt::xtensor<float, 2> u = xt::random::rand<float>({H, W});
        xt::xtensor<float, 2> depth = xt::zeros<float>({H, W}), confidence = xt::zeros<float>({H, W});
        for (std::size_t i = 0; i < n; ++i)
            if (u.data()[i] < 0.3f)
                confidence.data()[i] = alpha(i) = 1.f, depth.data()[i] = xhat(i, 0) = float(100 + (i / W) % 50);
        return nonlocal::ar_system<float>(guide, nonlocal::grid_stencil{H, W, connectivity},
                                          nonlocal::color_weights(H, W, 3, 20.0), depth, confidence, 1e-3);
    }
};

void set_pixels(benchmark::State& state, std::size_t n) {
    state.counters["Mpix_per_s"] = benchmark::Counter(double(n) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}

// One Jacobi sweep as weighted_aggregate: edge_weights over the grid_stencil with sum_with_data,
// reading the system's own alpha and b (= alpha xhat, alpha being 0 or 1) and writing a buffer
// as jacobi_step does, so that both read and write the same memory.
void stencil_aggregate(benchmark::State& state) {
    const stencil_problem p(int(state.range(0)));
    const std::array<std::size_t, 1> pixels{p.n};
    const std::array<std::size_t, 2> column{p.n, 1};
    const auto alpha = xt::adapt(p.A.alpha().data(), p.n, xt::no_ownership(), pixels);
    const auto target = xt::adapt(p.A.rhs().data(), p.n, xt::no_ownership(), column);
    const nonlocal::sum_with_data data(alpha, target);
    const auto edges = p.A.edges();
    nonlocal::buffer<float> y(p.n);
    auto out = xt::adapt(y.data(), p.n, xt::no_ownership(), column);
    for (auto _ : state) {
        nonlocal::weighted_aggregate(p.x, p.x, p.x, edges, p.stencil, data, out);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    set_pixels(state, p.n);
}
BENCHMARK(stencil_aggregate)->ArgNames({"connectivity"})->Arg(8)->Unit(benchmark::kMillisecond);

// The same sweep as the AR system's own step.
void ar_jacobi_step(benchmark::State& state) {
    const stencil_problem p(int(state.range(0)));
    nonlocal::buffer<float> y(p.n);
    for (auto _ : state) {
        p.A.jacobi_step(nonlocal::execution::seq, p.A.rhs().data(), p.x.data(), y.data());
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    set_pixels(state, p.n);
}
BENCHMARK(ar_jacobi_step)->ArgNames({"connectivity"})->Arg(8)->Unit(benchmark::kMillisecond);

// A Jacobi sweep written as users compose it, gaussian_distance on the guide's colours over the
// stencil: with q = k the stencil kernel (weights computed in the call), with k a copy of q the
// gather kernel (kernel:0), the same result.
void distance_stencil(benchmark::State& state) {
    const stencil_problem p(8);
    xt::random::seed(7);
    const xt::xtensor<float, 2> guide = xt::random::rand<float>({p.n, std::size_t(3)}) * 4.f, copy = guide;
    const nonlocal::sum_with_data data(p.alpha, p.xhat);
    xt::xtensor<float, 2> out = xt::empty<float>({p.n, std::size_t(1)});
    const bool stencil_kernel = state.range(0) != 0;
    for (auto _ : state) {
        nonlocal::weighted_aggregate(guide, stencil_kernel ? guide : copy, p.x, nonlocal::gaussian_distance{1.0}, p.stencil,
                                     data, out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_pixels(state, p.n);
}
BENCHMARK(distance_stencil)->ArgNames({"kernel"})->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

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
