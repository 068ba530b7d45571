// simd/vector_ops.hpp against double-precision loops, on every tested
// architecture, over awkward lengths and misaligned starts.
#include <nonlocal/simd/vector_ops.hpp>

#include <cmath>
#include <vector>

#include "support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_simd)

namespace {
template <class T>
std::vector<T> random_vector(std::size_t n, unsigned seed) {
    auto t = test::random_tensor<T, 1>({n}, seed);
    return {t.begin(), t.end()};
}
template <class T>
double eps() { return std::is_same_v<T, float> ? 1e-6 : 1e-14; }
}  // namespace

using value_types = boost::mpl::list<float, double>;

BOOST_AUTO_TEST_CASE_TEMPLATE(reductions_match_double_loops, T, value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        for (std::size_t n : test::awkward_lengths)
            for (std::size_t offset : {0, 1, 3}) {
                BOOST_TEST_CONTEXT("arch " << Arch::name() << ", n = " << n << ", offset = " << offset) {
                    const auto a = random_vector<T>(n + offset, 11 + n), b = random_vector<T>(n + offset, 97 + n);
                    const T* pa = a.data() + offset;
                    const T* pb = b.data() + offset;
                    double dot = 0, dist = 0, mass = 0, best = -INFINITY;
                    for (std::size_t i = 0; i < n; ++i) {
                        dot += double(pa[i]) * pb[i];
                        dist += (double(pa[i]) - pb[i]) * (double(pa[i]) - pb[i]);
                        mass += std::abs(double(pa[i])) * std::abs(double(pb[i])) + 1;
                        best = std::max(best, double(pa[i]));
                    }
                    const double tol = eps<T>() * 8 * mass;
                    BOOST_TEST(std::abs(simd::dot<Arch>(pa, pb, n) - dot) <= tol);
                    BOOST_TEST(std::abs(simd::squared_distance<Arch>(pa, pb, n) - dist) <= 4 * tol);
                    BOOST_TEST(double(simd::max_element<Arch>(pa, n)) == best);
                }
            }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(updates_match_double_loops, T, value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        for (std::size_t n : test::awkward_lengths)
            for (std::size_t offset : {0, 1}) {
                BOOST_TEST_CONTEXT("arch " << Arch::name() << ", n = " << n << ", offset = " << offset) {
                    const auto x = random_vector<T>(n + offset, 5 + n);
                    auto y = random_vector<T>(n + offset, 7 + n);
                    const auto y0 = y;
                    simd::axpy<Arch>(T(0.75), x.data() + offset, y.data() + offset, n);
                    for (std::size_t i = 0; i < offset; ++i) BOOST_TEST(y[i] == y0[i]);   // untouched
                    for (std::size_t i = offset; i < n + offset; ++i)
                        BOOST_TEST(std::abs(y[i] - (double(y0[i]) + 0.75 * x[i])) <= 4 * eps<T>());
                    auto z = y;
                    simd::scale<Arch>(T(-2), z.data() + offset, n);
                    for (std::size_t i = offset; i < n + offset; ++i) BOOST_TEST(z[i] == T(-2) * y[i]);

                    auto e = x;
                    const T shift = T(0.5);
                    const T total = simd::exp_shifted_sum<Arch>(e.data() + offset, shift, n);
                    double expected_total = 0;
                    for (std::size_t i = offset; i < n + offset; ++i) {
                        const double expected = std::exp(double(x[i]) - 0.5);
                        expected_total += expected;
                        BOOST_TEST(std::abs(e[i] - expected) <= 4 * eps<T>() * expected);
                    }
                    BOOST_TEST(std::abs(total - expected_total) <= 8 * eps<T>() * (expected_total + 1));
                }
            }
    });
}

BOOST_AUTO_TEST_CASE(hand_computed) {
    const float a[] = {1, 2, 3, 4, 5}, b[] = {5, 4, 3, 2, 1};
    BOOST_TEST(simd::dot(a, b, 5) == 35.f);               // 5 + 8 + 9 + 8 + 5
    BOOST_TEST(simd::squared_distance(a, b, 5) == 40.f);  // 16 + 4 + 0 + 4 + 16
    BOOST_TEST(simd::max_element(a, 5) == 5.f);
    BOOST_TEST(simd::max_element(a, 0) == -INFINITY);
    BOOST_TEST(simd::dot(a, b, 0) == 0.f);
}

BOOST_AUTO_TEST_SUITE_END()
