// normalization.hpp: each C_i by hand, stability of exponential weights,
// rows without neighbours, and the data term of the AR model.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_normalization)

namespace {
// Two keys with logits (q.k) 1 and 2 for the single query; values 10 and 20.
const xt::xtensor<double, 2> q = {{1.0}};
const xt::xtensor<double, 2> k = {{1.0}, {2.0}};
const xt::xtensor<double, 2> v = {{10.0}, {20.0}};
}  // namespace

BOOST_AUTO_TEST_CASE(each_normalizer_by_hand) {
    const double e1 = std::exp(1.0), e2 = std::exp(2.0);
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, dot_product{}, dense{}, softmax{})(0, 0) -
                        (10 * e1 + 20 * e2) / (e1 + e2)) < 1e-12);
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, gaussian{}, dense{}, sum{})(0, 0) -
                        (10 * e1 + 20 * e2) / (e1 + e2)) < 1e-12);
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, dot_product{}, dense{}, sum{})(0, 0) - 50.0 / 3) < 1e-12);
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, dot_product{}, dense{}, count{})(0, 0) - 25.0) < 1e-12);
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, dot_product{}, dense{}, none{})(0, 0) - 50.0) < 1e-12);
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, gaussian{}, dense{}, none{})(0, 0) - (10 * e1 + 20 * e2)) < 1e-11);
}

BOOST_AUTO_TEST_CASE(rows_without_neighbors_are_zero) {
    const csr_graph empty_rows({0, 0, 2, 2}, {0, 1});
    const auto qs = test::random_tensor<float, 2>({3, 4}, 1), ks = test::random_tensor<float, 2>({2, 4}, 2);
    const auto vs = test::random_tensor<float, 2>({2, 3}, 3);
    const auto check = [&](auto nm) {
        const auto y = weighted_aggregate(qs, ks, vs, dot_product{}, empty_rows, nm);
        for (std::size_t c = 0; c < 3; ++c) BOOST_TEST((y(0, c) == 0.f && y(2, c) == 0.f));
        test::check_close(y, reference::weighted_aggregate(qs, ks, vs, dot_product{}, empty_rows, nm), 1e-6, 1e-5);
    };
    check(softmax{});
    check(sum{});
    check(count{});
    check(none{});
    // No keys at all: m = 0.
    const xt::xtensor<float, 2> no_k = xt::zeros<float>({0, 4}), no_v = xt::zeros<float>({0, 3});
    const auto y = weighted_aggregate(qs, no_k, no_v, scaled_dot_product{}, dense{}, softmax{});
    BOOST_TEST(y.shape(0) == 3u);
    BOOST_TEST(xt::all(xt::equal(y, 0.f)));
}

BOOST_AUTO_TEST_CASE(weights_summing_to_zero_give_zero) {
    const xt::xtensor<double, 2> qq = {{1.0}}, kk = {{1.0}, {-1.0}}, vv = {{3.0}, {5.0}};
    BOOST_TEST(weighted_aggregate(qq, kk, vv, dot_product{}, dense{}, sum{})(0, 0) == 0.0);
}

BOOST_AUTO_TEST_CASE(huge_logits_stay_finite) {
    // Logits of magnitude 1e4: exp would overflow without the running maximum.
    for (double magnitude : {1e4, -1e4}) {
        auto qs = test::random_tensor<float, 2>({17, 8}, 4);
        auto ks = test::random_tensor<float, 2>({300, 8}, 5);
        const auto vs = test::random_tensor<float, 2>({300, 5}, 6);
        qs *= float(std::sqrt(magnitude > 0 ? magnitude : -magnitude) * 3);
        ks *= float(std::sqrt(magnitude > 0 ? magnitude : -magnitude) * 3);
        for (auto nm_is_softmax : {true, false}) {
            const auto y = nm_is_softmax ? weighted_aggregate(qs, ks, vs, dot_product{}, dense{}, softmax{})
                                         : weighted_aggregate(qs, ks, vs, gaussian{}, dense{}, sum{});
            const auto r = nm_is_softmax ? reference::weighted_aggregate(qs, ks, vs, dot_product{}, dense{}, softmax{})
                                         : reference::weighted_aggregate(qs, ks, vs, gaussian{}, dense{}, sum{});
            BOOST_TEST(xt::all(xt::isfinite(y)));
            // Logits of 1e4 in float carry an absolute error of about 1e4 * 1e-7 * sqrt(d):
            // the weights themselves are only that accurate.
            test::check_close(y, r, 2e-2, 2e-2, "magnitude " + std::to_string(magnitude));
        }
    }
}

BOOST_AUTO_TEST_CASE(data_term_by_hand) {
    // y = (sum_j s_j v_j + alpha t) / (sum_j s_j + alpha), with s = 1, 2 from dot_product.
    const sum_with_data data(xt::xtensor<double, 1>{4.0}, xt::xtensor<double, 2>{{7.0}});
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, dot_product{}, dense{}, data)(0, 0) - (50.0 + 28) / 7) < 1e-12);
    // With exponential weights the data term is added at the same (shifted) scale.
    const double e1 = std::exp(1.0), e2 = std::exp(2.0);
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, gaussian{}, dense{}, data)(0, 0) -
                        (10 * e1 + 20 * e2 + 28) / (e1 + e2 + 4)) < 1e-12);
    // alpha = 0 is plain sum normalization.
    const sum_with_data no_data(xt::xtensor<double, 1>{0.0}, xt::xtensor<double, 2>{{7.0}});
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, dot_product{}, dense{}, no_data)(0, 0) - 50.0 / 3) < 1e-12);
    // Neighbour weights that underflow beside alpha: the result is the target.
    const xt::xtensor<double, 2> far_q = {{0.0}}, far_k = {{40.0}};
    const xt::xtensor<double, 2> far_v = {{100.0}};
    BOOST_TEST(weighted_aggregate(far_q, far_k, far_v, gaussian_distance{1.0}, dense{}, data)(0, 0) == 7.0);
    BOOST_TEST(reference::weighted_aggregate(far_q, far_k, far_v, gaussian_distance{1.0}, dense{}, data)(0, 0) == 7.0);
    // alpha = 0 beside weights whose shift exp(-row max) overflows (logit -1600): the data term
    // adds nothing, y = the one neighbour's value (0 x inf made it NaN).
    BOOST_TEST(weighted_aggregate(far_q, far_k, far_v, gaussian_distance{1.0}, dense{}, no_data)(0, 0) == 100.0);
    BOOST_TEST(reference::weighted_aggregate(far_q, far_k, far_v, gaussian_distance{1.0}, dense{}, no_data)(0, 0) == 100.0);
}

BOOST_AUTO_TEST_CASE(data_term_validation) {
    test::check_invalid([] { sum_with_data(xt::xtensor<double, 1>{-1.0}, xt::xtensor<double, 2>{{0.0}}); },
                        "sum_with_data", "finite and >= 0");
    test::check_invalid([] { sum_with_data(xt::xtensor<double, 1>{1.0, 2.0}, xt::xtensor<double, 2>{{0.0}}); },
                        "alpha [2]", "target [1, 1]");
    const sum_with_data data(xt::xtensor<double, 1>{1.0, 1.0}, xt::xtensor<double, 2>{{0.0}, {0.0}});
    test::check_invalid([&] { weighted_aggregate(q, k, v, dot_product{}, dense{}, data); }, "do not fit 1 batch item(s) of 1 queries");
}

BOOST_AUTO_TEST_SUITE_END()
