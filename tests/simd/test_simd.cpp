// simd/vector_ops.hpp against double-precision loops, on every tested
// architecture, over awkward lengths and misaligned starts.
#include <nonlocal/simd/exp.hpp>
#include <nonlocal/simd/gemm.hpp>
#include <nonlocal/simd/vector_ops.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "support/support.hpp"

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

BOOST_AUTO_TEST_CASE_TEMPLATE(reductions_match_double_loops, T, test::value_types) {
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

BOOST_AUTO_TEST_CASE_TEMPLATE(accumulated_rows_match_double_loops, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        for (std::size_t n : test::awkward_lengths)
            for (std::size_t count : {0, 1, 2, 3, 7}) {
                BOOST_TEST_CONTEXT("arch " << Arch::name() << ", n = " << n << ", rows = " << count) {
                    // `count` of 9 rows of n values, picked out of order (a gather), one past
                    // the accumulator's n values left for a guard that must stay untouched.
                    const auto table = random_vector<T>(9 * n + 1, 3 + n);
                    const auto w = random_vector<T>(count, 13 + count);
                    const std::size_t picked[] = {4, 0, 8, 4, 2, 7, 1};
                    auto acc = random_vector<T>(n + 1, 29 + n);
                    const auto acc0 = acc;
                    simd::accumulate_rows<Arch>(w.data(), count, [&](std::size_t t) { return table.data() + picked[t] * n; },
                                                acc.data(), n);
                    for (std::size_t c = 0; c < n; ++c) {
                        double expected = acc0[c], mass = std::abs(double(acc0[c]));
                        for (std::size_t t = 0; t < count; ++t) {
                            expected += double(w[t]) * table[picked[t] * n + c];
                            mass += std::abs(double(w[t]) * table[picked[t] * n + c]);
                        }
                        BOOST_TEST(std::abs(acc[c] - expected) <= 4 * eps<T>() * (mass + 1));
                    }
                    BOOST_TEST(acc[n] == acc0[n]);
                }
            }
    });
}

BOOST_AUTO_TEST_CASE(accumulated_rows_by_hand) {
    // acc = (1, 1, 1) + 2 (1, 2, 3) - 1 (4, 5, 6) + 0.25 (2, 0, -2) = (-0.5, 0, 0.5).
    const float rows[3][3] = {{1, 2, 3}, {4, 5, 6}, {2, 0, -2}};
    const float w[3] = {2, -1, 0.25f};
    float acc[4] = {1, 1, 1, 9};
    simd::accumulate_rows(w, 3, [&](std::size_t t) { return rows[t]; }, acc, 3);
    BOOST_TEST(acc[0] == -0.5f);   // 1 + 2 - 4 + 0.5
    BOOST_TEST(acc[1] == 0.0f);    // 1 + 4 - 5 + 0
    BOOST_TEST(acc[2] == 0.5f);    // 1 + 6 - 6 - 0.5
    BOOST_TEST(acc[3] == 9.0f);   // past n: untouched
}

