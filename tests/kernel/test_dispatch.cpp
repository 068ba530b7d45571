// kernel/dispatch.hpp and kernel/lowering.hpp: distances, cosines and channel sums on the
// tiled kernels against the double-precision reference over awkward shapes, every
// neighborhood those kernels take, batches, heads and log C_i; the cancellation of lowered
// distances; hand-computed values; and what `plan` says, fallbacks included.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_dispatch)

namespace {

/// The tutorial's L1 distance declared as a sum over channels.
struct l1_channels {
    using weight_function = exp_weight;
    using traits = similarity_traits<channel_sum_form, symmetric>;
    template <class V>
    V channel_logit(V difference) const { return xsimd::abs(difference) * V(-0.5); }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return channel_sum_logit(*this, q, k); }
};

/// A channel sum that is not symmetric in the sign of the difference, so that q - k and k - q differ.
struct lopsided_channels {
    using weight_function = identity_weight;
    using traits = similarity_traits<channel_sum_form>;
    template <class V>
    V channel_logit(V difference) const { return difference * difference * difference + difference; }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return channel_sum_logit(*this, q, k); }
};

/// A user's distance with a scale that depends on d.
struct mean_distance {
    using weight_function = exp_weight;
    using traits = similarity_traits<distance_form>;
    double scale(std::size_t dim) const { return -1.0 / double(dim); }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        T s = 0;
        for (std::size_t c = 0; c < q.size(); ++c) s += (q[c] - k[c]) * (q[c] - k[c]);
        return T(scale(q.size())) * s;
    }
};

/// A user's dot product declaring its form, and the same declaring nothing.
struct declared_dot {
    using weight_function = identity_weight;
    using traits = similarity_traits<dot_product_form>;
    double scale(std::size_t) const { return 0.5; }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        T s = 0;
        for (std::size_t c = 0; c < q.size(); ++c) s += q[c] * k[c];
        return s / 2;
    }
};
struct undeclared_dot {
    using weight_function = identity_weight;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return declared_dot{}.logit(q, k); }
};

struct every_other_key {
    template <class F>
    void for_each_range(std::size_t, extents e, F&& f) const { f(key_range{0, (e.keys + 1) / 2, 2}); }
};

/// Keys of a 2-D window given as ranges alone (as a user would write window2d): rows of
/// `side`, windows of `size` x `size` shifted inward at the borders.
struct window_as_ranges {
    std::size_t side = 1, size = 1;
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        const std::size_t rows = e.keys / side, r = i / side, c = i % side, half = size / 2;
        const std::size_t r0 = std::min(r > half ? r - half : 0, rows > size ? rows - size : 0);
        const std::size_t c0 = std::min(c > half ? c - half : 0, side > size ? side - size : 0);
        for (std::size_t y = r0; y < std::min(rows, r0 + size); ++y)
            f(key_range{y * side + c0, std::min(side, size), 1});
    }
};

/// Two keys per query, far apart: too sparse for blocks, row by row.
struct two_scattered_keys {
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        const std::size_t a = (i * 7919) % e.keys, b = (i * 104729 + 1) % e.keys;
        if (a == b) return f(key_range{a, 1, 1});
        f(key_range{std::min(a, b), 2, std::max(a, b) - std::min(a, b)});
    }
};

/// weighted_aggregate<Arch> against the reference, with tolerance atol + rtol |expected|.
template <class Arch, class T, class S, class Nb, class Nm>
void against_reference(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k, const xt::xtensor<T, 2>& v,
                       const S& s, const Nb& nb, const Nm& nm, const std::string& what) {
    const double tol = std::is_same_v<T, float> ? 2e-4 : 1e-10;
    const auto expected = reference::weighted_aggregate(q, k, v, s, nb, nm);
    test::check_close(weighted_aggregate<Arch>(q, k, v, s, nb, nm), expected, tol, tol, what);
}

