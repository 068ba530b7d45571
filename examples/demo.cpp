// nonlocal demo: one weighted aggregate, four jobs, on data it draws itself.
//
//   1. non-local means      nlm_denoise: patch_distance over window2d with sum, on the
//                           running-sum kernel
//   2. depth hole filling   fill_depth: the colour-guided AR model, solved by multigrid CG;
//                           one Jacobi sweep of its system is one weighted aggregate
//   3. attention            dense, and 7 x 7 neighborhood attention on a feature map, each
//                           against the double-precision reference; the attention map of
//                           one pixel over an image
//   4. dissimilarities      pairwise distances of Fisher's iris (from ../shared/data when
//                           present, otherwise three classes drawn here), rows by class
//
// Usage: nonlocal_demo OUTPUT_DIR   (writes its pictures there and lists them)

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include <nonlocal/nonlocal.hpp>

#include "color_map.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

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

/// An 8-bit RGB picture [H, W, 3].
using picture = xt::xtensor<std::uint8_t, 3>;

/// A grey picture of img, lo black and hi white.
picture grey(const xt::xtensor<float, 2>& img, float lo, float hi) {
    picture p = xt::empty<std::uint8_t>({img.shape(0), img.shape(1), std::size_t(3)});
    for (std::size_t t = 0; t < img.size(); ++t) {
        const auto v = static_cast<std::uint8_t>(std::clamp((img.data()[t] - lo) / (hi - lo) * 255.f + 0.5f, 0.f, 255.f));
        for (std::size_t c = 0; c < 3; ++c) p.data()[3 * t + c] = v;
    }
    return p;
}

/// Pictures of one height side by side, 4 white columns between them.
picture side_by_side(const std::vector<picture>& parts) {
    const std::size_t H = parts.front().shape(0), gap = 4;
    std::size_t W = 0;
    for (const picture& p : parts) W += p.shape(1) + (W ? gap : 0);
    picture out = xt::full_like(xt::empty<std::uint8_t>({H, W, std::size_t(3)}), std::uint8_t(255));
    std::size_t left = 0;
    for (const picture& p : parts) {
        for (std::size_t r = 0; r < H; ++r)
            std::copy(&p(r, 0, 0), &p(r, 0, 0) + p.shape(1) * 3, &out(r, left, 0));
        left += p.shape(1) + gap;
    }
    return out;
}

/// Where the pictures went, for the listing at the end.
std::vector<std::string> written;

void write(const std::string& path, const picture& p, const std::string& what) {
    if (!stbi_write_png(path.c_str(), int(p.shape(1)), int(p.shape(0)), 3, p.data(), int(p.shape(1) * 3)))
        throw std::runtime_error("cannot write " + path);
    written.push_back(path + "  " + what);
}
/// A grey 8-bit PNG of img on [lo, hi] (the data files the tool tests read).
void write_grey(const std::string& path, const xt::xtensor<float, 2>& img, float lo, float hi) {
    std::vector<unsigned char> bytes(img.size());
    for (std::size_t t = 0; t < img.size(); ++t)
        bytes[t] = static_cast<unsigned char>(std::clamp((img.data()[t] - lo) / (hi - lo) * 255.f + 0.5f, 0.f, 255.f));
    if (!stbi_write_png(path.c_str(), int(img.shape(1)), int(img.shape(0)), 1, bytes.data(), int(img.shape(1))))
        throw std::runtime_error("cannot write " + path);
}

double psnr(const xt::xtensor<float, 2>& a, const xt::xtensor<float, 2>& b) {
    double mse = 0;
    for (std::size_t t = 0; t < a.size(); ++t) mse += (a.data()[t] - b.data()[t]) * double(a.data()[t] - b.data()[t]);
    return 10 * std::log10(255.0 * 255.0 / (mse / double(a.size())));
}

std::string range_text(float lo, float hi) {
    std::ostringstream s;
    s << std::lround(lo) << '-' << std::lround(hi);
    return s.str();
}

