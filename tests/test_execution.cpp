// execution.hpp: `par` gives results bitwise identical to `seq`, over slices
// and over the query tiles of one slice, for the tiled and the gather kernels.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_execution)

BOOST_AUTO_TEST_CASE(parallel_is_bitwise_sequential) {
    BOOST_TEST_MESSAGE("OpenMP: " << NONLOCAL_HAS_OPENMP << ", threads for par: " << detail::thread_count(execution::par));
    const auto q = test::random_tensor<float, 2>({333, 40}, 1), k = test::random_tensor<float, 2>({300, 40}, 2);
    const auto v = test::random_tensor<float, 2>({300, 24}, 3);
    const execution::parallel_policy two{2};
    BOOST_TEST(attention(two, q, k, v) == attention(execution::seq, q, k, v));
    BOOST_TEST(attention(two, q, k, v, causal{}) == attention(q, k, v, causal{}));
    const auto q4 = test::random_tensor<float, 4>({1, 3, 150, 16}, 4), k4 = test::random_tensor<float, 4>({1, 3, 150, 16}, 5);
    BOOST_TEST(attention(two, q4, k4, k4) == attention(q4, k4, k4));
    const window2d win{15, 10, 5};
    const auto x = test::random_tensor<float, 2>({150, 8}, 6);
    BOOST_TEST(weighted_aggregate(two, x, x, x, gaussian_distance{1.0}, win, sum{}) ==
               weighted_aggregate(x, x, x, gaussian_distance{1.0}, win, sum{}));
}

BOOST_AUTO_TEST_CASE(errors_inside_threads_reach_the_caller) {
    const auto q = test::random_tensor<float, 4>({2, 2, 10, 6}, 7);
    const embedded_gaussian wrong(xt::xtensor<double, 2>(xt::ones<double>({3, 5})),
                                  xt::xtensor<double, 2>(xt::ones<double>({3, 5})));
    test::check_invalid([&] { weighted_aggregate(execution::parallel_policy{2}, q, q, q, wrong, dense{}, sum{}); },
                        "theta has shape [3, 5]", "dimension 6");
}

BOOST_AUTO_TEST_CASE(negative_thread_counts_are_rejected) {
    const auto q = test::random_tensor<float, 2>({10, 6}, 8);
    test::check_invalid([&] { attention(execution::parallel_policy{-2}, q, q, q); }, "execution::parallel_policy",
                        "threads must be >= 0 (0: OpenMP's default), got -2");
    BOOST_TEST(attention(execution::parallel_policy{0}, q, q, q) == attention(q, q, q));
}

BOOST_AUTO_TEST_SUITE_END()
