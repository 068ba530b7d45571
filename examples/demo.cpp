// nonlocal demo: one weighted aggregate, three jobs, on images it draws itself.
//
//   1. non-local means denoising   (patch features, 2-D search window, sum)
//   2. depth hole filling          (colour-guided AR model: Jacobi sweeps, each one
//                                   aggregate over a grid_stencil with the system's edge
//                                   weights and a data term)
//   3. Transformer self-attention  (scaled dot product, dense and causal, softmax)
//
// Usage: nonlocal_demo OUTPUT_DIR   (writes PNG images there)

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include <nonlocal/nonlocal.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <random>
#include <string>

#include <xtensor/xrandom.hpp>

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// A grey test scene on 0..255: smooth gradient, discs, a square and stripes.
xt::xtensor<float, 2> draw_scene(std::size_t H, std::size_t W) {
    xt::xtensor<float, 2> img = xt::empty<float>({H, W});
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            const double x = double(c) / W, y = double(r) / H;
            double v = 60 + 80 * x;                                               // gradient
            if ((x - 0.3) * (x - 0.3) + (y - 0.35) * (y - 0.35) < 0.04) v = 200;  // disc
            if (x > 0.55 && x < 0.85 && y > 0.2 && y < 0.5) v = 30;               // square
            if (y > 0.65 && int(x * 16) % 2 == 0) v = 170;                        // stripes
            if ((x - 0.75) * (x - 0.75) + (y - 0.75) * (y - 0.75) < 0.01) v = 240;
            img(r, c) = float(v);
        }
    return img;
}

void write_png(const std::string& path, const xt::xtensor<float, 2>& img, float lo, float hi) {
    std::vector<unsigned char> bytes(img.size());
    for (std::size_t t = 0; t < img.size(); ++t)
        bytes[t] = static_cast<unsigned char>(std::clamp((img.data()[t] - lo) / (hi - lo) * 255.f + 0.5f, 0.f, 255.f));
    if (!stbi_write_png(path.c_str(), int(img.shape(1)), int(img.shape(0)), 1, bytes.data(), int(img.shape(1))))
        throw std::runtime_error("cannot write " + path);
    std::printf("   wrote %s\n", path.c_str());
}

double psnr(const xt::xtensor<float, 2>& a, const xt::xtensor<float, 2>& b) {
    double mse = 0;
    for (std::size_t t = 0; t < a.size(); ++t) mse += (a.data()[t] - b.data()[t]) * double(a.data()[t] - b.data()[t]);
    return 10 * std::log10(255.0 * 255.0 / (mse / a.size()));
}

