// kernel/stencil.hpp and similarity/edge_weights.hpp: weighted_aggregate over a grid_stencil
// with precomputed edge weights against the double-precision reference (4 and 8 neighbours,
// wider windows, 1 x N and N x 1 grids, single pixels, several value channels, sum,
// sum_with_data and none, float and double, every architecture); a Jacobi sweep of the AR
// system equal to the aggregate bit for bit; a case by hand; the data term over batches and
// read in place; errors.
#include <nonlocal/nonlocal.hpp>

#include <string>
#include <vector>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_stencil)

namespace {

/// Random edge weights in [0, 1) for the forward directions of `stencil`, 0 where a
/// neighbour is outside the grid (as the planes must be).
template <class T>
xt::xtensor<T, 3> random_planes(const grid_stencil& stencil, unsigned seed) {
    const auto offsets = stencil.forward_offsets();
    auto planes = test::random_tensor<T, 3>({offsets.size(), stencil.height, stencil.width}, seed, 0, 1);
    for (std::size_t d = 0; d < offsets.size(); ++d)
        for (std::size_t r = 0; r < stencil.height; ++r)
            for (std::size_t c = 0; c < stencil.width; ++c) {
                const auto rr = std::ptrdiff_t(r) + offsets[d].dy, cc = std::ptrdiff_t(c) + offsets[d].dx;
                if (rr < 0 || cc < 0 || rr >= std::ptrdiff_t(stencil.height) || cc >= std::ptrdiff_t(stencil.width))
                    planes(d, r, c) = T(0);
            }
    return planes;
}

template <class T>
constexpr double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-12;

using float_and_double = boost::mpl::list<float, double>;

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(against_the_reference, T, float_and_double) {
    const std::vector<std::array<std::size_t, 2>> grids = {{1, 1}, {1, 19}, {19, 1}, {2, 2}, {5, 7}, {17, 16}, {33, 9}};
    test::for_each_arch([&](auto arch) {
        using A = decltype(arch);
        unsigned seed = 1;
        for (const auto& [h, w] : grids)
            for (int connectivity : {4, 8})
                for (std::size_t radius : {1, 2, 4}) {
                    const grid_stencil stencil{h, w, connectivity, radius};
                    const auto planes = random_planes<T>(stencil, seed++);
                    const edge_weights<T> s(stencil, planes);
                    const std::size_t n = h * w;
                    for (std::size_t dv : {1, 3}) {
                        const auto v = test::random_tensor<T, 2>({n, dv}, seed++, 0, 100);
                        const auto alpha = test::random_tensor<T, 1>({n}, seed++, 0, 2);
                        const auto target = test::random_tensor<T, 2>({n, dv}, seed++, 0, 100);
                        const sum_with_data data(alpha, target);
                        const std::string what = std::string(A::name()) + " " + std::to_string(h) + " x " +
                                                 std::to_string(w) + " connectivity " + std::to_string(connectivity) +
                                                 " radius " + std::to_string(radius) + " dv " + std::to_string(dv);
                        test::check_close(weighted_aggregate<A>(v, v, v, s, stencil, data),
                                          reference::weighted_aggregate(v, v, v, s, stencil, data), tolerance<T> * 100,
                                          tolerance<T>, what + " sum_with_data");
                        test::check_close(weighted_aggregate<A>(v, v, v, s, stencil, sum{}),
                                          reference::weighted_aggregate(v, v, v, s, stencil, sum{}), tolerance<T> * 100,
                                          tolerance<T>, what + " sum");
                        test::check_close(weighted_aggregate<A>(v, v, v, s, stencil, none{}),
                                          reference::weighted_aggregate(v, v, v, s, stencil, none{}),
                                          tolerance<T> * 1000, tolerance<T>, what + " none");
                    }
                }
    });
}

BOOST_AUTO_TEST_CASE(distances_with_their_weights_computed_once) {
    // A distance over the stencil with q = k: its weights computed once, then the stencil
    // kernel; against the reference, which evaluates every pair (and shifts by the row maximum).
    test::for_each_arch([&](auto arch) {
        using A = decltype(arch);
        unsigned seed = 300;
        for (const auto& [h, w] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 17}, {17, 1}, {9, 13}, {30, 41}})
            for (int connectivity : {4, 8})
                for (std::size_t radius : {1, 3}) {
                    const grid_stencil stencil{h, w, connectivity, radius};
                    const std::size_t n = h * w;
                    const auto g = test::random_tensor<float, 2>({n, 3}, seed++, 0, 3);
                    const auto v = test::random_tensor<float, 2>({n, 2}, seed++, 0, 100);
                    const auto alpha = test::random_tensor<float, 1>({n}, seed++, 0, 1);
                    const auto target = test::random_tensor<float, 2>({n, 2}, seed++, 0, 100);
                    const std::string what = std::string(A::name()) + " " + std::to_string(h) + " x " + std::to_string(w) +
                                             " connectivity " + std::to_string(connectivity) + " radius " +
                                             std::to_string(radius);
                    test::check_close(weighted_aggregate<A>(g, g, v, gaussian_distance{1.0}, stencil, sum_with_data(alpha, target)),
                                      reference::weighted_aggregate(g, g, v, gaussian_distance{1.0}, stencil,
                                                                    sum_with_data(alpha, target)),
                                      1e-3, 1e-5, what + " gaussian_distance, sum_with_data");
                    test::check_close(weighted_aggregate<A>(g, g, v, laplacian_distance{0.7}, stencil, sum{}),
                                      reference::weighted_aggregate(g, g, v, laplacian_distance{0.7}, stencil, sum{}), 1e-3,
                                      1e-5, what + " laplacian_distance, sum");
                }
    });
}

