// kernel/tiled_window.hpp: the tiled window kernel against the double-precision reference
// on windows as large as or larger than the grid, 1 x N and N x 1 grids, dilation with
// fewer pixels than the window, kernel = side, odd d, a single query, batches and heads,
// position biases, both border rules and causal windows; log C_i against a literal
// log-sum-exp; the border rules by hand; threads bit for bit; the block shapes; empty inputs.
#include <nonlocal/nonlocal.hpp>

#include <string>
#include <vector>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_tiled_window)

static_assert(kernel::tiled_window_applies<scaled_dot_product, window2d, softmax>);
static_assert(kernel::tiled_window_applies<scaled_dot_product, window1d, softmax>);
static_assert(kernel::tiled_window_applies<with_position_bias<scaled_dot_product>, window2d, softmax>);
static_assert(kernel::tiled_window_applies<dot_product, window2d, count>);
static_assert(kernel::tiled_window_applies<gaussian, window1d, sum>);
static_assert(kernel::tiled_window_applies<gaussian_distance, window2d, sum>);   // a distance: from differences
static_assert(!kernel::tiled_window_applies<scaled_dot_product, dense, softmax>);
static_assert(!kernel::tiled_window_applies<gaussian, window2d, count>);          // absolute exp weights

namespace {

// fp32 against double: atol 1e-5 + rtol 1e-4; double against double: 1e-12.
template <class T>
constexpr double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-12;

template <class A, class T, class S, class Nb, class Nm>
void compare(const S& s, const Nb& nb, const Nm& nm, std::size_t n, std::size_t d, std::size_t dv, unsigned seed,
             const std::string& what) {
    const auto q = test::random_tensor<T, 2>({n, d}, seed), k = test::random_tensor<T, 2>({n, d}, seed + 1);
    const auto v = test::random_tensor<T, 2>({n, dv}, seed + 2);
    test::check_close(weighted_aggregate<A>(q, k, v, s, nb, nm), reference::weighted_aggregate(q, k, v, s, nb, nm),
                      tolerance<T>, 10 * tolerance<T>, std::string(A::name()) + " " + what);
}

std::string describe(const window2d& w) {
    return "window2d " + std::to_string(w.height) + " x " + std::to_string(w.width) + " kernel " +
           std::to_string(w.kernel) + " dilation " + std::to_string(w.dilation) + (w.causal ? " causal" : "") +
           (w.edges == border::clip ? " clip" : " shift");
}

}  // namespace

BOOST_AUTO_TEST_CASE(window2d_against_the_reference) {
    // Grids from a single pixel to 1 x N, N x 1 and wider than a block; windows smaller than,
    // equal to and larger than the grid; dilation with fewer pixels per group than the window.
    const std::vector<std::array<std::size_t, 2>> grids = {{1, 1}, {1, 23}, {23, 1}, {5, 5}, {7, 7}, {6, 17}, {19, 9}};
    test::for_each_arch([&](auto arch) {
        using A = decltype(arch);
        unsigned seed = 1;
        for (const auto& [h, w] : grids)
            for (std::size_t kernel : {1, 3, 7, 9})
                for (std::size_t dilation : {1, 2, 3})
                    for (bool causal : {false, true})
                        for (border edges : {border::shift, border::clip}) {
                            if ((h + w + kernel + dilation + causal) % 2 && h * w > 1) continue;   // half the grid
                            const window2d win{h, w, kernel, dilation, causal, edges};
                            const std::size_t d = 1 + seed % 40, dv = 1 + (seed * 7) % 33;
                            compare<A, float>(scaled_dot_product{}, win, softmax{}, h * w, d, dv, seed += 3,
                                              describe(win) + " softmax d " + std::to_string(d));
                            compare<A, float>(dot_product{}, win, count{}, h * w, 5, 3, seed += 3,
                                              describe(win) + " dot/count");
                        }
    });
}

BOOST_AUTO_TEST_CASE(window1d_against_the_reference) {
    test::for_each_arch([&](auto arch) {
        using A = decltype(arch);
        unsigned seed = 1000;
        for (std::size_t n : {0, 1, 2, 15, 16, 17, 33, 100, 300})
            for (std::size_t radius : {0, 1, 5, 40, 130})
                for (std::size_t dilation : {1, 4})
                    for (bool causal : {false, true})
                        for (border edges : {border::shift, border::clip}) {
                            const window1d win{radius, dilation, causal, edges};
                            const std::string what = "window1d n " + std::to_string(n) + " radius " +
                                                     std::to_string(radius) + " dilation " + std::to_string(dilation) +
                                                     (causal ? " causal" : "") + (edges == border::clip ? " clip" : "");
                            seed += 3;
                            compare<A, float>(scaled_dot_product{}, win, softmax{}, n, 16 + seed % 3, 9, seed, what);
                            if (n == 100)
                                compare<A, float>(gaussian{}, win, sum{}, n, 7, 16, seed += 3, what + " gaussian/sum");
                        }
        // d = 64 over a long causal band: tiles read in place, most of them inside every window.
        compare<A, float>(scaled_dot_product{}, window1d{200, 1, true}, softmax{}, 700, 64, 64, seed, "long causal band");
    });
}

