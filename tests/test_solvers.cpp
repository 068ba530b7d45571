// solve/ar_system.hpp, solve/solvers.hpp and filter/depth.hpp: the AR system
// matrix-free and assembled, its Jacobi step as a weighted aggregate, every
// solver against a dense solve in double, and the depth tasks' behaviour.
#include <cstdint>
#include <numbers>
#include <span>

#include <nonlocal/nonlocal.hpp>

#include "support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_solvers)

namespace {
/// A random guide, observations on about a third of the pixels.
struct problem {
    std::size_t H, W;
    xt::xtensor<double, 3> guide;
    xt::xtensor<double, 2> xhat, alpha;
    problem(std::size_t h, std::size_t w, unsigned seed) : H(h), W(w) {
        // Colours within 60 of each other keep every weight above exp(-3 * 60^2 / (2 * 40^2)):
        // a well-posed problem, on which even the stationary methods converge in the budget.
        guide = test::random_tensor<double, 3>({h, w, 3}, seed, 0, 60);
        xhat = test::random_tensor<double, 2>({h, w}, seed + 1, 100, 200);
        const auto u = test::random_tensor<double, 2>({h, w}, seed + 2, 0, 1);
        alpha = xt::where(u < 0.33, 0.5, 0.0);
        alpha(0, 0) = 0.5;
    }
    ar_system<> system(int connectivity, std::size_t radius = 1) const {
        return ar_system(guide, grid_stencil{H, W, connectivity, radius}, colour_weights(H, W, 3, 40.0), xhat, alpha);
    }
};

/// The stencils every test runs on: 4 and 8 neighbours, a diamond and squares wider than one pixel.
const std::vector<std::pair<int, std::size_t>> stencils = {{4, 1}, {8, 1}, {4, 2}, {8, 2}, {8, 3}};

/// x = A^-1 b by Gaussian elimination with partial pivoting, in double.
std::vector<double> dense_solve(const ar_system<>& A) {
    const std::size_t n = A.size();
    std::vector<double> M(n * n), e(n, 0.0), col(n), b(A.rhs.begin(), A.rhs.end());
    for (std::size_t j = 0; j < n; ++j) {
        e[j] = 1;
        A.apply(e.data(), col.data());
        e[j] = 0;
        for (std::size_t i = 0; i < n; ++i) M[i * n + j] = col[i];
    }
    for (std::size_t k = 0; k < n; ++k) {
        std::size_t p = k;
        for (std::size_t i = k + 1; i < n; ++i)
            if (std::abs(M[i * n + k]) > std::abs(M[p * n + k])) p = i;
        for (std::size_t j = 0; j < n; ++j) std::swap(M[k * n + j], M[p * n + j]);
        std::swap(b[k], b[p]);
        for (std::size_t i = k + 1; i < n; ++i) {
            const double f = M[i * n + k] / M[k * n + k];
            for (std::size_t j = k; j < n; ++j) M[i * n + j] -= f * M[k * n + j];
            b[i] -= f * b[k];
        }
    }
    std::vector<double> x(n);
    for (std::size_t i = n; i-- > 0;) {
        double s = b[i];
        for (std::size_t j = i + 1; j < n; ++j) s -= M[i * n + j] * x[j];
        x[i] = s / M[i * n + i];
    }
    return x;
}

/// Every solver on A from x = 150 everywhere; `check(report, x)` after each.
template <class T, class Check>
void run_every_solver(const ar_system<T>& A, const solve_options& options, Check&& check) {
    std::vector<T> x(A.size(), T(150));
    check(pcg(A, x, multigrid(A), options), x);
    x.assign(A.size(), T(150));
    check(pcg(A, x, jacobi_preconditioner(A), options), x);
    x.assign(A.size(), T(150));
    check(multigrid_solve(A, x, options), x);
    x.assign(A.size(), T(150));
    check(sor(A, x, 1.5, options), x);
    x.assign(A.size(), T(150));
    check(jacobi(A, x, options), x);
}
}  // namespace

BOOST_AUTO_TEST_CASE(assembled_equals_matrix_free) {
    for (auto [connectivity, radius] : stencils)
        for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 7}, {6, 1}, {2, 3}, {5, 9}, {17, 12}}) {
            const problem p(H, W, unsigned(H * W + connectivity + radius));
            const ar_system A = p.system(connectivity, radius);
            const csr_matrix m = A.assemble();
            const auto x = test::random_tensor<double, 1>({H * W}, 9);
            const std::vector<double> xv(x.begin(), x.end());
            const auto y = A.apply(xv);
            for (std::size_t i = 0; i < H * W; ++i) {
                double s = 0, row_sum = 0;
                for (std::size_t t = m.row_offsets[i]; t < m.row_offsets[i + 1]; ++t)
                    s += m.values[t] * xv[m.columns[t]], row_sum += m.values[t];
                BOOST_TEST(std::abs(s - y[i]) < 1e-9);
                BOOST_TEST(std::abs(row_sum - A.alpha[i]) < 1e-9);   // a Laplacian plus diag(alpha)
                for (std::size_t t = m.row_offsets[i] + 1; t < m.row_offsets[i + 1]; ++t)
                    BOOST_TEST(m.columns[t - 1] < m.columns[t]);
            }
        }
}

namespace {
/// An asymmetric similarity: logit(q_i, k_j) = -(q_i[0] + 2 k_j[1]) / 50 - j / 100.
struct lopsided {
    using kernel = exp_kernel;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k, std::size_t, std::size_t j) const {
        return -(q[0] + 2 * k[1]) / T(50) - T(j) / T(100);
    }
};

/// W_ij = max(kappa(logit(g_i, g_j)) + kappa(logit(g_j, g_i)), floor) for every stored edge, 0 off the grid.
template <class S>
void check_edge_weights(const problem& p, int connectivity, std::size_t radius, const S& sim, double floor) {
    const ar_system A(p.guide, grid_stencil{p.H, p.W, connectivity, radius}, sim, p.xhat, p.alpha, floor);
    const auto pixel = [&](std::size_t i) {
        return std::vector<double>{p.guide.data()[3 * i], p.guide.data()[3 * i + 1], p.guide.data()[3 * i + 2]};
    };
    for (std::size_t o = 0; o < A.offsets.size(); ++o)
        for (std::size_t r = 0; r < p.H; ++r)
            for (std::size_t c = 0; c < p.W; ++c) {
                const std::ptrdiff_t rr = std::ptrdiff_t(r) + A.offsets[o].dy, cc = std::ptrdiff_t(c) + A.offsets[o].dx;
                const std::size_t i = r * p.W + c;
                if (rr < 0 || cc < 0 || rr >= std::ptrdiff_t(p.H) || cc >= std::ptrdiff_t(p.W)) {
                    BOOST_TEST(A.weights[o][i] == 0.0);
                    continue;
                }
                const std::size_t j = std::size_t(rr) * p.W + std::size_t(cc);
                const auto gi = pixel(i), gj = pixel(j);
                const double both = S::kernel::apply(sim.logit(std::span<const double>(gi), std::span<const double>(gj), i, j)) +
                                    S::kernel::apply(sim.logit(std::span<const double>(gj), std::span<const double>(gi), j, i));
                BOOST_TEST(std::abs(A.weights[o][i] - std::max(both, floor)) <= 1e-12 * std::max(both, floor));
            }
}

