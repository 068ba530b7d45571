// filter/nlm.hpp and kernel/patch_window.hpp: the running-sum kernel against
// the literal composition (patches materialised, distances computed pair by
// pair, in double), on small images with several radii, channels and dtypes;
// denoising behaviour; bad input.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <random>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_nlm)

static_assert(kernel::patch_window_applies<patch_distance, window2d, sum>);
static_assert(!kernel::patch_window_applies<patch_distance, window2d, softmax>);
static_assert(!kernel::patch_window_applies<gaussian_distance, window2d, sum>);

BOOST_AUTO_TEST_CASE(running_sums_equal_literal_patch_distances) {
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        unsigned seed = 1;
        for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 17}, {9, 1}, {6, 7}, {23, 19}, {40, 33}})
            for (std::size_t C : {1, 3})
                for (std::size_t pr : {0, 1, 3})
                    for (std::size_t sr : {1, 2, 5}) {
                        const auto x = test::random_tensor<float, 2>({H * W, C}, seed++, 0, 1);
                        const auto other = test::random_tensor<float, 2>({H * W, C}, seed++, 0, 1);
                        const auto v = test::random_tensor<float, 2>({H * W, 2}, seed++);
                        const patch_distance s(H, W, pr, 0.25, 0.1, sr == 2 ? 1.5 : INFINITY);
                        const window2d win{H, W, 2 * sr + 1};
                        std::ostringstream what;
                        what << A::name() << " " << H << "x" << W << " C " << C << " patch " << pr << " search " << sr;
                        // Same queries and keys (the symmetric path), then different ones.
                        test::check_close(weighted_aggregate<A>(x, x, v, s, win, sum{}),
                                          reference::weighted_aggregate(x, x, v, s, win, sum{}), 2e-5, 2e-5,
                                          what.str() + " symmetric");
                        test::check_close(weighted_aggregate<A>(x, other, v, s, win, sum{}),
                                          reference::weighted_aggregate(x, other, v, s, win, sum{}), 2e-5, 2e-5,
                                          what.str() + " two images");
                        // Search windows clipped at the borders instead of shifted inward.
                        const window2d clipped{H, W, 2 * sr + 1, 1, false, border::clip};
                        test::check_close(weighted_aggregate<A>(x, x, v, s, clipped, sum{}),
                                          reference::weighted_aggregate(x, x, v, s, clipped, sum{}), 2e-5, 2e-5,
                                          what.str() + " clipped");
                    }
    });
}

BOOST_AUTO_TEST_CASE(stripes_and_threads) {
    // Taller than one stripe of 64 rows, so the symmetric partners cross stripes.
    const std::size_t H = 150, W = 37;
    const auto x = test::random_tensor<double, 2>({H * W, 1}, 3, 0, 1);
    const patch_distance s(H, W, 2, 0.3);
    const window2d win{H, W, 9};
    const auto seq = weighted_aggregate(x, x, x, s, win, sum{});
    test::check_close(seq, reference::weighted_aggregate(x, x, x, s, win, sum{}), 1e-12, 1e-12);
    BOOST_TEST(weighted_aggregate(execution::parallel_policy{2}, x, x, x, s, win, sum{}) == seq);
    // Dilated or causal windows go through the general kernel.
    const window2d dilated{H, W, 5, 2};
    test::check_close(weighted_aggregate(x, x, x, s, dilated, sum{}),
                      reference::weighted_aggregate(x, x, x, s, dilated, sum{}), 1e-12, 1e-12);
}