BOOST_AUTO_TEST_CASE(pixels_whose_weights_all_underflow) {
    // Pixel (4, 5) is 100 away from every neighbour: exp(-100^2 / 1) underflows for each of its
    // edges, but the reference's shift by the row maximum still gives it a weighted mean of
    // them (and its neighbours lose only one edge each). Without a data term and with one.
    const grid_stencil stencil{9, 11, 8, 1};
    auto g = test::random_tensor<float, 2>({99, 1}, 1, 0, 1);
    g(4 * 11 + 5, 0) = 100.f;
    const auto v = test::random_tensor<float, 2>({99, 1}, 2, 0, 100);
    const auto y = weighted_aggregate(g, g, v, gaussian_distance{1.0}, stencil, sum{});
    test::check_close(y, reference::weighted_aggregate(g, g, v, gaussian_distance{1.0}, stencil, sum{}), 1e-3, 1e-5);
    BOOST_TEST(y(4 * 11 + 5, 0) > 0.f);
    const xt::xtensor<float, 1> alpha = xt::zeros<float>({99});
    const auto target = test::random_tensor<float, 2>({99, 1}, 3, 0, 100);
    test::check_close(weighted_aggregate(g, g, v, gaussian_distance{1.0}, stencil, sum_with_data(alpha, target)),
                      reference::weighted_aggregate(g, g, v, gaussian_distance{1.0}, stencil, sum_with_data(alpha, target)),
                      1e-3, 1e-5);
}

