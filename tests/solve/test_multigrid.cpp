// solve/coarsening/ and solve/multigrid.hpp: the grid transfers against their
// definitions (by hand, and as dense matrices: restriction is the transpose of
// interpolation, coarse systems are P^T A P), the V-cycle's symmetry, full
// multigrid, and hierarchies of thin grids.
#include <cmath>
#include <numeric>
#include <vector>

#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"
#include "support/systems.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_multigrid)

namespace {

/// A system on an H x W grid with the given stencil, random weights in [0.001, 1) and a
/// random data term on about a third of the pixels (none when `with_data` is false).
ar_system<> random_system(std::size_t H, std::size_t W, int connectivity, unsigned seed, bool with_data = true) {
    const auto dirs = grid_stencil{H, W, connectivity, 1}.forward_offsets();
    std::vector<buffer<double>> weights;
    const auto w = test::random_tensor<double, 2>({dirs.size(), H * W}, seed, 0.001, 1);
    for (std::size_t o = 0; o < dirs.size(); ++o) {
        buffer<double> row(H * W, 0.0);
        for (std::size_t r = 0; r < H; ++r)
            for (std::size_t c = 0; c < W; ++c) {
                const std::ptrdiff_t rr = std::ptrdiff_t(r) + dirs[o].dy, cc = std::ptrdiff_t(c) + dirs[o].dx;
                if (rr < std::ptrdiff_t(H) && cc >= 0 && cc < std::ptrdiff_t(W)) row[r * W + c] = w(o, r * W + c);
            }
        weights.push_back(std::move(row));
    }
    const auto u = test::random_tensor<double, 1>({H * W}, seed + 1, 0, 1);
    buffer<double> alpha(H * W, 0.0);
    for (std::size_t i = 0; i < H * W; ++i) alpha[i] = with_data && u[i] < 0.33 ? 0.5 * u[i] + 0.01 : 0.0;
    return ar_system<>(H, W, dirs, std::move(weights), std::move(alpha), buffer<double>(H * W, 0.0));
}

/// P (fine x coarse) of a transfer, from its prolongation of the unit vectors.
template <class Transfer>
std::vector<double> dense_interpolation(const Transfer& t) {
    const std::size_t n = t.height * t.width, m = t.coarse_height * t.coarse_width;
    std::vector<double> P(n * m), e(m, 0.0), col(n);
    for (std::size_t j = 0; j < m; ++j) {
        e[j] = 1;
        t.prolong(e.data(), col.data(), false);
        e[j] = 0;
        for (std::size_t i = 0; i < n; ++i) P[i * m + j] = col[i];
    }
    return P;
}

/// Checks restriction against P^T and the coarse system against P^T A P, densely.
template <class Transfer>
void check_transfer(const Transfer& t, const ar_system<>& A, const std::vector<double>& P) {
    const std::size_t n = A.size(), m = t.coarse_height * t.coarse_width;
    // Restriction is the transpose: rc = P^T r for a random r.
    const auto r = test::random_tensor<double, 1>({n}, unsigned(n + m), -1, 1);
    std::vector<double> rc(m);
    t.restrict_to(r.data(), rc.data());
    for (std::size_t j = 0; j < m; ++j) {
        double expected = 0;
        for (std::size_t i = 0; i < n; ++i) expected += P[i * m + j] * r[i];
        BOOST_TEST(std::abs(rc[j] - expected) <= 1e-12 * (1 + std::abs(expected)));
    }
    // Prolongation adds when asked to.
    const auto zc = test::random_tensor<double, 1>({m}, unsigned(n), -1, 1);
    std::vector<double> z(n, 2.0), fresh(n);
    t.prolong(zc.data(), z.data(), true);
    t.prolong(zc.data(), fresh.data(), false);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(std::abs(z[i] - 2.0 - fresh[i]) <= 1e-12);
    // The coarse system is P^T A P.
    const auto M = test::dense_matrix(A), C = test::dense_matrix(t.coarse);
    double largest = 0, worst = 0;
    for (double v : M) largest = std::max(largest, std::abs(v));
    for (std::size_t a = 0; a < m; ++a)
        for (std::size_t b = 0; b < m; ++b) {
            double expected = 0;
            for (std::size_t i = 0; i < n; ++i) {
                if (P[i * m + a] == 0) continue;
                double row = 0;
                for (std::size_t j = 0; j < n; ++j) row += M[i * n + j] * P[j * m + b];
                expected += P[i * m + a] * row;
            }
            largest = std::max(largest, std::abs(expected));
            worst = std::max(worst, std::abs(C[a * m + b] - expected));
        }
    BOOST_TEST(worst <= 1e-12 * largest, "largest difference from P^T A P " << worst << ", largest entry " << largest);
}

/// Sizes around the batch widths of the coarse rows (fine widths 2 x 4 .. 2 x 17 and odd ones),
/// single rows and columns, and a few squares.
const std::vector<std::pair<std::size_t, std::size_t>> sizes = {
    {1, 1}, {1, 2}, {1, 7}, {6, 1}, {2, 2}, {2, 3}, {3, 3}, {5, 9}, {4, 16}, {7, 17},
    {9, 32}, {8, 33}, {3, 34}, {11, 35}, {17, 12}, {20, 19}};

}  // namespace

