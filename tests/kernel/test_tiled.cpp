// kernel/tiled.hpp: the flash-style kernel against the double-precision
// reference: dense, causal and block-sparse, batched and multi-head with
// grouped queries, dv != dq, explicit scales, log-sum-exp, huge logits, fully
// masked rows, and sizes around the tiles and the SIMD width.
#include <nonlocal/nonlocal.hpp>

#include <string>
#include <vector>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_tiled)

static_assert(kernel::tiled_applies<scaled_dot_product, dense, softmax>);
static_assert(kernel::tiled_applies<scaled_dot_product, causal, softmax>);
static_assert(kernel::tiled_applies<gaussian, block_mask, sum>);
static_assert(kernel::tiled_applies<embedded_gaussian, dense, sum>);
static_assert(kernel::tiled_applies<dot_product, dense, count>);
static_assert(!kernel::tiled_applies<scaled_dot_product, window2d, softmax>);
static_assert(kernel::tiled_applies<squared_euclidean, dense, none>);   // lowered to a dot product
static_assert(!kernel::tiled_applies<gaussian, dense, count>);   // absolute exp weights: gather kernel

namespace {
// fp32 against double: atol 1e-5 + rtol 1e-4.
template <class Y, class R>
void check(const Y& y, const R& r, const std::string& what) { test::check_close(y, r, 1e-5, 1e-4, what); }

xt::xtensor<bool, 2> random_layout(std::size_t rows, std::size_t cols, unsigned seed) {
    const auto u = test::random_tensor<double, 2>({rows, cols}, seed, 0, 1);
    xt::xtensor<bool, 2> layout = u > 0.5;
    return layout;
}
}  // namespace

BOOST_AUTO_TEST_CASE(sizes_around_tiles_and_lanes) {
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        unsigned seed = 1;
        for (std::size_t n : {1, 3, 63, 64, 65, 130})
            for (std::size_t m : {1, 17, 64, 129})
                for (std::size_t d : {1, 7, 16, 33, 64})
                    for (std::size_t dv : {1, 15, 16, 64, 65}) {
                        if ((n + m + d + dv) % 3 != 0) continue;   // a third of the grid keeps the suite quick
                        const auto q = test::random_tensor<float, 2>({n, d}, seed++);
                        const auto k = test::random_tensor<float, 2>({m, d}, seed++);
                        const auto v = test::random_tensor<float, 2>({m, dv}, seed++);
                        std::ostringstream what;
                        what << A::name() << " n " << n << " m " << m << " d " << d << " dv " << dv;
                        check(attention<A>(q, k, v),
                              reference::weighted_aggregate(q, k, v, scaled_dot_product{}, dense{}, softmax{}),
                              what.str() + " dense");
                        check(attention<A>(q, k, v, causal{}),
                              reference::weighted_aggregate(q, k, v, scaled_dot_product{}, causal{}, softmax{}),
                              what.str() + " causal");
                        check(weighted_aggregate<A>(q, k, v, dot_product{}, causal{}, count{}),
                              reference::weighted_aggregate(q, k, v, dot_product{}, causal{}, count{}),
                              what.str() + " dot/count");
                    }
    });
}

BOOST_AUTO_TEST_CASE(double_precision) {
    const auto q = test::random_tensor<double, 2>({70, 24}, 1), k = test::random_tensor<double, 2>({90, 24}, 2);
    const auto v = test::random_tensor<double, 2>({90, 9}, 3);
    test::check_close(attention(q, k, v, causal{}),
                      reference::weighted_aggregate(q, k, v, scaled_dot_product{}, causal{}, softmax{}), 1e-13, 1e-12);
}