BOOST_AUTO_TEST_CASE(by_hand) {
    // 1 x 3 grid, 4 neighbours: edges {0, 1} of weight 2 and {1, 2} of weight 3; values 10, 20, 40.
    // Pixel 1 is observed: alpha 1, target 7.
    const grid_stencil stencil{1, 3, 4, 1};
    const xt::xtensor<double, 3> planes = {{{2.0, 3.0, 0.0}}};
    const edge_weights<double> s(stencil, planes);
    const xt::xtensor<double, 2> v = {{10.0}, {20.0}, {40.0}};
    const xt::xtensor<double, 1> alpha = {0.0, 1.0, 0.0};
    const xt::xtensor<double, 2> target = {{0.0}, {7.0}, {0.0}};
    const auto y = weighted_aggregate(v, v, v, s, stencil, sum_with_data(alpha, target));
    BOOST_TEST(y(0, 0) == 20.0);                                        // (2 * 20) / 2
    BOOST_TEST(std::abs(y(1, 0) - (2 * 10 + 3 * 40 + 7) / 6.0) < 1e-15);   // (20 + 120 + 7) / (5 + 1)
    BOOST_TEST(y(2, 0) == 20.0);                                        // (3 * 20) / 3
    const auto unnormalized = weighted_aggregate(v, v, v, s, stencil, none{});
    BOOST_TEST(unnormalized(1, 0) == 140.0);
    // An isolated pixel (every edge weight 0, no data) gives 0, as every normalization does.
    const xt::xtensor<double, 3> none_planes = xt::zeros<double>({1, 1, 3});
    const auto isolated = weighted_aggregate(v, v, v, edge_weights<double>(stencil, none_planes), stencil, sum{});
    BOOST_TEST(isolated(1, 0) == 0.0);
}

BOOST_AUTO_TEST_CASE(a_jacobi_sweep_is_the_aggregate_bit_for_bit) {
    // The AR system's sweep and weighted_aggregate over its edges() with sum_with_data(alpha,
    // xhat) run the same kernel: equal to the last bit, for 4 and 8 neighbours and wider windows.
    for (auto [connectivity, radius] : {std::pair{4, 1}, {8, 1}, {8, 2}, {4, 3}}) {
        const std::size_t H = 23, W = 31, n = H * W;
        const auto guide = test::random_tensor<double, 3>({H, W, 3}, 1, 0, 255);
        const auto xhat = test::random_tensor<double, 2>({H, W}, 2, 0, 100);
        const xt::xtensor<double, 2> confidence = xt::cast<double>(test::random_tensor<double, 2>({H, W}, 3, 0, 1) > 0.7);
        const grid_stencil stencil{H, W, connectivity, std::size_t(radius)};
        const ar_system<double> A(guide, stencil, color_weights(H, W, 3, 40.0), xhat, confidence, 1e-3);
        const auto x = test::random_tensor<double, 2>({n, 1}, 4, 0, 100);
        const buffer<double> step = A.jacobi_step(std::span<const double>(x.data(), n));
        const xt::xtensor<double, 1> alpha = xt::flatten(confidence);
        const xt::xtensor<double, 2> target = xt::reshape_view(xhat, {n, std::size_t(1)});
        const auto aggregate = weighted_aggregate(x, x, x, A.edges(), stencil, sum_with_data(alpha, target));
        std::size_t differ = 0;
        for (std::size_t i = 0; i < n; ++i) differ += step[i] != aggregate(i, 0);
        BOOST_TEST(differ == 0u, "connectivity " << connectivity << " radius " << radius);
        // And both are the literal sweep.
        test::check_close(aggregate, reference::weighted_aggregate(x, x, x, A.edges(), stencil, sum_with_data(alpha, target)),
                          1e-12, 1e-12);
    }
}