/// Fisher's iris (4 features and a class per row) from `path`, or three classes of 50 drawn
/// around iris's class means when the file cannot be read. Rows come ordered by class.
xt::xtensor<double, 2> iris_or_drawn(const std::string& path, std::vector<int>& classes, bool& real) {
    std::vector<std::vector<double>> rows;
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line)) {   // the first line holds counts and class names
        while (std::getline(in, line)) {
            std::vector<double> row;
            std::stringstream fields(line);
            for (std::string cell; std::getline(fields, cell, ',');) row.push_back(std::stod(cell));
            if (row.size() == 5) rows.push_back(row);
        }
    }
    real = rows.size() == 150;
    if (!real) {
        rows.clear();
        const double means[3][4] = {{5.0, 3.4, 1.5, 0.2}, {5.9, 2.8, 4.3, 1.3}, {6.6, 3.0, 5.6, 2.0}};
        std::mt19937 gen(1936);
        std::normal_distribution<double> spread(0.0, 0.3);
        for (int k = 0; k < 3; ++k)
            for (int i = 0; i < 50; ++i)
                rows.push_back({means[k][0] + spread(gen), means[k][1] + spread(gen), means[k][2] + spread(gen),
                                means[k][3] + spread(gen), double(k)});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a[4] < b[4]; });
    xt::xtensor<double, 2> x = xt::empty<double>({rows.size(), std::size_t(4)});
    classes.clear();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        for (std::size_t c = 0; c < 4; ++c) x(i, c) = rows[i][c];
        classes.push_back(int(rows[i][4]));
    }
    return x;
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
    nonlocal::nlm_options nlm;   // 7 x 7 patches, 21 x 21 search windows
    nlm.sigma = 20;
    const xt::xtensor<float, 2> denoised = nonlocal::nlm_denoise(noisy, nlm);
    std::printf("1. non-local means, %zu x %zu, 7 x 7 patches, 21 x 21 search: %.1f ms\n", H, W, seconds_since(t0) * 1e3);
    std::printf("   PSNR noisy %.2f dB -> denoised %.2f dB\n", psnr(noisy, clean), psnr(denoised, clean));
    write_grey(out + "/nlm_clean.png", clean, 0, 255);
    write_grey(out + "/nlm_noisy.png", noisy, 0, 255);
    write(out + "/nlm_panel.png", side_by_side({grey(clean, 0, 255), grey(noisy, 0, 255), grey(denoised, 0, 255)}),
          "non-local means: clean, noisy (sigma 20), denoised");

    // ---- 2. depth hole filling with the colour-guided AR model ------------------
    // Depth follows the scene's regions; 80 % of it is missing (0). fill_depth builds the AR
    // system's edge weights from the guide once and solves it with multigrid-preconditioned CG.
    const std::size_t n = H * W;
    xt::xtensor<float, 2> depth = xt::empty<float>({H, W});
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) depth(r, c) = 1000.f + clean(r, c) * 4.f + float(r);
    std::bernoulli_distribution observed(0.2);
    xt::xtensor<float, 2> sparse = xt::zeros<float>({H, W});
    for (std::size_t i = 0; i < n; ++i)
        if (observed(gen)) sparse.data()[i] = depth.data()[i];
    t0 = clock_type::now();
    const nonlocal::depth_result filled = nonlocal::fill_depth(sparse, clean);
    const double fill_s = seconds_since(t0);
    double err = 0, worst = 0;
    xt::xtensor<float, 2> error = xt::empty<float>({H, W});
    for (std::size_t i = 0; i < n; ++i) {
        error.data()[i] = std::abs(filled.depth.data()[i] - depth.data()[i]);
        err += double(error.data()[i]) * error.data()[i], worst = std::max(worst, double(error.data()[i]));
    }
    std::printf("\n2. depth hole filling, 80 %% missing: %.1f ms, %s: %zu iterations, relative residual %.1e, %s\n",
                fill_s * 1e3, filled.report.method.c_str(), filled.report.iterations, filled.report.relative_residual,
                filled.report.converged ? "converged" : "NOT converged");
    std::printf("   RMSE %.2f (depth 1000..2150)\n", std::sqrt(err / double(n)));
    // One Jacobi sweep of that system is one weighted aggregate: the system's edge weights over
    // its 8-neighbour stencil, with alpha and the observations as the data term.
    const xt::xtensor<float, 2> confidence = xt::cast<float>(xt::not_equal(sparse, 0.f));
    const nonlocal::grid_stencil stencil{H, W, 8};
    const nonlocal::ar_system<float> A(clean, stencil, nonlocal::laplacian_distance{10.0}, sparse, confidence);
    const xt::xtensor<float, 2> x = xt::ones<float>({n, std::size_t(1)}) * 1500.f;
    const xt::xtensor<float, 1> alpha = xt::flatten(confidence);
    const xt::xtensor<float, 2> xhat = xt::reshape_view(sparse, {n, std::size_t(1)});
    const auto sweep = nonlocal::weighted_aggregate(x, x, x, A.edges(), stencil, nonlocal::sum_with_data(alpha, xhat));
    const auto step = A.jacobi_step(std::span<const float>(x.data(), n));
    const bool sweep_is_aggregate = std::equal(step.begin(), step.end(), sweep.begin());
    std::printf("   a Jacobi sweep of its system equals one weighted aggregate bit for bit: %s\n",
                sweep_is_aggregate ? "yes" : "no");
    write_grey(out + "/depth_true.png", depth, 1000, 2150);
    write_grey(out + "/depth_observed.png", sparse, 1000, 2150);
    const auto observed_depth = [](float v) { return v != 0; };
    write(out + "/depth_panel_" + range_text(1000, 2150) + ".png",
          side_by_side({grey(clean, 0, 255), nonlocal::tools::color_mapped(sparse, 1000, 2150, observed_depth),
                        nonlocal::tools::color_mapped(filled.depth, 1000, 2150),
                        nonlocal::tools::color_mapped(depth, 1000, 2150)}),
          "depth 1000 (blue) to 2150 (red): guide, observed (missing black), filled, truth");
    write(out + "/depth_error_0-" + std::to_string(std::lround(worst)) + ".png",
          nonlocal::tools::color_mapped(error, 0, float(worst)),
          "|filled - truth|, 0 (blue) to " + std::to_string(std::lround(worst)) + " (red)");

    // ---- 3. attention -------------------------------------------------------------
    xt::random::seed(2017);
    const std::size_t tokens = 1024, dim = 64;
    const xt::xtensor<float, 2> q = xt::random::randn<float>({tokens, dim});
    const xt::xtensor<float, 2> k = xt::random::randn<float>({tokens, dim});
    const xt::xtensor<float, 2> v = xt::random::randn<float>({tokens, dim});
    const auto timed = [](auto&& f) {
        const auto start = clock_type::now();
        auto result = f();
        return std::pair{std::move(result), seconds_since(start)};
    };
    const auto largest_difference = [](const auto& a, const auto& b) {
        double d = 0;
        for (std::size_t t = 0; t < a.size(); ++t) d = std::max(d, std::abs(double(a.data()[t]) - double(b.data()[t])));
        return d;
    };
    const auto [y, dense_s] = timed([&] { return nonlocal::attention(q, k, v); });
    const auto [r, reference_s] = timed([&] {
        return nonlocal::reference::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{}, nonlocal::dense{},
                                                       nonlocal::softmax{});
    });
    std::printf("\n3. attention, n = %zu, d = %zu: dense %.2f ms, %.0fx the double reference's speed, largest "
                "difference %.1e\n",
                tokens, dim, dense_s * 1e3, reference_s / dense_s, largest_difference(y, r));
    // Neighborhood attention on a 32 x 32 feature map, 4 heads, 7 x 7 windows.
    const std::size_t side = 32, heads = 4, head_dim = 32;
    const xt::xtensor<float, 3> mq = xt::random::randn<float>({heads, side * side, head_dim});
    const xt::xtensor<float, 3> mk = xt::random::randn<float>({heads, side * side, head_dim});
    const xt::xtensor<float, 3> mv = xt::random::randn<float>({heads, side * side, head_dim});
    const nonlocal::window2d window{side, side, 7};
    const auto [w, window_s] = timed([&] {
        return nonlocal::weighted_aggregate(mq, mk, mv, nonlocal::scaled_dot_product{}, window, nonlocal::softmax{});
    });
    const auto [wr, window_reference_s] = timed([&] {
        return nonlocal::reference::weighted_aggregate(mq, mk, mv, nonlocal::scaled_dot_product{}, window,
                                                       nonlocal::softmax{});
    });
    std::printf("   7 x 7 neighborhood attention, %zu x %zu map, %zu heads: %.2f ms, %.0fx the reference's speed, "
                "largest difference %.1e\n",
                side, side, heads, window_s * 1e3, window_reference_s / window_s, largest_difference(w, wr));
    // The attention map of one pixel over the image: softmax of -|q_i - k_j|^2 / h^2 over 5 x 5
    // patches of the noisy scene (L2 attention, the weights of non-local means over the whole
    // image), for a pixel on the left disc: the other bright regions light up, edges stay dark.
    const auto patches = nonlocal::patch_features(noisy, 2);
    const std::size_t query = std::size_t(0.35 * double(H)) * W + std::size_t(0.3 * double(W));
    const xt::xtensor<float, 2> one = xt::view(patches, xt::range(query, query + 1), xt::all());
    const auto distances = nonlocal::pairwise(one, patches, nonlocal::squared_euclidean{});
    const double h2 = 2.0 * 20.0 * 20.0 * double(patches.shape(1));   // twice the noise's share of a distance
    xt::xtensor<float, 2> weights = xt::empty<float>({H, W});
    double total = 0;
    for (std::size_t j = 0; j < n; ++j) total += std::exp(-double(distances(0, j)) / h2);
    for (std::size_t j = 0; j < n; ++j) weights.data()[j] = float(std::exp(-double(distances(0, j)) / h2) / total);
    const float heaviest = xt::amax(weights)();
    picture map = nonlocal::tools::color_mapped(weights, 0, heaviest);
    for (std::size_t d = 0; d < 7; ++d)   // a white cross on the query
        for (std::size_t c = 0; c < 3; ++c) {
            map(query / W, std::min(W - 1, query % W - 3 + d), c) = 255;
            map(std::min(H - 1, query / W - 3 + d), query % W, c) = 255;
        }
    write(out + "/attention_map.png", side_by_side({grey(noisy, 0, 255), map}),
          "one pixel's attention over the image (white cross): 0 (blue) to its largest weight (red)");

    // ---- 4. a dissimilarity matrix -------------------------------------------------
    std::vector<int> classes;
    bool real = false;
    const auto iris = iris_or_drawn(std::string(NONLOCAL_DEMO_DATA_DIR) + "/iris.csv", classes, real);
    const xt::xtensor<double, 2> d = xt::sqrt(nonlocal::pairwise(iris, iris, nonlocal::squared_euclidean{}));
    double within = 0, between = 0;
    std::size_t nw = 0, nb = 0;
    for (std::size_t i = 0; i < d.shape(0); ++i)
        for (std::size_t j = 0; j < d.shape(1); ++j)
            if (i != j) (classes[i] == classes[j] ? (within += d(i, j), ++nw) : (between += d(i, j), ++nb));
    std::printf("\n4. Euclidean distances of %s (%zu samples, rows by class): mean %.2f within a class, %.2f between\n",
                real ? "Fisher's iris" : "three drawn classes (../shared/data/iris.csv not found)", d.shape(0),
                within / double(nw), between / double(nb));
    const std::size_t cell = 4;
    xt::xtensor<float, 2> big = xt::empty<float>({d.shape(0) * cell, d.shape(1) * cell});
    for (std::size_t i = 0; i < big.shape(0); ++i)
        for (std::size_t j = 0; j < big.shape(1); ++j) big(i, j) = float(d(i / cell, j / cell));
    const float farthest = xt::amax(big)();
    write(out + "/iris_dissimilarity.png", nonlocal::tools::color_mapped(big, 0, farthest),
          std::string(real ? "iris" : "drawn classes") + ": distances 0 (blue) to " + std::to_string(farthest) +
              " (red), three classes as blocks");

    std::printf("\npictures in %s:\n", std::filesystem::absolute(out).string().c_str());
    for (const std::string& line : written) std::printf("  %s\n", line.c_str());
    return filled.report.converged && sweep_is_aggregate && largest_difference(y, r) < 1e-4 &&
                   largest_difference(w, wr) < 1e-4
               ? 0
               : 1;
}