/// Every similarity of the new routes over `nb` with n queries, m keys, d features, dv values;
/// with `Short`, one of each route (lowered distance or differences, lowered cosine, channel
/// sum, separable sum), for the neighborhoods whose kernel the full list already covers.
template <class Arch, class T, bool Short = false, class Nb>
void each_similarity(const Nb& nb, std::size_t n, std::size_t m, std::size_t d, std::size_t dv, unsigned seed,
                     const std::string& where) {
    const auto q = test::random_tensor<T, 2>({n, d}, seed), k = test::random_tensor<T, 2>({m, d}, seed + 1);
    const auto v = test::random_tensor<T, 2>({m, dv}, seed + 2);
    const std::string at = where + " n " + std::to_string(n) + " m " + std::to_string(m) + " d " + std::to_string(d) +
                           " dv " + std::to_string(dv) + " arch " + Arch::name();
    against_reference<Arch>(q, k, v, gaussian_distance(0.8), nb, sum{}, "gaussian_distance, sum, " + at);
    against_reference<Arch>(q, k, v, cosine{}, nb, softmax{}, "cosine, softmax, " + at);
    against_reference<Arch>(q, k, v, l1_channels{}, nb, softmax{}, "l1_channels, softmax, " + at);
    const concatenation concat(test::random_tensor<double, 2>({3, d}, seed + 3), test::random_tensor<double, 2>({3, d}, seed + 4),
                               test::random_tensor<double, 1>({6}, seed + 5));
    against_reference<Arch>(q, k, v, concat, nb, count{}, "concatenation, count, " + at);
    if constexpr (Short) return;
    against_reference<Arch>(q, k, v, gaussian_distance(1.3), nb, softmax{}, "gaussian_distance, softmax, " + at);
    against_reference<Arch>(q, k, v, squared_euclidean{}, nb, none{}, "squared_euclidean, none, " + at);
    against_reference<Arch>(q, k, v, squared_euclidean{}, nb, count{}, "squared_euclidean, count, " + at);
    against_reference<Arch>(q, k, v, mean_distance{}, nb, sum{}, "mean_distance, sum, " + at);
    against_reference<Arch>(q, k, v, cosine{}, nb, count{}, "cosine, count, " + at);
    against_reference<Arch>(q, k, v, laplacian_distance(0.7), nb, sum{}, "laplacian_distance, sum, " + at);
    against_reference<Arch>(q, k, v, lopsided_channels{}, nb, none{}, "lopsided_channels, none, " + at);
    against_reference<Arch>(q, k, v, declared_dot{}, nb, count{}, "declared_dot, count, " + at);
}

}  // namespace

