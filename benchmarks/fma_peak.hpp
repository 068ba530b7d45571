#pragma once
// The single-core fp32 FMA peak of this machine, measured: 12 independent
// accumulator chains of vector FMAs (enough for 2 FMA ports x 4-cycle latency,
// with margin), run for `seconds` (0.3 s unless told); and a benchmark's flops
// against it.
#include <chrono>
#include <cstddef>

#include <benchmark/benchmark.h>

#include <xsimd/xsimd.hpp>

namespace nonlocal::bench {

template <class Arch = xsimd::default_arch>
double measure_fma_peak_gflops(double seconds_to_run = 0.3) {
    using batch = xsimd::batch<float, Arch>;
    constexpr std::size_t chains = 12, inner = 1000;
    batch acc[chains];
    for (std::size_t c = 0; c < chains; ++c) acc[c] = batch(float(c) * 1e-3f);
    const batch a(0.999999f), b(1e-7f);
    std::size_t rounds = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double seconds = 0;
    do {
        for (std::size_t i = 0; i < inner; ++i)
#pragma GCC unroll 12
            for (std::size_t c = 0; c < chains; ++c) acc[c] = xsimd::fma(acc[c], a, b);
        ++rounds;
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (seconds < seconds_to_run);
    float sink = 0;
    for (std::size_t c = 0; c < chains; ++c) sink += xsimd::hadd(acc[c]);
    volatile float keep = sink;
    (void)keep;
    return 2.0 * batch::size * chains * inner * rounds / seconds * 1e-9;
}

/// GFLOPS and peak_pct of `flops` per iteration on `threads` cores, against the FMA peak of
/// one core measured for 0.1 s right after the timed loop (peak_GFLOPS): the host's speed
/// drifts from minute to minute, and a peak measured at start-up can be minutes old.
inline void report_flops(benchmark::State& state, double flops, int threads = 1) {
    const double peak = measure_fma_peak_gflops(0.1);
    state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["peak_pct"] =
        benchmark::Counter(flops * 1e-9 / (peak * threads) * 100, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["peak_GFLOPS"] = peak;
}

}  // namespace nonlocal::bench
