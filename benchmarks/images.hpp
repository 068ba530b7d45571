#pragma once
// Test images for the benchmarks and evaluations: the reference images of
// ../shared/data when present (see its README for the protocols), read with
// stb_image, their ITU-R BT.601 luma, and seeded Gaussian noise.
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include <stb/stb_image.h>
#include <xtensor/xtensor.hpp>

namespace nonlocal::bench {

/// The folder of the reference data, relative to the project root.
inline std::string data_dir() { return NONLOCAL_DATA_DIR; }

/// An 8-bit RGB image [H, W, 3], or nothing when the file cannot be read.
inline std::optional<xt::xtensor<std::uint8_t, 3>> load_rgb(const std::string& path) {
    int w = 0, h = 0, c = 0;
    unsigned char* data = stbi_load(path.c_str(), &w, &h, &c, 3);
    if (!data) return std::nullopt;
    xt::xtensor<std::uint8_t, 3> img = xt::empty<std::uint8_t>({std::size_t(h), std::size_t(w), std::size_t(3)});
    std::copy(data, data + std::size_t(w) * h * 3, img.begin());
    stbi_image_free(data);
    return img;
}

/// ITU-R BT.601 luma, 0.299 R + 0.587 G + 0.114 B, rounded to 8 bits.
inline xt::xtensor<std::uint8_t, 2> luma(const xt::xtensor<std::uint8_t, 3>& rgb) {
    xt::xtensor<std::uint8_t, 2> y = xt::empty<std::uint8_t>({rgb.shape(0), rgb.shape(1)});
    for (std::size_t r = 0; r < rgb.shape(0); ++r)
        for (std::size_t c = 0; c < rgb.shape(1); ++c)
            y(r, c) = std::uint8_t(std::lround(0.299 * rgb(r, c, 0) + 0.587 * rgb(r, c, 1) + 0.114 * rgb(r, c, 2)));
    return y;
}

/// `clean` plus Gaussian noise of `sigma`, seeded, rounded and clamped to 8 bits.
inline xt::xtensor<std::uint8_t, 2> add_noise(const xt::xtensor<std::uint8_t, 2>& clean, double sigma, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> noise(0.0, sigma);
    xt::xtensor<std::uint8_t, 2> out = clean;
    for (auto& p : out) p = std::uint8_t(std::clamp(std::lround(p + noise(gen)), 0L, 255L));
    return out;
}

inline double psnr(const xt::xtensor<std::uint8_t, 2>& a, const xt::xtensor<std::uint8_t, 2>& b) {
    double mse = 0;
    for (std::size_t t = 0; t < a.size(); ++t) {
        const double d = double(a.data()[t]) - double(b.data()[t]);
        mse += d * d;
    }
    return 10 * std::log10(255.0 * 255.0 / (mse / double(a.size())));
}

/// A 512 x 512 noisy test image: baboon's luma with noise sigma 20 when the
/// reference data is present, a seeded textured pattern otherwise.
inline xt::xtensor<std::uint8_t, 2> noisy_test_image(std::size_t size = 512) {
    if (auto rgb = load_rgb(data_dir() + "/baboon.jpg"); rgb && rgb->shape(0) >= size && rgb->shape(1) >= size) {
        xt::xtensor<std::uint8_t, 2> y = luma(*rgb);
        xt::xtensor<std::uint8_t, 2> crop = xt::empty<std::uint8_t>({size, size});
        for (std::size_t r = 0; r < size; ++r)
            for (std::size_t c = 0; c < size; ++c) crop(r, c) = y(r, c);
        return add_noise(crop, 20, 2005);
    }
    xt::xtensor<std::uint8_t, 2> pattern = xt::empty<std::uint8_t>({size, size});
    for (std::size_t r = 0; r < size; ++r)
        for (std::size_t c = 0; c < size; ++c)
            pattern(r, c) = std::uint8_t(128 + 60 * std::sin(r * 0.11) * std::cos(c * 0.07) + ((r / 32 + c / 32) % 2) * 40);
    return add_noise(pattern, 20, 2005);
}

}  // namespace nonlocal::bench
