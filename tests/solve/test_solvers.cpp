// solve/ar_system.hpp and solve/solvers.hpp: the AR system matrix-free and
// assembled, its edge weights, its Jacobi step as a weighted aggregate, and every
// solver against a dense solve in double.
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>

#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"
#include "support/systems.hpp"

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
        return ar_system(guide, grid_stencil{H, W, connectivity, radius}, color_weights(H, W, 3, 40.0), xhat, alpha);
    }
};

/// The stencils every test runs on: 4 and 8 neighbours, a diamond and squares wider than one pixel.
const std::vector<std::pair<int, std::size_t>> stencils = {{4, 1}, {8, 1}, {4, 2}, {8, 2}, {8, 3}};

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
            const csr_matrix m = assemble(A);
            const auto x = test::random_tensor<double, 1>({H * W}, 9);
            const std::vector<double> xv(x.begin(), x.end());
            const auto y = A.apply(xv);
            for (std::size_t i = 0; i < H * W; ++i) {
                double s = 0, row_sum = 0;
                for (std::size_t t = m.row_offsets[i]; t < m.row_offsets[i + 1]; ++t)
                    s += m.values[t] * xv[m.columns[t]], row_sum += m.values[t];
                BOOST_TEST(std::abs(s - y[i]) < 1e-9);
                BOOST_TEST(std::abs(row_sum - A.alpha()[i]) < 1e-9);   // a Laplacian plus diag(alpha)
                for (std::size_t t = m.row_offsets[i] + 1; t < m.row_offsets[i + 1]; ++t)
                    BOOST_TEST(m.columns[t - 1] < m.columns[t]);
            }
        }
}

namespace {
/// An asymmetric similarity: logit(q_i, k_j) = -(q_i[0] + 2 k_j[1]) / 50 - j / 100.
struct lopsided {
    using weight_function = exp_weight;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k, std::size_t, std::size_t j) const {
        return -(q[0] + 2 * k[1]) / T(50) - T(j) / T(100);
    }
};

/// W_ij = max(kappa(logit(g_i, g_j)) + kappa(logit(g_j, g_i)), floor) for every stored edge, 0 off the grid,
/// for a system of T built from the guide's pixel rows or (channel sums only) from its planes of T.
template <class T = double, class S>
void check_edge_weights(const problem& p, int connectivity, std::size_t radius, const S& sim, double floor,
                        bool from_planes = false) {
    const grid_stencil stencil{p.H, p.W, connectivity, radius};
    const auto system = [&] {
        if constexpr (nonlocal::detail::channel_sum_similarity<S>)
            if (from_planes) {
                buffer<T> alpha(p.alpha.begin(), p.alpha.end()), b(p.H * p.W);
                for (std::size_t i = 0; i < b.size(); ++i) b[i] = T(alpha[i] * p.xhat.data()[i]);
                return ar_system<T>(nonlocal::detail::to_planes<T>(p.guide, "test", "guide"), stencil, sim, alpha, b, floor);
            }
        return ar_system<T>(p.guide, stencil, sim, p.xhat, p.alpha, floor);
    };
    const ar_system<T> A = system();
    const double tolerance = std::is_same_v<T, double> ? 1e-12 : 1e-5;
    const auto pixel = [&](std::size_t i) {
        return std::vector<double>{p.guide.data()[3 * i], p.guide.data()[3 * i + 1], p.guide.data()[3 * i + 2]};
    };
    for (std::size_t o = 0; o < A.offsets().size(); ++o)
        for (std::size_t r = 0; r < p.H; ++r)
            for (std::size_t c = 0; c < p.W; ++c) {
                const std::ptrdiff_t rr = std::ptrdiff_t(r) + A.offsets()[o].dy, cc = std::ptrdiff_t(c) + A.offsets()[o].dx;
                const std::size_t i = r * p.W + c;
                if (rr < 0 || cc < 0 || rr >= std::ptrdiff_t(p.H) || cc >= std::ptrdiff_t(p.W)) {
                    BOOST_TEST(A.weights()[o][i] == T(0));
                    continue;
                }
                const std::size_t j = std::size_t(rr) * p.W + std::size_t(cc);
                const auto gi = pixel(i), gj = pixel(j);
                const auto logit = [&](const std::vector<double>& a, const std::vector<double>& b, std::size_t k, std::size_t l) {
                    return nonlocal::detail::logit(sim, std::span<const double>(a), std::span<const double>(b), k, l);
                };
                const double both = weight_function_t<S>::apply(logit(gi, gj, i, j)) + weight_function_t<S>::apply(logit(gj, gi, j, i));
                BOOST_TEST(std::abs(A.weights()[o][i] - std::max(both, floor)) <= tolerance * std::max(both, floor));
            }
}