/// The same for similarities without positions.
template <class S>
struct positionless {
    using kernel = typename S::kernel;
    static constexpr bool is_symmetric = nonlocal::detail::symmetric_similarity<S>;
    S sim;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k, std::size_t, std::size_t) const { return sim.logit(q, k); }
};
}  // namespace

BOOST_AUTO_TEST_CASE(edge_weights_follow_their_definition) {
    // A symmetric similarity is evaluated once per edge, an asymmetric one both ways; both
    // must give kappa(logit(g_i, g_j)) + kappa(logit(g_j, g_i)), floored.
    static_assert(nonlocal::detail::symmetric_similarity<laplacian_distance>);
    static_assert(!nonlocal::detail::symmetric_similarity<lopsided>);
    for (auto [connectivity, radius] : stencils)
        for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 7}, {6, 1}, {5, 9}, {17, 20}}) {
            const problem p(H, W, unsigned(7 * H + W));
            check_edge_weights(p, connectivity, radius, lopsided{}, 1e-3);
            check_edge_weights(p, connectivity, radius, positionless<laplacian_distance>{laplacian_distance(20.0)}, 1e-3);
            check_edge_weights(p, connectivity, radius, positionless<squared_euclidean>{}, 0.0);
            check_edge_weights(p, connectivity, radius, colour_weights(H, W, 3, 40.0), 0.0);
        }
}

BOOST_AUTO_TEST_CASE(jacobi_step_is_the_aggregate) {
    // W_ij = w_ij + w_ji = 2 w_ij for the symmetric colour weight, so the sweep is the
    // aggregate with s = w and a data term alpha / 2 (the same ratio).
    const problem p(7, 8, 3);
    for (auto [connectivity, radius] : stencils) {
        const ar_system A = p.system(connectivity, radius);
        const auto x0 = test::random_tensor<double, 2>({56, 1}, 4, 100, 200);
        const auto step = A.jacobi_step(std::vector<double>(x0.begin(), x0.end()));
        xt::xtensor<double, 2> pixels = xt::empty<double>({std::size_t(56), std::size_t(3)});
        std::copy(p.guide.begin(), p.guide.end(), pixels.begin());
        const xt::xtensor<double, 2> xhat = xt::reshape_view(p.xhat, {56, 1});
        const xt::xtensor<double, 1> half_alpha = xt::flatten(p.alpha) / 2;
        const auto aggregate = weighted_aggregate(pixels, pixels, x0, colour_weights(7, 8, 3, 40.0),
                                                  grid_stencil{7, 8, connectivity, radius}, sum_with_data(half_alpha, xhat));
        for (std::size_t i = 0; i < 56; ++i) BOOST_TEST(std::abs(step[i] - aggregate(i, 0)) < 1e-9);
    }
}

BOOST_AUTO_TEST_CASE(every_solver_reaches_the_dense_solution) {
    const problem p(19, 23, 5);
    for (auto [connectivity, radius] : stencils) {
        const ar_system A = p.system(connectivity, radius);
        const auto exact = dense_solve(A);
        const solve_options tight{1e-10, 20000};
        const auto check = [&](const solve_report& report, const std::vector<double>& x) {
            BOOST_TEST_CONTEXT(report.method << ", connectivity " << connectivity << ", radius " << radius) {
                BOOST_TEST(report.converged);
                BOOST_TEST(report.relative_residual <= 1e-10);
                double worst = 0;
                for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - exact[i]));
                BOOST_TEST(worst < 1e-6, "largest difference from the dense solve " << worst);
            }
        };
        run_every_solver(A, tight, check);
    }
}

BOOST_AUTO_TEST_CASE(multigrid_levels_and_non_convergence) {
    const problem p(70, 90, 6);
    const ar_system A = p.system(8);
    BOOST_TEST(multigrid(A).levels() == 4u);   // 70 x 90 -> 35 x 45 -> 18 x 23 -> 9 x 12 (108 <= 256 pixels)
    std::vector<double> x(A.size(), 0.0);
    const auto report = jacobi(A, x, solve_options{1e-12, 3});
    BOOST_TEST(!report.converged);
    BOOST_TEST(report.iterations == 3u);
    BOOST_TEST(report.relative_residual > 1e-12);
    // Each Jacobi iteration is one jacobi_step (the aggregate), whichever way it is computed.
    std::vector<double> stepped(A.size(), 0.0);
    for (int k = 0; k < 3; ++k) {
        const buffer<double> next = A.jacobi_step(stepped);
        stepped.assign(next.begin(), next.end());
    }
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        worst = std::max(worst, std::abs(x[i] - stepped[i])), largest = std::max(largest, std::abs(stepped[i]));
    BOOST_TEST(largest > 0);
    BOOST_TEST(worst <= 1e-12 * largest);
    test::check_invalid([&] { std::vector<double> short_x(5); pcg(A, short_x, jacobi_preconditioner(A)); },
                        "pcg", "x has 5 entries for a system of 6300");
}