/// Runs `f(arch)` on every architecture for float, on the default one for double (the kernels'
/// code is the same for both types; the instruction sets differ in float's lanes).
template <class T, class F>
void for_each_arch_of(F&& f) {
    if constexpr (std::is_same_v<T, float>) test::for_each_arch(f);
    else f(default_arch{});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(dense_and_causal_against_the_reference, T, test::value_types) {
    for_each_arch_of<T>([&](auto arch) {
        using Arch = decltype(arch);
        unsigned seed = 10;
        // Around the SIMD widths, the register blocks of 8 keys, the blocks of 16 and 64 queries.
        for (const auto& [n, m] : {std::pair{1, 1}, {1, 70}, {15, 9}, {16, 16}, {17, 65}, {63, 130}, {64, 64}, {65, 257},
                                   {130, 40}})
            for (const auto& [d, dv] : {std::pair{1, 1}, {3, 5}, {16, 16}, {17, 33}, {33, 48}}) {
                each_similarity<Arch, T>(dense{}, n, m, d, dv, seed++, "dense");
                if (n == m) each_similarity<Arch, T, true>(causal{}, n, m, d, dv, seed++, "causal");
            }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(windows_and_groups_against_the_reference, T, test::value_types) {
    for_each_arch_of<T>([&](auto arch) {
        using Arch = decltype(arch);
        unsigned seed = 100;
        for (const auto& [h, w] : {std::pair{1, 1}, {1, 37}, {37, 1}, {5, 7}, {9, 18}}) {
            const std::size_t n = h * w;
            for (std::size_t d : {1, 5, 17}) {
                each_similarity<Arch, T>(window2d{std::size_t(h), std::size_t(w), std::min<std::size_t>(5, std::min(h, w) | 1)},
                                         n, n, d, 7, seed++, "window2d");
                each_similarity<Arch, T, true>(window1d{3, 2}, n, n, d, 16, seed++, "window1d dilation 2");
                each_similarity<Arch, T, true>(window1d{4, 1, true}, n, n, d, 3, seed++, "window1d causal");
            }
        }
        each_similarity<Arch, T, true>(patch_group{8, 6, 2, 3}, 48, 48, 5, 9, seed++, "patch_group");
        const xt::xtensor<bool, 2> layout = {{true, false}, {true, true}};
        each_similarity<Arch, T, true>(block_mask(40, layout), 70, 70, 6, 6, seed++, "block_mask");
        // Key ranges alone: blocks of 16 queries over their keys' union, or row by row.
        for (const auto& [side, size, rows] : {std::tuple{1, 1, 1}, {7, 3, 5}, {17, 5, 9}, {33, 7, 8}})
            each_similarity<Arch, T>(window_as_ranges{std::size_t(side), std::size_t(size)}, side * rows, side * rows,
                                     9, 17, seed++, "window as ranges");
        each_similarity<Arch, T, true>(every_other_key{}, 37, 100, 16, 5, seed++, "every other key");
        each_similarity<Arch, T, true>(two_scattered_keys{}, 90, 300, 7, 8, seed++, "two scattered keys");
    });
}

BOOST_AUTO_TEST_CASE(empty_rows_and_no_queries) {
    // Keys only up to the query before (causal with a mask that empties query 0): a row with
    // no admitted key is 0, as the reference says, on every route.
    const auto q = test::random_tensor<float, 2>({5, 3}, 1), k = test::random_tensor<float, 2>({5, 3}, 2);
    const auto v = test::random_tensor<float, 2>({5, 2}, 3);
    const key_mask none_for_first(xt::xtensor<bool, 1>{false, true, true, true, true});
    against_reference<default_arch>(q, k, v, gaussian_distance(1.0), intersection{causal{}, none_for_first}, sum{},
                                    "gaussian_distance, masked first key");
    against_reference<default_arch>(q, k, v, laplacian_distance(1.0), intersection{causal{}, none_for_first}, softmax{},
                                    "laplacian_distance, masked first key");
    const xt::xtensor<float, 2> no_queries = xt::zeros<float>({0, 3});
    BOOST_TEST(weighted_aggregate(no_queries, k, v, cosine{}, dense{}, softmax{}).size() == 0u);
}

BOOST_AUTO_TEST_CASE(batches_heads_and_log_normalizers) {
    const auto q = test::random_tensor<float, 4>({2, 3, 37, 9}, 7), k = test::random_tensor<float, 4>({2, 3, 21, 9}, 8);
    const auto v = test::random_tensor<float, 4>({2, 3, 21, 5}, 9);
    for (const auto& [what, y, r] :
         {std::tuple{"gaussian_distance", weighted_aggregate(q, k, v, gaussian_distance(1.5), dense{}, sum{}),
                     reference::weighted_aggregate(q, k, v, gaussian_distance(1.5), dense{}, sum{})},
          std::tuple{"cosine", weighted_aggregate(q, k, v, cosine{}, dense{}, softmax{}),
                     reference::weighted_aggregate(q, k, v, cosine{}, dense{}, softmax{})},
          std::tuple{"laplacian_distance", weighted_aggregate(q, k, v, laplacian_distance(2.0), dense{}, sum{}),
                     reference::weighted_aggregate(q, k, v, laplacian_distance(2.0), dense{}, sum{})}})
        test::check_close(y, r, 2e-5, 2e-5, what);

    // log C_i = log sum_j exp(logit_ij), literally.
    const auto qs = test::random_tensor<double, 2>({19, 6}, 11), ks = test::random_tensor<double, 2>({23, 6}, 12);
    const auto vs = test::random_tensor<double, 2>({23, 2}, 13);
    const gaussian_distance g(0.9);
    const laplacian_distance l(0.6);
    const auto gl = weighted_aggregate_lse(execution::seq, qs, ks, vs, g, dense{}, sum{});
    const auto ll = weighted_aggregate_lse(execution::seq, qs, ks, vs, l, dense{}, softmax{});
    for (std::size_t i = 0; i < 19; ++i) {
        double gsum = 0, lsum = 0;
        for (std::size_t j = 0; j < 23; ++j) {
            double square = 0, absolute = 0;
            for (std::size_t c = 0; c < 6; ++c) {
                square += (qs(i, c) - ks(j, c)) * (qs(i, c) - ks(j, c));
                absolute += std::abs(qs(i, c) - ks(j, c));
            }
            gsum += std::exp(-square / (0.9 * 0.9));
            lsum += std::exp(-absolute / 0.6);
        }
        BOOST_TEST(std::abs(gl.lse(i) - std::log(gsum)) < 1e-10);
        BOOST_TEST(std::abs(ll.lse(i) - std::log(lsum)) < 1e-10);
    }
}

BOOST_AUTO_TEST_CASE(hand_computed_distances) {
    // Concatenation: ReLU(a_i + b_j) with a = w[:1] theta q, b = w[1:] phi k; theta = phi = (1, 0),
    // w = (1, -1): a = q_0 = 2, b = -k_0 = -1 and -3: weights 1 and 0, y = 10 under none.
    {
        const xt::xtensor<float, 2> q = {{2, 7}}, k = {{1, 5}, {3, -4}}, v = {{10}, {20}};
        const xt::xtensor<double, 2> row = {{1, 0}};
        const concatenation concat(row, row, xt::xtensor<double, 1>{1, -1});
        BOOST_TEST(std::abs(weighted_aggregate(q, k, v, concat, dense{}, none{})(0, 0) - 10.0) < 1e-5);
        BOOST_TEST(std::abs(weighted_aggregate(q, k, v, concat, dense{}, count{})(0, 0) - 5.0) < 1e-5);
    }
    // q = (0, 0), keys (1, 0) and (0, 2), values 10 and 20, h = 1:
    // weights e^-1 and e^-4, y = (10 e^-1 + 20 e^-4) / (e^-1 + e^-4) = 10.4742587317756...
    const xt::xtensor<float, 2> q = {{0, 0}}, k = {{1, 0}, {0, 2}}, v = {{10}, {20}};
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, gaussian_distance(1.0), dense{}, sum{})(0, 0) - 10.474258731775668) <
               1e-5);
    // |q - k|^2 summed with none: 1 * 10 + 4 * 20 = 90.
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, squared_euclidean{}, dense{}, none{})(0, 0) - 90.0) < 1e-4);
    // L1 with h = 1: e^-1 and e^-2, y = (10 e^-1 + 20 e^-2) / (e^-1 + e^-2) = 12.6894142136999...
    BOOST_TEST(std::abs(weighted_aggregate(q, k, v, laplacian_distance(1.0), dense{}, sum{})(0, 0) - 12.689414213699951) <
               1e-5);
    // cosine of (1, 1) with (1, 0) and (0, 2): both 1 / sqrt 2; a zero key has cosine 0.
    const xt::xtensor<float, 2> q1 = {{1, 1}}, k3 = {{1, 0}, {0, 2}, {0, 0}}, v3 = {{1}, {2}, {4}};
    BOOST_TEST(std::abs(weighted_aggregate(q1, k3, v3, cosine{}, dense{}, none{})(0, 0) - 3 / std::sqrt(2.0)) < 1e-5);
}