/// An asymmetric sum over channels: logit = sum_c (d_c / 40 - d_c^2 / 4000), d = q - k.
struct skewed_channels {
    using weight_function = exp_weight;
    using traits = similarity_traits<channel_sum_form>;
    template <class V>
    V channel_logit(V d) const { return d * V(1.0 / 40) - d * d * V(1.0 / 4000); }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return channel_sum_logit(*this, q, k); }
};

/// The same for similarities without positions.
template <class S>
struct positionless {
    using weight_function = weight_function_t<S>;
    using traits = std::conditional_t<nonlocal::detail::symmetric_similarity<S>, similarity_traits<opaque_form, symmetric>,
                                      similarity_traits<opaque_form>>;
    S sim;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k, std::size_t, std::size_t) const { return sim.logit(q, k); }
};
}  // namespace

BOOST_AUTO_TEST_CASE(edge_weights_follow_their_definition) {
    // A symmetric similarity is evaluated once per edge, an asymmetric one both ways; both
    // must give kappa(logit(g_i, g_j)) + kappa(logit(g_j, g_i)), floored: through each pixel's
    // logit (similarities with positions, or wrapped so that they take them) and, for sums
    // over channels, a channel at a time across a row of pixels, in double from pixel rows
    // and in float and double from planes. Widths around the batch widths.
    static_assert(nonlocal::detail::symmetric_similarity<laplacian_distance>);
    static_assert(!nonlocal::detail::symmetric_similarity<lopsided>);
    static_assert(nonlocal::detail::channel_sum_similarity<skewed_channels>);
    for (auto [connectivity, radius] : stencils)
        for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 7}, {6, 1}, {5, 9}, {2, 17}, {3, 33}, {17, 20}}) {
            const problem p(H, W, unsigned(7 * H + W));
            check_edge_weights(p, connectivity, radius, lopsided{}, 1e-3);
            check_edge_weights(p, connectivity, radius, positionless<laplacian_distance>{laplacian_distance(20.0)}, 1e-3);
            check_edge_weights(p, connectivity, radius, positionless<squared_euclidean>{}, 0.0);
            check_edge_weights(p, connectivity, radius, color_weights(H, W, 3, 40.0), 0.0);
            for (bool planes : {false, true}) {
                check_edge_weights(p, connectivity, radius, laplacian_distance(20.0), 1e-3, planes);
                check_edge_weights(p, connectivity, radius, gaussian_distance(50.0), 1e-3, planes);
                check_edge_weights(p, connectivity, radius, squared_euclidean{}, 0.0, planes);
                check_edge_weights(p, connectivity, radius, skewed_channels{}, 1e-3, planes);
                check_edge_weights<float>(p, connectivity, radius, laplacian_distance(20.0), 1e-3, planes);
                check_edge_weights<float>(p, connectivity, radius, skewed_channels{}, 1e-3, planes);
            }
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
        const auto aggregate = weighted_aggregate(pixels, pixels, x0, color_weights(7, 8, 3, 40.0),
                                                  grid_stencil{7, 8, connectivity, radius}, sum_with_data(half_alpha, xhat));
        for (std::size_t i = 0; i < 56; ++i) BOOST_TEST(std::abs(step[i] - aggregate(i, 0)) < 1e-9);
    }
}