BOOST_AUTO_TEST_CASE(interpolation_by_hand) {
    // Every weight 1 on a 3 x 3 grid of 8 neighbours, no data term: the coarse points are the
    // corners. (0, 1) has W, E, SW, S, SE: d = 5, collapsed along the row to 4, so 2 / 4 to each
    // side; (1, 0) the same along the column; the centre sees each corner through its own edge
    // (1) and its two edge neighbours (1 x 1/2 each): 2 of its diagonal 8. Bilinear interpolation.
    // Forward weights stored per pixel: east (0, 1) in columns 0-1, south-west (1, -1) in
    // columns 1-2 of rows 0-1, south in rows 0-1, south-east in columns 0-1 of rows 0-1.
    std::vector<buffer<double>> weights = {{1, 1, 0, 1, 1, 0, 1, 1, 0},
                                           {0, 1, 1, 0, 1, 1, 0, 0, 0},
                                           {1, 1, 1, 1, 1, 1, 0, 0, 0},
                                           {1, 1, 0, 1, 1, 0, 0, 0, 0}};
    const ar_system<> A(3, 3, grid_stencil{3, 3, 8, 1}.forward_offsets(), weights, buffer<double>(9, 0.0),
                        buffer<double>(9, 0.0));
    BOOST_TEST(A.diagonal()[4] == 8.0);
    BOOST_TEST(A.diagonal()[1] == 5.0);
    const detail::operator_dependent_interpolation<double> P(A);
    BOOST_TEST(P.coarse_height == 2u);
    BOOST_TEST(P.coarse_width == 2u);
    BOOST_TEST(P.weight(0, 1, 0, 0) == 0.5);
    BOOST_TEST(P.weight(0, 1, 0, 1) == 0.5);
    BOOST_TEST(P.weight(1, 0, 0, 0) == 0.5);
    BOOST_TEST(P.weight(1, 0, 1, 0) == 0.5);
    for (std::ptrdiff_t I : {0, 1})
        for (std::ptrdiff_t K : {0, 1}) BOOST_TEST(P.weight(1, 1, I, K) == 0.25);
    BOOST_TEST(P.weight(0, 0, 0, 0) == 1.0);
    BOOST_TEST(P.weight(0, 0, 0, 1) == 0.0);

    // Cut column 2 from columns 0-1 (every edge across weighs eps) and give (0, 1) a data term
    // of 0.5: its W and SW weigh 1 + 1, E and SE eps + eps, S 1, so d = 3.5 + 2 eps and the
    // collapsed d - S = 2.5 + 2 eps. It keeps 2 / (2.5 + 2 eps) of the left value and eps-sized
    // weight of the right one: interpolation follows the cut.
    const double eps = 1e-3;
    std::vector<buffer<double>> cut_weights = A.weights();
    cut_weights[0] = {1, eps, 0, 1, eps, 0, 1, eps, 0};
    cut_weights[1] = {0, 1, eps, 0, 1, eps, 0, 0, 0};
    cut_weights[3] = {1, eps, 0, 1, eps, 0, 0, 0, 0};
    buffer<double> alpha = A.alpha();
    alpha[1] = 0.5;
    const ar_system<> cut(A.height(), A.width(), A.offsets(), cut_weights, alpha, A.rhs());
    const detail::operator_dependent_interpolation<double> Q(cut);
    BOOST_TEST(std::abs(Q.weight(0, 1, 0, 0) - 2 / (2.5 + 2 * eps)) < 1e-15);
    BOOST_TEST(std::abs(Q.weight(0, 1, 0, 1) - 2 * eps / (2.5 + 2 * eps)) < 1e-15);
}