BOOST_AUTO_TEST_CASE(multigrid_smoothers) {
    // The Chebyshev damping by hand: on [0.2, 2] the centre is 1.1 and the half width 0.9;
    // two sweeps: 1 / (1.1 +- 0.9 cos(pi / 4)); one sweep: 1 / 1.1; three: 1 / (1.1 + 0.9 cos(k pi / 6)), k = 1, 3, 5.
    const double c4 = std::sqrt(0.5), c6 = std::sqrt(3.0) / 2;
    const auto two = multigrid<>::sweep_damping({.smoothing_steps = 2, .lower = 0.2});
    BOOST_TEST(two.size() == 2u);
    BOOST_TEST(std::abs(two[0] - 1 / (1.1 + 0.9 * c4)) < 1e-14);
    BOOST_TEST(std::abs(two[1] - 1 / (1.1 - 0.9 * c4)) < 1e-14);
    const auto one = multigrid<>::sweep_damping({.smoothing_steps = 1, .lower = 0.2});
    BOOST_TEST(std::abs(one.at(0) - 1 / 1.1) < 1e-14);
    const auto three = multigrid<>::sweep_damping({.smoothing_steps = 3, .lower = 0.2});
    BOOST_TEST(std::abs(three.at(0) - 1 / (1.1 + 0.9 * c6)) < 1e-14);
    BOOST_TEST(std::abs(three.at(1) - 1 / 1.1) < 1e-14);
    BOOST_TEST(std::abs(three.at(2) - 1 / (1.1 - 0.9 * c6)) < 1e-14);
    BOOST_TEST(multigrid<>::sweep_damping({.smoothing_steps = 3, .kind = smoother::jacobi, .damping = 0.7}) ==
               std::vector<double>(3, 0.7));

    // The defaults: four sweeps on [0.1, 2].
    BOOST_TEST(multigrid<>::sweep_damping({}).size() == 4u);
    BOOST_TEST(std::abs(multigrid<>::sweep_damping({}).front() - 1 / (1.05 + 0.95 * std::cos(std::numbers::pi / 8))) < 1e-14);
    // Either smoother, 1 to 5 sweeps, as CG's preconditioner and alone, reaches the dense solution.
    const problem p(21, 18, 8);
    for (auto [connectivity, radius] : {std::pair<int, std::size_t>{8, 1}, {4, 2}}) {
        const ar_system A = p.system(connectivity, radius);
        const auto exact = dense_solve(A);
        for (auto kind : {smoother::chebyshev, smoother::jacobi})
            for (std::size_t steps = 1; steps <= 5; ++steps) {
                const multigrid M(A, {.smoothing_steps = steps, .kind = kind});
                for (bool alone : {false, true}) {
                    BOOST_TEST_CONTEXT("smoother " << int(kind) << ", " << steps << " sweeps, alone " << alone) {
                        std::vector<double> x(A.size(), 150.0);
                        const auto report = alone ? multigrid_solve(A, A.rhs, x, M, {1e-10, 5000})
                                                  : pcg(A, x, M, {1e-10, 5000});
                        BOOST_TEST(report.converged);
                        double worst = 0;
                        for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - exact[i]));
                        BOOST_TEST(worst < 1e-6);
                    }
                }
            }
    }
    test::check_invalid([&] { multigrid<>::sweep_damping({.lower = 2, .upper = 1}); }, "multigrid", "lower = 2.0");
    test::check_invalid([&] { multigrid(p.system(8), {.smoothing_steps = 0}); }, "multigrid", "smoothing_steps = 0");
    test::check_invalid([&] { multigrid(p.system(8), {.damping = 2.5}); }, "multigrid", "damping = 2.5");
    test::check_invalid([&] { multigrid(p.system(8), {.correction_scale = std::nan("")}); }, "multigrid",
                        "correction_scale = nan");
}

BOOST_AUTO_TEST_CASE(single_precision_systems) {
    // ar_system<float>: the same weights rounded to float, every solver to a float-sized
    // tolerance (float SOR stalls near 2e-5 on the 48-neighbour stencil), against the dense
    // solve of the double system.
    const problem p(19, 23, 5);
    for (auto [connectivity, radius] : stencils) {
        const ar_system<> A = p.system(connectivity, radius);
        const ar_system<float> F(p.guide, grid_stencil{p.H, p.W, connectivity, radius}, colour_weights(p.H, p.W, 3, 40.0),
                                 p.xhat, p.alpha);
        for (std::size_t o = 0; o < A.offsets.size(); ++o)
            for (std::size_t i = 0; i < A.size(); ++i)
                BOOST_TEST(std::abs(F.weights[o][i] - A.weights[o][i]) <= 1e-7 * A.weights[o][i]);
        const auto exact = dense_solve(A);
        const solve_options options{1e-4, 20000};
        const auto check = [&](const solve_report& report, const std::vector<float>& x) {
            BOOST_TEST_CONTEXT(report.method << ", connectivity " << connectivity << ", radius " << radius) {
                BOOST_TEST(report.converged, "relative residual " << report.relative_residual << " after " << report.iterations);
                double worst = 0;
                for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - exact[i]) / exact[i]);
                BOOST_TEST(worst < 1e-3, "largest relative difference from the dense solve " << worst);
            }
        };
        run_every_solver(F, options, check);
    }
}

BOOST_AUTO_TEST_CASE(solvers_take_other_right_hand_sides) {
    // pcg, multigrid, Jacobi and SOR on A x = b for a b other than the system's own,
    // against a dense solve of the same b.
    const problem p(13, 11, 12);
    const ar_system A = p.system(8, 2);
    ar_system other = A;
    const auto b = test::random_tensor<double, 1>({A.size()}, 13, -5, 5);
    other.rhs.assign(b.begin(), b.end());
    const auto exact = dense_solve(other);
    const solve_options tight{1e-10, 20000};
    const multigrid M(A);
    for (int method = 0; method < 4; ++method) {
        std::vector<double> x(A.size(), 0.0);
        const auto report = method == 0   ? pcg(A, other.rhs, x, M, tight)
                            : method == 1 ? multigrid_solve(A, other.rhs, x, M, tight)
                            : method == 2 ? sor(A, other.rhs, x, 1.5, tight)
                                          : jacobi(A, other.rhs, x, tight);
        BOOST_TEST_CONTEXT(report.method) {
            BOOST_TEST(report.converged);
            for (std::size_t i = 0; i < x.size(); ++i) BOOST_TEST(std::abs(x[i] - exact[i]) < 1e-6);
        }
    }
    std::vector<double> x(A.size());
    test::check_invalid([&] { pcg(A, std::vector<double>(3), x, M); }, "pcg", "b has 3 entries for a system of 143");
}