BOOST_AUTO_TEST_CASE(every_solver_reaches_the_dense_solution) {
    const problem p(19, 23, 5);
    for (auto [connectivity, radius] : stencils) {
        const ar_system A = p.system(connectivity, radius);
        const auto exact = test::dense_solve(A);
        const solve_options tight{1e-10, 20000};
        const auto check = [&, connectivity = connectivity, radius = radius](const solve_report& report, const std::vector<double>& x) {
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

/// The diagonal preconditioner, counting its applications.
struct counting_preconditioner {
    jacobi_preconditioner<double> inner;
    std::size_t* calls;
    void operator()(std::span<const double> r, std::span<double> z) const { ++*calls, inner(r, z); }
    static constexpr const char* name = "counting";
};

BOOST_AUTO_TEST_CASE(zero_right_hand_sides_starts_that_meet_the_tolerance_and_breakdowns) {
    const problem p(13, 17, 8);
    const ar_system A = p.system(8);
    const std::size_t n = A.size();
    // b = 0: x = 0, the solution, from any start and after no iteration, for every solver.
    ar_system without_data = A;
    without_data.set_rhs(buffer<double>(n, 0.0));
    run_every_solver(without_data, solve_options{}, [](const solve_report& report, const std::vector<double>& x) {
        BOOST_TEST_CONTEXT(report.method) {
            BOOST_TEST(report.converged);
            BOOST_TEST(report.iterations == 0u);
            BOOST_TEST(report.relative_residual == 0.0);
            BOOST_TEST(std::all_of(x.begin(), x.end(), [](double v) { return v == 0.0; }));
        }
    });
    const std::vector<double> zero(n, 0.0);
    std::vector<double> x(n, 7.0);
    const solve_report full = full_multigrid(A, zero, x, multigrid(A));
    BOOST_TEST(full.converged);
    BOOST_TEST(full.iterations == 1u);   // full multigrid itself
    BOOST_TEST(std::all_of(x.begin(), x.end(), [](double v) { return v == 0.0; }));
    // A start that already meets the tolerance: no iteration, x unchanged, no preconditioning.
    std::vector<double> solved(n, 0.0);
    BOOST_TEST(pcg(A, solved, multigrid(A), {1e-10, 100}).converged);
    std::vector<double> again = solved;
    std::size_t calls = 0;
    const solve_report warm = pcg(A, again, counting_preconditioner{jacobi_preconditioner(A), &calls}, {1e-6, 100});
    BOOST_TEST(warm.converged);
    BOOST_TEST(warm.iterations == 0u);
    BOOST_TEST(calls == 0u);
    BOOST_TEST(again == solved);
    // Tolerances below 0 or NaN are rejected by every solver, by name.
    for (const double bad : {-1e-4, std::nan("")}) {
        const solve_options o{bad, 10};
        const std::string got = std::string("solve_options::tolerance must be at least 0, got ") + (std::isnan(bad) ? "nan" : "-0.0001");
        test::check_invalid([&] { pcg(A, x, jacobi_preconditioner(A), o); }, "pcg", got);
        test::check_invalid([&] { full_multigrid(A, A.rhs(), x, multigrid(A), o); }, "full_multigrid", got);
        test::check_invalid([&] { multigrid_solve(A, x, o); }, "multigrid", got);
        test::check_invalid([&] { jacobi(A, x, o); }, "jacobi", got);
        test::check_invalid([&] { sor(A, x, 1.5, o); }, "sor", got);
    }
    // An operator that is not positive definite (here -A): CG stops at once, reports that
    // it did not converge, and leaves x as it was instead of stepping by 0 / 0 or a
    // negative curvature.
    std::vector<buffer<double>> negated = A.weights();
    for (auto& w : negated)
        for (double& v : w) v = -v;
    buffer<double> negated_diagonal = A.diagonal();
    for (double& d : negated_diagonal) d = -d;
    const ar_system<double> minus_A = ar_system<double>::from_operator(A.height(), A.width(), A.offsets(), negated, negated_diagonal);
    std::vector<double> start(n, 1.0);
    const solve_report broken = pcg(minus_A, A.rhs(), start, jacobi_preconditioner(A), {1e-8, 50});
    BOOST_TEST(!broken.converged);
    BOOST_TEST(broken.iterations == 0u);
    BOOST_TEST(std::all_of(start.begin(), start.end(), [](double v) { return v == 1.0; }));
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
    // The coarser levels' sweeps by default: as many as the finest level's; the depth tasks take two.
    BOOST_TEST(multigrid<>::sweep_damping({}, multigrid_options{}.coarse_smoothing_steps) == multigrid<>::sweep_damping({}));
    BOOST_TEST(depth_options{}.multigrid.coarse_smoothing_steps == 2u);
    // Either smoother, 1 to 5 sweeps, as CG's preconditioner and alone, reaches the dense
    // solution (two levels: the coarser levels' sweeps are tested in test_multigrid).
    const problem p(21, 18, 8);
    for (auto [connectivity, radius] : {std::pair<int, std::size_t>{8, 1}, {4, 2}}) {
        const ar_system A = p.system(connectivity, radius);
        const auto exact = test::dense_solve(A);
        for (auto kind : {smoother::chebyshev, smoother::jacobi})
            for (std::size_t steps = 1; steps <= 5; ++steps) {
                const multigrid M(A, {.smoothing_steps = steps, .kind = kind});
                BOOST_TEST(M.levels() == 2u);
                for (bool alone : {false, true}) {
                    BOOST_TEST_CONTEXT("smoother " << int(kind) << ", " << steps << " sweeps, alone " << alone) {
                        std::vector<double> x(A.size(), 150.0);
                        const auto report = alone ? multigrid_solve(A, A.rhs(), x, M, {1e-10, 5000})
                                                  : pcg(A, x, M, {1e-10, 5000});
                        BOOST_TEST(report.converged);
                        double worst = 0;
                        for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - exact[i]));
                        BOOST_TEST(worst < 1e-6);
                    }
                }
            }
    }
    test::check_invalid([&] { multigrid<>::sweep_damping({.lower = 2, .upper = 1}); }, "multigrid",
                        "multigrid_options::lower must be finite, above 0 and below upper, got 2");
    test::check_invalid([&] { multigrid(p.system(8), {.smoothing_steps = 0}); }, "multigrid",
                        "multigrid_options::smoothing_steps must be at least 1, got 0");
    test::check_invalid([&] { multigrid(p.system(8), {.coarse_smoothing_steps = 0}); }, "multigrid",
                        "multigrid_options::coarse_smoothing_steps must be at least 1, got 0");
    test::check_invalid([&] { multigrid<>::sweep_damping({}, 0); }, "multigrid", "at least 1 smoothing step, got 0");
    test::check_invalid([&] { multigrid(p.system(8), {.damping = 2.5}); }, "multigrid",
                        "multigrid_options::damping must be in (0, 2], got 2.5");
    test::check_invalid([&] { multigrid(p.system(8), {.correction_scale = std::nan("")}); }, "multigrid",
                        "multigrid_options::correction_scale must be finite and positive, got nan");
}

BOOST_AUTO_TEST_CASE(single_precision_systems) {
    // ar_system<float>: the same weights rounded to float, every solver to a float-sized
    // tolerance (float SOR stalls near 2e-5 on the 48-neighbour stencil), against the dense
    // solve of the double system.
    const problem p(19, 23, 5);
    for (auto [connectivity, radius] : stencils) {
        const ar_system<> A = p.system(connectivity, radius);
        const ar_system<float> F(p.guide, grid_stencil{p.H, p.W, connectivity, radius}, color_weights(p.H, p.W, 3, 40.0),
                                 p.xhat, p.alpha);
        for (std::size_t o = 0; o < A.offsets().size(); ++o)
            for (std::size_t i = 0; i < A.size(); ++i)
                BOOST_TEST(std::abs(F.weights()[o][i] - A.weights()[o][i]) <= 1e-7 * A.weights()[o][i]);
        const auto exact = test::dense_solve(A);
        const solve_options options{1e-4, 20000};
        const auto check = [&, connectivity = connectivity, radius = radius](const solve_report& report, const std::vector<float>& x) {
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
    other.set_rhs(buffer<double>(b.begin(), b.end()));
    const auto exact = test::dense_solve(other);
    const solve_options tight{1e-10, 20000};
    const multigrid M(A);
    for (int method = 0; method < 4; ++method) {
        std::vector<double> x(A.size(), 0.0);
        const auto report = method == 0   ? pcg(A, other.rhs(), x, M, tight)
                            : method == 1 ? multigrid_solve(A, other.rhs(), x, M, tight)
                            : method == 2 ? sor(A, other.rhs(), x, 1.5, tight)
                                          : jacobi(A, other.rhs(), x, tight);
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
    const std::vector<double> rhs(A.rhs().begin(), A.rhs().end());
    pcg(A, rhs, v, M);
    pcg(A, A.rhs(), b, M);
    pcg(A, std::span<const double>(rhs), std::span<double>(t.data(), t.size()), M);
    BOOST_TEST(std::equal(v.begin(), v.end(), b.begin()));
    BOOST_TEST(std::equal(v.begin(), v.end(), t.begin()));
    std::vector<double> z(A.size()), short_r(A.size() - 1);
    test::check_invalid([&] { M(short_r, z); }, "multigrid", "r has 142 entries for a system of 143");
    test::check_invalid([&] { M(rhs, short_r); }, "multigrid", "z has 142 entries for a system of 143");
    test::check_invalid([&] { (void)A.apply(short_r); }, "ar_system::apply", "x has 142 entries for a system of 143");
    test::check_invalid([&] { (void)A.jacobi_step(short_r); }, "ar_system::jacobi_step", "x has 142");
    ar_system other = A;
    test::check_invalid([&] { other.set_rhs(buffer<double>(A.size() - 1, 1.0)); }, "ar_system::set_rhs", "b has 142 entries for a system of 143");
    buffer<double> with_nan(A.size(), 1.0);
    with_nan[5] = std::nan("");
    test::check_invalid([&] { other.set_rhs(with_nan); }, "ar_system::set_rhs", "b must be finite", "at pixel 5");
    BOOST_TEST(std::equal(other.rhs().begin(), other.rhs().end(), A.rhs().begin(), A.rhs().end()));   // unchanged
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
            const ar_system<float> A(p.guide, grid_stencil{H, W, connectivity, radius}, color_weights(H, W, 3, 40.0),
                                     p.xhat, p.alpha);
            const auto [first, stop] = A.vector_zone();
            BOOST_TEST((first % ar_system<float>::lanes == 0 || first == A.size()));   // or no batch at all
            BOOST_TEST((stop - first) % ar_system<float>::lanes == 0u);
            if (stop > first) {   // every batch's neighbours lie inside the image's flat range
                BOOST_TEST(first >= A.reach_in_pixels());
                BOOST_TEST(stop + A.reach_in_pixels() <= A.size());
            }
            BOOST_TEST(reinterpret_cast<std::uintptr_t>(A.diagonal().data()) % 64 == 0u);
        }
}

BOOST_AUTO_TEST_CASE(threads_do_not_change_results) {
    // Each pass splits the pixels into chunks; every pixel is computed the same way.
    for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 4}, {41, 53}}) {
        const problem p(H, W, unsigned(H + W));
        const ar_system one = p.system(8, 2);
        const execution::parallel_policy three{3};
        const auto x = test::random_tensor<double, 1>({H * W}, 17);
        const std::vector<double> xv(x.begin(), x.end());
        BOOST_TEST(one.apply(xv) == one.apply(three, xv));
        BOOST_TEST(one.jacobi_step(xv) == one.jacobi_step(three, xv));
        std::vector<double> x1(H * W, 150.0), x3 = x1;
        const multigrid M(one);
        pcg(one, x1, M);
        pcg(three, one, x3, M);
        BOOST_TEST(x1 == x3);
    }
}