BOOST_AUTO_TEST_CASE(long_sequences) {
    // n = 4096 causal and n = 2048 dense, d = 64: many tiles, online rescaling across them.
    // Row i of causal attention is dense attention of query i over keys 0..i, so each sampled
    // row is checked against the reference of that one query: every 61st row (all tile
    // offsets, row tiles early and late) and the rows around the first tile boundaries and the
    // end, at a fraction of the whole reference's cost. Under AddressSanitizer (at -O0) the
    // kernel alone takes 20 s at these lengths: a quarter of them still spans 16 and 8 tiles.
#ifdef __SANITIZE_ADDRESS__
    constexpr std::size_t longest = 1024;
#else
    constexpr std::size_t longest = 4096;
#endif
    for (auto [n, is_causal] : {std::pair<std::size_t, bool>{longest, true}, {longest / 2, false}}) {
        const auto q = test::random_tensor<float, 2>({n, 64}, 5), k = test::random_tensor<float, 2>({n, 64}, 6);
        const auto v = test::random_tensor<float, 2>({n, 64}, 7);
        const xt::xtensor<float, 2> y = is_causal ? attention(q, k, v, causal{}) : attention(q, k, v);
        std::vector<std::size_t> rows = {1, 63, 64, 65, 127, 128, n - 65, n - 64, n - 2, n - 1};
        for (std::size_t i = 0; i < n; i += 61) rows.push_back(i);
        for (const std::size_t i : rows) {
            const std::size_t keys = is_causal ? i + 1 : n;
            const xt::xtensor<float, 2> qi = xt::view(q, xt::range(i, i + 1), xt::all());
            const xt::xtensor<float, 2> ki = xt::view(k, xt::range(0, keys), xt::all());
            const xt::xtensor<float, 2> vi = xt::view(v, xt::range(0, keys), xt::all());
            const xt::xtensor<float, 2> yi = xt::view(y, xt::range(i, i + 1), xt::all());
            check(yi, reference::weighted_aggregate(qi, ki, vi, scaled_dot_product{}, dense{}, softmax{}),
                  (is_causal ? "causal " : "dense ") + std::to_string(n) + " row " + std::to_string(i));
        }
    }
}

BOOST_AUTO_TEST_CASE(block_sparse) {
    for (std::size_t block : {16, 64, 100}) {
        const std::size_t n = 300, m = 260;
        const block_mask mask(block, random_layout((n + block - 1) / block, (m + block - 1) / block, block));
        const auto q = test::random_tensor<float, 2>({n, 32}, 8), k = test::random_tensor<float, 2>({m, 32}, 9);
        const auto v = test::random_tensor<float, 2>({m, 20}, 10);
        const auto y = attention(q, k, v, mask);
        check(y, reference::weighted_aggregate(q, k, v, scaled_dot_product{}, mask, softmax{}),
              "block " + std::to_string(block));
        // Query blocks that see no key block are zero.
        for (std::size_t i = 0; i < n; ++i)
            if (xt::sum(xt::view(mask.layout(), i / block, xt::all()))() == 0)
                for (std::size_t c = 0; c < 20; ++c) BOOST_TEST(y(i, c) == 0.f);
    }
    const block_mask bad(16, xt::xtensor<bool, 2>(xt::ones<bool>({2, 2})));
    const xt::xtensor<float, 2> x = xt::zeros<float>({40, 8});
    test::check_invalid([&] { attention(x, x, x, bad); }, "block_mask", "layout [2, 2]", "expected [3, 3]");
}

BOOST_AUTO_TEST_CASE(every_dot_product_similarity) {
    const auto theta = test::random_tensor<double, 2>({12, 20}, 11), phi = test::random_tensor<double, 2>({12, 20}, 12);
    const auto x = test::random_tensor<float, 2>({150, 20}, 13), v = test::random_tensor<float, 2>({150, 7}, 14);
    check(weighted_aggregate(x, x, v, gaussian{}, dense{}, sum{}),
          reference::weighted_aggregate(x, x, v, gaussian{}, dense{}, sum{}), "gaussian");
    check(weighted_aggregate(x, x, v, embedded_gaussian(theta, phi), causal{}, sum{}),
          reference::weighted_aggregate(x, x, v, embedded_gaussian(theta, phi), causal{}, sum{}), "embedded");
    check(weighted_aggregate(x, x, v, scaled_dot_product{0.01}, dense{}, softmax{}),
          reference::weighted_aggregate(x, x, v, scaled_dot_product{0.01}, dense{}, softmax{}), "explicit scale");
    check(weighted_aggregate(x, x, v, dot_product{}, dense{}, none{}),
          reference::weighted_aggregate(x, x, v, dot_product{}, dense{}, none{}), "dot/none");
    // Identity weights normalised by their sum are ill-conditioned when the sum nears 0:
    // positive features keep it away from 0.
    const xt::xtensor<float, 2> positive = xt::abs(x);
    check(weighted_aggregate(positive, positive, v, dot_product{}, dense{}, sum{}),
          reference::weighted_aggregate(positive, positive, v, dot_product{}, dense{}, sum{}), "dot/sum");
}

