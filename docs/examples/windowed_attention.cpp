// docs/tutorials/windowed-attention.md: neighborhood attention over a feature map
// (NATTEN's windows), sliding windows over a sequence, position biases and borders.
#include <nonlocal/nonlocal.hpp>

#include <cstdio>
#include <xtensor/xrandom.hpp>

int main() {
    xt::random::seed(5);
    // A 28 x 28 feature map as 784 tokens in row-major order: one image, 4 heads of 32 features.
    const std::size_t H = 28, W = 28, heads = 4, d = 32;
    xt::xtensor<float, 4> q = xt::random::randn<float>({std::size_t(1), heads, H * W, d});
    xt::xtensor<float, 4> k = xt::random::randn<float>({std::size_t(1), heads, H * W, d});
    xt::xtensor<float, 4> v = xt::random::randn<float>({std::size_t(1), heads, H * W, d});

    // Each pixel attends to the 7 x 7 pixels around it; at the borders the window
    // shifts inward (NATTEN's rule), so every pixel sees 49 keys.
    const nonlocal::window2d window{H, W, 7};
    auto y = nonlocal::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{}, window, nonlocal::softmax{});

    // Dilated windows (every second pixel) and NAT's relative position bias, one table
    // of (2 * 7 - 1)^2 entries per head.
    const nonlocal::window2d dilated{H, W, 7, 2};
    xt::xtensor<float, 3> table = xt::random::randn<float>({heads, std::size_t(13), std::size_t(13)});
    const nonlocal::with_position_bias biased(nonlocal::scaled_dot_product{}, table, dilated);
    auto b = nonlocal::weighted_aggregate(q, k, v, biased, dilated, nonlocal::softmax{});

    // A sliding causal window over a sequence, clipped at the start as in Longformer and
    // Mistral: token i sees tokens i - 64 .. i (fewer for the first 64).
    const nonlocal::window1d band{64, 1, true, nonlocal::border::clip};
    auto s = nonlocal::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{}, band, nonlocal::softmax{});

    double error = 0;
    const auto check = [&](const auto& fast, const auto& sim, const auto& nb) {
        const auto r = nonlocal::reference::weighted_aggregate(q, k, v, sim, nb, nonlocal::softmax{});
        error = std::max(error, xt::amax(xt::abs(xt::cast<double>(fast) - r))());
    };
    check(y, nonlocal::scaled_dot_product{}, window);
    check(b, biased, dilated);
    check(s, nonlocal::scaled_dot_product{}, band);
    std::printf("7 x 7 windows, dilated with bias, clipped causal band: max |fast - reference| = %.2g\n", error);
    return error < 1e-4 ? 0 : 1;
}