BOOST_AUTO_TEST_CASE(solvers_take_any_contiguous_array) {
    // std::vector, buffer and std::span (here over an xtensor) give the same solves;
    // the multigrid cycle and the operators check their sizes.
    const problem p(13, 11, 5);
    const ar_system A = p.system(8);
    const multigrid M(A);
    std::vector<double> v(A.size(), 150.0);
    buffer<double> b(A.size(), 150.0);
    xt::xtensor<double, 1> t = xt::zeros<double>({A.size()}) + 150.0;
    const std::vector<double> rhs(A.rhs.begin(), A.rhs.end());
    pcg(A, rhs, v, M);
    pcg(A, A.rhs, b, M);
    pcg(A, std::span<const double>(rhs), std::span<double>(t.data(), t.size()), M);
    BOOST_TEST(std::equal(v.begin(), v.end(), b.begin()));
    BOOST_TEST(std::equal(v.begin(), v.end(), t.begin()));
    std::vector<double> z(A.size()), short_r(A.size() - 1);
    test::check_invalid([&] { M(short_r, z); }, "multigrid", "r has 142 entries for a system of 143");
    test::check_invalid([&] { M(rhs, short_r); }, "multigrid", "z has 142 entries for a system of 143");
    test::check_invalid([&] { (void)A.apply(short_r); }, "ar_system::apply", "x has 142 entries for a system of 143");
    test::check_invalid([&] { (void)A.jacobi_step(short_r); }, "ar_system::jacobi_step", "x has 142");
    const jacobi_preconditioner J(A);
    test::check_invalid([&] { J(rhs, short_r); }, "jacobi_preconditioner", "z has 142");
    test::check_invalid([&] { multigrid_solve(A, short_r); }, "multigrid_solve", "x has 142");
    test::check_invalid([&] { sor(A, rhs, short_r); }, "sor", "x has 142");
}

BOOST_AUTO_TEST_CASE(batches_start_on_the_batch_grid) {
    // The vectorised pixels start at a multiple of the batch width, so that a pixel's own
    // entries load aligned from buffers; the pixels before and after are scalars.
    for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {2, 3}, {9, 31}, {40, 33}, {64, 70}})
        for (auto [connectivity, radius] : stencils) {
            const problem p(H, W, unsigned(H * W));
            const ar_system<float> A(p.guide, grid_stencil{H, W, connectivity, radius}, colour_weights(H, W, 3, 40.0),
                                     p.xhat, p.alpha);
            const auto [first, stop] = A.vector_zone();
            BOOST_TEST((first % ar_system<float>::lanes == 0 || first == A.size()));   // or no batch at all
            BOOST_TEST((stop - first) % ar_system<float>::lanes == 0u);
            if (stop > first) {   // every batch's neighbours lie inside the image's flat range
                BOOST_TEST(first >= A.reach_in_pixels());
                BOOST_TEST(stop + A.reach_in_pixels() <= A.size());
            }
            BOOST_TEST(reinterpret_cast<std::uintptr_t>(A.diagonal.data()) % 64 == 0u);
        }
}

BOOST_AUTO_TEST_CASE(threads_do_not_change_results) {
    // Each pass splits the pixels into chunks; every pixel is computed the same way.
    for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 4}, {41, 53}}) {
        const problem p(H, W, unsigned(H + W));
        const ar_system one = p.system(8, 2);
        ar_system three = one;
        three.threads = 3;
        const auto x = test::random_tensor<double, 1>({H * W}, 17);
        const std::vector<double> xv(x.begin(), x.end());
        BOOST_TEST(one.apply(xv) == three.apply(xv));
        BOOST_TEST(one.jacobi_step(xv) == three.jacobi_step(xv));
        std::vector<double> x1(H * W, 150.0), x3 = x1;
        pcg(one, x1, multigrid(one));
        pcg(three, x3, multigrid(three));
        BOOST_TEST(x1 == x3);
    }
}

BOOST_AUTO_TEST_CASE(apply_and_dot_is_apply_and_its_inner_product) {
    // Sizes below and above one 65536-pixel chunk of the inner product, on 1 and 3 threads.
    for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 5}, {40, 41}, {401, 397}}) {
        const problem p(H, W, unsigned(H * 3 + W));
        for (auto [connectivity, radius] : {std::pair<int, std::size_t>{8, 1}, {4, 2}}) {
            ar_system one = p.system(connectivity, radius);
            const auto x = test::random_tensor<double, 1>({H * W}, 23, -1, 1);
            const std::vector<double> xv(x.begin(), x.end());
            const buffer<double> expected = one.apply(xv);
            double expected_dot = 0;
            for (std::size_t i = 0; i < xv.size(); ++i) expected_dot += xv[i] * expected[i];
            buffer<double> y(H * W), y3(H * W);
            const double dot = one.apply_and_dot(xv.data(), y.data());
            BOOST_TEST(y == expected);
            BOOST_TEST(std::abs(dot - expected_dot) <= 1e-12 * std::max(1.0, std::abs(expected_dot)));
            one.threads = 3;
            BOOST_TEST(one.apply_and_dot(xv.data(), y3.data()) == dot);   // bit for bit
            BOOST_TEST(y3 == y);
        }
    }
    // In float, the inner product still accumulates in double.
    const problem p(64, 70, 5);
    const ar_system<float> A(p.guide, grid_stencil{64, 70, 8}, colour_weights(64, 70, 3, 40.0), p.xhat, p.alpha);
    const std::vector<float> x(64 * 70, 1.0f);
    std::vector<float> y(x.size());
    const double dot = A.apply_and_dot(x.data(), y.data());
    double expected = 0;
    for (float v : y) expected += double(v);
    BOOST_TEST(std::abs(dot - expected) <= 1e-6 * std::abs(expected));
}