BOOST_AUTO_TEST_CASE(multi_head_grouped_queries) {
    const auto q = test::random_tensor<float, 4>({2, 8, 100, 32}, 15), k = test::random_tensor<float, 4>({2, 2, 90, 32}, 16);
    const auto v = test::random_tensor<float, 4>({2, 2, 90, 48}, 17);
    check(attention(q, k, v, causal{}), reference::weighted_aggregate(q, k, v, scaled_dot_product{}, causal{}, softmax{}),
          "GQA causal");
}

// A block of 64 queries keeps its outputs transposed when dv is not a whole number of
// vectors (MobileViT's heads of 36 and 60 features): widths that leave 1 to 5 rows past the
// value product's blocks of 6, in float and double, with masks that rescale and empty rows.
BOOST_AUTO_TEST_CASE_TEMPLATE(value_widths_of_transposed_blocks, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        const double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-12;
        unsigned seed = 30;
        for (std::size_t dv : {1, 5, 7, 11, 36, 60, 63})
            for (auto [n, m] : {std::pair<std::size_t, std::size_t>{64, 64}, {130, 129}}) {
                const auto q = test::random_tensor<T, 2>({n, 20}, seed++), k = test::random_tensor<T, 2>({m, 20}, seed++);
                const auto v = test::random_tensor<T, 2>({m, dv}, seed++);
                std::ostringstream what;
                what << A::name() << " n " << n << " m " << m << " dv " << dv;
                test::check_close(attention<A>(q, k, v),
                                  reference::weighted_aggregate(q, k, v, scaled_dot_product{}, dense{}, softmax{}),
                                  tolerance, tolerance, what.str() + " dense");
                test::check_close(attention<A>(q, k, v, causal{}),
                                  reference::weighted_aggregate(q, k, v, scaled_dot_product{}, causal{}, softmax{}),
                                  tolerance, tolerance, what.str() + " causal");
                test::check_close(weighted_aggregate<A>(q, k, v, dot_product{}, dense{}, none{}),
                                  reference::weighted_aggregate(q, k, v, dot_product{}, dense{}, none{}), tolerance,
                                  tolerance, what.str() + " dot/none");
                // Blocks of 16: partial tiles, and queries 16 to 31 admit nothing.
                xt::xtensor<bool, 2> layout = random_layout((n + 15) / 16, (m + 15) / 16, seed++);
                xt::view(layout, 1, xt::all()) = false;
                const block_mask mask(16, layout);
                const auto y = weighted_aggregate<A>(q, k, v, scaled_dot_product{}, mask, softmax{});
                test::check_close(y, reference::weighted_aggregate(q, k, v, scaled_dot_product{}, mask, softmax{}),
                                  tolerance, tolerance, what.str() + " block mask");
                BOOST_TEST(xt::all(xt::equal(xt::view(y, xt::range(16, 32), xt::all()), T(0))), what.str());
            }
    });
}

