// Non-local means on a 512 x 512 grey image, one thread, against OpenCV's
// fastNlMeansDenoising (photo module) when it is found.
//
//   build/release/benchmarks/bench_nlm
//
// The image is baboon's luma with noise sigma = 20 when ../shared/data is
// present, a generated texture otherwise. Counter: Mpix_per_s.
#define STB_IMAGE_IMPLEMENTATION
#include "images.hpp"

#include <nonlocal/nonlocal.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>

#if NONLOCAL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/photo.hpp>
#endif

namespace {

void set_rate(benchmark::State& state, std::size_t pixels) {
    state.counters["Mpix_per_s"] = benchmark::Counter(double(pixels) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}

void nlm(benchmark::State& state) {
    const std::size_t size = state.range(0), patch = state.range(1), search = state.range(2);
    const auto noisy = nonlocal::bench::noisy_test_image(size);
    nonlocal::nlm_options options;
    options.patch_radius = patch / 2, options.search_radius = search / 2, options.sigma = 20;
    for (auto _ : state) {
        auto y = nonlocal::nlm_denoise(noisy, options);
        benchmark::DoNotOptimize(y.data());
    }
    set_rate(state, size * size);
}
BENCHMARK(nlm)->ArgNames({"size", "patch", "search"})
    ->Args({512, 3, 21})->Args({512, 7, 21})->Args({512, 11, 21})->Unit(benchmark::kMillisecond);

#if NONLOCAL_HAVE_OPENCV
void peer_opencv_nlm(benchmark::State& state) {
    cv::setNumThreads(1);
    const std::size_t size = state.range(0), patch = state.range(1), search = state.range(2);
    auto noisy = nonlocal::bench::noisy_test_image(size);
    const cv::Mat src(static_cast<int>(size), static_cast<int>(size), CV_8UC1, noisy.data());
    cv::Mat dst;
    for (auto _ : state) {
        cv::fastNlMeansDenoising(src, dst, 20.f, int(patch), int(search));
        benchmark::DoNotOptimize(dst.data);
    }
    set_rate(state, size * size);
}
BENCHMARK(peer_opencv_nlm)->ArgNames({"size", "patch", "search"})
    ->Args({512, 3, 21})->Args({512, 7, 21})->Args({512, 11, 21})->Unit(benchmark::kMillisecond);
#endif

}  // namespace

int main(int argc, char** argv) {
#if !NONLOCAL_HAVE_OPENCV
    std::printf("OpenCV (photo) not found: the peer_opencv_nlm benchmarks are skipped\n");
#endif
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