BOOST_AUTO_TEST_CASE(double_precision) {
    test::for_each_arch([&](auto arch) {
        using A = decltype(arch);
        compare<A, double>(scaled_dot_product{}, window2d{9, 11, 5, 2}, softmax{}, 99, 13, 6, 7, "window2d double");
        compare<A, double>(scaled_dot_product{}, window1d{6, 1, false, border::clip}, softmax{}, 50, 8, 3, 8,
                           "window1d double");
    });
}

BOOST_AUTO_TEST_CASE(position_bias_on_every_head) {
    // [B, H, n, d] with a table of H heads: head h uses table[h], on the kernel's blocks.
    test::for_each_arch([&](auto arch) {
        using A = decltype(arch);
        unsigned seed = 2000;
        for (const window2d win : {window2d{9, 10, 3, 1}, window2d{12, 7, 5, 2}, window2d{6, 6, 7, 1},
                                   window2d{10, 10, 5, 1, false, border::clip}, window2d{8, 9, 3, 1, true}}) {
            const std::size_t n = win.height * win.width, heads = 3, side = 2 * win.kernel - 1;
            const auto table = test::random_tensor<double, 3>({heads, side, side}, seed++, -2, 2);
            const with_position_bias s(scaled_dot_product{}, table, win);
            const auto q = test::random_tensor<float, 4>({2, heads, n, 11}, seed++);
            const auto k = test::random_tensor<float, 4>({2, heads, n, 11}, seed++);
            const auto v = test::random_tensor<float, 4>({2, heads, n, 5}, seed++);
            test::check_close(weighted_aggregate<A>(q, k, v, s, win, softmax{}),
                              reference::weighted_aggregate(q, k, v, s, win, softmax{}), 1e-5, 1e-4,
                              std::string(A::name()) + " bias " + describe(win));
        }
    });
}

BOOST_AUTO_TEST_CASE(batches_and_heads) {
    const window2d win{11, 13, 5};
    const std::size_t n = win.height * win.width;
    const auto q = test::random_tensor<float, 4>({2, 4, n, 19}, 1), k = test::random_tensor<float, 4>({2, 2, n, 19}, 2);
    const auto v = test::random_tensor<float, 4>({2, 2, n, 12}, 3);
    test::check_close(weighted_aggregate(q, k, v, scaled_dot_product{}, win, softmax{}),
                      reference::weighted_aggregate(q, k, v, scaled_dot_product{}, win, softmax{}), 1e-5, 1e-4,
                      "grouped-query heads");
}

BOOST_AUTO_TEST_CASE(log_sum_exp) {
    // log C_i = log sum_{j in N(i)} exp(q_i . k_j / sqrt(d)), written out in double.
    const window2d win{9, 12, 5, 2, false, border::clip};
    const std::size_t n = win.height * win.width, d = 10;
    const auto q = test::random_tensor<float, 2>({n, d}, 5, -3, 3), k = test::random_tensor<float, 2>({n, d}, 6, -3, 3);
    const auto v = test::random_tensor<float, 2>({n, 4}, 7);
    const auto got = weighted_aggregate_lse(execution::seq, q, k, v, scaled_dot_product{}, win, softmax{});
    std::size_t checked = 0;
    for (std::size_t i = 0; i < n; ++i) {
        double sum = 0;
        win.for_each_range(i, extents{n, n}, [&](key_range r) {
            for (std::size_t t = 0; t < r.count; ++t) {
                const std::size_t j = r.first + t * r.stride;
                double dot = 0;
                for (std::size_t c = 0; c < d; ++c) dot += double(q(i, c)) * double(k(j, c));
                sum += std::exp(dot / std::sqrt(double(d)));
            }
        });
        BOOST_TEST(std::abs(double(got.lse(i)) - std::log(sum)) <= 1e-5 * (1 + std::abs(std::log(sum))), "query " << i);
        ++checked;
    }
    BOOST_TEST(checked == n);
}

