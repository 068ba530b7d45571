// nn/layer_norm.hpp: hand-computed tokens, the literal double loop over awkward feature
// counts, batched shapes and bad arguments.
#include <nonlocal/nonlocal.hpp>

#include "support/literal_nn.hpp"
#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_layer_norm)

BOOST_AUTO_TEST_CASE(hand_computed_tokens) {
    // [1, 2, 3]: mean 2, biased variance (1 + 0 + 1) / 3 = 2 / 3, 1 / sqrt(2 / 3 + 1e-5) = 1.2247357;
    // times weight [2, 1, 0.5] plus bias [0, 1, -1]: [-2.4494714, 1, -0.3876322].
    // [-4, 0, 0, 4]: mean 0, variance 32 / 4 = 8, 1 / sqrt(8 + 1e-5) = 0.35355317: [-1.4142127, 0, 0, 1.4142127].
    // A constant token [5, 5, 5] is all deviation 0: the bias.
    const nn::layer_norm three({2.f, 1.f, .5f}, {0.f, 1.f, -1.f});
    const xt::xtensor<float, 2> x = {{1, 2, 3}, {5, 5, 5}};
    const xt::xtensor<double, 2> expected = {{-2.4494714, 1, -0.3876322}, {0, 1, -1}};
    test::check_close(three(x), expected, 1e-6, 1e-6, "weighted");
    const nn::layer_norm four(xt::ones<float>({4}), xt::zeros<float>({4}));
    const xt::xtensor<float, 1> token = {-4, 0, 0, 4};
    const xt::xtensor<double, 1> normalized = {-1.4142127, 0, 0, 1.4142127};
    test::check_close(four(token), normalized, 1e-6, 1e-6, "one token [E]");
    // One feature: x - mean is 0, so every token is the bias.
    const nn::layer_norm one({3.f}, {0.25f});
    const xt::xtensor<float, 2> column = {{7}, {-2}, {1e30f}};
    const xt::xtensor<double, 2> biases = {{0.25}, {0.25}, {0.25}};
    test::check_close(one(column), biases, 0, 0, "E = 1");
}

BOOST_AUTO_TEST_CASE(matches_the_literal_loop) {
    for (const std::size_t E : test::awkward_lengths) {
        if (E == 0) continue;
        const nn::layer_norm norm(test::random_tensor<float, 1>({E}, 1, 0.5, 2), test::random_tensor<float, 1>({E}, 2),
                                  1e-6);
        // Features far from 0 (offset 100, spread 1): a one-pass variance would cancel.
        const auto x = test::random_tensor<float, 2>({5, E}, unsigned(E), 99, 101);
        test::check_close(norm(x), test::literal_layer_norm(x, norm), 2e-5, 2e-5, "E = " + std::to_string(E));
    }
    // [B, L, E] equals its flattening [B L, E]; a double view of it is converted.
    const std::size_t E = 19;
    const nn::layer_norm norm(test::random_tensor<float, 1>({E}, 3), test::random_tensor<float, 1>({E}, 4));
    const auto x = test::random_tensor<float, 3>({2, 7, E}, 5);
    const xt::xtensor<float, 2> flat = xt::reshape_view(x, {std::size_t(14), E});
    const xt::xtensor<float, 3> batched = norm(x);
    const xt::xtensor<float, 2> rows = norm(flat);
    const xt::xtensor<float, 2> batched_rows = xt::reshape_view(batched, {std::size_t(14), E});
    BOOST_TEST(batched_rows == rows);
    const xt::xtensor<double, 3> wide = xt::cast<double>(x);
    BOOST_TEST(norm(wide) == batched);
}

BOOST_AUTO_TEST_CASE(bad_arguments) {
    test::check_invalid([] { nn::layer_norm(xt::ones<float>({4}), xt::zeros<float>({3})); }, "nn::layer_norm",
                        "weight [4]", "bias [3]");
    test::check_invalid([] { nn::layer_norm(xt::ones<float>({0}), xt::zeros<float>({0})); }, "E > 0");
    test::check_invalid([] { nn::layer_norm(xt::ones<float>({2}), xt::zeros<float>({2}), 0.0); }, "eps = 0");
    test::check_invalid([] { nn::layer_norm(xt::ones<float>({2}), xt::zeros<float>({2}), NAN); }, "eps = nan");
    const nn::layer_norm norm(xt::ones<float>({4}), xt::zeros<float>({4}));
    const xt::xtensor<float, 2> x = xt::zeros<float>({3, 5});
    test::check_invalid([&] { norm(x); }, "x [3, 5]", "4 features");
}

BOOST_AUTO_TEST_SUITE_END()