BOOST_AUTO_TEST_CASE(pipelined_passes_equal_separate_ones) {
    // The fused passes follow each other in chunks of at least 4096 pixels, in bands on
    // several threads: images smaller and larger than a chunk, every stencil, both
    // precisions, one to three threads, two and four passes, bit for bit.
    const auto check = [](auto tag, std::size_t H, std::size_t W, int connectivity, std::size_t radius) {
        using T = decltype(tag);
        const problem p(H, W, unsigned(H * W + radius));
        const ar_system<T> A(p.guide, grid_stencil{H, W, connectivity, radius}, colour_weights(H, W, 3, 40.0), p.xhat,
                             p.alpha);
        const auto z0 = test::random_tensor<T, 1>({H * W}, 50, 100, 200);
        const auto r = test::random_tensor<T, 1>({H * W}, 51, -1, 1);
        const std::vector<T> z(z0.begin(), z0.end());
        std::vector<T> once(H * W), twice(H * W), work(H * W);
        A.relax(r.data(), z.data(), once.data(), 0.8);
        A.relax(r.data(), once.data(), twice.data(), 0.8);
        std::vector<T> residual(H * W);
        A.residual(r.data(), once.data(), residual.data());
        std::vector<T> first(H * W), second(H * W), third(H * W), third_residual(H * W);
        A.relax(r.data(), z.data(), first.data(), 0.6);
        A.relax(r.data(), first.data(), second.data(), 1.9);
        A.relax(r.data(), second.data(), third.data(), 0.9);
        A.residual(r.data(), third.data(), third_residual.data());
        for (int threads : {1, 2, 3}) {   // bands with seams when the image is long enough
            ar_system<T> B = A;
            B.threads = threads;
            std::vector<T> z2(z0.begin(), z0.end()), swept(z0.begin(), z0.end()), fused_work(H * W);
            using stage = typename ar_system<T>::sweep_stage;
            const stage two_sweeps[] = {{0.8}, {0.8}}, sweep_and_residual[] = {{0.8}, {0, true}};
            B.sweeps(r.data(), z2.data(), work.data(), two_sweeps);
            B.sweeps(r.data(), swept.data(), fused_work.data(), sweep_and_residual);
            // Four stages, three sweeps of different damping and the residual: they alternate
            // between work and z, so the third sweep ends in work and the residual in z.
            const stage four[] = {{0.6}, {1.9}, {0.9}, {0, true}};
            std::vector<T> z4(z0.begin(), z0.end()), work4(H * W);
            B.sweeps(r.data(), z4.data(), work4.data(), four);
            BOOST_TEST_CONTEXT(H << " x " << W << ", connectivity " << connectivity << ", radius " << radius
                                 << ", threads " << threads) {
                BOOST_TEST(z2 == twice);
                BOOST_TEST(fused_work == once);
                BOOST_TEST(swept == residual);
                BOOST_TEST(work4 == third);
                BOOST_TEST(z4 == third_residual);
            }
        }
    };
    for (auto [connectivity, radius] : stencils)
        for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 37}, {9, 7}, {70, 90}, {131, 67}, {300, 41}}) {
            check(double{}, H, W, connectivity, radius);
            check(float{}, H, W, connectivity, radius);
        }
}

BOOST_AUTO_TEST_CASE(depth_tasks_run_concurrently) {
    // A dataset refined one pair per thread: every call owns its system and buffers,
    // so concurrent calls give what sequential ones do.
    std::vector<xt::xtensor<float, 3>> guides;
    std::vector<xt::xtensor<float, 2>> depths;
    for (unsigned k = 0; k < 4; ++k) {
        guides.push_back(test::random_tensor<float, 3>({20 + k, 25, 3}, 30 + k, 0, 255));
        xt::xtensor<float, 2> d = test::random_tensor<float, 2>({20 + k, 25}, 40 + k, 10, 90);
        for (std::size_t i = 0; i < d.size(); i += 2) d.data()[i] = 0;
        depths.push_back(d);
    }
    std::vector<xt::xtensor<float, 2>> sequential(4), concurrent(4);
    for (std::size_t k = 0; k < 4; ++k) sequential[k] = fill_depth(depths[k], guides[k]).depth;
    detail::parallel_for(4, 2, [&](std::size_t k) { concurrent[k] = fill_depth(depths[k], guides[k]).depth; });
    for (std::size_t k = 0; k < 4; ++k) BOOST_TEST(concurrent[k] == sequential[k]);
}

BOOST_AUTO_TEST_CASE(normalised_model_is_a_ratio_of_two_solves) {
    // depth = K(m d) / K(m) with K = eps (L + eps I)^-1, eps = 0.5 x the observed fraction:
    // against two dense solves of (L + eps I) on a small problem whose observations all
    // reach every pixel (close colours: K(m) far above the fallback's delta).
    const std::size_t H = 9, W = 10;
    const auto guide = test::random_tensor<double, 3>({H, W, 3}, 21, 0, 3);
    xt::xtensor<double, 2> depth = test::random_tensor<double, 2>({H, W}, 22, 50, 90);
    const auto u = test::random_tensor<double, 2>({H, W}, 23, 0, 1);
    xt::xtensor<double, 2> mask = xt::where(u < 0.3, 1.0, 0.0);
    mask(4, 4) = 1;
    depth = xt::where(mask > 0, depth, 0.0);
    const double fraction = xt::sum(mask)() / double(H * W), eps = 0.5 * fraction;
    depth_options o;
    o.solve = {1e-12, 1000};
    o.median_scale = 0;  // the model alone, without the edge-sharpening median
    for (auto colour : {colour_kernel::laplacian, colour_kernel::gaussian}) {
        o.colour = colour;
        const auto out = fill_depth(depth, guide, o);
        BOOST_TEST(out.report.converged);
        const xt::xtensor<double, 2> all_eps = xt::zeros<double>({H, W}) + eps;
        const auto system = [&](const xt::xtensor<double, 2>& values) {
            return colour == colour_kernel::laplacian
                       ? ar_system(guide, grid_stencil{H, W, 8}, laplacian_distance(3.0), values, all_eps, 1e-3)
                       : ar_system(guide, grid_stencil{H, W, 8}, colour_weights(H, W, 3, 3.0), values, all_eps, 1e-3);
        };
        const auto kd = dense_solve(system(depth)), km = dense_solve(system(mask));
        const double delta = 1e-3 * fraction;
        const auto x0 = detail::normalised_interpolation(H, W, mask.data(), depth.data());
        for (std::size_t i = 0; i < H * W; ++i) {
            BOOST_TEST(km[i] > 100 * delta);
            BOOST_TEST(std::abs(out.depth.data()[i] - (kd[i] + delta * x0[i]) / (km[i] + delta)) < 1e-3);
        }
    }
}

