// image/pixels.hpp: images as pixel rows and as planes, from containers, views and
// integer types, and their errors (empty images, values that are not finite).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <nonlocal/nonlocal.hpp>
#include <xtensor/xview.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_pixels)

BOOST_AUTO_TEST_CASE(planes_hold_each_channel_in_row_order) {
    // [H, W, C] containers of float and uint8, a strided view, and [H, W]: channel k of pixel
    // (r, c) at plane k, r * W + c, equal to the pixel rows' (r * W + c, k).
    const auto rgb = test::random_tensor<float, 3>({5, 7, 3}, 1, 0, 255);
    const xt::xtensor<std::uint8_t, 3> bytes = xt::cast<std::uint8_t>(rgb);
    const auto every_other = xt::view(rgb, xt::all(), xt::range(0, 7, 2), xt::all());   // 5 x 4 x 3, strided
    const xt::xtensor<double, 2> grey = xt::view(rgb, xt::all(), xt::all(), 1);
    const auto check = [](const auto& image) {
        const auto planes = detail::to_planes<double>(image, "test", "image");
        const auto rows = detail::to_pixel_rows<double>(image, "test", "image");
        BOOST_TEST(planes.height == rows.height);
        BOOST_TEST(planes.width == rows.width);
        BOOST_TEST(planes.channels == rows.channels);
        BOOST_TEST(planes.values.size() == rows.pixels.size());
        for (std::size_t k = 0; k < planes.channels; ++k)
            for (std::size_t i = 0; i < planes.pixels(); ++i) BOOST_TEST(planes.channel(k)[i] == rows.pixels(i, k));
        const auto again = detail::to_planes<float>(rows);
        for (std::size_t t = 0; t < planes.values.size(); ++t) BOOST_TEST(double(again.values[t]) == double(float(planes.values[t])));
    };
    check(rgb);
    check(bytes);
    check(every_other);
    check(grey);
    BOOST_TEST(detail::to_planes<float>(rgb, "test", "image").channel(2)[3 * 7 + 4] == rgb(3, 4, 2));
    test::check_invalid([] { detail::to_planes<float>(xt::xtensor<float, 3>(xt::zeros<float>({0, 4, 3})), "where", "guide"); },
                        "where", "guide is empty", "[0, 4, 3]");
}

BOOST_AUTO_TEST_CASE(values_that_are_not_finite_are_rejected_with_their_position) {
    // NaN and both infinities, in float and double images, as planes and as pixel rows; a
    // double too large for float is not finite once converted to float planes.
    for (const double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
        xt::xtensor<double, 3> rgb = xt::ones<double>({4, 5, 3});
        rgb(2, 3, 1) = bad;
        const xt::xtensor<float, 3> single = xt::cast<float>(rgb);
        const std::string value = std::to_string(bad);
        test::check_invalid([&] { detail::to_planes<float>(rgb, "where", "guide"); }, "where", "guide holds a value that is not finite", value, "pixel (2, 3), channel 1");
        test::check_invalid([&] { detail::to_planes<double>(single, "where", "guide"); }, "pixel (2, 3), channel 1");
        test::check_invalid([&] { detail::to_pixel_rows<double>(rgb, "where", "image"); }, "where", "image holds a value that is not finite", "pixel (2, 3), channel 1");
        xt::xtensor<float, 2> grey = xt::ones<float>({3, 7});
        grey(1, 6) = float(bad);
        test::check_invalid([&] { detail::to_pixel_rows<float>(grey, "where", "image"); }, "pixel (1, 6), channel 0");
        test::check_invalid([&] { detail::to_planes<float>(grey, "where", "image"); }, "pixel (1, 6), channel 0");
    }
    xt::xtensor<double, 2> large = xt::ones<double>({2, 2});
    large(1, 0) = 1e300;
    BOOST_TEST(detail::to_planes<double>(large, "where", "guide").values[2] == 1e300);
    test::check_invalid([&] { detail::to_planes<float>(large, "where", "guide"); }, "inf at pixel (1, 0), channel 0");
    // Integer images are finite whatever their values.
    const xt::xtensor<std::uint16_t, 2> deep = xt::ones<std::uint16_t>({2, 3}) * std::uint16_t(65535);
    BOOST_TEST(detail::to_planes<float>(deep, "where", "guide").values[5] == 65535.f);
}

BOOST_AUTO_TEST_SUITE_END()