// A last block of at most 16 queries runs as a block of 16 against tiles of 256 keys: rests of
// 1, 15 and 16 queries after whole blocks of 64 (and none), key counts around and past a tile
// of 256, value widths of 1 to 4 vectors and between; dense, causal, block-sparse with empty
// rows, and biased element masks, each against the reference.
BOOST_AUTO_TEST_CASE(small_last_blocks) {
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        unsigned seed = 60;
        for (std::size_t n : {1, 16, 17, 65, 79, 80, 144})
            for (std::size_t m : {5, 255, 257, 600})
                for (std::size_t dv : {1, 33, 36, 48, 64}) {
                    if ((n + m + dv) % 2 != 0) continue;   // half of the grid keeps the suite quick
                    const auto q = test::random_tensor<float, 2>({n, 24}, seed++);
                    const auto k = test::random_tensor<float, 2>({m, 24}, seed++);
                    const auto v = test::random_tensor<float, 2>({m, dv}, seed++);
                    std::ostringstream what;
                    what << A::name() << " n " << n << " m " << m << " dv " << dv;
                    const scaled_dot_product s;
                    check(attention<A>(q, k, v), reference::weighted_aggregate(q, k, v, s, dense{}, softmax{}),
                          what.str() + " dense");
                    check(attention<A>(q, k, v, causal{}), reference::weighted_aggregate(q, k, v, s, causal{}, softmax{}),
                          what.str() + " causal");
                    xt::xtensor<bool, 2> layout = random_layout((n + 7) / 8, (m + 7) / 8, seed++);
                    xt::view(layout, 0, xt::all()) = false;   // queries 0 to 7 admit nothing
                    const block_mask blocks(8, layout);
                    const auto y = attention<A>(q, k, v, blocks);
                    check(y, reference::weighted_aggregate(q, k, v, s, blocks, softmax{}), what.str() + " block mask");
                    BOOST_TEST(xt::all(xt::equal(xt::view(y, xt::range(0, std::min<std::size_t>(n, 8)), xt::all()), 0.f)),
                               what.str());
                    const element_mask pairs(xt::xtensor<bool, 2>(random_layout(n, m, seed++)));
                    const auto bias = test::random_tensor<double, 2>({n, m}, seed++, -2, 2);
                    const with_pair_bias biased(s, bias);
                    check(weighted_aggregate<A>(q, k, v, biased, pairs, softmax{}),
                          reference::weighted_aggregate(q, k, v, biased, pairs, softmax{}), what.str() + " biased pairs");
                }
    });
}

// Hand-computed: 64 queries of one feature against two keys, values of 3 features (one
// transposed block). Query i, of feature i / 16, weighs key 0 by e^0 and key 1 by e^(i / 16)
// (softmax): query 0 takes the mean of the two values, query 16 weighs the second by e.
BOOST_AUTO_TEST_CASE(hand_computed_transposed_block) {
    xt::xtensor<double, 2> q = xt::zeros<double>({64, 1}), k = {{0.0}, {1.0}};
    for (std::size_t i = 0; i < 64; ++i) q(i, 0) = double(i) / 16;
    const xt::xtensor<double, 2> v = {{1.0, 2.0, 3.0}, {5.0, 6.0, 7.0}};
    const auto y = attention(q, k, v);   // softmax(q k^T / sqrt(1))
    BOOST_TEST(y(0, 0) == 3.0, boost::test_tools::tolerance(1e-14));   // (1 + 5) / 2
    BOOST_TEST(y(0, 2) == 5.0, boost::test_tools::tolerance(1e-14));   // (3 + 7) / 2
    const double w = std::exp(1.0);                                     // query 16 scores 1 on key 1
    BOOST_TEST(y(16, 1) == (2.0 + 6.0 * w) / (1.0 + w), boost::test_tools::tolerance(1e-14));
}

// A block's working memory: Qt [d, rows], S^T [cols, rows] (4096 values), O, a tile's keys
// [cols, d] and values, 4 rows of statistics, and a byte per score for the mask; O and the
// values padded to whole vectors unless O is transposed. A thread holds one block at a time,
// of 64 queries or (for a last one of at most 16) of 16: the workspace is the larger.
BOOST_AUTO_TEST_CASE(workspace_of_a_block) {
    // 64 queries x 64 keys, dv = 36 in vectors of 16: transposed, nothing padded.
    BOOST_TEST((kernel::query_block_bytes<float, 64>(36, 36, 16)) ==
               4 * (36 * 64 + 4096 + 36 * 64 + 64 * 36 + 64 * 36 + 4 * 64) + 4096);
    // 16 queries x 256 keys: dv padded to 48 (a block of 16 is one vector of queries).
    BOOST_TEST((kernel::query_block_bytes<float, 16>(36, 36, 16)) ==
               4 * (36 * 16 + 4096 + 16 * 48 + 256 * 36 + 256 * 48 + 4 * 16) + 4096);
    BOOST_TEST(kernel::tiled_workspace_bytes<float>(36, 36, 16) == (kernel::query_block_bytes<float, 16>(36, 36, 16)));
    // Vectors of 4: both blocks transposed.
    BOOST_TEST((kernel::query_block_bytes<float, 64>(64, 37, 4)) ==
               4 * (64 * 64 + 4096 + 37 * 64 + 64 * 64 + 64 * 37 + 4 * 64) + 4096);
    BOOST_TEST(kernel::tiled_workspace_bytes<float>(64, 37, 4) ==
               4 * (64 * 16 + 4096 + 37 * 16 + 256 * 64 + 256 * 37 + 4 * 16) + 4096);
    // The window kernel's blocks of 16 queries, 4 more rows of 16.
    BOOST_TEST(kernel::tiled_window_workspace_bytes<float>(36, 36, 16) ==
               4 * (36 * 16 + 4096 + 16 * 48 + 256 * 36 + 256 * 48 + 4 * 16) + 4096 + 4 * 16 * 4);
}