BOOST_AUTO_TEST_CASE(interpolation_reproduces_constants) {
    // Without a data term (a pure graph Laplacian) every pixel's weights sum to 1, so
    // constants interpolate exactly; with one they sum to less.
    for (auto [H, W] : sizes)
        for (int connectivity : {4, 8}) {
            BOOST_TEST_CONTEXT(H << " x " << W << ", connectivity " << connectivity) {
                const ar_system<> A = random_system(H, W, connectivity, unsigned(H * 31 + W), false);
                const detail::operator_dependent_interpolation<double> P(A);
                std::vector<double> ones(P.coarse_height * P.coarse_width, 1.0), z(A.size());
                P.prolong(ones.data(), z.data(), false);
                for (double v : z) BOOST_TEST(std::abs(v - 1) < 1e-12);
                const ar_system<> B = random_system(H, W, connectivity, unsigned(H * 31 + W), true);
                detail::operator_dependent_interpolation<double>(B).prolong(ones.data(), z.data(), false);
                for (double v : z) BOOST_TEST((v > 0 && v <= 1 + 1e-12));
            }
        }
}

BOOST_AUTO_TEST_CASE(operator_dependent_transfers_are_galerkin) {
    // On 4 and 8 neighbours and on a coarse level (whose weights may be negative): restriction
    // is P^T, prolongation matches P entry by entry (`weight`), and the coarse system is P^T A P.
    for (auto [H, W] : sizes)
        for (int connectivity : {4, 8}) {
            BOOST_TEST_CONTEXT(H << " x " << W << ", connectivity " << connectivity) {
                const ar_system<> A = random_system(H, W, connectivity, unsigned(H * 7 + W + connectivity));
                const detail::operator_dependent_interpolation<double> P(A);
                const auto dense_P = dense_interpolation(P);
                const std::size_t m = P.coarse_height * P.coarse_width;
                for (std::size_t i = 0; i < A.size(); ++i)
                    for (std::size_t j = 0; j < m; ++j)
                        BOOST_TEST(dense_P[i * m + j] == P.weight(std::ptrdiff_t(i / W), std::ptrdiff_t(i % W),
                                                                  std::ptrdiff_t(j / P.coarse_width),
                                                                  std::ptrdiff_t(j % P.coarse_width)));
                check_transfer(P, A, dense_P);
                if (P.coarse.size() > 1) {   // the next level, from a Galerkin product
                    const detail::operator_dependent_interpolation<double> Q(P.coarse);
                    check_transfer(Q, P.coarse, dense_interpolation(Q));
                }
            }
        }
}

BOOST_AUTO_TEST_CASE(aggregation_transfers_are_galerkin) {
    for (auto [H, W] : sizes)
        for (auto [connectivity, radius] : {std::pair<int, std::size_t>{8, 1}, {4, 2}, {8, 2}}) {
            BOOST_TEST_CONTEXT(H << " x " << W << ", connectivity " << connectivity << ", radius " << radius) {
                const auto guide = test::random_tensor<double, 3>({H, W, 3}, unsigned(H + 3 * W), 0, 60);
                xt::xtensor<double, 2> alpha = xt::zeros<double>({H, W});
                alpha(0, 0) = 0.5;
                const ar_system<> A(guide, grid_stencil{H, W, connectivity, radius}, laplacian_distance(20.0),
                                    xt::xtensor<double, 2>(xt::ones<double>({H, W})), alpha, 1e-3);
                const detail::aggregation<double> t(A, 1.0);
                check_transfer(t, A, dense_interpolation(t));
            }
        }
}

