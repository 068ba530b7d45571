// neighborhood/mask.hpp, neighborhood/intersection.hpp and similarity/pair_bias.hpp: masks per
// key and per pair, one for all slices, per batch item or per slice, their intersections with
// causal and block masks, and biases per pair, on the tiled and gather kernels against the
// double-precision reference; hand-computed small cases; fully masked rows; bad shapes.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_mask)

using biased = with_pair_bias<scaled_dot_product>;
static_assert(kernel_for<scaled_dot_product, key_mask, softmax> == kernel::kernel_kind::tiled);
static_assert(kernel_for<scaled_dot_product, element_mask, softmax> == kernel::kernel_kind::tiled);
static_assert(kernel_for<biased, intersection<causal, key_mask>, softmax> == kernel::kernel_kind::tiled);
static_assert(kernel_for<biased, patch_group, softmax> == kernel::kernel_kind::gather);
static_assert(tiled_neighborhood<intersection<block_mask, element_mask>>);
static_assert(!tiled_neighborhood<intersection<csr_graph, key_mask>>);

namespace {
template <class Y, class R>
void check(const Y& y, const R& r, const std::string& what) { test::check_close(y, r, 2e-5, 1e-4, what); }

/// Entries set with probability `p`.
template <std::size_t N>
xt::xtensor<bool, N> random_mask(const std::array<std::size_t, N>& shape, unsigned seed, double p) {
    const auto u = test::random_tensor<double, N>(shape, seed, 0, 1);
    xt::xtensor<bool, N> mask = u < p;
    return mask;
}

/// A neighborhood that hides its own `restrict_tile`, so that the kernel asks `admits` pair by pair.
template <class Nb>
struct pair_by_pair {
    Nb nb;
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const { nb.for_each_range(i, e, f); }
    tile_coverage coverage(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) const noexcept {
        return nb.coverage(i0, i1, j0, j1);
    }
    bool admits(std::size_t i, std::size_t j) const noexcept { return nb.admits(i, j); }
};
}  // namespace

BOOST_AUTO_TEST_CASE(hand_computed_key_mask) {
    // One query, keys 0 and 2 kept: logits 1 x 1 = 1 and 1 x 3 = 3 (scale 1), so
    // y = (e v0 + e^3 v2) / (e + e^3) with v = 10, 20, 30.
    const xt::xtensor<float, 2> q{{1}}, k{{1}, {2}, {3}}, v{{10}, {20}, {30}};
    const xt::xtensor<bool, 1> keep{true, false, true};
    const double w0 = std::exp(1.0), w2 = std::exp(3.0);
    const auto y = attention(q, k, v, key_mask(keep), scaled_dot_product{1.0});
    BOOST_TEST(y(0, 0) == (10 * w0 + 30 * w2) / (w0 + w2), boost::test_tools::tolerance(1e-5));
}

