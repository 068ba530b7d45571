// weighted_aggregate.hpp: the fast path against the double-precision
// reference on random shapes (odd sizes, sizes around the SIMD width, empty
// and single-element cases), on every tested architecture; batched, multi-head
// and grouped-query inputs; views and adapted pointers; the `out` overload;
// and the errors of inputs that do not fit.
#include <nonlocal/nonlocal.hpp>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_weighted_aggregate)

namespace {
template <class T>
double tolerance() { return std::is_same_v<T, float> ? 2e-5 : 1e-12; }

/// Fast path on architecture `Arch` against the reference for one composition.
template <class Arch, class T, class S, class Nb, class Nm>
void compare(std::size_t n, std::size_t m, std::size_t dq, std::size_t dv, const S& s, const Nb& nb, const Nm& nm,
             unsigned seed, const std::string& what) {
    const auto q = test::random_tensor<T, 2>({n, dq}, seed);
    const auto k = test::random_tensor<T, 2>({m, dq}, seed + 1);
    const auto v = test::random_tensor<T, 2>({m, dv}, seed + 2);
    const auto y = weighted_aggregate<Arch>(q, k, v, s, nb, nm);
    const auto r = reference::weighted_aggregate(q, k, v, s, nb, nm);
    std::ostringstream ctx;
    ctx << what << " on " << Arch::name() << ", n " << n << " m " << m << " dq " << dq << " dv " << dv;
    test::check_close(y, r, tolerance<T>(), tolerance<T>() * 10, ctx.str());
}
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(dense_family_on_awkward_shapes, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        unsigned seed = 1;
        for (std::size_t n : {0, 1, 2, 7, 16, 33})
            for (std::size_t m : {0, 1, 5, 17, 64})
                for (std::size_t d : {1, 3, 8, 15, 16, 17, 65}) {
                    const std::size_t dv = (d * 7) % 19 + 1;
                    compare<A, T>(n, m, d, dv, scaled_dot_product{}, dense{}, softmax{}, seed++, "attention");
                    compare<A, T>(n, m, d, dv, scaled_dot_product{}, causal{}, softmax{}, seed++, "causal");
                    compare<A, T>(n, m, d, dv, gaussian{}, dense{}, sum{}, seed++, "gaussian/sum");
                    compare<A, T>(n, m, d, dv, dot_product{}, dense{}, count{}, seed++, "dot/count");
                    if (d == 3) {   // values without features: [n, 0] outputs
                        compare<A, T>(n, m, d, 0, scaled_dot_product{}, causal{}, softmax{}, seed++, "causal, dv 0");
                        compare<A, T>(n, m, d, 0, gaussian_distance{1.0}, dense{}, softmax{}, seed++, "gather, dv 0");
                    }
                }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(every_similarity_and_normalization, T, test::value_types) {
    const auto theta = test::random_tensor<double, 2>({4, 9}, 70), phi = test::random_tensor<double, 2>({4, 9}, 71);
    const auto w_f = test::random_tensor<double, 1>({8}, 72);
    test::for_each_arch([&](auto arch) {
        using A = decltype(arch);
        unsigned seed = 100;
        for (std::size_t n : {1, 6, 19}) {
            const std::size_t m = n + 3;
            const auto all = [&](const auto& s, const std::string& name) {
                compare<A, T>(n, m, 9, 5, s, dense{}, softmax{}, seed++, name + "/softmax");
                compare<A, T>(n, m, 9, 5, s, dense{}, sum{}, seed++, name + "/sum");
                compare<A, T>(n, m, 9, 5, s, causal{}, count{}, seed++, name + "/count");
                compare<A, T>(n, m, 9, 5, s, dense{}, none{}, seed++, name + "/none");
            };
            all(dot_product{}, "dot_product");
            all(scaled_dot_product{0.3}, "scaled_dot_product");
            all(gaussian{}, "gaussian");
            all(embedded_gaussian(theta, phi), "embedded_gaussian");
            all(embedded_dot_product(theta, phi), "embedded_dot_product");
            all(concatenation(theta, phi, w_f), "concatenation");
            all(squared_euclidean{}, "squared_euclidean");
            all(gaussian_distance{1.7}, "gaussian_distance");
            all(cosine{}, "cosine");
        }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(structured_neighborhoods, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        unsigned seed = 500;
        for (std::size_t h : {1, 3, 6})
            for (std::size_t w : {1, 4, 7}) {
                const std::size_t n = h * w;
                for (std::size_t kernel : {1, 3, 5, 9})
                    for (std::size_t dil : {1, 2})
                        for (bool c : {false, true}) {
                            compare<A, T>(n, n, 5, 3, scaled_dot_product{}, window2d{h, w, kernel, dil, c}, softmax{},
                                          seed++, "window2d");
                            compare<A, T>(n, n, 5, 3, gaussian_distance{1.0}, window1d{kernel / 2, dil, c}, sum{},
                                          seed++, "window1d");
                        }
                compare<A, T>(n, n, 4, 1, gaussian_distance{0.8}, grid_stencil{h, w, 4}, sum{}, seed++, "stencil4");
                compare<A, T>(n, n, 4, 2, gaussian_distance{0.8}, grid_stencil{h, w, 8}, sum{}, seed++, "stencil8");
                if (h % 3 == 0 && w % 1 == 0)
                    compare<A, T>(n, n, 6, 4, scaled_dot_product{}, patch_group{h, w, 3, 1}, softmax{}, seed++,
                                  "patch_group");
            }
        // A long band: more keys than one chunk of the gather kernel.
        compare<A, T>(700, 700, 8, 3, scaled_dot_product{}, window1d{300}, softmax{}, seed++, "long window1d");
        compare<A, T>(300, 600, 8, 3, scaled_dot_product{}, dense{}, softmax{}, seed++, "dense, m > chunk");
        const csr_graph g({0, 3, 3, 7, 8}, {0, 2, 3, 1, 2, 3, 5, 4});
        compare<A, T>(4, 6, 7, 3, scaled_dot_product{}, g, softmax{}, seed++, "csr_graph");
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(patch_group_through_the_tiled_kernel, T, test::value_types) {
    // A dot-product similarity over patch_group runs as dense over each group of pixels (the
    // pixels at one offset of every patch), gathered and scattered back: against the reference
    // on groups of 1, of fewer and of more than one 64-key tile (18 x 18 in 2 x 2 patches: 81),
    // with every normalization the tiled kernel serves, a projected similarity and the lse.
    const auto theta = test::random_tensor<double, 2>({4, 5}, 81), phi = test::random_tensor<double, 2>({4, 5}, 82);
    test::for_each_arch([&](auto arch) {
        using A = decltype(arch);
        unsigned seed = 900;
        for (const auto& [h, w, ph, pw] : {std::array<std::size_t, 4>{2, 3, 2, 3}, {4, 6, 2, 3}, {5, 7, 1, 7},
                                           {18, 18, 2, 2}, {16, 9, 2, 3}}) {
            const patch_group nb{h, w, ph, pw};
            const std::size_t n = h * w;
            compare<A, T>(n, n, 5, 3, scaled_dot_product{}, nb, softmax{}, seed++, "patch_group/softmax");
            compare<A, T>(n, n, 9, 4, gaussian{}, nb, sum{}, seed++, "patch_group/gaussian/sum");
            compare<A, T>(n, n, 7, 2, dot_product{}, nb, count{}, seed++, "patch_group/dot/count");
            compare<A, T>(n, n, 5, 6, embedded_gaussian(theta, phi), nb, softmax{}, seed++, "patch_group/embedded");
            {   // Each group's tiles on two threads: the same result, bit for bit.
                const auto q = test::random_tensor<T, 2>({n, 5}, seed), v = test::random_tensor<T, 2>({n, 2}, seed + 1);
                const auto sequential = weighted_aggregate<A>(q, q, v, scaled_dot_product{}, nb, softmax{});
                const auto threaded =
                    weighted_aggregate<A>(execution::parallel_policy{2}, q, q, v, scaled_dot_product{}, nb, softmax{});
                BOOST_TEST(threaded == sequential);
            }
            const auto q = test::random_tensor<T, 2>({n, 6}, seed), k = test::random_tensor<T, 2>({n, 6}, seed + 1);
            const auto v = test::random_tensor<T, 2>({n, 3}, seed + 2);
            const auto [y, lse] = weighted_aggregate_lse<A>(execution::seq, q, k, v, scaled_dot_product{}, nb, softmax{});
            test::check_close(y, reference::weighted_aggregate(q, k, v, scaled_dot_product{}, nb, softmax{}),
                              tolerance<T>(), tolerance<T>() * 10, "patch_group values with lse");
            // log sum_j exp(q_i.k_j / sqrt 6) over the pixels j at i's offset in every patch.
            xt::xtensor<double, 1> literal = xt::empty<double>({n});
            for (std::size_t i = 0; i < n; ++i) {
                double total = 0;
                for (std::size_t j = 0; j < n; ++j)
                    if ((i / w) % ph == (j / w) % ph && (i % w) % pw == (j % w) % pw) {
                        double dot = 0;
                        for (std::size_t c = 0; c < 6; ++c) dot += double(q(i, c)) * k(j, c);
                        total += std::exp(dot / std::sqrt(6.0));
                    }
                literal(i) = std::log(total);
            }
            test::check_close(lse, literal, tolerance<T>(), tolerance<T>() * 10, "patch_group lse");
        }
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nan_inputs_spread_as_in_the_reference, T, test::value_types) {
    // A NaN in a query, a key, a value or the scale makes NaN exactly the outputs it makes NaN
    // in the reference (the fast kernels once gave NaN logits zero weight, a plausible but
    // wrong result), except that a NaN value reaches more queries in the tiled kernel's partial
    // tiles (below); the others match the reference. n = 70 queries and m = 70 keys span
    // more than one 64 x 64 tile; an infinite query gives +-inf logits, NaN after the shift.
    test::for_each_arch([](auto arch) {
        using A = decltype(arch);
        const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
        const std::size_t n = 70, d = 9, dv = 3;
        const auto run = [&](const auto& s, const auto& nb, const auto& nm, const std::string& name) {
            const auto q = test::random_tensor<T, 2>({n, d}, 40), k = test::random_tensor<T, 2>({n, d}, 41);
            const auto v = test::random_tensor<T, 2>({n, dv}, 42);
            const auto check = [&](const auto& qq, const auto& kk, const auto& vv, const std::string& where,
                                   bool contaminates = false) {
                const auto y = weighted_aggregate<A>(qq, kk, vv, s, nb, nm);
                const auto r = reference::weighted_aggregate(qq, kk, vv, s, nb, nm);
                std::size_t nans = 0;
                for (std::size_t i = 0; i < n; ++i)
                    for (std::size_t c = 0; c < dv; ++c) {
                        const bool expected = std::isnan(r(i, c));
                        nans += expected;
                        // The tiled kernel multiplies a partial tile's masked weights, 0, by
                        // the values too: a NaN value also reaches the queries of its tile that
                        // do not see it (as in a masked matrix product).
                        const bool masked_nan = contaminates && std::isnan(y(i, c)) && i < 64;
                        BOOST_TEST((expected ? std::isnan(y(i, c))
                                             : masked_nan || std::abs(double(y(i, c)) - r(i, c)) <= tolerance<T>() * 10),
                                   name << ", " << where << ": (" << i << ", " << c << ") on " << A::name());
                    }
                BOOST_TEST(nans > 0, name << ", " << where << ": the reference has no NaN");
            };
            auto qn = q, qi = q;
            auto kn = k;
            auto vn = v;
            qn(5, 2) = nan, qi(66, 0) = inf, kn(67, 4) = nan, vn(3, 1) = nan;
            check(qn, k, v, "NaN query 5");
            check(q, kn, v, "NaN key 67");
            check(q, k, vn, "NaN value 3", name.ends_with("(tiled, masked)"));
            if (name.starts_with("attention")) check(qi, k, v, "infinite query 66");
        };
        run(scaled_dot_product{}, dense{}, softmax{}, "attention (tiled)");
        run(scaled_dot_product{}, window1d{4}, softmax{}, "attention over window1d (tiled, masked)");
        run(gaussian{}, dense{}, sum{}, "gaussian/sum (tiled)");
        run(gaussian_distance{1.5}, dense{}, softmax{}, "gaussian_distance/softmax (gather)");
        run(dot_product{}, causal{}, count{}, "dot/count (tiled, masked)");
        run(scaled_dot_product{}, causal{}, softmax{}, "causal attention (tiled, masked)");
        const auto q = test::random_tensor<T, 2>({n, d}, 43), k = test::random_tensor<T, 2>({n, d}, 44);
        const auto v = test::random_tensor<T, 2>({n, dv}, 45);
        const auto y = weighted_aggregate<A>(q, k, v, scaled_dot_product{double(nan)}, dense{}, softmax{});
        BOOST_TEST(std::all_of(y.begin(), y.end(), [](T x) { return std::isnan(x); }), "a NaN scale on " << A::name());
    });
}

BOOST_AUTO_TEST_CASE(batched_and_multi_head) {
    const auto q3 = test::random_tensor<float, 3>({3, 10, 8}, 1), k3 = test::random_tensor<float, 3>({3, 12, 8}, 2);
    const auto v3 = test::random_tensor<float, 3>({3, 12, 5}, 3);
    const auto y3 = weighted_aggregate(q3, k3, v3, scaled_dot_product{}, causal{}, softmax{});
    test::check_close(y3, reference::weighted_aggregate(q3, k3, v3, scaled_dot_product{}, causal{}, softmax{}), 2e-5,
                      2e-4);
    // Batch item 1 alone equals slice 1 of the batched result.
    const xt::xtensor<float, 2> q1 = xt::view(q3, 1), k1 = xt::view(k3, 1), v1 = xt::view(v3, 1);
    const xt::xtensor<float, 2> y1 = xt::view(y3, 1);
    BOOST_TEST(weighted_aggregate(q1, k1, v1, scaled_dot_product{}, causal{}, softmax{}) == y1);

    // Grouped-query attention: 6 query heads over 2 key/value heads.
    const auto q4 = test::random_tensor<float, 4>({2, 6, 9, 16}, 4), k4 = test::random_tensor<float, 4>({2, 2, 11, 16}, 5);
    const auto v4 = test::random_tensor<float, 4>({2, 2, 11, 7}, 6);
    const auto y4 = weighted_aggregate(q4, k4, v4, scaled_dot_product{}, dense{}, softmax{});
    BOOST_TEST(y4.shape() == (std::array<std::size_t, 4>{2, 6, 9, 7}));
    test::check_close(y4, reference::weighted_aggregate(q4, k4, v4, scaled_dot_product{}, dense{}, softmax{}), 2e-5,
                      2e-4);
    // Head 4 reads key/value head 4 / 3 = 1.
    const xt::xtensor<float, 2> qh = xt::view(q4, 1, 4), kh = xt::view(k4, 1, 1), vh = xt::view(v4, 1, 1);
    const xt::xtensor<float, 2> yh = xt::view(y4, 1, 4);
    BOOST_TEST(weighted_aggregate(qh, kh, vh, scaled_dot_product{}, dense{}, softmax{}) == yh);
    // Empty batch.
    const xt::xtensor<float, 3> none3 = xt::zeros<float>({0, 4, 8});
    BOOST_TEST(weighted_aggregate(none3, none3, none3, dot_product{}, dense{}, sum{}).size() == 0u);
}

BOOST_AUTO_TEST_CASE(per_head_position_bias) {
    const window2d win{4, 5, 3};
    const auto table = test::random_tensor<double, 3>({3, 5, 5}, 9);
    const with_position_bias s(scaled_dot_product{}, table, win);
    const auto q = test::random_tensor<float, 4>({2, 3, 20, 8}, 10), k = test::random_tensor<float, 4>({2, 3, 20, 8}, 11);
    const auto v = test::random_tensor<float, 4>({2, 3, 20, 4}, 12);
    const auto y = weighted_aggregate(q, k, v, s, win, softmax{});
    test::check_close(y, reference::weighted_aggregate(q, k, v, s, win, softmax{}), 2e-5, 2e-4);
    // Head 2 alone with table[2].
    const xt::xtensor<float, 2> q2 = xt::view(q, 1, 2), k2 = xt::view(k, 1, 2), v2 = xt::view(v, 1, 2);
    const xt::xtensor<float, 2> y2 = xt::view(y, 1, 2);
    test::check_close(weighted_aggregate(q2, k2, v2, s.for_head(2), win, softmax{}), y2, 1e-6, 1e-6);
}

BOOST_AUTO_TEST_CASE(views_and_adapted_pointers) {
    const auto big = test::random_tensor<float, 2>({20, 30}, 20);
    // Non-contiguous: every other row, a column window, and a transpose.
    const auto q = xt::view(big, xt::range(0, 20, 2), xt::range(3, 11));
    const auto k = xt::view(big, xt::range(1, 20, 3), xt::range(10, 18));
    const auto v = xt::transpose(xt::view(big, xt::range(0, 4), xt::range(0, 7)));
    const xt::xtensor<float, 2> qc = q, kc = k, vc = v;
    const auto expected = weighted_aggregate(qc, kc, vc, scaled_dot_product{}, dense{}, softmax{});
    BOOST_TEST(weighted_aggregate(q, k, v, scaled_dot_product{}, dense{}, softmax{}) == expected);
    // Raw pointers adapted without copies.
    std::vector<float> qbuf(qc.begin(), qc.end()), kbuf(kc.begin(), kc.end()), vbuf(vc.begin(), vc.end());
    const auto qa = xt::adapt(qbuf.data(), qbuf.size(), xt::no_ownership(), std::array<std::size_t, 2>{10, 8});
    const auto ka = xt::adapt(kbuf.data(), kbuf.size(), xt::no_ownership(), std::array<std::size_t, 2>{7, 8});
    const auto va = xt::adapt(vbuf.data(), vbuf.size(), xt::no_ownership(), std::array<std::size_t, 2>{7, 4});
    BOOST_TEST(weighted_aggregate(qa, ka, va, scaled_dot_product{}, dense{}, softmax{}) == expected);
    // Mixed value types compute in the common type.
    const xt::xtensor<double, 2> vd = vc;
    const auto mixed = weighted_aggregate(qc, kc, vd, scaled_dot_product{}, dense{}, softmax{});
    static_assert(std::is_same_v<decltype(mixed)::value_type, double>);
    test::check_close(mixed, expected, 1e-6, 1e-5);
}

BOOST_AUTO_TEST_CASE(into_given_output) {
    const auto q = test::random_tensor<float, 2>({6, 4}, 30), k = test::random_tensor<float, 2>({5, 4}, 31);
    const auto v = test::random_tensor<float, 2>({5, 3}, 32);
    xt::xtensor<float, 2> out = xt::empty<float>({6, 3});
    weighted_aggregate(q, k, v, scaled_dot_product{}, dense{}, softmax{}, out);
    BOOST_TEST(out == weighted_aggregate(q, k, v, scaled_dot_product{}, dense{}, softmax{}));
    xt::xtensor<float, 2> wrong = xt::empty<float>({6, 4});
    test::check_invalid([&] { weighted_aggregate(q, k, v, scaled_dot_product{}, dense{}, softmax{}, wrong); },
                        "out has shape [6, 4]", "result is [6, 3]");
}

BOOST_AUTO_TEST_CASE(shapes_that_do_not_fit) {
    const xt::xtensor<float, 2> q = xt::zeros<float>({4, 8}), k = xt::zeros<float>({5, 8}), v = xt::zeros<float>({5, 3});
    const xt::xtensor<float, 2> k7 = xt::zeros<float>({5, 7}), v6 = xt::zeros<float>({6, 3});
    const xt::xtensor<float, 2> q0 = xt::zeros<float>({4, 0}), k0 = xt::zeros<float>({5, 0});
    const auto run = [](const auto& a, const auto& b, const auto& c) {
        return [&] { weighted_aggregate(a, b, c, dot_product{}, dense{}, sum{}); };
    };
    test::check_invalid(run(q, k7, v), "same feature dimension", "q [4, 8]", "k [5, 7]", "v [5, 3]");
    test::check_invalid(run(q, k, v6), "same number of rows", "v [6, 3]");
    test::check_invalid(run(q0, k0, v), "feature dimension of q and k must be positive");
    const xt::xtensor<float, 3> a = xt::zeros<float>({2, 4, 8}), b = xt::zeros<float>({3, 5, 8}),
                                c = xt::zeros<float>({2, 5, 3});
    test::check_invalid(run(a, b, c), "same batch size", "k [3, 5, 8]");
    const xt::xtensor<float, 4> qh = xt::zeros<float>({1, 6, 4, 8}), kh = xt::zeros<float>({1, 4, 5, 8}),
                                vh = xt::zeros<float>({1, 4, 5, 3});
    test::check_invalid(run(qh, kh, vh), "heads of k and v must divide the heads of q", "q [1, 6, 4, 8]");
    test::check_invalid([&] { weighted_aggregate(q, q, q, dot_product{}, window2d{3, 3, 3}, sum{}); },
                        "window2d", "3 x 3 grid needs 9");
}

BOOST_AUTO_TEST_SUITE_END()