BOOST_AUTO_TEST_CASE(apply_and_dot_is_apply_and_its_inner_product) {
    // Sizes below and above one 65536-pixel chunk of the inner product, on 1 and 3 threads.
    for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 5}, {40, 41}, {401, 397}}) {
        const problem p(H, W, unsigned(H * 3 + W));
        for (auto [connectivity, radius] : {std::pair<int, std::size_t>{8, 1}, {4, 2}}) {
            const ar_system one = p.system(connectivity, radius);
            const auto x = test::random_tensor<double, 1>({H * W}, 23, -1, 1);
            const std::vector<double> xv(x.begin(), x.end());
            const buffer<double> expected = one.apply(xv);
            double expected_dot = 0;
            for (std::size_t i = 0; i < xv.size(); ++i) expected_dot += xv[i] * expected[i];
            buffer<double> y(H * W), y3(H * W);
            const double dot = one.apply_and_dot(execution::seq, xv.data(), y.data());
            BOOST_TEST(y == expected);
            BOOST_TEST(std::abs(dot - expected_dot) <= 1e-12 * std::max(1.0, std::abs(expected_dot)));
            BOOST_TEST(one.apply_and_dot(execution::parallel_policy{3}, xv.data(), y3.data()) == dot);   // bit for bit
            BOOST_TEST(y3 == y);
        }
    }
    // In float, the inner product still accumulates in double.
    const problem p(64, 70, 5);
    const ar_system<float> A(p.guide, grid_stencil{64, 70, 8}, color_weights(64, 70, 3, 40.0), p.xhat, p.alpha);
    const std::vector<float> x(64 * 70, 1.0f);
    std::vector<float> y(x.size());
    const double dot = A.apply_and_dot(execution::seq, x.data(), y.data());
    double expected = 0;
    for (float v : y) expected += double(v);
    BOOST_TEST(std::abs(dot - expected) <= 1e-6 * std::abs(expected));
}

