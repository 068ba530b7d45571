// pairwise.hpp: materialised similarity matrices against literal loops.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_pairwise)

BOOST_AUTO_TEST_CASE(matrices_match_literal_loops) {
    for (std::size_t d : {1, 7, 16, 33}) {
        const auto x = test::random_tensor<float, 2>({11, d}, d), y = test::random_tensor<float, 2>({6, d}, d + 1);
        const auto sq = pairwise(x, y, squared_euclidean{});
        const auto gd = pairwise(x, y, gaussian_distance{1.5});
        const auto cs = pairwise(x, y, cosine{});
        for (std::size_t i = 0; i < 11; ++i)
            for (std::size_t j = 0; j < 6; ++j) {
                double s = 0, xy = 0, xx = 0, yy = 0;
                for (std::size_t c = 0; c < d; ++c) {
                    s += (double(x(i, c)) - y(j, c)) * (double(x(i, c)) - y(j, c));
                    xy += double(x(i, c)) * y(j, c), xx += double(x(i, c)) * x(i, c), yy += double(y(j, c)) * y(j, c);
                }
                BOOST_TEST(std::abs(sq(i, j) - s) < 1e-5);
                BOOST_TEST(std::abs(gd(i, j) - std::exp(-s / 2.25)) < 1e-6);
                BOOST_TEST(std::abs(cs(i, j) - xy / std::sqrt(xx * yy)) < 1e-5);
            }
    }
}

BOOST_AUTO_TEST_CASE(projected_and_empty) {
    const auto theta = test::random_tensor<double, 2>({3, 5}, 1), phi = test::random_tensor<double, 2>({3, 5}, 2);
    const auto x = test::random_tensor<double, 2>({4, 5}, 3);
    const auto w = pairwise(x, x, embedded_gaussian(theta, phi));
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 4; ++j) {
            double l = 0;
            for (std::size_t e = 0; e < 3; ++e) {
                double a = 0, b = 0;
                for (std::size_t c = 0; c < 5; ++c) a += theta(e, c) * x(i, c), b += phi(e, c) * x(j, c);
                l += a * b;
            }
            BOOST_TEST(std::abs(w(i, j) - std::exp(l)) < 1e-12 * std::exp(l));
        }
    const xt::xtensor<float, 2> none = xt::zeros<float>({0, 5});
    BOOST_TEST(pairwise(none, x, squared_euclidean{}).shape(0) == 0u);
    const xt::xtensor<float, 2> y = xt::zeros<float>({2, 4});
    test::check_invalid([&] { pairwise(x, y, squared_euclidean{}); }, "pairwise", "x [4, 5]", "y [2, 4]");
}

BOOST_AUTO_TEST_SUITE_END()
