// docs/tutorials/non-local-means.md: non-local means, the joint bilateral filter and the
// exact median on an image drawn here (a real photograph works the same way).
#include <nonlocal/filter.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <xtensor/xtensor.hpp>

// Peak signal-to-noise ratio of an 8-bit image against the clean one, in dB.
double psnr(const xt::xtensor<float, 2>& a, const xt::xtensor<float, 2>& b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i) sum += double(a.data()[i] - b.data()[i]) * (a.data()[i] - b.data()[i]);
    return 10 * std::log10(255.0 * 255.0 / (sum / double(a.size())));
}

int main() {
    // Discs and stripes on 0..255, and the same with Gaussian noise of sigma 20.
    const std::size_t H = 128, W = 160;
    xt::xtensor<float, 2> clean = xt::empty<float>({H, W}), noisy = xt::empty<float>({H, W});
    std::mt19937 gen(1);
    std::normal_distribution<float> noise(0.f, 20.f);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            const bool disc = std::hypot(double(r) - 64, double(c) - 60) < 40;
            clean(r, c) = disc ? 200.f : (c / 16) % 2 ? 120.f : 40.f;
            noisy(r, c) = clean(r, c) + noise(gen);
        }

    nonlocal::nlm_options o;     // 7 x 7 patches, 21 x 21 search windows, h = 0.65 sigma
    o.sigma = 20;
    const xt::xtensor<float, 2> denoised = nonlocal::nlm_denoise(noisy, o);

    // Smooth the noisy image where a guide (here the clean one) is smooth: 11 x 11 windows,
    // spatial sigma 3 pixels, range sigma 10 guide units.
    const xt::xtensor<float, 2> smoothed = nonlocal::joint_bilateral(noisy, clean, {5, 3.0, 10.0});

    // The exact median of 5 x 5 windows (radius 2); borders replicate the edge pixels.
    const xt::xtensor<float, 2> median = nonlocal::median_filter(noisy, 2);

    std::printf("PSNR: noisy %.2f dB, non-local means %.2f dB, joint bilateral %.2f dB, median %.2f dB\n",
                psnr(noisy, clean), psnr(denoised, clean), psnr(smoothed, clean), psnr(median, clean));
    return psnr(denoised, clean) > psnr(noisy, clean) + 8 && psnr(smoothed, clean) > psnr(noisy, clean) &&
                   psnr(median, clean) > psnr(noisy, clean)
               ? 0
               : 1;
}
