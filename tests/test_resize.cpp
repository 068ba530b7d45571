// nn/resize.hpp: bilinear resizing against values worked out by hand (PyTorch's
// F.interpolate with align_corners=False, with and without antialias); torch_parity compares
// it with PyTorch itself.
#include <nonlocal/nonlocal.hpp>

#include "support.hpp"

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

BOOST_AUTO_TEST_CASE(keeps_a_map_of_its_own_size) {
    const auto x = test::random_tensor<float, 4>({2, 3, 5, 17}, 1);
    BOOST_TEST(nn::resize_bilinear(x, {5, 17}) == x);
    BOOST_TEST(nn::resize_bilinear(x, {5, 17}, true) == x);
    // A constant map stays constant at any size.
    const xt::xtensor<float, 3> flat = xt::ones<float>({1, 9, 7}) * 3.0f;
    for (const bool antialias : {false, true})
        for (const nn::size2 size : {nn::size2{1, 1}, nn::size2{2, 3}, nn::size2{20, 31}})
            test::check_close(nn::resize_bilinear(flat, size, antialias),
                              xt::xtensor<double, 3>(xt::ones<double>({std::size_t(1), size.h, size.w}) * 3.0), 1e-6, 1e-6,
                              "constant");
}

BOOST_AUTO_TEST_CASE(refuses_empty_maps_and_sizes) {
    const auto x = test::random_tensor<float, 4>({1, 2, 3, 3}, 2);
    test::check_invalid([&] { nn::resize_bilinear(x, {0, 4}); }, "nn::resize_bilinear", "x [1, 2, 3, 3]", "size (0, 4)");
    test::check_invalid([&] { nn::resize_bilinear(xt::xtensor<float, 3>(xt::zeros<float>({2, 0, 3})), {2, 2}); },
                        "nn::resize_bilinear", "x [2, 0, 3]");
}

BOOST_AUTO_TEST_SUITE_END()