BOOST_AUTO_TEST_CASE(log_sum_exp) {
    const auto q = test::random_tensor<float, 3>({2, 70, 16}, 18), k = test::random_tensor<float, 3>({2, 80, 16}, 19);
    const auto v = test::random_tensor<float, 3>({2, 80, 5}, 20);
    const auto [out, lse] = attention_lse(q, k, v, causal{});
    BOOST_TEST(lse.shape() == (std::array<std::size_t, 2>{2, 70}));
    test::check_close(out, attention(q, k, v, causal{}), 0, 0, "out");
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 70; ++i) {
            double total = 0;
            for (std::size_t j = 0; j <= i; ++j) {
                double l = 0;
                for (std::size_t c = 0; c < 16; ++c) l += double(q(b, i, c)) * k(b, j, c);
                total += std::exp(l / 4);
            }
            BOOST_TEST(std::abs(lse(b, i) - std::log(total)) < 1e-5);
        }
    // Merging two halves of the keys with their log-sum-exps gives the whole.
    const xt::xtensor<float, 3> k1 = xt::view(k, xt::all(), xt::range(0, 30)), k2 = xt::view(k, xt::all(), xt::range(30, 80));
    const xt::xtensor<float, 3> v1 = xt::view(v, xt::all(), xt::range(0, 30)), v2 = xt::view(v, xt::all(), xt::range(30, 80));
    const auto a = attention_lse(q, k1, v1), c = attention_lse(q, k2, v2);
    const auto whole = attention(q, k, v);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 70; ++i) {
            const double m = std::max(a.lse(b, i), c.lse(b, i));
            const double wa = std::exp(a.lse(b, i) - m), wc = std::exp(c.lse(b, i) - m);
            for (std::size_t ch = 0; ch < 5; ++ch)
                BOOST_TEST(std::abs((wa * a.out(b, i, ch) + wc * c.out(b, i, ch)) / (wa + wc) - whole(b, i, ch)) < 1e-5);
        }
    // No admissible key: log 0 = -inf, output 0.
    const block_mask nothing(8, xt::xtensor<bool, 2>(xt::zeros<bool>({9, 10})));
    const auto empty = attention_lse(q, k, v, nothing);
    BOOST_TEST(xt::all(xt::equal(empty.lse, -std::numeric_limits<float>::infinity())));
    BOOST_TEST(xt::all(xt::equal(empty.out, 0.f)));
}

BOOST_AUTO_TEST_CASE(huge_logits) {
    auto q = test::random_tensor<float, 2>({130, 64}, 21);
    auto k = test::random_tensor<float, 2>({200, 64}, 22);
    const auto v = test::random_tensor<float, 2>({200, 64}, 23);
    // |q.k| / sqrt(64) around 1e4.
    q *= 180.f;
    k *= 180.f;
    const auto y = attention(q, k, v, causal{});
    BOOST_TEST(xt::all(xt::isfinite(y)));
    // Float logits of 1e4 carry an absolute error near 1e-3, which moves weights
    // of near-tied keys; compare with the reference fed the same float logits' scale.
    test::check_close(y, reference::weighted_aggregate(q, k, v, scaled_dot_product{}, causal{}, softmax{}), 2e-2, 2e-2);
}

BOOST_AUTO_TEST_SUITE_END()