BOOST_AUTO_TEST_CASE(depth_tasks) {
    for (auto model : {depth_model::normalised, depth_model::ar})
        for (auto colour : {colour_kernel::laplacian, colour_kernel::gaussian})
        for (bool single : {false, true}) {
            BOOST_TEST_CONTEXT("model " << int(model) << ", colour kernel " << int(colour) << ", float " << single) {
                depth_options o;
                o.model = model, o.colour = colour, o.single_precision = single;
                // A constant depth with holes is a fixed point.
                const auto guide = test::random_tensor<float, 3>({24, 30, 3}, 7, 0, 255);
                xt::xtensor<float, 2> flat = xt::ones<float>({24, 30}) * 1234.f;
                for (std::size_t i = 0; i < flat.size(); i += 3) flat.data()[i] = 0;
                flat(5, 5) = std::nanf("");
                const auto filled = fill_depth(flat, guide, o);
                BOOST_TEST(filled.report.converged);
                test::check_close(filled.depth, xt::xtensor<float, 2>(xt::ones<float>({24, 30}) * 1234.f), 1e-2, 0);

                // A sharp colour edge keeps a depth edge: left half dark and near, right half bright
                // and far, depth observed only on a sparse grid.
                xt::xtensor<float, 2> edge_guide = xt::zeros<float>({32, 32});
                xt::xtensor<float, 2> truth = xt::ones<float>({32, 32}) * 100.f;
                for (std::size_t r = 0; r < 32; ++r)
                    for (std::size_t c = 13; c < 32; ++c) edge_guide(r, c) = 255.f, truth(r, c) = 300.f;
                xt::xtensor<float, 2> low = xt::empty<float>({8, 8});
                for (std::size_t r = 0; r < 8; ++r)
                    for (std::size_t c = 0; c < 8; ++c) low(r, c) = truth(4 * r, 4 * c);
                depth_options sharp = o;
                sharp.min_weight = 1e-5;
                const auto up = upsample_depth(low, edge_guide, 4, sharp);
                BOOST_TEST(up.report.converged);
                // The weight floor lets a fraction of the step leak: about min_weight / 2 (the
                // weight inside a region) in the AR model, min_weight / eps (eps = 0.5 / 16) in the
                // normalised one; with 1e-5 both stay far below 1 %.
                for (std::size_t r = 0; r < 32; ++r) {
                    BOOST_TEST(std::abs(up.depth(r, 12) - 100.f) < 2.f);   // last dark column
                    BOOST_TEST(std::abs(up.depth(r, 13) - 300.f) < 2.f);   // first bright column
                    BOOST_TEST(up.depth(r, 13) - up.depth(r, 12) > 0.98f * 200.f);
                }
                // Denoising averages the noise within regions the guide separates.
                xt::xtensor<float, 2> noisy = truth;
                const auto noise = test::random_tensor<float, 2>({32, 32}, 8, -10, 10);
                noisy += noise;
                depth_options smooth = o;
                smooth.epsilon_scale = 0.25, smooth.lambda = 0.2;
                const auto den = denoise_depth(noisy, edge_guide, smooth);
                BOOST_TEST(den.report.converged);
                BOOST_TEST(xt::mean(xt::square(den.depth - truth))() < xt::mean(xt::square(noisy - truth))() / 4);
            }
        }
}

BOOST_AUTO_TEST_CASE(normalised_interpolation_by_hand) {
    // One row of 9: alpha 0.3 (depth 2) at column 0 and 0.7 (depth 4) at column 8. Boxes
    // [c - R, c + R] of radius R = 2, 4, 8, ... until one covers an observation:
    //   columns 0-2 see column 0 at R = 2: 2; columns 6-8 see column 8: 4;
    //   columns 3-5 see nothing at R = 2; at R = 4, column 3 sees [0, 7]: 2, column 5 sees
    //   [1, 8]: 4, column 4 sees both: (0.3 * 2 + 0.7 * 4) / 1.0 = 3.4.
    std::vector<double> alpha(9, 0.0), rhs(9, 0.0);
    alpha[0] = 0.3, rhs[0] = 0.6, alpha[8] = 0.7, rhs[8] = 2.8;
    const auto x = nonlocal::detail::normalised_interpolation(1, 9, alpha.data(), rhs.data());
    const std::vector<double> expected = {2, 2, 2, 2, 3.4, 4, 4, 4, 4};
    for (std::size_t c = 0; c < 9; ++c) BOOST_TEST(std::abs(x[c] - expected[c]) < 1e-12);
    // Many non-dyadic alphas: wherever a box holds no observation, it is seen as empty (an
    // exact count), not as a rounding residue of the alphas' running sums.
    const std::size_t H = 40, W = 50;
    std::vector<double> a(H * W, 0.0), b(H * W, 0.0);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c)
            if (c < 20 || c >= 45) a[r * W + c] = 0.1 + 0.01 * double((r * 7 + c) % 13), b[r * W + c] = 9 * a[r * W + c];
    const auto y = nonlocal::detail::normalised_interpolation(H, W, a.data(), b.data());
    for (double v : y) BOOST_TEST(std::abs(v - 9) < 1e-9);
}

BOOST_AUTO_TEST_CASE(half_resolution_guide) {
    // 3 x 3 box means around the even pixels, clipped to the image, by hand:
    //   1 2 3
    //   4 5 6   ->   (1+2+4+5)/4 = 3   (2+3+5+6)/4 = 4
    //   7 8 9        (4+5+7+8)/4 = 6   (5+6+8+9)/4 = 7
    const xt::xtensor<double, 2> image = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    const auto half = nonlocal::detail::half_resolution(nonlocal::detail::to_pixel_rows<double>(image, "test", "image"));
    BOOST_TEST(half.height == 2u);
    BOOST_TEST(half.width == 2u);
    BOOST_TEST(half.pixels(0, 0) == 3.0);
    BOOST_TEST(half.pixels(1, 0) == 4.0);
    BOOST_TEST(half.pixels(2, 0) == 6.0);
    BOOST_TEST(half.pixels(3, 0) == 7.0);
    // Interior pixels average all nine; each channel on its own.
    const auto rgb = test::random_tensor<double, 3>({7, 6, 3}, 31, 0, 255);
    const auto h = nonlocal::detail::half_resolution(nonlocal::detail::to_pixel_rows<double>(rgb, "test", "image"));
    for (std::size_t k = 0; k < 3; ++k) {
        double sum = 0;
        for (std::size_t r = 1; r <= 3; ++r)
            for (std::size_t c = 1; c <= 3; ++c) sum += rgb(r, c, k);
        BOOST_TEST(std::abs(h.pixels(1 * 3 + 1, k) - sum / 9) < 1e-12);
    }
}