BOOST_AUTO_TEST_CASE_TEMPLATE(updates_match_double_loops, T, test::value_types) {
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
                    std::vector<T> scaled(n + offset, T(7));
                    simd::scale<Arch>(T(0.5), y.data() + offset, scaled.data() + offset, n);   // y = alpha x
                    for (std::size_t i = 0; i < offset; ++i) BOOST_TEST(scaled[i] == T(7));   // untouched
                    for (std::size_t i = offset; i < n + offset; ++i) BOOST_TEST(scaled[i] == T(0.5) * y[i]);

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

BOOST_AUTO_TEST_CASE_TEMPLATE(partial_loads_stores_copies_and_fills_touch_their_lanes_only, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        using batch = xsimd::batch<T, Arch>;
        constexpr std::size_t W = batch::size;
        const T guard = T(-7.5);
        for (std::size_t lanes = 0; lanes <= W; ++lanes) {
            BOOST_TEST_CONTEXT("arch " << Arch::name() << ", lanes = " << lanes) {
                // Lanes past `lanes` load as 0, whatever follows in memory.
                std::vector<T> from(W + 1, guard);
                for (std::size_t l = 0; l < lanes; ++l) from[l] = T(l + 1);
                alignas(64) T loaded[W];
                simd::load_lanes<batch>(from.data(), lanes).store_aligned(loaded);
                for (std::size_t l = 0; l < W; ++l) BOOST_TEST(loaded[l] == (l < lanes ? T(l + 1) : T(0)));
                // A store leaves the memory past `lanes` as it was.
                std::vector<T> to(W + 1, guard);
                simd::store_lanes(batch(T(3)), lanes, to.data());
                for (std::size_t l = 0; l <= W; ++l) BOOST_TEST(to[l] == (l < lanes ? T(3) : guard));
                // Lanes [first, lanes) go to to[0, lanes - first), the memory around as it was.
                alignas(64) T values[W];
                for (std::size_t l = 0; l < W; ++l) values[l] = T(l + 1);
                for (std::size_t first = 0; first <= lanes; ++first) {
                    std::vector<T> range(W + 2, guard);
                    simd::store_lanes(batch::load_aligned(values), first, lanes, range.data() + 1);
                    for (std::size_t i = 0; i < W + 2; ++i)
                        BOOST_TEST(range[i] == (i >= 1 && i <= lanes - first ? T(first + i) : guard), "first " << first);
                }
            }
        }
        for (std::size_t n : test::awkward_lengths)
            for (std::size_t offset : {0, 1, 3}) {
                const auto a = random_vector<T>(n + offset, 5 + n);
                std::vector<T> b(n + offset + 1, guard);
                simd::copy<Arch>(a.data() + offset, n, b.data() + offset);
                for (std::size_t i = 0; i < n + offset + 1; ++i)
                    BOOST_TEST(b[i] == (i >= offset && i < offset + n ? a[i] : guard),
                               Arch::name() << ": copy of " << n << " from " << offset << ", value " << i);
                std::vector<T> c(n + offset + 1, guard);
                simd::fill<Arch>(c.data() + offset, n, T(2));
                for (std::size_t i = 0; i < n + offset + 1; ++i)
                    BOOST_TEST(c[i] == (i >= offset && i < offset + n ? T(2) : guard),
                               Arch::name() << ": fill of " << n << " from " << offset << ", value " << i);
            }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(deinterleave_deals_even_and_odd_values, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        const T guard = T(-7.5);
        // Lengths around one and two pairs of vectors, both parities, misaligned starts; the
        // values past each half's count stay untouched.
        for (std::size_t n : test::awkward_lengths)
            for (std::size_t offset : {0, 1}) {
                std::vector<T> from(n + offset);
                for (std::size_t i = 0; i < from.size(); ++i) from[i] = T(i) + T(0.25);
                std::vector<T> even(n / 2 + 2, guard), odd(n / 2 + 2, guard);
                simd::deinterleave<Arch>(from.data() + offset, n, even.data(), odd.data());
                for (std::size_t j = 0; j < even.size(); ++j) {
                    BOOST_TEST(even[j] == (2 * j < n ? T(offset + 2 * j) + T(0.25) : guard),
                               Arch::name() << ": even value " << j << " of " << n << " from " << offset);
                    BOOST_TEST(odd[j] == (2 * j + 1 < n ? T(offset + 2 * j + 1) + T(0.25) : guard),
                               Arch::name() << ": odd value " << j << " of " << n << " from " << offset);
                }
            }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(deal_spreads_values_into_their_phases, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        const T guard = T(-7.5);
        // Strides 1 to 4 over awkward lengths: phase i, written from start(i) (each phase in
        // a row of its own), holds from[i], from[i + s], ...; the rest of its row untouched.
        for (std::size_t s : {1, 2, 3, 4})
            for (std::size_t n : test::awkward_lengths) {
                std::vector<T> from(n);
                for (std::size_t i = 0; i < n; ++i) from[i] = T(i) + T(0.25);
                const std::size_t row = n / s + 2;
                std::vector<T> phases(s * row, guard);
                simd::deal<Arch>(from.data(), n, s, [&](std::size_t i) { return phases.data() + i * row; });
                for (std::size_t i = 0; i < s; ++i)
                    for (std::size_t k = 0; k < row; ++k)
                        BOOST_TEST(phases[i * row + k] == (i + k * s < n ? T(i + k * s) + T(0.25) : guard),
                                   Arch::name() << ": stride " << s << ", n " << n << ", phase " << i << ", value " << k);
            }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(division_rounds_as_scalar_division, T, test::value_types) {
    // simd::divide on batches, bit for bit as scalar division (correctly rounded) on random
    // quotients over many binades, ones of exact results, and the inverses of
    // inverse_or_zero (0 where d <= 0).
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        using batch = xsimd::batch<T, Arch>;
        constexpr std::size_t W = batch::size;
        std::mt19937 rng(7);
        std::uniform_real_distribution<double> mantissa(1, 2);
        std::uniform_int_distribution<int> binade(-20, 20);
        std::vector<T> a, b;
        for (int k = 0; k < 4096; ++k)
            a.push_back(T(std::ldexp(mantissa(rng), binade(rng)))), b.push_back(T(std::ldexp(mantissa(rng), binade(rng))));
        for (T exact : {T(1), T(0.5), T(3), T(-6)}) a.push_back(T(6)), b.push_back(exact);
        b.push_back(T(0)), b.push_back(T(-2)), a.push_back(T(1)), a.push_back(T(1));
        while (a.size() % W) a.push_back(T(1)), b.push_back(T(7));
        std::size_t differ = 0;
        for (std::size_t i = 0; i < a.size(); i += W) {
            T quotient[W], inverse[W];
            const batch x = batch::load_unaligned(&a[i]), y = batch::load_unaligned(&b[i]);
            simd::divide(x, y).store_unaligned(quotient);
            simd::inverse_or_zero(y).store_unaligned(inverse);
            for (std::size_t l = 0; l < W; ++l) {
                if (b[i + l] != T(0)) differ += quotient[l] != a[i + l] / b[i + l];
                differ += inverse[l] != (b[i + l] > T(0) ? T(1) / b[i + l] : T(0));
            }
        }
        BOOST_TEST(differ == 0u);
    });
}

/// f of x's values, batch by batch of `Arch` (the last batch padded with `pad`).
template <class Arch, class T, class F>
std::vector<T> batchwise(const std::vector<T>& x, F f, T pad) {
    using batch = xsimd::batch<T, Arch>;
    std::vector<T> in = x;
    while (in.size() % batch::size) in.push_back(pad);
    std::vector<T> out(in.size());
    for (std::size_t i = 0; i < in.size(); i += batch::size) f(batch::load_unaligned(&in[i])).store_unaligned(&out[i]);
    out.resize(x.size());
    return out;
}

BOOST_AUTO_TEST_CASE_TEMPLATE(exp_of_nonpositive_values, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        std::vector<T> x;
        for (double t = -110; t <= 0; t += 0.0173) x.push_back(T(t));
        for (T special : {T(0), T(-0.0), -std::numeric_limits<T>::min(), T(-87.3), T(-1e-30),
                          -std::numeric_limits<T>::infinity()})
            x.push_back(special);
        const std::vector<T> out = batchwise<Arch>(x, [](auto v) { return simd::exp_nonpositive(v); }, T(-1));
        double worst = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double expected = std::exp(double(x[i]));
            // float: 2 ulp where the result is normal; exactly 0 below -87.3
            if (std::is_same_v<T, float> && x[i] < T(-87.3)) BOOST_TEST(out[i] == T(0));
            else if (expected >= std::numeric_limits<T>::min()) worst = std::max(worst, std::abs(out[i] - expected) / expected);
        }
        BOOST_TEST(worst < (std::is_same_v<T, float> ? 2.5e-7 : 1e-15), "worst relative error " << worst);
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(exp_of_any_value, T, test::value_types) {
    // simd::exp is defined on every input: xsimd's exp, bit for bit, over the range where exp
    // is finite and nonzero, exactly 0 and +inf beyond, NaN for NaN.
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        constexpr T inf = std::numeric_limits<T>::infinity();
        std::vector<T> x;
        for (double t = -800; t <= 800; t += 0.917) x.push_back(T(t));
        for (T special : {T(0), T(-0.0), T(1), T(-1), inf, -inf, std::numeric_limits<T>::quiet_NaN(),
                          std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest()})
            x.push_back(special);
        const std::vector<T> out = batchwise<Arch>(x, [](auto v) { return simd::exp(v); }, T(0));
        std::size_t wrong = 0;
        double worst = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double expected = std::exp(double(x[i]));
            if (std::isnan(x[i])) wrong += !std::isnan(out[i]);
            else if (expected > double(std::numeric_limits<T>::max())) wrong += out[i] != inf;
            else if (expected < double(std::numeric_limits<T>::denorm_min()) / 2) wrong += out[i] != T(0);
            else if (std::is_same_v<T, float> && x[i] > T(88.37) && out[i] == inf) continue;   // xsimd's float bound
            else if (expected >= double(std::numeric_limits<T>::min()))
                worst = std::max(worst, std::abs(double(out[i]) - expected) / expected);
        }
        BOOST_TEST(wrong == 0u, Arch::name() << ": " << wrong << " overflows, underflows or NaNs mishandled");
        BOOST_TEST(worst < (std::is_same_v<T, float> ? 5e-7 : 1e-15), Arch::name() << " worst relative error " << worst);
        // Hand-computed: e, 1 and 1/e.
        const std::vector<T> e = batchwise<Arch>(std::vector<T>{T(1), T(0), T(-1)}, [](auto v) { return simd::exp(v); }, T(0));
        BOOST_TEST(std::abs(double(e[0]) - 2.718281828459045) < 3e-7 * 2.72);
        BOOST_TEST(e[1] == T(1));
        BOOST_TEST(std::abs(double(e[2]) - 0.36787944117144233) < 3e-7 * 0.37);
    });
}

