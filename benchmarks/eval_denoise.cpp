// The denoising protocol of ../shared/data/README.md: grey (BT.601 luma)
// baboon and fruits, Gaussian noise sigma = 20 with a fixed seed (rounded and
// clamped to 8 bits, the input both methods see), PSNR against the clean grey
// image, 7 x 7 patches and 21 x 21 search windows, one thread.
//
//   build/release/benchmarks/eval_denoise [DATA_DIR]
#define STB_IMAGE_IMPLEMENTATION
#include "images.hpp"

#include <nonlocal/nonlocal.hpp>

#include <chrono>
#include <cstdio>
#include <functional>

#if NONLOCAL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/photo.hpp>
#endif

namespace {
template <class F>
double seconds(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : nonlocal::bench::data_dir();
    const double sigma = 20;
#if NONLOCAL_HAVE_OPENCV
    cv::setNumThreads(1);
#else
    std::printf("OpenCV (photo) not found: only nonlocal is evaluated\n");
#endif
    std::printf("%-8s %-34s %8s %9s\n", "image", "method", "PSNR dB", "time s");
    for (const char* name : {"baboon", "fruits"}) {
        const auto rgb = nonlocal::bench::load_rgb(dir + "/" + name + ".jpg");
        if (!rgb) {
            std::printf("skipped: %s/%s.jpg not found (the reference data is not present)\n", dir.c_str(), name);
            continue;
        }
        const auto clean = nonlocal::bench::luma(*rgb);
        const auto noisy = nonlocal::bench::add_noise(clean, sigma, 2005);
        std::printf("%-8s %-34s %8.2f %9s\n", name, "noisy input", nonlocal::bench::psnr(noisy, clean), "");
        for (double k : {0.45, 0.55, 0.65, 0.75, 0.85}) {
            nonlocal::nlm_options o;
            o.sigma = sigma, o.h_per_sigma = k;
            xt::xtensor<std::uint8_t, 2> out;
            const double t = seconds([&] { out = nonlocal::nlm_denoise(noisy, o); });
            char label[64];
            std::snprintf(label, sizeof label, "nonlocal h = %.2f sigma%s", k, k == nonlocal::nlm_options{}.h_per_sigma ? " (default)" : "");
            std::printf("%-8s %-34s %8.2f %9.3f\n", name, label, nonlocal::bench::psnr(out, clean), t);
        }
#if NONLOCAL_HAVE_OPENCV
        for (double k : {0.8, 1.0}) {
            xt::xtensor<std::uint8_t, 2> out = noisy;
            const cv::Mat src(int(noisy.shape(0)), int(noisy.shape(1)), CV_8UC1, const_cast<std::uint8_t*>(noisy.data()));
            cv::Mat dst(int(noisy.shape(0)), int(noisy.shape(1)), CV_8UC1, out.data());
            const double t = seconds([&] { cv::fastNlMeansDenoising(src, dst, float(k * sigma), 7, 21); });
            char label[64];
            std::snprintf(label, sizeof label, "OpenCV fastNlMeans h = %.1f sigma", k);
            std::printf("%-8s %-34s %8.2f %9.3f\n", name, label, nonlocal::bench::psnr(out, clean), t);
        }
#endif
    }
}