BOOST_AUTO_TEST_CASE(v_cycle_is_symmetric) {
    // <M r, s> = <r, M s>: the cycle can precondition conjugate gradients, for either
    // transfer, 1 to 4 sweeps on the finest level and 1 or 3 on the others, odd and even sizes.
    for (auto [H, W] : {std::pair<std::size_t, std::size_t>{37, 41}, {40, 33}})
        for (auto transfer : {coarsening::operator_dependent, coarsening::aggregation})
            for (std::size_t steps : {1, 2, 3, 4}) {
                const ar_system<> A = random_system(H, W, 8, unsigned(H + W));
                const multigrid M(A, {.smoothing_steps = steps, .coarse_smoothing_steps = steps % 2 ? 3u : 1u,
                                      .transfer = transfer});
                BOOST_TEST(M.levels() > 2u);
                const auto r = test::random_tensor<double, 1>({A.size()}, 3, -1, 1), s = test::random_tensor<double, 1>({A.size()}, 4, -1, 1);
                std::vector<double> Mr(A.size()), Ms(A.size());
                M(std::vector<double>(r.begin(), r.end()), Mr);
                M(std::vector<double>(s.begin(), s.end()), Ms);
                const double a = std::inner_product(Mr.begin(), Mr.end(), s.begin(), 0.0);
                const double b = std::inner_product(r.begin(), r.end(), Ms.begin(), 0.0);
                BOOST_TEST(std::abs(a - b) <= 1e-10 * std::abs(a), "transfer " << int(transfer) << ", " << steps << " sweeps");
            }
}

BOOST_AUTO_TEST_CASE(smoothing_diagonal_by_hand) {
    // s_i = (a_ii + sum_j |a_ij|) / 2: on one row of three with weights 2 and -1 and
    // diagonals 5, 4, 3: s = (5 + 2, 4 + 2 + 1, 3 + 1) / 2.
    const ar_system<> A = ar_system<>::from_operator(1, 3, {{0, 1}}, {buffer<double>{2, -1, 0}}, buffer<double>{5, 4, 3});
    BOOST_TEST(A.alpha() == (buffer<double>{3, 3, 4}));   // the diagonal less the weights
    const auto t = multigrid<>::inverse_smoothing_diagonal(A);
    BOOST_TEST(t == (buffer<double>{2 / 7.0, 2 / 7.0, 2 / 4.0}));
}

BOOST_AUTO_TEST_CASE(full_multigrid_approximates_and_converges) {
    // One V-cycle per level leaves a small error for the cost of about one and a half cycles;
    // full_multigrid then iterates to the tolerance; both transfers, and full_cycles = 2.
    const std::size_t H = 63, W = 70;
    const ar_system<> A = random_system(H, W, 8, 11);
    const auto b = test::random_tensor<double, 1>({A.size()}, 12, 0, 1);
    const std::vector<double> rhs(b.begin(), b.end());
    std::vector<double> exact(A.size(), 0.0);
    pcg(A, rhs, exact, multigrid(A), {1e-13, 1000});
    for (auto transfer : {coarsening::operator_dependent, coarsening::aggregation})
        for (std::size_t cycles : {1, 2}) {
            BOOST_TEST_CONTEXT("transfer " << int(transfer) << ", full cycles " << cycles) {
                const multigrid M(A, {.transfer = transfer, .full_cycles = cycles});
                std::vector<double> x(A.size(), 123.0);   // ignored
                M.full(rhs, x);
                double error = 0, size = 0;
                for (std::size_t i = 0; i < x.size(); ++i) error += (x[i] - exact[i]) * (x[i] - exact[i]), size += exact[i] * exact[i];
                BOOST_TEST(std::sqrt(error / size) < 0.2);
                std::vector<double> y(A.size(), 0.0);
                const auto report = full_multigrid(A, rhs, y, M, {1e-10, 200});
                BOOST_TEST(report.converged);
                BOOST_TEST(report.method == "full multigrid + pcg");
                BOOST_TEST(report.iterations >= 1u);
                for (std::size_t i = 0; i < y.size(); ++i) BOOST_TEST(std::abs(y[i] - exact[i]) <= 1e-7 * (1 + std::abs(exact[i])));
            }
        }
    // With no iteration left after the full cycle, the report says whether it reached the tolerance.
    const multigrid M(A);
    std::vector<double> x(A.size());
    const auto once = full_multigrid(A, rhs, x, M, {1e-12, 1});
    BOOST_TEST(once.iterations == 1u);
    BOOST_TEST(!once.converged);
    BOOST_TEST(once.relative_residual > 1e-12);
    test::check_invalid([&] { multigrid(A, {.full_cycles = 0}); }, "multigrid", "multigrid_options::full_cycles must be at least 1, got 0");
    std::vector<double> short_x(5);
    test::check_invalid([&] { M.full(rhs, short_x); }, "multigrid::full", "x has 5 entries");
    test::check_invalid([&] { full_multigrid(A, rhs, short_x, M); }, "full_multigrid", "x has 5 entries");
}