BOOST_AUTO_TEST_CASE(hand_computed_element_mask_and_bias) {
    // Two queries, two keys; query 0 sees key 1 only, query 1 both, with bias -1 on (1, 0):
    // y0 = v1 = 5; y1 = (e^{2 - 1} 1 + e^{4} 5) / (e^{1} + e^{4}) with q = 1, 2 and k = 1, 2.
    const xt::xtensor<double, 2> q{{1}, {2}}, k{{1}, {2}}, v{{1}, {5}};
    const xt::xtensor<bool, 2> mask{{false, true}, {true, true}};
    const xt::xtensor<double, 2> bias{{0, 0}, {-1, 0}};
    const auto y = weighted_aggregate(q, k, v, biased(scaled_dot_product{1.0}, bias), element_mask(mask), softmax{});
    const double a = std::exp(1.0), b = std::exp(4.0);
    BOOST_TEST(y(0, 0) == 5.0, boost::test_tools::tolerance(1e-14));
    BOOST_TEST(y(1, 0) == (a + 5 * b) / (a + b), boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(masks_against_the_reference) {
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        unsigned seed = 100;
        for (std::size_t n : {1, 5, 63, 64, 65, 130})
            for (std::size_t m : {1, 16, 17, 64, 129, 200})
                for (std::size_t d : {1, 8, 33}) {
                    if ((n + m + d) % 2 != 0) continue;   // half of the grid keeps the suite quick
                    const auto q = test::random_tensor<float, 2>({n, d}, seed++);
                    const auto k = test::random_tensor<float, 2>({m, d}, seed++);
                    const auto v = test::random_tensor<float, 2>({m, 9}, seed++);
                    const key_mask keys(random_mask<1>({m}, seed++, 0.75));
                    const element_mask pairs(random_mask<2>({n, m}, seed++, 0.5));
                    const auto bias = test::random_tensor<double, 2>({n, m}, seed++, -2, 2);
                    const std::string what =
                        std::string(A::name()) + " n " + std::to_string(n) + " m " + std::to_string(m) + " d " +
                        std::to_string(d);
                    const scaled_dot_product s;
                    check(attention<A>(q, k, v, keys), reference::weighted_aggregate(q, k, v, s, keys, softmax{}),
                          what + " key_mask");
                    check(attention<A>(q, k, v, pairs), reference::weighted_aggregate(q, k, v, s, pairs, softmax{}),
                          what + " element_mask");
                    check(attention<A>(q, k, v, pair_by_pair<element_mask>{pairs}),
                          reference::weighted_aggregate(q, k, v, s, pairs, softmax{}), what + " pair by pair");
                    const auto both = intersect(intersect(causal{}, keys), pairs);
                    check(attention<A>(q, k, v, both), reference::weighted_aggregate(q, k, v, s, both, softmax{}),
                          what + " causal, keys and pairs");
                    check(weighted_aggregate<A>(q, k, v, biased(s, bias), both, softmax{}),
                          reference::weighted_aggregate(q, k, v, biased(s, bias), both, softmax{}), what + " biased");
                    check(weighted_aggregate<A>(q, k, v, dot_product{}, both, count{}),
                          reference::weighted_aggregate(q, k, v, dot_product{}, both, count{}), what + " count");
                    // The gather kernel (a similarity that is not a dot product) on the same masks.
                    check(weighted_aggregate<A>(q, k, v, gaussian_distance{}, both, softmax{}),
                          reference::weighted_aggregate(q, k, v, gaussian_distance{}, both, softmax{}),
                          what + " gather");
                }
    });
}

BOOST_AUTO_TEST_CASE(one_mask_per_item_or_per_slice) {
    // [B, H, n, d] with B = 3 and H = 2 (keys and values of one head: grouped queries).
    const std::size_t B = 3, H = 2, n = 70, m = 90, d = 16;
    const auto q = test::random_tensor<float, 4>({B, H, n, d}, 1);
    const auto k = test::random_tensor<float, 4>({B, 1, m, d}, 2), v = test::random_tensor<float, 4>({B, 1, m, 8}, 3);
    const key_mask per_item(random_mask<2>({B, m}, 4, 0.7));
    const element_mask per_slice(random_mask<3>({B * H, n, m}, 5, 0.5));
    const auto bias_per_item = test::random_tensor<double, 3>({B, n, m}, 6, -1, 1);
    const auto bias_per_slice = test::random_tensor<double, 3>({B * H, n, m}, 7, -1, 1);
    const scaled_dot_product s;
    for (const auto& bias : {bias_per_item, bias_per_slice}) {
        const auto nb = intersect(per_item, per_slice);
        check(weighted_aggregate(execution::par, q, k, v, biased(s, bias), nb, softmax{}),
              reference::weighted_aggregate(q, k, v, biased(s, bias), nb, softmax{}), "per item and per slice");
    }
    // Slice (b, h) of the batched call is the [n, d] call with its own masks.
    const auto y = weighted_aggregate(q, k, v, s, intersect(per_item, per_slice), softmax{});
    const std::size_t b = 2, h = 1;
    const xt::xtensor<float, 2> qs = xt::view(q, b, h), ks = xt::view(k, b, 0), vs = xt::view(v, b, 0);
    const xt::xtensor<bool, 1> keys_b = xt::view(random_mask<2>({B, m}, 4, 0.7), b);
    const xt::xtensor<bool, 2> pairs_bh = xt::view(random_mask<3>({B * H, n, m}, 5, 0.5), b * H + h);
    const xt::xtensor<float, 2> expected =
        weighted_aggregate(qs, ks, vs, s, intersect(key_mask(keys_b), element_mask(pairs_bh)), softmax{});
    const xt::xtensor<float, 2> actual = xt::view(y, b, h);
    BOOST_TEST(actual == expected);
}