BOOST_AUTO_TEST_CASE(border_rules_by_hand) {
    // Three tokens, radius 1, q = k = 0: every admitted key has the same weight, so y_i is
    // the mean of the values of N(i). Shift: N(0) = N(2) = {0, 1, 2}; clip: N(0) = {0, 1},
    // N(2) = {1, 2}; both N(1) = {0, 1, 2}.
    const xt::xtensor<float, 2> x = xt::zeros<float>({3, 2});
    const xt::xtensor<float, 2> v = {{1}, {2}, {4}};
    const auto shift = weighted_aggregate(x, x, v, scaled_dot_product{}, window1d{1}, softmax{});
    const auto clip = weighted_aggregate(x, x, v, scaled_dot_product{}, window1d{1, 1, false, border::clip}, softmax{});
    const float all = 7.f / 3;
    BOOST_TEST(std::abs(shift(0, 0) - all) < 1e-6);
    BOOST_TEST(std::abs(shift(2, 0) - all) < 1e-6);
    BOOST_TEST(std::abs(clip(0, 0) - 1.5f) < 1e-6);
    BOOST_TEST(std::abs(clip(1, 0) - all) < 1e-6);
    BOOST_TEST(std::abs(clip(2, 0) - 3.f) < 1e-6);
    // Count normalization with a dot product of zeros sums nothing: y = 0, but C_i = |N(i)|.
    const auto lse = weighted_aggregate_lse(execution::seq, x, x, v, dot_product{}, window1d{1, 1, false, border::clip},
                                            count{});
    BOOST_TEST(std::abs(lse.lse(0) - std::log(2.f)) < 1e-6);
    BOOST_TEST(std::abs(lse.lse(1) - std::log(3.f)) < 1e-6);
}

BOOST_AUTO_TEST_CASE(border_rules_on_a_grid) {
    // 2-D, kernel 3 on a 4 x 5 grid: the corner (0, 0) sees rows 0..1 x cols 0..1 when
    // clipped and rows 0..2 x cols 0..2 when shifted; the pixel (1, 1) sees the same either way.
    const auto keys = [](const window2d& w, std::size_t i) {
        std::vector<std::size_t> out;
        w.for_each_range(i, extents{20, 20}, [&](key_range r) {
            for (std::size_t t = 0; t < r.count; ++t) out.push_back(r.first + t * r.stride);
        });
        return out;
    };
    const window2d shift{4, 5, 3}, clip{4, 5, 3, 1, false, border::clip};
    BOOST_TEST(keys(clip, 0) == (std::vector<std::size_t>{0, 1, 5, 6}));
    BOOST_TEST(keys(shift, 0) == (std::vector<std::size_t>{0, 1, 2, 5, 6, 7, 10, 11, 12}));
    BOOST_TEST(keys(clip, 6) == keys(shift, 6));
    BOOST_TEST(keys(clip, 19) == (std::vector<std::size_t>{13, 14, 18, 19}));
}

BOOST_AUTO_TEST_CASE(threads_equal_one_thread) {
    const window2d win{33, 20, 7};
    const std::size_t n = win.height * win.width;
    const auto q = test::random_tensor<float, 2>({n, 24}, 1), k = test::random_tensor<float, 2>({n, 24}, 2);
    const auto v = test::random_tensor<float, 2>({n, 24}, 3);
    const auto one = weighted_aggregate(q, k, v, scaled_dot_product{}, win, softmax{});
    for (int threads : {2, 3})
        BOOST_TEST(weighted_aggregate(execution::parallel_policy{threads}, q, k, v, scaled_dot_product{}, win, softmax{}) ==
                   one);
}

BOOST_AUTO_TEST_CASE(block_shapes) {
    // 7 x 7 windows: 4 x 4 blocks touch 10 x 10 keys (6.25 per query), 2 x 8 touch 8 x 14 (7).
    BOOST_TEST((kernel::window_block_shape(64, 64, 7, 7, 16) == std::array<std::size_t, 2>{4, 4}));
    // A 1-D grid, or a grid one pixel wide: the whole block along the long axis.
    BOOST_TEST((kernel::window_block_shape(1, 8192, 1, 1025, 16) == std::array<std::size_t, 2>{1, 16}));
    BOOST_TEST((kernel::window_block_shape(100, 1, 7, 1, 16) == std::array<std::size_t, 2>{16, 1}));
    // A grid 2 pixels high: 2 x 8.
    BOOST_TEST((kernel::window_block_shape(2, 100, 2, 7, 16) == std::array<std::size_t, 2>{2, 8}));
}

BOOST_AUTO_TEST_CASE(a_bias_for_another_window_is_refused) {
    const window2d win{5, 6, 3}, other{5, 6, 5};
    const auto table = test::random_tensor<double, 3>({1, 9, 9}, 1);   // 2 x 5 - 1 offsets per axis
    const with_position_bias s(scaled_dot_product{}, table, other);
    const auto x = test::random_tensor<float, 2>({30, 4}, 2);
    test::check_invalid([&] { weighted_aggregate(x, x, x, s, win, softmax{}); }, "with_position_bias", "kernel 5",
                        "kernel 3");
}

BOOST_AUTO_TEST_SUITE_END()
