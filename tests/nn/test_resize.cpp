// nn/resize.hpp: bilinear and bicubic resizing against values worked out by hand (PyTorch's
// F.interpolate, with and without antialias and align_corners); torch_parity compares it with
// PyTorch itself.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_resize)

BOOST_AUTO_TEST_CASE(enlarges_by_hand) {
    // [[0, 1], [2, 3]] to 4 x 4: output o sits at input (o + 0.5) / 2 - 0.5, i.e. -0.25 (clamped
    // to 0), 0.25, 0.75 and 1.25 (past the last input: the last input).
    const xt::xtensor<float, 3> x = {{{0, 1}, {2, 3}}};
    const xt::xtensor<double, 3> expected = {{{0, 0.25, 0.75, 1},
                                              {0.5, 0.75, 1.25, 1.5},
                                              {1.5, 1.75, 2.25, 2.5},
                                              {2, 2.25, 2.75, 3}}};
    test::check_close(nn::resize_bilinear(x, {4, 4}), expected, 1e-7, 1e-7, "2 x 2 to 4 x 4");
    // Enlarging, antialias changes nothing.
    test::check_close(nn::resize_bilinear(x, {4, 4}, true), expected, 1e-7, 1e-7, "antialias enlarging");
}

BOOST_AUTO_TEST_CASE(shrinks_by_hand) {
    // [1, 2, 3, 4] to 2: without antialias outputs sit at 0.5 and 2.5, blending two inputs;
    // with it, a triangle of half-width 2 centred at 1 and 3 weighs inputs 0.75, 0.75, 0.25
    // (and 0.25, 0.75, 0.75), normalised by 1.75.
    const xt::xtensor<double, 3> x = {{{1, 2, 3, 4}}};
    test::check_close(nn::resize_bilinear(x, {1, 2}), xt::xtensor<double, 3>{{{1.5, 3.5}}}, 1e-15, 1e-15, "plain");
    test::check_close(nn::resize_bilinear(x, {1, 2}, true), xt::xtensor<double, 3>{{{12.0 / 7, 23.0 / 7}}}, 1e-15, 1e-15,
                      "antialias");
    // To one pixel: the middle of the map, or with antialias its triangle-weighted mean.
    const xt::xtensor<double, 4> planes = {{{{1, 2, 3, 4}}, {{5, 5, 5, 5}}}};
    test::check_close(nn::resize_bilinear(planes, {1, 1}), xt::xtensor<double, 4>{{{{2.5}}, {{5}}}}, 1e-15, 1e-15,
                      "one pixel");
    // Weights 1 - |i + 0.5 - 2| / 4: 0.625, 0.875, 0.875, 0.625, sum 3.
    test::check_close(nn::resize_bilinear(planes, {1, 1}, true), xt::xtensor<double, 4>{{{{2.5}}, {{5}}}}, 1e-15, 1e-15,
                      "one pixel, antialias");
}

BOOST_AUTO_TEST_CASE(bicubic_by_hand) {
    // [1, 2, 3, 4] to 2 without antialias: outputs at 0.5 and 2.5, Keys' cubic (a = -0.75) at
    // t = 1/2 weighs the four inputs around them -3/32, 19/32, 19/32, -3/32, the ones off the
    // axis read as its ends: (-3 + 19 + 38 - 9) / 32 and (-6 + 57 + 76 - 12) / 32.
    const xt::xtensor<double, 3> x = {{{1, 2, 3, 4}}};
    const nn::resize_options bicubic{nn::interpolation::bicubic};
    test::check_close(nn::resize(x, {1, 2}, bicubic), xt::xtensor<double, 3>{{{45.0 / 32, 115.0 / 32}}}, 1e-15, 1e-15,
                      "plain");
    // With antialias: the cubic of a = -0.5 stretched by 2, centred at 1 (and 3), at distances
    // 0.25, 0.25, 0.75, 1.25 weighs the inputs 111, 111, 29, -9 (/ 128), normalised by their sum
    // 242: (111 + 222 + 87 - 36) / 242; the second output mirrors the first, 5 - 192 / 121.
    test::check_close(nn::resize(x, {1, 2}, {nn::interpolation::bicubic, true}),
                      xt::xtensor<double, 3>{{{192.0 / 121, 413.0 / 121}}}, 1e-15, 1e-15, "antialias");
    // Corners aligned, 4 to 3: the ends stay, the middle sits at 1.5, between 2 and 3.
    test::check_close(nn::resize(x, {1, 3}, {nn::interpolation::bicubic, false, true}),
                      xt::xtensor<double, 3>{{{1, 2.5, 4}}}, 1e-15, 1e-15, "corners aligned");
    // Enlarging, antialias changes bicubic (a = -0.5, and the border's weights renormalised):
    // [1, 2] to 4 centres the outputs at 0.25, 0.75, 1.25, 1.75 in the inputs' cells (input i
    // at i + 0.5). Output 0 weighs its inputs K(0.25) = 111/128 and K(1.25) = -9/128, so
    // (111 - 18) / 102; output 1 K(0.25) and K(0.75) = 29/128, so (111 + 58) / 140; the others
    // mirror them.
    const xt::xtensor<double, 3> two = {{{1, 2}}};
    test::check_close(nn::resize(two, {1, 4}, {nn::interpolation::bicubic, true}),
                      xt::xtensor<double, 3>{{{93.0 / 102, 169.0 / 140, 3 - 169.0 / 140, 3 - 93.0 / 102}}}, 1e-15,
                      1e-15, "antialias enlarging");
}

BOOST_AUTO_TEST_CASE(keeps_a_map_of_its_own_size) {
    const auto x = test::random_tensor<float, 4>({2, 3, 5, 17}, 1);
    const xt::xtensor<float, 3> flat = xt::ones<float>({1, 9, 7}) * 3.0f;
    for (const auto mode : {nn::interpolation::bilinear, nn::interpolation::bicubic})
        for (const bool antialias : {false, true})
            for (const bool align_corners : {false, true}) {
                const nn::resize_options options{mode, antialias, align_corners};
                BOOST_TEST(nn::resize(x, {5, 17}, options) == x);
                // A constant map stays constant at any size.
                for (const nn::size2 size : {nn::size2{1, 1}, nn::size2{2, 3}, nn::size2{20, 31}})
                    test::check_close(nn::resize(flat, size, options),
                                      xt::xtensor<double, 3>(xt::ones<double>({std::size_t(1), size.h, size.w}) * 3.0),
                                      1e-6, 1e-6, "constant");
            }
}

BOOST_AUTO_TEST_CASE(refuses_empty_maps_and_sizes) {
    const auto x = test::random_tensor<float, 4>({1, 2, 3, 3}, 2);
    test::check_invalid([&] { nn::resize_bilinear(x, {0, 4}); }, "nn::resize", "x [1, 2, 3, 3]", "size (0, 4)");
    test::check_invalid([&] { nn::resize(xt::xtensor<float, 3>(xt::zeros<float>({2, 0, 3})), {2, 2}); }, "nn::resize",
                        "x [2, 0, 3]");
}

BOOST_AUTO_TEST_SUITE_END()