BOOST_AUTO_TEST_CASE(fully_masked_rows_are_zero) {
    // A query that admits no key gets 0 (PyTorch's nn.MultiheadAttention gives NaN there),
    // and log C_i = -inf; a bias of -inf drops its pair as a mask does.
    const auto q = test::random_tensor<float, 2>({3, 4}, 1), k = test::random_tensor<float, 2>({5, 4}, 2);
    const auto v = test::random_tensor<float, 2>({5, 2}, 3, 1, 2);
    xt::xtensor<bool, 2> mask = xt::ones<bool>({3, 5});
    xt::view(mask, 1, xt::all()) = false;
    const auto r = attention_lse(q, k, v, element_mask(mask));
    BOOST_TEST(r.out(1, 0) == 0.0f);
    BOOST_TEST(r.out(1, 1) == 0.0f);
    BOOST_TEST(std::isinf(r.lse(1)));
    BOOST_TEST(r.out(0, 0) != 0.0f);
    xt::xtensor<double, 2> bias = xt::zeros<double>({3, 5});
    xt::view(bias, 1, xt::all()) = -std::numeric_limits<double>::infinity();
    bias(2, 0) = -std::numeric_limits<double>::infinity();
    const auto y = weighted_aggregate(q, k, v, biased(scaled_dot_product{}, bias), dense{}, softmax{});
    check(y, reference::weighted_aggregate(q, k, v, scaled_dot_product{}, element_mask(xt::isfinite(bias)), softmax{}),
          "bias of -inf");
}

