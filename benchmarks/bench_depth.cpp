// Depth refinement with the AR model, one thread:
//   depth_upsample/x:8|16/model:0|1|2/threads:1|2/float:0|1/aggregation:0|1/given:0|1: Aloe's ground
//     truth subsampled by 8 or 16 and upsampled on the left image (a generated scene when
//     ../shared/data is absent) with the normalised model (model:0, the default), the AR
//     model's minimiser (1) or the separable model (2), on one thread or two, solved in
//     double or in float, on multigrid levels of operator-dependent interpolation (the
//     default) or aggregation, the colour bandwidth and data weight chosen from the samples or
//     (given:1) given as a first run chose them, as a dataset of one camera can take them; the
//     counter solver_iterations is the task's (both solves, every stage; the separable model's
//     passes);
//   peer_opencv_fgs_upsample/x:8|16: OpenCV ximgproc's fast global smoother on the same
//     task when found, normalised (FGS(d m) / FGS(m)) at the parameters eval_depth finds best
//     on Aloe (x8: lambda 17.8, sigma 11.3; x16: lambda 53.3, sigma 16);
//   depth_upsample_noisy/model:0|2: the x8 task with noise of sigma 8 on the samples (eval_depth's
//     noisy protocol), at the defaults: the colour bandwidth and the data term's weight chosen by
//     holding a quarter of the samples out (counters sigma_r and data_weight), normalised or
//     separable model (the clean rows above choose them too);
//     peer_opencv_fbs_upsample_noisy: OpenCV's fast bilateral solver on that task, at the setting
//     eval_depth finds best;
//   depth_sensor/protocol:0|1/model:0|2: fill_depth on the real-sensor protocols of
//     eval_depth with their options (0: stereo, the robust term's re-estimate and holes
//     filled from the far side; 1: time of flight, the median of the observations), in the
//     normalised model (0) or the separable one on 4 neighbours (2);
//     peer_opencv_fgs_sensor/protocol:0|1: OpenCV's fast global smoother on the same
//     observations (normalised, at eval_depth's best parameters);
//   depth_sensor_frame/protocol:0|1/model:0|2/width:640|1280: the same on a sensor's frame,
//     Aloe cropped at its centre to 640 x 480 or 1280 x 720 before the protocol, with the
//     counters pairs_per_core_hour and rmse (over the crop's known ground truth);
//     peer_opencv_fgs_sensor_frame/protocol:0|1/width:640|1280: OpenCV's fast global smoother
//     on the same frames, the same counters;
//   depth_dataset/jobs:1|2: four of those x8 upsamplings, one pair per thread, 1 or 2 at a
//     time, in pairs per second;
//   multigrid_setup/aggregation:0|1: the hierarchy of that x8 system;
//   ar_apply<double|float>: one matrix-free A x on that system, in pixels per second;
//   median_filter/radius:1|2|3|4|5: the exact median on Aloe's ground truth plus a little
//     noise (no window is constant), and OpenCV's medianBlur (float: 3 x 3 and 5 x 5 only)
//     when found; depth_median/x:4|8: the depth tasks' median (radius 3 and 4) on the
//     normalised model's result, windows spanning at most 1 % of the depth range skipped.
//
//   build/release/benchmarks/bench_depth
#define STB_IMAGE_IMPLEMENTATION
#include "images.hpp"
#include "sensor_protocols.hpp"

#include <nonlocal/nonlocal.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#if NONLOCAL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
#include <opencv2/ximgproc.hpp>
#endif