BOOST_AUTO_TEST_CASE(coarser_levels_smooth_with_their_own_sweeps) {
    // 1, 3 or 5 sweeps on the levels below the finest, for either transfer: the cycle still
    // preconditions CG to the solution (the reference: CG to 1e-13 with the default hierarchy).
    const ar_system<> A = random_system(63, 70, 8, 13);
    const auto b = test::random_tensor<double, 1>({A.size()}, 14, 0, 1);
    const std::vector<double> rhs(b.begin(), b.end());
    std::vector<double> exact(A.size(), 0.0);
    BOOST_TEST(pcg(A, rhs, exact, multigrid(A), {1e-13, 1000}).converged);
    for (auto transfer : {coarsening::operator_dependent, coarsening::aggregation})
        for (std::size_t steps : {1, 3, 5}) {
            BOOST_TEST_CONTEXT("transfer " << int(transfer) << ", " << steps << " coarse sweeps") {
                const multigrid M(A, {.coarse_smoothing_steps = steps, .transfer = transfer});
                BOOST_TEST(M.levels() > 2u);
                std::vector<double> x(A.size(), 0.0);
                BOOST_TEST(pcg(A, rhs, x, M, {1e-10, 200}).converged);
                for (std::size_t i = 0; i < x.size(); ++i) BOOST_TEST(std::abs(x[i] - exact[i]) <= 1e-7 * (1 + std::abs(exact[i])));
            }
        }
}

BOOST_AUTO_TEST_CASE(thin_grids_coarsen_along_their_length) {
    // One row or one column halves along its length until 256 pixels at most: 1000 -> 500 -> 250.
    for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1000}, {1000, 1}})
        for (auto transfer : {coarsening::operator_dependent, coarsening::aggregation}) {
            BOOST_TEST_CONTEXT(H << " x " << W << ", transfer " << int(transfer)) {
                const ar_system<> A = random_system(H, W, 8, 5);
                const multigrid M(A, {.transfer = transfer});
                BOOST_TEST(M.levels() == 3u);
                BOOST_TEST(M.level(2).size() == 250u);
                const auto b = test::random_tensor<double, 1>({A.size()}, 6, 0, 1);
                std::vector<double> x(A.size(), 0.0);
                const auto report = pcg(A, std::vector<double>(b.begin(), b.end()), x, M, {1e-10, 200});
                BOOST_TEST(report.converged, "relative residual " << report.relative_residual);
            }
        }
}

BOOST_AUTO_TEST_CASE(operator_dependent_multigrid_in_float) {
    // The vectorised set-up in float agrees with double, and solves to float precision.
    const auto guide = test::random_tensor<double, 3>({45, 67, 3}, 21, 0, 255);
    xt::xtensor<double, 2> alpha = xt::where(test::random_tensor<double, 2>({45, 67}, 22, 0, 1) < 0.1, 0.01, 0.0);
    alpha(3, 3) = 0.01;
    const auto xhat = test::random_tensor<double, 2>({45, 67}, 23, 10, 90);
    const ar_system<> A(guide, grid_stencil{45, 67, 8}, laplacian_distance(3.0), xhat, alpha, 1e-3);
    const ar_system<float> F(guide, grid_stencil{45, 67, 8}, laplacian_distance(3.0), xhat, alpha, 1e-3);
    const detail::operator_dependent_interpolation<double> P(A);
    const detail::operator_dependent_interpolation<float> Q(F);
    for (std::ptrdiff_t r = 0; r < 45; ++r)   // every weight of every pixel towards the coarse points around it
        for (std::ptrdiff_t c = 0; c < 67; ++c)
            for (std::ptrdiff_t I = r / 2; I <= (r + 1) / 2; ++I)
                for (std::ptrdiff_t K = c / 2; K <= (c + 1) / 2; ++K)
                    BOOST_TEST(std::abs(P.weight(r, c, I, K) - Q.weight(r, c, I, K)) < 1e-5);
    std::vector<double> x(A.size(), 0.0);
    std::vector<float> y(A.size(), 0.f);
    BOOST_TEST(full_multigrid(A, A.rhs(), x, multigrid(A), {1e-10, 300}).converged);
    BOOST_TEST(full_multigrid(F, F.rhs(), y, multigrid(F), {1e-5, 300}).converged);
    for (std::size_t i = 0; i < x.size(); ++i) BOOST_TEST(std::abs(y[i] - x[i]) <= 1e-3 * std::abs(x[i]) + 1e-3);
}

BOOST_AUTO_TEST_SUITE_END()