BOOST_AUTO_TEST_CASE(nlm_by_hand_and_by_dtype) {
    // A 1 x 3 image, patch radius 0, search radius 1, h = 10: weights exp(-(a - b)^2 / 100).
    const xt::xtensor<double, 2> img = {{0, 10, 30}};
    nlm_options o;
    o.patch_radius = 0, o.search_radius = 1, o.h = 10;
    const auto y = nlm_denoise(img, o);
    const double w01 = std::exp(-1.0), w12 = std::exp(-4.0), w02 = std::exp(-9.0);
    BOOST_TEST(std::abs(y(0, 0) - (0 + 10 * w01 + 30 * w02) / (1 + w01 + w02)) < 1e-12);
    BOOST_TEST(std::abs(y(0, 1) - (0 * w01 + 10 + 30 * w12) / (w01 + 1 + w12)) < 1e-12);
    // A search window larger than the image is the image (here the 3 pixels, as above).
    o.search_radius = 50;
    const auto wide = nlm_denoise(img, o);
    BOOST_TEST(std::abs(wide(0, 0) - (0 + 10 * w01 + 30 * w02) / (1 + w01 + w02)) < 1e-12);
    BOOST_TEST(std::abs(wide(0, 2) - (0 * w02 + 10 * w12 + 30) / (w02 + w12 + 1)) < 1e-12);

    // uint8, uint16 and float inputs agree (up to rounding) and keep their type and shape.
    const auto f = test::random_tensor<float, 3>({12, 10, 3}, 4, 0, 255);
    xt::xtensor<std::uint8_t, 3> u8 = xt::cast<std::uint8_t>(xt::round(f));
    xt::xtensor<std::uint16_t, 3> u16 = xt::cast<std::uint16_t>(u8);
    const xt::xtensor<float, 3> as_float = xt::cast<float>(u8);
    o = nlm_options{};
    o.sigma = 15;
    const auto yf = nlm_denoise(as_float, o);
    const auto y8 = nlm_denoise(u8, o);
    const auto y16 = nlm_denoise(u16, o);
    static_assert(std::is_same_v<decltype(y8), const xt::xtensor<std::uint8_t, 3>>);
    BOOST_TEST(y8.shape() == u8.shape());
    test::check_close(y8, yf, 0.5 + 1e-3, 0);
    test::check_close(y16, yf, 0.5 + 1e-3, 0);
    // Multi-channel distances are summed over channels: the colour result equals the
    // composition with patch_distance on 3-channel pixels.
    xt::xtensor<float, 2> px = xt::empty<float>({std::size_t(120), std::size_t(3)});
    std::copy(as_float.begin(), as_float.end(), px.begin());
    const auto direct = reference::weighted_aggregate(px, px, px, patch_distance(12, 10, 3, 0.65 * 15, 15),
                                                      window2d{12, 10, 21}, sum{});
    xt::xtensor<float, 2> yflat = xt::empty<float>({std::size_t(120), std::size_t(3)});
    std::copy(yf.begin(), yf.end(), yflat.begin());
    test::check_close(yflat, direct, 1e-3, 1e-5);
}

BOOST_AUTO_TEST_CASE(denoising_behaviour) {
    // A constant image stays constant.
    const xt::xtensor<float, 2> flat = xt::ones<float>({30, 40}) * 77.f;
    nlm_options o;
    o.sigma = 10;
    test::check_close(nlm_denoise(flat, o), flat, 1e-4, 0);
    // On a piecewise-constant image with noise, the error variance drops several-fold.
    std::mt19937 gen(7);
    std::normal_distribution<float> noise(0, 10);
    xt::xtensor<float, 2> clean = xt::empty<float>({64, 64}), noisy = clean;
    for (std::size_t r = 0; r < 64; ++r)
        for (std::size_t c = 0; c < 64; ++c) clean(r, c) = (r / 16 + c / 16) % 2 ? 180.f : 60.f;
    for (std::size_t t = 0; t < clean.size(); ++t) noisy.data()[t] = clean.data()[t] + noise(gen);
    const auto denoised = nlm_denoise(noisy, o);
    const double before = xt::mean(xt::square(noisy - clean))(), after = xt::mean(xt::square(denoised - clean))();
    BOOST_TEST_MESSAGE("noise variance " << before << " -> " << after);
    BOOST_TEST(after < before / 4);
}

BOOST_AUTO_TEST_CASE(joint_bilateral_matches_the_composition) {
    const auto guide = test::random_tensor<float, 3>({15, 13, 3}, 5, 0, 100);
    const auto values = test::random_tensor<float, 2>({15, 13}, 6, 0, 10);
    const bilateral_options o{2, 1.5, 20.0};
    const auto y = joint_bilateral(values, guide, o);
    // Literal: exp(-|p_i - p_j|^2 / 2 s_s^2 - |g_i - g_j|^2 / 2 s_r^2) over the shifted 5 x 5 window.
    const window2d win{15, 13, 5};
    for (std::size_t i = 0; i < 15 * 13; ++i) {
        double num = 0, den = 0;
        win.for_each_range(i, extents{195, 195}, [&](key_range r) {
            for (std::size_t t = 0; t < r.count; ++t) {
                const std::size_t j = r.first + t * r.stride;
                const double dr = double(i / 13) - double(j / 13), dc = double(i % 13) - double(j % 13);
                double g2 = 0;
                for (std::size_t ch = 0; ch < 3; ++ch) {
                    const double d = double(guide(i / 13, i % 13, ch)) - guide(j / 13, j % 13, ch);
                    g2 += d * d;
                }
                const double w = std::exp(-(dr * dr + dc * dc) / (2 * 1.5 * 1.5) - g2 / (2 * 20.0 * 20.0));
                num += w * values(j / 13, j % 13);
                den += w;
            }
        });
        BOOST_TEST(std::abs(y(i / 13, i % 13) - num / den) < 1e-4);
    }
}