BOOST_AUTO_TEST_CASE(pipelined_passes_equal_separate_ones) {
    // The fused passes follow each other in chunks of at least 4096 pixels, in bands on
    // several threads: images smaller and larger than a chunk, every stencil, both
    // precisions, one to three threads, two, three and four passes, the first from zero or
    // not, bit for bit.
    const auto check = [](auto tag, std::size_t H, std::size_t W, int connectivity, std::size_t radius) {
        using T = decltype(tag);
        const problem p(H, W, unsigned(H * W + radius));
        const ar_system<T> A(p.guide, grid_stencil{H, W, connectivity, radius}, color_weights(H, W, 3, 40.0), p.xhat,
                             p.alpha);
        const auto z0 = test::random_tensor<T, 1>({H * W}, 50, 100, 200);
        const auto r = test::random_tensor<T, 1>({H * W}, 51, -1, 1);
        const std::vector<T> z(z0.begin(), z0.end());
        std::vector<T> once(H * W), twice(H * W), work(H * W);
        A.relax(execution::seq, r.data(), z.data(), once.data(), 0.8);
        A.relax(execution::seq, r.data(), once.data(), twice.data(), 0.8);
        std::vector<T> residual(H * W);
        A.residual(execution::seq, r.data(), once.data(), residual.data());
        std::vector<T> first(H * W), second(H * W), third(H * W), third_residual(H * W);
        A.relax(execution::seq, r.data(), z.data(), first.data(), 0.6);
        A.relax(execution::seq, r.data(), first.data(), second.data(), 1.9);
        A.relax(execution::seq, r.data(), second.data(), third.data(), 0.9);
        A.residual(execution::seq, r.data(), third.data(), third_residual.data());
        // From zero: a sweep from a z of zeros, another and the residual.
        std::vector<T> from_zero(H * W), then(H * W), then_residual(H * W);
        A.relax(execution::seq, r.data(), std::vector<T>(H * W, T(0)).data(), from_zero.data(), 0.7);
        A.relax(execution::seq, r.data(), from_zero.data(), then.data(), 1.3);
        A.residual(execution::seq, r.data(), then.data(), then_residual.data());
        for (int threads : {1, 2, 3}) {   // bands with seams when the image is long enough
            const execution::parallel_policy policy{threads};
            std::vector<T> z2(z0.begin(), z0.end()), swept(z0.begin(), z0.end()), fused_work(H * W);
            using stage = typename ar_system<T>::sweep_stage;
            const stage two_sweeps[] = {{0.8}, {0.8}}, sweep_and_residual[] = {{0.8}, {0, true}};
            A.sweeps(policy, r.data(), z2.data(), work.data(), two_sweeps);
            A.sweeps(policy, r.data(), swept.data(), fused_work.data(), sweep_and_residual);
            // Four stages, three sweeps of different damping and the residual: they alternate
            // between work and z, so the third sweep ends in work and the residual in z.
            const stage four[] = {{0.6}, {1.9}, {0.9}, {0, true}};
            std::vector<T> z4(z0.begin(), z0.end()), work4(H * W);
            A.sweeps(policy, r.data(), z4.data(), work4.data(), four);
            // A first sweep from zero reads neither z (NaN here) nor the weights.
            const stage zero_first[] = {{0.7, false, true}, {1.3}, {0, true}};
            std::vector<T> z3(H * W, std::numeric_limits<T>::quiet_NaN()), work3(H * W);
            A.sweeps(policy, r.data(), z3.data(), work3.data(), zero_first);
            BOOST_TEST_CONTEXT(H << " x " << W << ", connectivity " << connectivity << ", radius " << radius
                                 << ", threads " << threads) {
                BOOST_TEST(z2 == twice);
                BOOST_TEST(fused_work == once);
                BOOST_TEST(swept == residual);
                BOOST_TEST(work4 == third);
                BOOST_TEST(z4 == third_residual);
                BOOST_TEST(z3 == then);
                BOOST_TEST(work3 == then_residual);
            }
        }
    };
    for (auto [connectivity, radius] : stencils)
        for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 37}, {9, 7}, {70, 90}, {131, 67}, {300, 41}}) {
            check(double{}, H, W, connectivity, radius);
            check(float{}, H, W, connectivity, radius);
        }
}