BOOST_AUTO_TEST_CASE(upsampling_goes_coarse_to_fine_above_the_stage_factor) {
    // Awkward sizes: the guide is 16 (h - 1) + 1 rows and 16 w columns.
    const std::size_t h = 3, w = 4, H = 16 * (h - 1) + 1, W = 16 * w;
    const auto guide = test::random_tensor<double, 3>({H, W, 3}, 41, 0, 255);
    const auto low = test::random_tensor<float, 2>({h, w}, 42, 50, 150);
    // The 3 x 3 box means of the guide at its even pixels, computed here.
    const std::size_t Hh = (H + 1) / 2, Wh = (W + 1) / 2;
    xt::xtensor<double, 3> half_guide = xt::zeros<double>({Hh, Wh, std::size_t(3)});
    for (std::size_t r = 0; r < Hh; ++r)
        for (std::size_t c = 0; c < Wh; ++c)
            for (std::size_t k = 0; k < 3; ++k) {
                double sum = 0, count = 0;
                for (std::ptrdiff_t dr = -1; dr <= 1; ++dr)
                    for (std::ptrdiff_t dc = -1; dc <= 1; ++dc) {
                        const std::ptrdiff_t rr = std::ptrdiff_t(2 * r) + dr, cc = std::ptrdiff_t(2 * c) + dc;
                        if (rr < 0 || cc < 0 || rr >= std::ptrdiff_t(H) || cc >= std::ptrdiff_t(W)) continue;
                        sum += guide(std::size_t(rr), std::size_t(cc), k), ++count;
                    }
                half_guide(r, c, k) = sum / count;
            }
    for (auto model : {depth_model::normalised, depth_model::ar}) {
        depth_options o{.model = model, .single_precision = false};
        o.solve.tolerance = 1e-10;
        const auto staged = upsample_depth(low, guide, 16, o);   // stage_factor 8: x8, then x2
        const auto coarse = upsample_depth(low, half_guide, 8, o);
        const auto by_hand = upsample_depth(coarse.depth, guide, 2, o);
        BOOST_TEST(staged.report.converged);
        BOOST_TEST(staged.report.method.starts_with("coarse to fine"));
        BOOST_TEST(staged.report.iterations == coarse.report.iterations + by_hand.report.iterations);
        test::check_close(staged.depth, by_hand.depth, 1e-5, 1e-3);
        // A stage factor of 16 or more, or an odd factor, upsamples in one stage.
        depth_options direct = o;
        direct.stage_factor = 16;
        const auto one = upsample_depth(low, guide, 16, direct);
        BOOST_TEST(!one.report.method.starts_with("coarse to fine"));
        BOOST_TEST(one.report.converged);
        depth_options small = o;
        small.stage_factor = 2;
        const auto odd = upsample_depth(low, xt::view(guide, xt::range(0, 3 * (h - 1) + 1), xt::range(0, 3 * w), xt::all()),
                                        3, small);
        BOOST_TEST(!odd.report.method.starts_with("coarse to fine"));
        // Both ways, a constant depth stays constant.
        const xt::xtensor<float, 2> flat = xt::ones<float>({h, w}) * 77.f;
        test::check_close(upsample_depth(flat, guide, 16, o).depth, xt::xtensor<float, 2>(xt::ones<float>({H, W}) * 77.f),
                          1e-4, 0);
    }
}

BOOST_AUTO_TEST_CASE(depth_edges_are_sharpened_by_a_median) {
    // The radius follows the observations' spacing: round(0.75 / sqrt(fraction)), at most 4.
    const depth_options o;
    BOOST_TEST(o.median_radius(1.0 / 16) == 3u);   // x4: spacing 4
    BOOST_TEST(o.median_radius(1.0 / 64) == 4u);   // x8: 6, capped
    BOOST_TEST(o.median_radius(0.5) == 1u);        // round(1.06)
    BOOST_TEST(o.median_radius(1.0) == 1u);        // round(0.75)
    BOOST_TEST(depth_options{.median_scale = 0.3}.median_radius(1.0) == 0u);
    BOOST_TEST(depth_options{.median_scale = 0}.median_radius(1.0 / 256) == 0u);
    BOOST_TEST(depth_options{.median_max_radius = 9}.median_radius(1.0 / 256) == 9u);

    // A task's result is the model's result filtered with that radius.
    const auto guide = test::random_tensor<float, 3>({23, 29, 3}, 51, 0, 255);
    xt::xtensor<float, 2> depth = test::random_tensor<float, 2>({23, 29}, 52, 10, 90);
    for (std::size_t i = 0; i < depth.size(); i += 4) depth.data()[i] = 0;   // 3 / 4 observed: radius 1
    depth_options plain = o;
    plain.median_scale = 0;
    const auto sharpened = fill_depth(depth, guide), blended = fill_depth(depth, guide, plain);
    BOOST_TEST(sharpened.depth == median_filter(blended.depth, 1));
    BOOST_TEST(sharpened.depth != blended.depth);

    // A depth step whose far (bright) side carries a dark streak, one pixel high, that
    // runs from the near (dark) side into it: the model follows the streak's colour and
    // gives it the near depth; the median gives the streak, a minority in every window
    // away from the step, the far depth (the step's column near the streak, where near
    // values are the majority, goes the other way).
    const std::size_t H = 32, W = 48;
    xt::xtensor<float, 2> streak_guide = xt::zeros<float>({H, W}), truth = xt::ones<float>({H, W}) * 100.f;
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 23; c < W; ++c) streak_guide(r, c) = (r == 13 && c < 35) ? 0.f : 255.f, truth(r, c) = 300.f;
    xt::xtensor<float, 2> low = xt::empty<float>({H / 4, W / 4});
    for (std::size_t r = 0; r < H / 4; ++r)
        for (std::size_t c = 0; c < W / 4; ++c) low(r, c) = truth(4 * r, 4 * c);
    const auto wrong_in_streak = [&](const xt::xtensor<float, 2>& d) {
        std::size_t count = 0;
        for (std::size_t c = 23; c < 35; ++c) count += std::abs(d(13, c) - 300.f) > 50.f;
        return count;
    };
    BOOST_TEST(wrong_in_streak(upsample_depth(low, streak_guide, 4, plain).depth) == 12u);
    BOOST_TEST(wrong_in_streak(upsample_depth(low, streak_guide, 4).depth) == 1u);   // its first pixel, at the step
}