BOOST_AUTO_TEST_CASE(bad_input) {
    const xt::xtensor<float, 2> img = xt::zeros<float>({8, 9}), empty = xt::zeros<float>({0, 9});
    nlm_options o;
    test::check_invalid([&] { nlm_denoise(img, o); }, "nlm_denoise",
                        "nlm_options::h must be above 0, or sigma above 0 to derive it (h = h_per_sigma x sigma), got 0");
    o.h = -1;
    test::check_invalid([&] { nlm_denoise(img, o); }, "nlm_options::h must be finite and at least 0 (0: h_per_sigma x sigma), got -1");
    o.h = 5, o.sigma = std::nan("");
    test::check_invalid([&] { nlm_denoise(img, o); }, "nlm_options::sigma must be finite and at least 0 (0: unknown), got nan");
    o.sigma = 0, o.h = 0, o.h_per_sigma = -1;   // every wrong field named at once
    test::check_invalid([&] { nlm_denoise(img, o); }, "nlm_options::h_per_sigma must be finite and positive, got -1; nlm_options::h must be above 0");
    o.h = 5, o.h_per_sigma = 0.65;
    o.sigma = 0;
    test::check_invalid([&] { nlm_denoise(empty, o); }, "image is empty", "[0, 9]");
    o.patch_radius = 10;
    test::check_invalid([&] { nlm_denoise(img, o); }, "nlm_options::patch_radius = 10 exceeds", "8 x 9 image");
    // Windows beyond the image are the image: radius 100 gives radius 9's result.
    o.patch_radius = 1, o.search_radius = 100;
    const auto noisy = test::random_tensor<float, 2>({8, 9}, 3, 0, 50);
    const auto wide = nlm_denoise(noisy, o);
    o.search_radius = 9;
    test::check_close(wide, nlm_denoise(noisy, o), 0, 0, "search_radius 100 = 9");
    test::check_close(joint_bilateral(noisy, noisy, bilateral_options{100, 3.0, 10.0}),
                      joint_bilateral(noisy, noisy, bilateral_options{9, 3.0, 10.0}), 0, 0, "bilateral radius 100 = 9");
    const xt::xtensor<float, 2> guide = xt::zeros<float>({8, 8});
    test::check_invalid([&] { joint_bilateral(img, guide); }, "values are 8 x 9 but the guide is 8 x 8");
    test::check_invalid([&] { joint_bilateral(img, img, bilateral_options{1, 0.0, -1.0}); }, "joint_bilateral",
                        "bilateral_options::sigma_spatial must be finite and positive, got 0; "
                        "bilateral_options::sigma_range must be finite and positive, got -1");
    xt::xtensor<float, 2> nan_img = img;
    nan_img(7, 8) = std::nanf("");
    o.search_radius = 3;
    test::check_invalid([&] { nlm_denoise(nan_img, o); }, "nlm_denoise", "image holds a value that is not finite", "pixel (7, 8)");
    test::check_invalid([&] { joint_bilateral(nan_img, img); }, "joint_bilateral", "values holds", "pixel (7, 8)");
    test::check_invalid([&] { joint_bilateral(img, nan_img); }, "joint_bilateral", "guide holds", "pixel (7, 8)");
    test::check_invalid([] { patch_distance(4, 4, 1, 0.0); }, "patch_distance", "h = 0");
    const xt::xtensor<float, 2> px = xt::zeros<float>({16, 1});
    test::check_invalid([&] { weighted_aggregate(px, px, px, patch_distance(4, 4, 1, 1.0), window2d{2, 8, 3}, sum{}); },
                        "patch_distance is for a 4 x 4 image but window2d for 2 x 8");
}

BOOST_AUTO_TEST_SUITE_END()