BOOST_AUTO_TEST_CASE(cancellation_of_lowered_distances) {
    // Features of magnitude 1e3 with differences of 1e-2 (centring leaves the differences).
    const std::size_t n = 150, d = 12;
    auto q = test::random_tensor<float, 2>({n, d}, 21, -1e-2, 1e-2), k = test::random_tensor<float, 2>({n, d}, 22, -1e-2, 1e-2);
    q += 1e3f, k += 1e3f;
    const auto v = test::random_tensor<float, 2>({n, 4}, 23);
    const gaussian_distance narrow(0.02);
    BOOST_TEST((plan(q, k, v, narrow, dense{}, sum{}).logits() == kernel::logit_route::lowered_distance));
    against_reference<default_arch>(q, k, v, narrow, dense{}, sum{}, "magnitude 1e3, differences 1e-2");

    // 8-bit image patches: 5 x 5 x 3 values in 0..255, the bandwidth of non-local means.
    auto patches = test::random_tensor<float, 2>({n, 75}, 24, 0, 256);
    for (auto& x : patches) x = std::floor(x);
    const gaussian_distance nlm(10.0 * std::sqrt(75.0));
    against_reference<default_arch>(patches, patches, v, nlm, dense{}, sum{}, "8-bit patches");

    // A spread far wider than the bandwidth: the lowered dot product would cancel, so the
    // kernel scores the differences, as exactly as the reference.
    const auto wide = test::random_tensor<float, 2>({n, d}, 25, -1e3, 1e3);
    const auto near = xt::xtensor<float, 2>(wide + test::random_tensor<float, 2>({n, d}, 26, -0.3, 0.3));
    const gaussian_distance tight(0.5);
    const aggregate_plan p = plan(wide, near, v, tight, dense{}, sum{});
    BOOST_TEST((p.kernel() == kernel_kind::tiled));
    BOOST_TEST((p.logits() == kernel::logit_route::differences));
    against_reference<default_arch>(wide, near, v, tight, dense{}, sum{}, "spread 1e3, bandwidth 0.5");
    const kernel::lowered_features<default_arch, float> lowered(as_rows(wide), as_rows(near), tight.scale(d), distance_form{});
    BOOST_TEST(lowered.cancellation_bound() > kernel::cancellation_tolerance);
}

