// image/features.hpp: patch and bilateral features by hand, borders, errors.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_features)

BOOST_AUTO_TEST_CASE(patches_reflect_without_repeating_the_border) {
    const xt::xtensor<int, 2> img = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    const auto f = patch_features(img, 1);
    BOOST_TEST(f.shape() == (std::array<std::size_t, 2>{9, 9}));
    // Pixel (0, 0): rows -1, 0, 1 -> 1, 0, 1; columns the same.
    const std::vector<float> corner = {5, 4, 5, 2, 1, 2, 5, 4, 5};
    BOOST_TEST(std::equal(corner.begin(), corner.end(), &f(0, 0)));
    const std::vector<float> center = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    BOOST_TEST(std::equal(center.begin(), center.end(), &f(4, 0)));
    // Radius larger than the image reflects repeatedly; one-pixel axes repeat the pixel.
    const xt::xtensor<float, 2> row = {{1, 2}};
    const auto g = patch_features(row, 2);
    const std::vector<float> expected = {1, 2, 1, 2, 1, 1, 2, 1, 2, 1, 1, 2, 1, 2, 1, 1, 2, 1, 2, 1, 1, 2, 1, 2, 1};
    BOOST_TEST(std::equal(expected.begin(), expected.end(), &g(0, 0)));
    BOOST_TEST(detail::reflect(-3, 3) == 1u);
    BOOST_TEST(detail::reflect(5, 3) == 1u);
}

BOOST_AUTO_TEST_CASE(color_patches_interleave_channels) {
    xt::xtensor<double, 3> img = xt::zeros<double>({2, 2, 3});
    for (std::size_t r = 0; r < 2; ++r)
        for (std::size_t c = 0; c < 2; ++c)
            for (std::size_t ch = 0; ch < 3; ++ch) img(r, c, ch) = 100.0 * r + 10.0 * c + ch;
    const auto f = patch_features<double>(img, 0);
    BOOST_TEST(f.shape() == (std::array<std::size_t, 2>{4, 3}));
    BOOST_TEST(f(3, 2) == 112.0);
}

BOOST_AUTO_TEST_CASE(bilateral_features_scale) {
    const xt::xtensor<double, 2> img = {{0, 40}};
    const auto f = bilateral_features<double>(img, 2.0, 10.0);
    // exp(-|f_0 - f_1|^2) = exp(-1 / (2 * 4) - 1600 / (2 * 100))
    double d2 = 0;
    for (std::size_t c = 0; c < 3; ++c) d2 += (f(0, c) - f(1, c)) * (f(0, c) - f(1, c));
    BOOST_TEST(std::abs(d2 - (1.0 / 8 + 8.0)) < 1e-12);
}

BOOST_AUTO_TEST_CASE(bad_input) {
    const xt::xtensor<float, 2> empty = xt::zeros<float>({0, 4});
    test::check_invalid([&] { patch_features(empty, 1); }, "patch_features", "empty", "[0, 4, 1]");
    const xt::xtensor<float, 2> img = xt::zeros<float>({3, 3});
    test::check_invalid([&] { bilateral_features(img, 0.0, 1.0); }, "bilateral_features", "finite and positive");
    test::check_invalid([&] { bilateral_features(img, 1.0, std::nan("")); }, "bilateral_features");
}

BOOST_AUTO_TEST_SUITE_END()