BOOST_AUTO_TEST_CASE(a_data_term_per_batch_item) {
    // [B, n, 1] values with alpha [B, n] and target [B, n, 1]: item b uses alpha[b], target[b];
    // alpha [n] and target [n, 1] serve every item.
    const grid_stencil stencil{6, 5, 8, 1};
    const auto planes = random_planes<float>(stencil, 9);
    const edge_weights<float> s(stencil, planes);
    const auto v = test::random_tensor<float, 3>({3, 30, 1}, 1, 0, 10);
    const auto alpha = test::random_tensor<float, 2>({3, 30}, 2, 0, 1);
    const auto target = test::random_tensor<float, 3>({3, 30, 1}, 3, 0, 10);
    test::check_close(weighted_aggregate(v, v, v, s, stencil, sum_with_data(alpha, target)),
                      reference::weighted_aggregate(v, v, v, s, stencil, sum_with_data(alpha, target)), 1e-4, 1e-5,
                      "per item");
    const xt::xtensor<float, 1> shared_alpha = xt::view(alpha, 1);
    const xt::xtensor<float, 2> shared_target = xt::view(target, 1);
    const auto y = weighted_aggregate(v, v, v, s, stencil, sum_with_data(shared_alpha, shared_target));
    const xt::xtensor<float, 2> v0 = xt::view(v, 0);
    const xt::xtensor<float, 2> y0 = xt::view(y, 0);
    BOOST_TEST(weighted_aggregate(v0, v0, v0, s, stencil, sum_with_data(shared_alpha, shared_target)) == y0);
    // The same batch through the gather kernel (a distance over the stencil) takes the data term per item too.
    test::check_close(weighted_aggregate(v, v, v, gaussian_distance{3.0}, stencil, sum_with_data(alpha, target)),
                      reference::weighted_aggregate(v, v, v, gaussian_distance{3.0}, stencil, sum_with_data(alpha, target)),
                      1e-4, 1e-5, "gather kernel");
}

BOOST_AUTO_TEST_CASE(the_data_term_reads_the_callers_arrays) {
    const xt::xtensor<float, 1> alpha = {1.f, 2.f};
    const xt::xtensor<double, 2> target = {{3.0}, {4.0}};
    const sum_with_data borrowed(alpha, target);
    static_assert(std::is_same_v<decltype(borrowed), const sum_with_data<float, double>>);
    BOOST_TEST(borrowed.for_item(0).alpha == alpha.data());
    BOOST_TEST(borrowed.for_item(0).target == target.data());
    // Expressions and temporaries are evaluated into the policy's own storage.
    const sum_with_data evaluated(alpha * 2.f, xt::xtensor<double, 2>{{3.0}, {4.0}});
    BOOST_TEST(evaluated.for_item(0).alpha != alpha.data());
    BOOST_TEST(evaluated.data_weight(1) == 4.0);
    BOOST_TEST(evaluated.data_value(1, 0) == 4.0);
    const sum_with_data copy = evaluated;   // a copy owns its own evaluated arrays
    BOOST_TEST(copy.for_item(0).alpha != evaluated.for_item(0).alpha);
    BOOST_TEST(copy.data_weight(1) == 4.0);
}

BOOST_AUTO_TEST_CASE(errors) {
    const grid_stencil stencil{4, 5, 8, 1};
    test::check_invalid([&] { edge_weights<float>(stencil, xt::xtensor<float, 3>(xt::zeros<float>({3, 4, 5}))); },
                        "edge_weights", "planes [3, 4, 5]", "4 forward directions", "4 x 5");
    const auto planes = random_planes<float>(stencil, 1);
    const edge_weights<float> s(stencil, planes);
    const auto v = test::random_tensor<float, 2>({20, 1}, 2);
    test::check_invalid([&] { weighted_aggregate(v, v, v, s, grid_stencil{4, 5, 4, 1}, sum{}); }, "edge_weights",
                        "4 directions on 4 x 5", "has 2 on 4 x 5");
    test::check_invalid([] { sum_with_data(xt::xtensor<double, 2>{{1.0}}, xt::xtensor<double, 2>{{1.0}}); },
                        "sum_with_data", "alpha [1, 1] and target [1, 1]", "[B, n] and [B, n, dv]");
    const sum_with_data two_items(xt::xtensor<double, 2>(xt::ones<double>({2, 20})), xt::xtensor<double, 3>(xt::ones<double>({2, 20, 1})));
    const auto v3 = test::random_tensor<float, 3>({3, 20, 1}, 3);
    test::check_invalid([&] { weighted_aggregate(v3, v3, v3, s, stencil, two_items); }, "do not fit 3 batch item(s)");
}

BOOST_AUTO_TEST_SUITE_END()
