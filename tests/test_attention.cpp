// attention.hpp: softmax(q k^T * scale) v over its neighborhoods, against the
// reference, on every tested architecture.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_attention)

BOOST_AUTO_TEST_CASE(variants_match_the_reference) {
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        unsigned seed = 1;
        for (std::size_t n : {1, 13, 64, 130})
            for (std::size_t d : {4, 31, 64}) {
                const auto q = test::random_tensor<float, 2>({n, d}, seed++);
                const auto k = test::random_tensor<float, 2>({n, d}, seed++);
                const auto v = test::random_tensor<float, 2>({n, d / 2 + 1}, seed++);
                BOOST_TEST_CONTEXT(A::name() << " n " << n << " d " << d) {
                    test::check_close(attention<A>(q, k, v),
                                      reference::weighted_aggregate(q, k, v, scaled_dot_product{}, dense{}, softmax{}),
                                      1e-5, 1e-4);
                    test::check_close(attention<A>(q, k, v, causal{}),
                                      reference::weighted_aggregate(q, k, v, scaled_dot_product{}, causal{}, softmax{}),
                                      1e-5, 1e-4);
                    test::check_close(
                        attention<A>(q, k, v, window1d{3, 2}, scaled_dot_product{0.5}),
                        reference::weighted_aggregate(q, k, v, scaled_dot_product{0.5}, window1d{3, 2}, softmax{}),
                        1e-5, 1e-4);
                }
            }
    });
}

BOOST_AUTO_TEST_CASE(multi_head_images) {
    // [B, H, n, d] over an 8 x 8 image with 5 x 5 neighborhoods.
    const auto q = test::random_tensor<float, 4>({2, 4, 64, 16}, 7), k = test::random_tensor<float, 4>({2, 4, 64, 16}, 8);
    const auto v = test::random_tensor<float, 4>({2, 4, 64, 16}, 9);
    const window2d win{8, 8, 5};
    test::check_close(attention(q, k, v, win),
                      reference::weighted_aggregate(q, k, v, scaled_dot_product{}, win, softmax{}), 1e-5, 1e-4);
}

BOOST_AUTO_TEST_CASE(weights_form_a_convex_combination) {
    // With values = one-hot rows, the output rows are the attention weights:
    // non-negative, summing to one, zero outside the neighborhood.
    const std::size_t n = 9;
    const auto q = test::random_tensor<double, 2>({n, 3}, 10), k = test::random_tensor<double, 2>({n, 3}, 11);
    const xt::xtensor<double, 2> eye = xt::eye<double>(n);
    const auto p = attention(q, k, eye, causal{});
    for (std::size_t i = 0; i < n; ++i) {
        double total = 0;
        for (std::size_t j = 0; j < n; ++j) {
            BOOST_TEST(p(i, j) >= 0.0);
            if (j > i) BOOST_TEST(p(i, j) == 0.0);
            total += p(i, j);
        }
        BOOST_TEST(std::abs(total - 1) < 1e-14);
    }
}

BOOST_AUTO_TEST_SUITE_END()
