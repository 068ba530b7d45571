// similarity/*.hpp: logits by hand, projections, the separable concatenation
// against its literal form, the position bias's offsets, and bad parameters.
#include <nonlocal/nonlocal.hpp>

#include <limits>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_similarity)

namespace {
template <class S>
double logit_of(const S& s, std::initializer_list<double> a, std::initializer_list<double> b) {
    const std::vector<double> x(a), y(b);
    return s.logit(std::span<const double>(x), std::span<const double>(y));
}
}  // namespace

BOOST_AUTO_TEST_CASE(logits_by_hand) {
    BOOST_TEST(logit_of(dot_product{}, {1, 2, 3}, {4, -5, 6}) == 12.0);   // 4 - 10 + 18
    BOOST_TEST(std::abs(logit_of(scaled_dot_product{}, {1, 2, 3, 4}, {1, 1, 1, 1}) - 5.0) < 1e-15);   // 10 / 2
    BOOST_TEST(logit_of(scaled_dot_product{0.25}, {1, 2}, {3, 4}) == 2.75);   // 11 / 4
    BOOST_TEST(logit_of(gaussian{}, {1, 2}, {3, 4}) == 11.0);
    BOOST_TEST(logit_of(squared_euclidean{}, {1, 2, 3}, {4, 6, 3}) == 25.0);
    BOOST_TEST(logit_of(gaussian_distance{2.0}, {1, 2, 3}, {4, 6, 3}) == -6.25);
    BOOST_TEST(logit_of(laplacian_distance{2.0}, {1, 2, 3}, {4, 6, 3}) == -3.5);   // (3 + 4 + 0) / 2
    BOOST_TEST(logit_of(laplacian_distance{4.0}, {5, -1}, {1, 1}) == -1.5);
    BOOST_TEST(std::abs(logit_of(cosine{}, {1, 0}, {1, 1}) - 1 / std::sqrt(2.0)) < 1e-15);
    BOOST_TEST(logit_of(cosine{}, {0, 0}, {1, 1}) == 0.0);
    BOOST_TEST(std::abs(scaled_dot_product{}.scale(64) - 0.125) < 1e-15);
}

BOOST_AUTO_TEST_CASE(float_logits_match_double) {
    const auto a = test::random_tensor<float, 1>({37}, 1), b = test::random_tensor<float, 1>({37}, 2);
    const std::span<const float> fa(a.data(), 37), fb(b.data(), 37);
    const xt::xtensor<double, 1> da = a, db = b;
    const std::span<const double> sa(da.data(), 37), sb(db.data(), 37);
    BOOST_TEST(std::abs(squared_euclidean{}.logit(fa, fb) - squared_euclidean{}.logit(sa, sb)) < 1e-5);
    BOOST_TEST(std::abs(dot_product{}.logit(fa, fb) - dot_product{}.logit(sa, sb)) < 1e-5);
}

BOOST_AUTO_TEST_CASE(bandwidth_must_be_finite_and_positive) {
    for (double h : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()})
        test::check_invalid([&] { gaussian_distance{h}; }, "gaussian_distance", "h must be finite and positive");
    for (double h : {0.0, -2.0, std::numeric_limits<double>::quiet_NaN()})
        test::check_invalid([&] { laplacian_distance{h}; }, "laplacian_distance", "h must be finite and positive");
}

BOOST_AUTO_TEST_CASE(projections) {
    xt::xtensor<float, 2> theta = {{1, 0, 0}, {0, 2, 0}};   // [2, 3]
    xt::xtensor<float, 2> phi = {{0, 0, 1}, {1, 1, 0}};
    const embedded_gaussian s(theta, phi);
    xt::xtensor<float, 2> x = {{1, 2, 3}, {-1, 0, 2}};
    const auto qp = s.project_queries(as_rows(x));
    const auto kp = s.project_keys(as_rows(x));
    const xt::xtensor<float, 2> q_expected = {{1, 4}, {-1, 0}}, k_expected = {{3, 3}, {2, -1}};
    BOOST_TEST(qp == q_expected);
    BOOST_TEST(kp == k_expected);

    xt::xtensor<float, 2> wrong = xt::zeros<float>({2, 4});
    test::check_invalid([&] { embedded_gaussian(theta, wrong); }, "theta [2, 3]", "phi [2, 4]");
    xt::xtensor<float, 2> x4 = xt::zeros<float>({2, 4});
    test::check_invalid([&] { s.project_queries(as_rows(x4)); }, "theta has shape [2, 3]", "dimension 4");
}

BOOST_AUTO_TEST_CASE(concatenation_is_separable) {
    const auto theta = test::random_tensor<double, 2>({4, 6}, 3), phi = test::random_tensor<double, 2>({4, 6}, 4);
    const auto w = test::random_tensor<double, 1>({8}, 5);
    const auto x = test::random_tensor<double, 2>({7, 6}, 6);
    const concatenation s(theta, phi, w);
    const auto a = s.project_queries(as_rows(x)), b = s.project_keys(as_rows(x));
    for (std::size_t i = 0; i < 7; ++i)
        for (std::size_t j = 0; j < 7; ++j) {
            // literal: ReLU(w . [theta x_i, phi x_j])
            double z = 0;
            for (std::size_t e = 0; e < 4; ++e)
                for (std::size_t c = 0; c < 6; ++c) z += w(e) * theta(e, c) * x(i, c) + w(4 + e) * phi(e, c) * x(j, c);
            const double got = s.logit(std::span<const double>(&a(i, 0), 1), std::span<const double>(&b(j, 0), 1));
            BOOST_TEST(std::abs(got - std::max(z, 0.0)) < 1e-12);
        }
    test::check_invalid([&] { concatenation(theta, phi, xt::xtensor<double, 1>(xt::zeros<double>({7}))); },
                        "concatenation", "w_f [7]");
}

BOOST_AUTO_TEST_CASE(position_bias_offsets) {
    // 5 x 5 grid, kernel 3: table[0] holds 10 * (dr + 2) + (dc + 2).
    const window2d win{5, 5, 3};
    xt::xtensor<double, 3> table = xt::zeros<double>({2, 5, 5});
    for (std::size_t r = 0; r < 5; ++r)
        for (std::size_t c = 0; c < 5; ++c) table(0, r, c) = 10.0 * r + c, table(1, r, c) = -1;
    const with_position_bias s(dot_product{}, table, win);
    const std::vector<double> zero(2, 0.0);
    const std::span<const double> z(zero);
    // Query (0, 0) = 0, key (2, 1) = 11: offset (+2, +1) -> table(0, 4, 3) = 43.
    BOOST_TEST(s.logit(z, z, 0, 11) == 43.0);
    // Query (3, 3) = 18, key (2, 4) = 14: offset (-1, +1) -> table(0, 1, 3) = 13.
    BOOST_TEST(s.logit(z, z, 18, 14) == 13.0);
    BOOST_TEST(s.for_head(1).logit(z, z, 18, 14) == -1.0);
    test::check_invalid([&] { s.for_head(2); }, "head 2", "2 heads");
    test::check_invalid([&] { with_position_bias(dot_product{}, xt::xtensor<double, 3>(xt::zeros<double>({1, 3, 3})), win); },
                        "table [1, 3, 3]", "[heads, 5, 5]");
}

BOOST_AUTO_TEST_SUITE_END()