/// A similarity summed over channels whose logit is NaN where the channels differ (the square
/// root of -|difference|) and 0 where they are equal.
struct nan_where_channels_differ {
    using weight_function = exp_weight;
    using traits = similarity_traits<channel_sum_form, symmetric>;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return channel_sum_logit(*this, q, k); }
    template <class V>
    V channel_logit(V difference) const { return xsimd::sqrt(-xsimd::abs(difference)); }
};
static_assert(nonlocal::detail::channel_sum_similarity<nan_where_channels_differ>);

BOOST_AUTO_TEST_CASE(bad_input) {
    const xt::xtensor<float, 2> guide = xt::zeros<float>({4, 5}), none = xt::zeros<float>({4, 5});
    const xt::xtensor<float, 2> some = xt::ones<float>({4, 5});
    const auto some3 = [](std::size_t width) { return xt::xtensor<float, 2>(xt::ones<float>({std::size_t(3), width})); };
    const xt::xtensor<double, 2> bad_alpha = -xt::ones<double>({4, 5});
    test::check_invalid([&] { ar_system(guide, grid_stencil{4, 5, 4}, color_weights(4, 5, 1, 10.0), none, bad_alpha); },
                        "alpha must be finite and >= 0");
    test::check_invalid([&] { ar_system(guide, grid_stencil{4, 5, 6}, color_weights(4, 5, 1, 10.0), none, none); },
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
    // A guide that is not finite, a floor that is negative or NaN, and a similarity whose
    // kernel gives NaN on some edges (here where the guide's values differ), on both the
    // per-pixel and the per-channel paths of the weights.
    xt::xtensor<float, 2> nan_guide = guide;
    nan_guide(3, 1) = std::nanf("");
    test::check_invalid([&] { ar_system(nan_guide, grid_stencil{4, 5, 4}, laplacian_distance(3.0), some, some); },
                        "ar_system", "guide holds a value that is not finite", "pixel (3, 1), channel 0");
    test::check_invalid([&] { ar_system(guide, grid_stencil{4, 5, 4}, laplacian_distance(3.0), some, some, -1e-3); },
                        "ar_system", "min_weight must be finite and >= 0", "-0.001");
    test::check_invalid([&] { ar_system(guide, grid_stencil{4, 5, 4}, laplacian_distance(3.0), some, some, std::nan("")); },
                        "ar_system", "min_weight must be finite and >= 0, got nan");
    xt::xtensor<float, 2> step = guide;
    for (std::size_t r = 0; r < 4; ++r) step(r, 3) = step(r, 4) = 1.f;   // columns 3 and 4 differ from column 2
    const auto nan_where_different = make_similarity([](auto q, auto k) {
        return q[0] == k[0] ? 0.0 : std::nan("");
    });
    test::check_invalid([&] { ar_system(step, grid_stencil{4, 5, 8}, nan_where_different, some, some, 1e-3); },
                        "ar_system", "the edge from pixel (0, 2) to its neighbour at offset (0, 1) has the weight nan",
                        "edge weights must be finite and >= 0");
    const auto huge = make_similarity([](auto, auto) { return 1e38; });   // weights 2e38: finite in float, their sums not
    test::check_invalid([&] { ar_system<float>(guide, grid_stencil{4, 5, 8}, huge, some, some); }, "ar_system",
                        "the edge weights of pixel (0, 0) and its alpha add up to inf, which is not finite");
    // The per-channel path, the NaN edge in a SIMD batch (column 2 of 40, on every architecture)
    // or in the scalar tail of a row (column 19 of 21 with 8 or 16 lanes).
    for (const auto& [width, column] : {std::pair<std::size_t, std::size_t>{40, 2}, {21, 19}, {5, 3}}) {
        xt::xtensor<float, 2> bump = xt::zeros<float>({std::size_t(3), width});
        bump(1, column) = 1.f;
        const auto at = "the edge from pixel (1, " + std::to_string(column - 1) + ") to its neighbour at offset (0, 1)";
        test::check_invalid([&, width = width] { ar_system(bump, grid_stencil{3, width, 8}, nan_where_channels_differ{}, some3(width), some3(width)); },
                            "ar_system", at, "edge weights must be finite and >= 0");
        const buffer<float> a(3 * width, 1.f), b(3 * width, 0.f);
        const auto planes = nonlocal::detail::to_planes<float>(bump, "test", "guide");
        test::check_invalid([&, width = width] { ar_system<float>(planes, grid_stencil{3, width, 8}, nan_where_channels_differ{}, a, b, 1e-3); },
                            "ar_system", at, "has the weight", "nan; edge weights");
    }
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
    BOOST_TEST(direct.weights() == from_observations.weights());
    BOOST_TEST(direct.alpha() == from_observations.alpha());
    BOOST_TEST(direct.rhs() == from_observations.rhs());
    BOOST_TEST(direct.diagonal() == from_observations.diagonal());
}

BOOST_AUTO_TEST_CASE(reweight_keeps_the_diagonal_in_step) {
    // Weights changed through reweight give the system built from those weights, its diagonal
    // alpha + the new weights' sums; on a 3 x 3 grid with 4 neighbours, by hand.
    const std::vector<stencil_offset> right_and_down{{0, 1}, {1, 0}};
    const buffer<double> alpha{1, 0, 0, 0, 2, 0, 0, 0, 1};
    ar_system<double> A(3, 3, right_and_down, {buffer<double>(9, 1.0), buffer<double>(9, 1.0)}, alpha,
                        buffer<double>(9, 0.0));
    BOOST_TEST(A.diagonal()[8] == 1.0 + 1.0 + 1.0);    // (2, 2): left and up, none beyond the grid
    A.reweight([](std::size_t d, std::span<double> w) {
        for (std::size_t i = 0; i < w.size(); ++i) w[i] = d == 0 ? 0.5 : 2.0;
    });
    // Pixel (1, 1) has W = 0.5, 0.5 (left and right), 2, 2 (up and down), plus alpha 2; the
    // weights of edges leaving the grid stay 0.
    BOOST_TEST(A.diagonal()[4] == 7.0);
    BOOST_TEST(A.diagonal()[0] == 1.0 + 0.5 + 2.0);    // right and down
    BOOST_TEST(A.diagonal()[8] == 1.0 + 0.5 + 2.0);    // left and up
    BOOST_TEST(A.diagonal()[2] == 0.5 + 2.0);          // left and down
    BOOST_TEST(A.weights()[0][2] == 0.0);              // (0, 2) has no right neighbour
    BOOST_TEST(A.weights()[1][7] == 0.0);              // (2, 1) has none below
    const ar_system<double> built(3, 3, right_and_down, A.weights(), alpha, buffer<double>(9, 0.0));
    BOOST_TEST(A.diagonal() == built.diagonal());
    test::check_invalid([&] { A.reweight([](std::size_t, std::span<double> w) { w[0] = std::nan(""); }); }, "ar_system",
                        "the edge from pixel (0, 0)", "nan");
}

BOOST_AUTO_TEST_SUITE_END()