BOOST_AUTO_TEST_CASE(exp_of_bounded_values) {
    // exp_bounded takes x in [-87.3, 89]: 2 ulp against the double exp up to 88.37, above that
    // 2 ulp or +inf (the exponent bits' 2^128), +inf where exp is too large for a float
    // (from 88.73), NaN for NaN.
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        constexpr float inf = std::numeric_limits<float>::infinity();
        std::vector<float> x;
        for (double t = -87.3; t <= 89; t += 0.0131) x.push_back(float(t));
        for (float special : {-87.3f, -0.f, 0.f, 1e-30f, 88.37f, 88.38f, 88.72f, 88.73f, 89.f,
                              std::numeric_limits<float>::quiet_NaN()})
            x.push_back(special);
        const std::vector<float> out = batchwise<Arch>(x, [](auto v) { return simd::exp_bounded(v); }, 1.f);
        double worst = 0;
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double expected = std::exp(double(x[i]));
            if (std::isnan(x[i])) wrong += !std::isnan(out[i]);
            else if (expected > std::numeric_limits<float>::max()) wrong += out[i] != inf;
            else if (!(x[i] > 88.37f && out[i] == inf)) worst = std::max(worst, std::abs(out[i] - expected) / expected);
        }
        BOOST_TEST(wrong == 0u, Arch::name() << ": " << wrong << " overflows or NaNs mishandled");
        BOOST_TEST(worst < 2.5e-7, Arch::name() << " worst relative error " << worst);
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nan_spreads_through_exp_and_max, T, test::value_types) {
    // A NaN logit must reach the softmax kernels' results: exp keeps it in every lane it sits
    // in (and only there), and the maximum of a range holding one is NaN, wherever it sits.
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        using batch = xsimd::batch<T, Arch>;
        constexpr std::size_t W = batch::size;
        const T nan = std::numeric_limits<T>::quiet_NaN();
        for (std::size_t lane = 0; lane < W; ++lane) {
            T x[W], out[W];
            for (std::size_t l = 0; l < W; ++l) x[l] = T(-0.5) * T(l);
            x[lane] = nan;
            simd::exp_nonpositive(batch::load_unaligned(x)).store_unaligned(out);
            for (std::size_t l = 0; l < W; ++l) {
                const bool ok = l == lane ? std::isnan(out[l]) : std::abs(out[l] - std::exp(double(x[l]))) < 1e-6;
                BOOST_TEST(ok, Arch::name() << " lane " << l << " of a NaN in lane " << lane << ": " << out[l]);
            }
        }
        for (std::size_t n : test::awkward_lengths)
            for (std::size_t at = 0; at < n; at += std::max<std::size_t>(1, n / 5)) {
                std::vector<T> x = random_vector<T>(n, 5 + n);
                x[at] = nan;
                BOOST_TEST(std::isnan(simd::max_element<Arch>(x.data(), n)),
                           Arch::name() << " n " << n << ", NaN at " << at);
            }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(micro_kernel_matches_double_loops, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        constexpr std::size_t W = xsimd::batch<T, Arch>::size;
        // Rows past the last whole block of 4 or 8 go through the one-row kernel.
        for (std::size_t depth : {0, 1, 5, 16, 33})
            for (std::size_t rows : {0, 1, 3, 4, 7, 8, 13})
                for (std::size_t col_vectors : {1, 2, 3, 5}) {
                    const std::size_t cols = col_vectors * W;
                    // A read row-major (a_row = depth, a_k = 1) and column-major (a_row = 1, a_k = rows).
                    const auto a = test::random_tensor<T, 2>({rows, depth + 1}, 1 + depth);
                    const auto b = test::random_tensor<T, 2>({depth + 1, cols}, 2 + depth);
                    xt::xtensor<T, 2> at = xt::transpose(a);
                    const auto c0 = test::random_tensor<T, 2>({rows, cols}, 3);
                    xt::xtensor<T, 2> c = c0, ct = c0;
                    simd::gemm<Arch, 4, 2, true>(rows, cols, depth, a.data(), depth + 1, 1, b.data(), cols, c.data(),
                                                 cols);
                    simd::gemm<Arch, 8, 1, false>(rows, cols, depth, at.data(), 1, rows, b.data(), cols, ct.data(),
                                                  cols);
                    for (std::size_t r = 0; r < rows; ++r)
                        for (std::size_t j = 0; j < cols; ++j) {
                            double s = 0;
                            for (std::size_t p = 0; p < depth; ++p) s += double(a(r, p)) * b(p, j);
                            BOOST_TEST_CONTEXT(Arch::name() << " depth " << depth << " rows " << rows << " cols " << cols) {
                                BOOST_TEST(std::abs(c(r, j) - (s + c0(r, j))) <= 8 * eps<T>() * (depth + 1));
                                BOOST_TEST(std::abs(ct(r, j) - s) <= 8 * eps<T>() * (depth + 1));
                            }
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