BOOST_AUTO_TEST_CASE(ranges_layout_from_the_data) {
    // Windows given as ranges: rows of 64 queries, blocks of 16 taller than one row.
    const extents e{64 * 64, 64 * 64};
    const kernel::block_layout grid = kernel::choose_layout(window_as_ranges{64, 7}, e);
    BOOST_TEST(grid.pitch == 64u);
    BOOST_TEST(grid.height * grid.width == 16u);
    BOOST_TEST(grid.height > 1u);
    // One range per query: 16 consecutive queries.
    const kernel::block_layout line = kernel::choose_layout(two_scattered_keys{}, e);
    BOOST_TEST(line.pitch == e.queries);
    BOOST_TEST(line.height == 1u);
    // Every layout deals each query to exactly one block, whatever divides what.
    for (const kernel::block_layout layout : {grid, line, kernel::block_layout{100, 7, 4, 4}, kernel::block_layout{5, 5, 16, 1},
                                              kernel::block_layout{0, 1, 1, 16}}) {
        std::vector<int> seen(layout.n, 0);
        std::size_t ids[kernel::ranges_block_rows];
        for (std::size_t b = 0; b < layout.blocks(); ++b) {
            const std::size_t count = layout.queries(b, ids);
            BOOST_TEST(count <= kernel::ranges_block_rows);
            for (std::size_t r = 0; r < count; ++r) ++seen[ids[r]];
        }
        BOOST_TEST(std::count(seen.begin(), seen.end(), 1) == std::ptrdiff_t(layout.n), "pitch " << layout.pitch);
        BOOST_TEST(layout.tasks() * kernel::ranges_blocks_per_task >= layout.blocks());
    }
}