namespace {

struct scene {
    xt::xtensor<float, 3> guide;
    xt::xtensor<float, 2> truth;
};

/// Aloe when present, otherwise a 1110 x 1282 scene of discs and ramps with the same layout.
const scene& aloe() {
    static const scene s = [] {
        scene out;
        const std::string dir = nonlocal::bench::data_dir();
        int w = 0, h = 0, c = 0;
        const auto rgb = nonlocal::bench::load_rgb(dir + "/aloeL.jpg");
        unsigned char* gt = stbi_load((dir + "/aloeGT.png").c_str(), &w, &h, &c, 1);
        if (rgb && gt) {
            out.guide = xt::cast<float>(*rgb);
            out.truth = xt::empty<float>({std::size_t(h), std::size_t(w)});
            std::copy(gt, gt + std::size_t(w) * h, out.truth.begin());
            stbi_image_free(gt);
            return out;
        }
        const std::size_t H = 1110, W = 1282;
        out.guide = xt::empty<float>({H, W, std::size_t(3)});
        out.truth = xt::empty<float>({H, W});
        for (std::size_t r = 0; r < H; ++r)
            for (std::size_t cc = 0; cc < W; ++cc) {
                const bool disc = (r - 500.0) * (r - 500.0) + (cc - 600.0) * (cc - 600.0) < 300.0 * 300.0;
                out.truth(r, cc) = disc ? 150.f : 40.f + 0.05f * float(cc);
                for (std::size_t ch = 0; ch < 3; ++ch) out.guide(r, cc, ch) = disc ? 200.f - 30.f * ch : 60.f + 20.f * ch;
            }
        return out;
    }();
    return s;
}

void depth_upsample(benchmark::State& state) {
    const std::size_t factor = state.range(0);
    const auto low = nonlocal::bench::upsampling_samples(aloe().truth, factor);
    std::size_t iterations = 0;
    nonlocal::depth_options o{.model = nonlocal::depth_model(state.range(1)), .single_precision = state.range(3) != 0};
    const nonlocal::execution::parallel_policy on{int(state.range(2))};
    if (state.range(4)) o.multigrid.transfer = nonlocal::coarsening::aggregation;
    if (state.range(5)) {   // the bandwidth and weight a first run chose, given: no search
        const auto first = nonlocal::upsample_depth(on, low, aloe().guide, factor, o);
        o.sigma_r = first.sigma_r, o.data_weight = first.data_weight;
    }
    for (auto _ : state) {
        auto out = nonlocal::upsample_depth(on, low, aloe().guide, factor, o);
        iterations = out.report.iterations;
        benchmark::DoNotOptimize(out.depth.data());
    }
    state.counters["solver_iterations"] = double(iterations);
    state.counters["Mpix_per_s"] =
        benchmark::Counter(double(aloe().truth.size()) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(depth_upsample)
    ->ArgNames({"x", "model", "threads", "float", "aggregation", "given"})
    ->Args({8, 0, 1, 0, 0, 0})
    ->Args({8, 0, 1, 1, 0, 0})
    ->Args({8, 0, 1, 1, 1, 0})
    ->Args({8, 1, 1, 0, 0, 0})
    ->Args({8, 1, 1, 1, 0, 0})
    ->Args({8, 2, 1, 1, 0, 0})
    ->Args({8, 0, 1, 1, 0, 1})
    ->Args({8, 2, 1, 1, 0, 1})
    ->Args({8, 0, 2, 1, 0, 0})
    ->Args({16, 0, 1, 1, 0, 0})
    ->Args({16, 0, 1, 1, 1, 0})
    ->Args({16, 2, 1, 1, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

#if NONLOCAL_HAVE_OPENCV_XIMGPROC
/// A guide as OpenCV takes it: 8-bit BGR (Aloe's by default).
cv::Mat bgr_of(const xt::xtensor<float, 3>& guide) {
    cv::Mat bgr;
    cv::Mat(int(guide.shape(0)), int(guide.shape(1)), CV_32FC3, const_cast<float*>(guide.data())).convertTo(bgr, CV_8UC3);
    cv::cvtColor(bgr, bgr, cv::COLOR_RGB2BGR);
    return bgr;
}
cv::Mat aloe_bgr() { return bgr_of(aloe().guide); }

/// Times OpenCV's fast global smoother, normalised, on one thread: the observations `sparse`
/// (0 elsewhere) and their `mask` each smoothed on `guide` (Aloe's), then divided.
cv::Mat time_normalized_fgs(benchmark::State& state, const cv::Mat& sparse, const cv::Mat& mask, double lambda, double sigma,
                            const cv::Mat& guide = aloe_bgr()) {
    cv::setNumThreads(1);
    cv::Mat num, den, depth;
    for (auto _ : state) {
        cv::ximgproc::fastGlobalSmootherFilter(guide, sparse, num, lambda, sigma);
        cv::ximgproc::fastGlobalSmootherFilter(guide, mask, den, lambda, sigma);
        depth = num / cv::max(den, 1e-6f);
        benchmark::DoNotOptimize(depth.data);
    }
    return depth;
}

/// OpenCV's fast global smoother on depth_upsample's task: the low-resolution depth on the
/// guide's grid (0 elsewhere) and its mask.
void peer_opencv_fgs_upsample(benchmark::State& state) {
    const std::size_t factor = state.range(0);
    const auto& truth = aloe().truth;
    const int H = int(truth.shape(0)), W = int(truth.shape(1));
    cv::Mat sparse = cv::Mat::zeros(H, W, CV_32F), mask = cv::Mat::zeros(H, W, CV_32F);
    for (int r = 0; r < H; r += int(factor))
        for (int c = 0; c < W; c += int(factor)) sparse.at<float>(r, c) = truth(r, c), mask.at<float>(r, c) = 1;
    time_normalized_fgs(state, sparse, mask, factor == 8 ? 17.8 : 53.3, factor == 8 ? 11.3 : 16);
}
BENCHMARK(peer_opencv_fgs_upsample)->ArgName("x")->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

/// Aloe's x8 samples with Gaussian noise of sigma 8 (eval_depth's noisy protocol x8 s8).
const xt::xtensor<float, 2>& noisy_samples() {
    static const xt::xtensor<float, 2> low = nonlocal::bench::upsampling_samples(aloe().truth, 8, 8.f);
    return low;
}

void depth_upsample_noisy(benchmark::State& state) {
    const nonlocal::depth_options o{.model = nonlocal::depth_model(state.range(0))};
    double weight = 1, sigma_r = 0;
    for (auto _ : state) {
        auto out = nonlocal::upsample_depth(noisy_samples(), aloe().guide, 8, o);
        weight = out.data_weight, sigma_r = out.sigma_r;
        benchmark::DoNotOptimize(out.depth.data());
    }
    state.counters["data_weight"] = weight;
    state.counters["sigma_r"] = sigma_r;
}
BENCHMARK(depth_upsample_noisy)->ArgName("model")->Arg(0)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

#if NONLOCAL_HAVE_OPENCV_XIMGPROC
/// OpenCV's fast bilateral solver on the noisy x8 task, at the setting eval_depth finds best:
/// the bicubic upsampling of the samples with confidence 1 everywhere, sigma_spatial = sigma_luma =
/// sigma_chroma = 8, lambda 128.
void peer_opencv_fbs_upsample_noisy(benchmark::State& state) {
    cv::setNumThreads(1);
    const auto& low = noisy_samples();
    const cv::Mat guide = aloe_bgr();
    cv::Mat bicubic, ones(guide.size(), CV_32F, cv::Scalar(1));
    cv::resize(cv::Mat(int(low.shape(0)), int(low.shape(1)), CV_32F, const_cast<float*>(low.data())), bicubic, guide.size(), 0,
               0, cv::INTER_CUBIC);
    std::streambuf* const out = std::cout.rdbuf(nullptr);   // the solver prints its iterations
    for (auto _ : state) {
        cv::Mat depth;
        cv::ximgproc::fastBilateralSolverFilter(guide, bicubic, ones, depth, 8, 8, 8, 128);
        benchmark::DoNotOptimize(depth.data);
    }
    std::cout.rdbuf(out);
}
BENCHMARK(peer_opencv_fbs_upsample_noisy)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

/// The observations of a real-sensor protocol on Aloe's ground truth (0: stereo, 1: time of flight).
const xt::xtensor<float, 2>& sensor_observations(std::int64_t protocol) {
    static const xt::xtensor<float, 2> stereo = nonlocal::bench::stereo_protocol(aloe().truth);
    static const xt::xtensor<float, 2> tof = nonlocal::bench::tof_protocol(aloe().truth);
    return protocol == 0 ? stereo : tof;
}

void depth_sensor(benchmark::State& state) {
    const bool stereo = state.range(0) == 0;
    const nonlocal::depth_options o = state.range(1) == 0 ? nonlocal::bench::sensor_protocol_options(stereo)
                                                          : nonlocal::bench::separable_for_sensors(stereo);
    const auto& observed = sensor_observations(state.range(0));
    std::size_t rejected = 0;
    for (auto _ : state) {
        auto out = nonlocal::fill_depth(observed, aloe().guide, o);
        rejected = out.rejected;
        benchmark::DoNotOptimize(out.depth.data());
    }
    state.counters["rejected"] = double(rejected);
}
BENCHMARK(depth_sensor)
    ->ArgNames({"protocol", "model"})
    ->Args({0, 0})
    ->Args({0, 2})
    ->Args({1, 0})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

#if NONLOCAL_HAVE_OPENCV_XIMGPROC
/// OpenCV's fast global smoother on depth_sensor's observations, at eval_depth's best parameters.
void peer_opencv_fgs_sensor(benchmark::State& state) {
    const auto& observed = sensor_observations(state.range(0));
    const cv::Mat sparse(int(observed.shape(0)), int(observed.shape(1)), CV_32F, const_cast<float*>(observed.data()));
    cv::Mat mask;
    cv::threshold(sparse, mask, 0, 1, cv::THRESH_BINARY);
    time_normalized_fgs(state, sparse, mask, state.range(0) == 0 ? 3000 : 1.69, state.range(0) == 0 ? 2.83 : 45.3);
}
BENCHMARK(peer_opencv_fgs_sensor)->ArgName("protocol")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

/// The counter pairs_per_core_hour: the pairs one thread refines in an hour at the pace of
/// the iterations since `start`.
void count_pairs_per_core_hour(benchmark::State& state, std::chrono::steady_clock::time_point start) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["pairs_per_core_hour"] = seconds > 0 ? 3600.0 * double(state.iterations()) / seconds : 0.0;
}

/// The counter rmse: the root-mean-square error of `estimate` (row-major, the truth's size)
/// over the pixels whose ground truth is known, as eval_depth scores.
void count_rmse(benchmark::State& state, const float* estimate, const xt::xtensor<float, 2>& truth) {
    state.counters["rmse"] = nonlocal::bench::score(estimate, truth).rmse;
}

/// A sensor's frame: Aloe's guide and truth cropped at their centre to 640 x 480 (Kinect,
/// RealSense) or 1280 x 720, and the observations of a real-sensor protocol on it.
struct sensor_frame {
    scene crop;
    xt::xtensor<float, 2> observed;
};
const sensor_frame& frame_of(std::int64_t protocol, std::int64_t width) {
    static std::map<std::pair<std::int64_t, std::int64_t>, sensor_frame> frames;
    static std::mutex guard;
    const std::lock_guard lock(guard);
    auto [at, fresh] = frames.try_emplace({protocol, width});
    if (fresh) {
        const std::size_t W = std::size_t(width), H = width == 640 ? 480 : 720;
        const auto& s = aloe();
        const std::size_t top = (s.truth.shape(0) - H) / 2, left = (s.truth.shape(1) - W) / 2;
        at->second.crop.truth = xt::view(s.truth, xt::range(top, top + H), xt::range(left, left + W));
        at->second.crop.guide = xt::view(s.guide, xt::range(top, top + H), xt::range(left, left + W), xt::all());
        at->second.observed = protocol == 0 ? nonlocal::bench::stereo_protocol(at->second.crop.truth)
                                            : nonlocal::bench::tof_protocol(at->second.crop.truth);
    }
    return at->second;
}

/// depth_sensor on a sensor's frame, in pairs per core-hour.
void depth_sensor_frame(benchmark::State& state) {
    const bool stereo = state.range(0) == 0;
    const nonlocal::depth_options o = state.range(1) == 0 ? nonlocal::bench::sensor_protocol_options(stereo)
                                                          : nonlocal::bench::separable_for_sensors(stereo);
    const sensor_frame& f = frame_of(state.range(0), state.range(2));
    const auto start = std::chrono::steady_clock::now();
    xt::xtensor<float, 2> depth;
    for (auto _ : state) {
        auto out = nonlocal::fill_depth(f.observed, f.crop.guide, o);
        benchmark::DoNotOptimize(out.depth.data());
        depth = std::move(out.depth);
    }
    count_pairs_per_core_hour(state, start);
    count_rmse(state, depth.data(), f.crop.truth);
}
BENCHMARK(depth_sensor_frame)
    ->ArgNames({"protocol", "model", "width"})
    ->ArgsProduct({{0, 1}, {0, 2}, {640, 1280}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

#if NONLOCAL_HAVE_OPENCV_XIMGPROC
/// OpenCV's fast global smoother on depth_sensor_frame's observations, at eval_depth's best
/// parameters for the protocol (found on the whole of Aloe).
void peer_opencv_fgs_sensor_frame(benchmark::State& state) {
    const sensor_frame& f = frame_of(state.range(0), state.range(1));
    const cv::Mat sparse(int(f.observed.shape(0)), int(f.observed.shape(1)), CV_32F, const_cast<float*>(f.observed.data()));
    cv::Mat mask;
    cv::threshold(sparse, mask, 0, 1, cv::THRESH_BINARY);
    const auto start = std::chrono::steady_clock::now();
    const cv::Mat depth = time_normalized_fgs(state, sparse, mask, state.range(0) == 0 ? 3000 : 1.69,
                                              state.range(0) == 0 ? 2.83 : 45.3, bgr_of(f.crop.guide));
    count_pairs_per_core_hour(state, start);
    count_rmse(state, depth.ptr<float>(), f.crop.truth);
}
BENCHMARK(peer_opencv_fgs_sensor_frame)
    ->ArgNames({"protocol", "width"})
    ->ArgsProduct({{0, 1}, {640, 1280}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
#endif

/// A dataset refined one pair per thread: 4 x8 upsamplings of Aloe, `jobs` at a time on
/// threads of their own (each solve on one thread), in pairs per second; against
/// depth_upsample/x:8/threads:2, two threads within each pair.
void depth_dataset(benchmark::State& state) {
    constexpr std::size_t pairs = 4;
    const std::size_t jobs = state.range(0);
    const auto low = nonlocal::bench::upsampling_samples(aloe().truth, 8);
    for (auto _ : state) {
        std::atomic<std::size_t> next{0};
        const auto work = [&] {
            for (std::size_t k; (k = next.fetch_add(1)) < pairs;) {
                auto out = nonlocal::upsample_depth(low, aloe().guide, 8);
                benchmark::DoNotOptimize(out.depth.data());
            }
        };
        std::vector<std::jthread> workers;
        for (std::size_t t = 1; t < jobs; ++t) workers.emplace_back(work);
        work();
    }
    state.counters["pairs_per_s"] = benchmark::Counter(double(pairs), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(depth_dataset)->ArgName("jobs")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The x8 normalised model's system, as the task builds it (float, luma-chroma colours).
const nonlocal::ar_system<float>& x8_system() {
    static const nonlocal::ar_system<float> A = [] {
        const auto& s = aloe();
        const std::size_t H = s.truth.shape(0), W = s.truth.shape(1), n = H * W;
        const nonlocal::depth_options o;
        const auto g = nonlocal::detail::compared_channels(nonlocal::detail::to_planes<float>(s.guide, "bench", "guide"), o);
        nonlocal::buffer<float> b(n, 0.f);
        const float eps = float(o.epsilon_scale / 64);
        for (std::size_t r = 0; r < H; r += 8)
            for (std::size_t c = 0; c < W; c += 8) b[r * W + c] = eps * s.truth(r, c);
        const nonlocal::detail::observed_depth none(H, W);   // its holes are not filled from a far side
        return nonlocal::detail::depth_system<float, nonlocal::default_arch>(g, none, nullptr, nonlocal::buffer<float>(n, eps), std::move(b), o);
    }();
    return A;
}

void multigrid_setup(benchmark::State& state) {
    const nonlocal::multigrid_options o{.transfer = state.range(0) ? nonlocal::coarsening::aggregation
                                                                   : nonlocal::coarsening::operator_dependent};
    std::size_t levels = 0;
    for (auto _ : state) {
        const nonlocal::multigrid<float> M(x8_system(), o);
        levels = M.levels();
        benchmark::DoNotOptimize(&M);
    }
    state.counters["levels"] = double(levels);
}
BENCHMARK(multigrid_setup)->ArgName("aggregation")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

template <class T>
void ar_apply(benchmark::State& state) {
    const auto& s = aloe();
    const std::size_t H = s.truth.shape(0), W = s.truth.shape(1);
    const xt::xtensor<double, 2> alpha = xt::cast<double>(s.truth > 0.f);
    const nonlocal::ar_system<T> A(s.guide, nonlocal::grid_stencil{H, W, int(state.range(0))},
                                   nonlocal::color_weights(H, W, 3, 3.0), s.truth, alpha, 1e-3);
    nonlocal::buffer<T> x(A.size(), T(1)), y(A.size());   // aligned, as the solvers' own vectors are
    for (auto _ : state) {
        A.apply(nonlocal::execution::seq, x.data(), y.data());
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["Mpix_per_s"] = benchmark::Counter(double(A.size()) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(ar_apply<double>)->ArgName("connectivity")->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond);
BENCHMARK(ar_apply<float>)->ArgName("connectivity")->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond);

/// Aloe's ground truth plus noise in [0, 0.01): no window is constant, so the exact median
/// runs its whole network everywhere.
const xt::xtensor<float, 2>& noisy_truth() {
    static const xt::xtensor<float, 2> image = [] {
        xt::xtensor<float, 2> t = aloe().truth;
        std::mt19937 gen(5);
        std::uniform_real_distribution<float> noise(0.f, 0.01f);
        for (float& v : t) v += noise(gen);
        return t;
    }();
    return image;
}

void median_filter(benchmark::State& state) {
    const auto& image = noisy_truth();
    const std::size_t radius = std::size_t(state.range(0));
    for (auto _ : state) {
        auto out = nonlocal::median_filter(image, radius);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["Mpix_per_s"] = benchmark::Counter(double(image.size()) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(median_filter)->ArgName("radius")->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Arg(5)->Unit(benchmark::kMillisecond);

void depth_median(benchmark::State& state) {
    const std::size_t factor = std::size_t(state.range(0));
    const nonlocal::depth_options o{.median_scale = 0};
    const auto model = nonlocal::upsample_depth(nonlocal::bench::upsampling_samples(aloe().truth, factor), aloe().guide, factor, o).depth;
    const std::size_t H = model.shape(0), W = model.shape(1), radius = nonlocal::depth_options{}.median_radius(1.0 / double(factor * factor));
    float lo = 1e30f, hi = -1e30f;   // the observed range, as the task takes it
    for (float v : nonlocal::bench::upsampling_samples(aloe().truth, factor))
        if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    const float flat = float(nonlocal::depth_options{}.median_flatness) * (hi - lo);
    xt::xtensor<float, 2> out = model;
    for (auto _ : state) {
        nonlocal::detail::median_filter<nonlocal::default_arch>(model.data(), H, W, radius, out.data(), 1, flat);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["radius"] = double(radius);
}
BENCHMARK(depth_median)->ArgName("x")->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond);

#if NONLOCAL_HAVE_OPENCV
void peer_opencv_median_blur(benchmark::State& state) {
    cv::setNumThreads(1);
    auto image = noisy_truth();
    const cv::Mat in(int(image.shape(0)), int(image.shape(1)), CV_32F, image.data());
    cv::Mat out;
    for (auto _ : state) {
        cv::medianBlur(in, out, int(2 * state.range(0) + 1));
        benchmark::DoNotOptimize(out.data);
    }
    state.counters["Mpix_per_s"] = benchmark::Counter(double(image.size()) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(peer_opencv_median_blur)->ArgName("radius")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