BOOST_AUTO_TEST_CASE(depth_passes_add_the_last_result_to_the_guide) {
    // A pass is the task on the guide with the previous result x sigma_r / sigma_d as one
    // more channel: its weights are the colour weights times the kernel of the depth difference.
    const std::size_t H = 19, W = 26;
    const auto guide = test::random_tensor<double, 3>({H, W, 3}, 61, 0, 255);
    xt::xtensor<float, 2> depth = test::random_tensor<float, 2>({H, W}, 62, 20, 60);
    for (std::size_t i = 0; i < depth.size(); i += 3) depth.data()[i] = 0;
    for (auto model : {depth_model::normalised, depth_model::ar}) {
        BOOST_TEST_CONTEXT("model " << int(model)) {
            const depth_options once{.model = model, .depth_passes = 1, .sigma_d = 5};
            const auto first = fill_depth(depth, guide, {.model = model});
            xt::xtensor<double, 3> joint = xt::empty<double>({H, W, std::size_t(4)});
            xt::view(joint, xt::all(), xt::all(), xt::range(0, 3)) = guide;
            xt::view(joint, xt::all(), xt::all(), 3) = xt::cast<double>(first.depth) * (once.sigma_r / once.sigma_d);
            const auto by_hand = fill_depth(depth, joint, {.model = model});
            const auto passed = fill_depth(depth, guide, once);
            BOOST_TEST(passed.depth == by_hand.depth);
            BOOST_TEST(passed.report.iterations == first.report.iterations + by_hand.report.iterations);
            // sigma_d = 0: 2 % of the observed range.
            float lo = 1e30f, hi = -1e30f;
            for (float d : depth)
                if (d > 0) lo = std::min(lo, d), hi = std::max(hi, d);
            BOOST_TEST(fill_depth(depth, guide, {.model = model, .depth_passes = 1}).depth ==
                       fill_depth(depth, guide, {.model = model, .depth_passes = 1, .sigma_d = 0.02 * (double(hi) - lo)}).depth);
        }
    }
    // Constant observations leave nothing to adapt to: no pass runs.
    xt::xtensor<float, 2> flat = xt::where(depth > 0, 42.f, 0.f);
    const auto plain = fill_depth(flat, guide), passes = fill_depth(flat, guide, {.depth_passes = 2});
    BOOST_TEST(passes.depth == plain.depth);
    BOOST_TEST(passes.report.iterations == plain.report.iterations);
}

BOOST_AUTO_TEST_CASE(bad_input) {
    const xt::xtensor<float, 2> guide = xt::zeros<float>({4, 5}), none = xt::zeros<float>({4, 5});
    test::check_invalid([&] { fill_depth(none, guide); }, "fill_depth", "nothing is observed");
    test::check_invalid([&] { fill_depth(none, guide, {.model = depth_model::ar}); }, "fill_depth", "nothing is observed");
    test::check_invalid([&] { upsample_depth(none, guide, 1); }, "upsample_depth", "nothing is observed");
    const xt::xtensor<float, 2> some = xt::ones<float>({4, 5});
    test::check_invalid([&] { fill_depth(some, guide, {.epsilon_scale = 0}); }, "fill_depth", "epsilon_scale = 0");
    test::check_invalid([&] { denoise_depth(some, guide, {.lambda = -1}); }, "denoise_depth", "lambda = -1");
    test::check_invalid([&] { fill_depth(some, guide, {.threads = 0}); }, "fill_depth", "threads = 0");
    test::check_invalid([&] { fill_depth(some, guide, {.median_scale = -1}); }, "fill_depth", "median_scale = -1");
    test::check_invalid([&] { fill_depth(some, guide, {.sigma_d = -2}); }, "fill_depth", "sigma_d = -2");
    test::check_invalid([&] { fill_depth(some, guide, {.median_scale = std::nan("")}); }, "fill_depth",
                        "median_scale = nan");
    const xt::xtensor<float, 2> other = xt::ones<float>({4, 6});
    test::check_invalid([&] { fill_depth(other, guide); }, "fill_depth", "depth [4, 6]", "guide 4 x 5");
    const xt::xtensor<float, 2> low = xt::ones<float>({2, 2});
    test::check_invalid([&] { upsample_depth(low, guide, 4); }, "upsample_depth", "2 x 2 depth map upsampled by 4");
    const xt::xtensor<double, 2> bad_alpha = -xt::ones<double>({4, 5});
    test::check_invalid([&] { ar_system(guide, grid_stencil{4, 5, 4}, colour_weights(4, 5, 1, 10.0), none, bad_alpha); },
                        "alpha must be finite and >= 0");
    test::check_invalid([&] { ar_system(guide, grid_stencil{4, 5, 6}, colour_weights(4, 5, 1, 10.0), none, none); },
                        "connectivity = 6");
    xt::xtensor<double, 2> nan_xhat = xt::ones<double>({4, 5}), nan_alpha = xt::ones<double>({4, 5});
    nan_xhat(1, 2) = std::nan(""), nan_alpha(2, 3) = std::nan("");
    test::check_invalid([&] { ar_system(guide, grid_stencil{4, 5, 4}, laplacian_distance(3.0), nan_xhat, some); },
                        "ar_system", "xhat is not finite at observed pixel 7");
    test::check_invalid([&] { ar_system(guide, grid_stencil{4, 5, 4}, laplacian_distance(3.0), some, nan_alpha); },
                        "ar_system", "alpha must be finite and >= 0", "at pixel 13");
    // The data term given directly, per pixel.
    const auto rows = nonlocal::detail::to_pixel_rows<double>(guide, "test", "guide");
    const grid_stencil stencil{4, 5, 8};
    const auto direct = [&](const std::vector<double>& a, const std::vector<double>& b) {
        return ar_system(rows, stencil, laplacian_distance(3.0), buffer<double>(a.begin(), a.end()),
                         buffer<double>(b.begin(), b.end()));
    };
    test::check_invalid([&] { direct(std::vector<double>(19, 1.0), std::vector<double>(20, 1.0)); }, "ar_system",
                        "20 pixels, alpha 19 and b 20");
    std::vector<double> ones(20, 1.0), negative = ones, not_finite = ones;
    negative[7] = -1, not_finite[3] = std::nan("");
    test::check_invalid([&] { direct(negative, ones); }, "ar_system", "alpha = -1", "at pixel 7");
    test::check_invalid([&] { direct(ones, not_finite); }, "ar_system", "b = nan", "at pixel 3");
    test::check_invalid([&] { direct(std::vector<double>(20, 0.0), ones); }, "ar_system", "nothing is observed");
}

BOOST_AUTO_TEST_CASE(data_term_given_directly_or_as_observations) {
    // alpha and b = alpha xhat per pixel build the same system as observations and confidences.
    const problem p(9, 11, 13);
    const auto rows = nonlocal::detail::to_pixel_rows<double>(p.guide, "test", "guide");
    const grid_stencil stencil{9, 11, 8, 2};
    const ar_system from_observations(rows, stencil, laplacian_distance(20.0), p.xhat, p.alpha, 1e-3);
    buffer<double> alpha(p.alpha.begin(), p.alpha.end()), b(alpha.size());
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = alpha[i] * p.xhat.data()[i];
    const ar_system direct(rows, stencil, laplacian_distance(20.0), alpha, b, 1e-3);
    BOOST_TEST(direct.weights == from_observations.weights);
    BOOST_TEST(direct.alpha == from_observations.alpha);
    BOOST_TEST(direct.rhs == from_observations.rhs);
    BOOST_TEST(direct.diagonal == from_observations.diagonal);
}

BOOST_AUTO_TEST_SUITE_END()