BOOST_AUTO_TEST_CASE(plan_names_the_kernel_and_why) {
    const auto x = test::random_tensor<float, 2>({64, 8}, 31);
    BOOST_TEST((plan(x, x, x, scaled_dot_product{}, dense{}, softmax{}).kernel() == kernel_kind::tiled));
    BOOST_TEST((plan(x, x, x, declared_dot{}, window1d{3}, sum{}).kernel() == kernel_kind::tiled_window));
    BOOST_TEST((plan(x, x, x, cosine{}, window2d{8, 8, 3}, softmax{}).logits() == kernel::logit_route::lowered_cosine));
    BOOST_TEST((plan(x, x, x, laplacian_distance{}, causal{}, sum{}).logits() == kernel::logit_route::differences));
    const concatenation concat(test::random_tensor<double, 2>({4, 8}, 1), test::random_tensor<double, 2>({4, 8}, 2),
                               test::random_tensor<double, 1>({8}, 3));
    BOOST_TEST((plan(x, x, x, concat, dense{}, count{}).logits() == kernel::logit_route::lowered_sum));

    const aggregate_plan undeclared = plan(x, x, x, undeclared_dot{}, dense{}, softmax{});
    BOOST_TEST((undeclared.kernel() == kernel_kind::gather));
    BOOST_TEST(std::string(undeclared.reason()).find("similarity_traits") != std::string::npos, undeclared.describe());
    BOOST_TEST((plan(x, x, x, scaled_dot_product{}, every_other_key{}, softmax{}).kernel() == kernel_kind::tiled_ranges));
    const aggregate_plan sparse = plan(x, x, x, scaled_dot_product{}, two_scattered_keys{}, softmax{});
    BOOST_TEST((sparse.kernel() == kernel_kind::gather));
    BOOST_TEST(std::string(sparse.reason()).find("sparser than ranges_min_density") != std::string::npos, sparse.describe());
    const aggregate_plan ranges = plan(x, x, x, undeclared_dot{}, every_other_key{}, softmax{});
    BOOST_TEST(std::string(ranges.reason()).find("similarity_traits") != std::string::npos, ranges.describe());
    const aggregate_plan absolute = plan(x, x, x, gaussian_distance{}, dense{}, count{});
    BOOST_TEST(std::string(absolute.reason()).find("absolute") != std::string::npos, absolute.describe());

    // Run-time fallbacks: log C_i on the stencil, different features on a channel stencil.
    const auto y = test::random_tensor<float, 2>({64, 8}, 32);
    const grid_stencil stencil{8, 8, 4};
    BOOST_TEST((plan(x, x, x, gaussian_distance{}, stencil, sum{}).kernel() == kernel_kind::stencil));
    const aggregate_plan different = plan(x, y, x, gaussian_distance{}, stencil, sum{});
    BOOST_TEST((different.kernel() == kernel_kind::gather));
    BOOST_TEST(std::string(different.reason()).find("different features") != std::string::npos, different.describe());
    BOOST_TEST((plan(x, x, x, gaussian_distance{}, stencil, sum{}, true).kernel() == kernel_kind::gather));
    // And the gather kernel computes what the plan sends it.
    against_reference<default_arch>(x, y, x, gaussian_distance{}, stencil, sum{}, "channel stencil, different features");
    test::check_invalid([&] { (void)plan(x, y, test::random_tensor<float, 2>({3, 2}, 1), cosine{}, dense{}, sum{}); },
                        "plan", "k and v");
}

// Each row of the table for the new forms, at compile time.
static_assert(kernel_for<gaussian_distance, dense, sum> == kernel_kind::tiled);
static_assert(kernel_for<squared_euclidean, causal, none> == kernel_kind::tiled);
static_assert(kernel_for<cosine, window2d, softmax> == kernel_kind::tiled_window);
static_assert(kernel_for<laplacian_distance, window1d, sum> == kernel_kind::tiled_window);
static_assert(kernel_for<l1_channels, patch_group, softmax> == kernel_kind::tiled_groups);
static_assert(kernel_for<declared_dot, dense, count> == kernel_kind::tiled);
static_assert(kernel_for<undeclared_dot, dense, count> == kernel_kind::gather);
static_assert(kernel_for<gaussian_distance, dense, count> == kernel_kind::gather);   // absolute exp weights
static_assert(kernel_for<gaussian_distance, grid_stencil, sum> == kernel_kind::stencil);
static_assert(kernel_for<projected<gaussian_distance>, dense, sum> == kernel_kind::tiled);
static_assert(kernel_for<concatenation, dense, count> == kernel_kind::tiled);
static_assert(kernel_for<concatenation, window2d, count> == kernel_kind::tiled_window);

BOOST_AUTO_TEST_SUITE_END()