xt::xtensor<float, 2> as_column(const xt::xtensor<float, 2>& img) {
    xt::xtensor<float, 2> col = xt::empty<float>({img.size(), std::size_t(1)});
    std::copy(img.begin(), img.end(), col.begin());
    return col;
}
xt::xtensor<float, 2> as_image(const xt::xtensor<float, 2>& col, std::size_t H, std::size_t W) {
    xt::xtensor<float, 2> img = xt::empty<float>({H, W});
    std::copy(col.begin(), col.end(), img.begin());
    return img;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string out = argc > 1 ? argv[1] : ".";
    std::filesystem::create_directories(out);
    const std::size_t H = 192, W = 256;
    std::printf("nonlocal %s, SIMD architecture %s\n\n", NONLOCAL_VERSION_STRING, nonlocal::default_arch::name());

    // ---- 1. non-local means ---------------------------------------------------
    const auto clean = draw_scene(H, W);
    std::mt19937 gen(2005);
    std::normal_distribution<float> noise(0.f, 20.f);
    xt::xtensor<float, 2> noisy = clean;
    for (auto& p : noisy) p += noise(gen);

    auto t0 = clock_type::now();
    const auto patches = nonlocal::patch_features(noisy, 1);                  // 3 x 3 patches
    // Two noisy copies of one patch are 2 sigma^2 apart on average (mean squared
    // distance), so h^2 must exceed that: h = 1.5 sigma. gaussian_distance divides
    // the summed distance by its h^2, hence the sqrt(patch size).
    const double h = 1.5 * 20.0 * std::sqrt(double(patches.shape(1)));
    const auto denoised_col = nonlocal::weighted_aggregate(patches, patches, as_column(noisy),
                                                           nonlocal::gaussian_distance{h},
                                                           nonlocal::window2d{H, W, 11}, nonlocal::sum{});
    const auto denoised = as_image(denoised_col, H, W);
    std::printf("1. non-local means, %zux%zu, 3x3 patches, 11x11 search: %.2f s\n", H, W, seconds_since(t0));
    std::printf("   PSNR noisy %.2f dB -> denoised %.2f dB\n", psnr(noisy, clean), psnr(denoised, clean));
    write_png(out + "/nlm_clean.png", clean, 0, 255);
    write_png(out + "/nlm_noisy.png", noisy, 0, 255);
    write_png(out + "/nlm_denoised.png", denoised, 0, 255);

    // ---- 2. depth hole filling with the colour-guided AR model ------------------
    // Depth follows the scene's regions; 80 % of it is missing. The AR system's edge weights
    // come from the guide's colour differences, once; each Jacobi sweep of A x = b is then
    // one aggregate over the 8-neighbour stencil with those weights, plus alpha * observation
    // on the observed pixels (the stencil kernel: a pass over the pixels, vectorised).
    const std::size_t n = H * W;
    xt::xtensor<float, 2> depth = xt::empty<float>({H, W});
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) depth(r, c) = 1000.f + clean(r, c) * 4.f + float(r);
    std::bernoulli_distribution observed(0.2);
    xt::xtensor<float, 2> confidence = xt::zeros<float>({H, W}), sparse = xt::zeros<float>({H, W});
    for (std::size_t i = 0; i < n; ++i)
        if (observed(gen)) confidence.data()[i] = 2.f, sparse.data()[i] = depth.data()[i];
    const nonlocal::grid_stencil stencil{H, W, 8};
    t0 = clock_type::now();
    // W_ij = w_ij + w_ji = 2 exp(-(g_i - g_j)^2 / 100) (sigma_r = 10 / sqrt 2), against alpha = 2
    // on the observed pixels: each observation weighs as much as an identical neighbour.
    const nonlocal::ar_system<float> A(clean, stencil, nonlocal::colour_weights(H, W, 1, 10.0 / std::sqrt(2.0)), sparse,
                                       confidence);
    const double weights_s = seconds_since(t0);
    const xt::xtensor<float, 1> alpha = xt::flatten(confidence);
    const xt::xtensor<float, 2> observations = as_column(sparse);
    const nonlocal::sum_with_data data_term(alpha, observations);
    const auto edges = A.edges();
    xt::xtensor<float, 2> x = xt::ones<float>({n, std::size_t(1)}) * 1500.f;
    t0 = clock_type::now();
    const int sweeps = 300;
    for (int s = 0; s < sweeps; ++s) x = nonlocal::weighted_aggregate(x, x, x, edges, stencil, data_term);
    const double sweeps_s = seconds_since(t0);
    double err = 0;
    for (std::size_t i = 0; i < n; ++i) err += (x(i, 0) - depth.data()[i]) * double(x(i, 0) - depth.data()[i]);
    std::printf("\n2. depth hole filling, 80 %% missing: edge weights %.3f s, %d Jacobi sweeps %.3f s, RMSE %.2f"
                " (depth range 1000..2150)\n",
                weights_s, sweeps, sweeps_s, std::sqrt(err / n));
    write_png(out + "/depth_true.png", depth, 1000, 2150);
    write_png(out + "/depth_observed.png", sparse, 1000, 2150);
    write_png(out + "/depth_filled.png", as_image(x, H, W), 1000, 2150);

    // ---- 3. self-attention ------------------------------------------------------
    xt::random::seed(2017);
    const std::size_t tokens = 512, dim = 64;
    const xt::xtensor<float, 2> q = xt::random::randn<float>({tokens, dim});
    const xt::xtensor<float, 2> k = xt::random::randn<float>({tokens, dim});
    const xt::xtensor<float, 2> v = xt::random::randn<float>({tokens, dim});
    t0 = clock_type::now();
    const auto y = nonlocal::attention(q, k, v);
    const double dense_s = seconds_since(t0);
    t0 = clock_type::now();
    const auto yc = nonlocal::attention(q, k, v, nonlocal::causal{});
    const double causal_s = seconds_since(t0);
    const auto ref = nonlocal::reference::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{},
                                                             nonlocal::dense{}, nonlocal::softmax{});
    double worst = 0;
    for (std::size_t t = 0; t < y.size(); ++t) worst = std::max(worst, std::abs(y.data()[t] - ref.data()[t]));
    std::printf("\n3. attention, n = %zu, d = %zu: dense %.1f ms (%.1f GFLOP/s), causal %.1f ms\n", tokens, dim,
                dense_s * 1e3, 4.0 * tokens * tokens * dim / dense_s * 1e-9, causal_s * 1e3);
    std::printf("   largest difference from the double-precision reference: %.2e\n", worst);
    std::printf("   causal row 0 equals value row 0: %s\n", yc(0, 0) == v(0, 0) ? "yes" : "no");
    return 0;
}