BOOST_AUTO_TEST_CASE(coverage_and_default_masks) {
    const xt::xtensor<bool, 1> keep{false, false, true, true, false};
    const key_mask keys(keep);
    BOOST_TEST((keys.coverage(0, 9, 0, 2) == tile_coverage::none));
    BOOST_TEST((keys.coverage(0, 9, 2, 4) == tile_coverage::full));
    BOOST_TEST((keys.coverage(0, 9, 1, 5) == tile_coverage::partial));
    const xt::xtensor<bool, 2> pairs{{true, false}, {true, true}};
    const element_mask mask(pairs);
    BOOST_TEST((mask.coverage(0, 2, 0, 1) == tile_coverage::full));
    BOOST_TEST((mask.coverage(0, 1, 1, 2) == tile_coverage::none));
    BOOST_TEST((mask.coverage(0, 2, 0, 2) == tile_coverage::partial));
    // Default-constructed masks admit everything, whatever the shapes.
    const auto q = test::random_tensor<float, 2>({7, 3}, 1), k = test::random_tensor<float, 2>({9, 3}, 2);
    const auto v = test::random_tensor<float, 2>({9, 2}, 3);
    BOOST_TEST(attention(q, k, v, intersect(key_mask{}, element_mask{})) == attention(q, k, v));
    // The ranges of a mask, as the gather kernel walks them.
    std::vector<std::size_t> seen;
    intersect(window1d{2}, keys).for_each_range(2, extents{5, 5}, [&](key_range r) {
        for (std::size_t t = 0; t < r.count; ++t) seen.push_back(r.first + t * r.stride);
    });
    BOOST_TEST(seen == (std::vector<std::size_t>{2, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(tiles_of_any_place_and_size) {
    // Blocks of 64 queries in storage: tiles that start anywhere, cross a block or end at an
    // odd edge classify and restrict as the mask's own entries say, pair by pair.
    const std::size_t n = 150, m = 130;
    const auto entries = random_mask<3>({2, n, m}, 9, 0.5);
    xt::xtensor<bool, 3> structured = entries;
    xt::view(structured, 1, xt::range(0, 64), xt::range(0, 64)) = true;    // a full tile
    xt::view(structured, 1, xt::range(64, 128), xt::range(64, 128)) = false;   // an empty one
    const element_mask mask(structured);
    for (std::size_t s = 0; s < 2; ++s) {
        const element_mask slice = mask.for_slice({s, 0, 2, 1});
        for (std::size_t i0 : {0, 1, 63, 64, 100, 128})
            for (std::size_t j0 : {0, 5, 64, 127})
                for (std::size_t rows : {1, 36, 64})
                    for (std::size_t cols : {1, 3, 64}) {
                        if (i0 + rows > n || j0 + cols > m) continue;
                        std::vector<unsigned char> keep(cols * 70, 1);
                        slice.restrict_tile(i0, rows, j0, cols, keep.data(), 70);
                        std::size_t admitted = 0, wrong = 0;
                        for (std::size_t c = 0; c < cols; ++c)
                            for (std::size_t r = 0; r < 70; ++r) {
                                const bool expected = r >= rows || structured(s, i0 + r, j0 + c);
                                wrong += keep[c * 70 + r] != expected;
                                admitted += r < rows && structured(s, i0 + r, j0 + c);
                            }
                        const tile_coverage expected = admitted == 0            ? tile_coverage::none
                                                       : admitted == rows * cols ? tile_coverage::full
                                                                                 : tile_coverage::partial;
                        BOOST_TEST(wrong == 0u, "slice " << s << " tile " << i0 << ", " << j0 << ", " << rows << " x " << cols);
                        BOOST_TEST((slice.coverage(i0, i0 + rows, j0, j0 + cols) == expected));
                    }
        // Whole tiles, as the tiled kernel asks: the counts kept per tile.
        for (std::size_t i0 = 0; i0 < n; i0 += 64)
            for (std::size_t j0 = 0; j0 < m; j0 += 64) {
                const std::size_t i1 = std::min(i0 + 64, n), j1 = std::min(j0 + 64, m);
                const std::size_t admitted = xt::sum(xt::view(structured, s, xt::range(i0, i1), xt::range(j0, j1)))();
                const tile_coverage expected = admitted == 0                       ? tile_coverage::none
                                               : admitted == (i1 - i0) * (j1 - j0) ? tile_coverage::full
                                                                                   : tile_coverage::partial;
                BOOST_TEST((slice.coverage(i0, i1, j0, j1) == expected));
            }
    }
    BOOST_TEST((mask.for_slice({1, 0, 2, 1}).coverage(0, 64, 0, 64) == tile_coverage::full));
    BOOST_TEST((mask.for_slice({1, 0, 2, 1}).coverage(64, 128, 64, 128) == tile_coverage::none));
}

BOOST_AUTO_TEST_CASE(bad_masks_are_refused) {
    const auto q = test::random_tensor<float, 3>({2, 4, 3}, 1), k = test::random_tensor<float, 3>({2, 5, 3}, 2);
    const xt::xtensor<bool, 2> keys_3 = xt::ones<bool>({2, 3});
    test::check_invalid([&] { attention(q, k, k, key_mask(keys_3)); }, "key_mask", "3 keys for 5 keys");
    const xt::xtensor<bool, 2> keys_3_items = xt::ones<bool>({3, 5});
    test::check_invalid([&] { attention(q, k, k, key_mask(keys_3_items)); }, "key_mask", "holds 3 masks",
                        "2 batch items");
    const xt::xtensor<bool, 3> pairs = xt::ones<bool>({2, 5, 4});
    test::check_invalid([&] { attention(q, k, k, element_mask(pairs)); }, "element_mask", "mask [5, 4]",
                        "4 queries and 5 keys");
    const xt::xtensor<bool, 4> rank_4 = xt::ones<bool>({1, 2, 4, 5});
    test::check_invalid([&] { element_mask{rank_4}; }, "element_mask", "[n, m] or [slices, n, m]", "[1, 2, 4, 5]");
    const xt::xtensor<double, 3> bias = xt::zeros<double>({4, 4, 5});
    test::check_invalid([&] { weighted_aggregate(q, k, k, biased(scaled_dot_product{}, bias), dense{}, softmax{}); },
                        "with_pair_bias", "holds 4 biases");
}

BOOST_AUTO_TEST_SUITE_END()
