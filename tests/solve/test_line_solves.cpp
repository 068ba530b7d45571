// solve/line_solves.hpp: the line solves of one stencil direction against each line's
// system written out and solved in double (lines found on the grid), by hand on a line of
// three pixels, their invariants (constants, the alpha-weighted sum, positivity), shared
// eliminations and threads, the separable smoothing as its schedule of line solves, and
// bad input.
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_line_solves)

namespace {

/// A system on an H x W grid with the forward directions of `stencil`, random weights in
/// [0, 2] (0 where the neighbour lies outside) and alpha in [0.2, 1.2], in precision T.
template <class T>
ar_system<T> random_system(std::size_t H, std::size_t W, const grid_stencil& stencil, unsigned seed) {
    const auto offsets = stencil.forward_offsets();
    std::vector<buffer<T>> weights;
    for (std::size_t d = 0; d < offsets.size(); ++d) {
        const auto w = test::random_tensor<double, 2>({H, W}, seed + unsigned(d), 0, 2);
        buffer<T> wd(H * W, T(0));
        for (std::size_t r = 0; r < H; ++r)
            for (std::size_t c = 0; c < W; ++c) {
                const std::ptrdiff_t rr = std::ptrdiff_t(r) + offsets[d].dy, cc = std::ptrdiff_t(c) + offsets[d].dx;
                if (rr < std::ptrdiff_t(H) && cc >= 0 && cc < std::ptrdiff_t(W)) wd[r * W + c] = T(w(r, c));
            }
        weights.push_back(std::move(wd));
    }
    const auto a = test::random_tensor<double, 2>({H, W}, seed + 50, 0.2, 1.2);
    return ar_system<T>(H, W, offsets, std::move(weights), buffer<T>(a.begin(), a.end()), buffer<T>(H * W, T(0)));
}

/// (diag(alpha) + scale L_d)^-1 diag(alpha) x in double, line by line: each line of
/// direction d walked on the grid from the pixel whose predecessor lies outside, its
/// system (alpha on the diagonal plus scale times the Laplacian of the line's edges)
/// written out in full and solved by Gaussian elimination.
template <class T>
std::vector<double> literal_line_solution(const ar_system<T>& A, std::size_t d, double scale, std::span<const T> x) {
    const auto [dy, dx] = A.offsets()[d];
    const auto H = std::ptrdiff_t(A.height()), W = std::ptrdiff_t(A.width());
    const auto inside = [&](std::ptrdiff_t r, std::ptrdiff_t c) { return r >= 0 && r < H && c >= 0 && c < W; };
    std::vector<double> y(A.size());
    for (std::ptrdiff_t r0 = 0; r0 < H; ++r0)
        for (std::ptrdiff_t c0 = 0; c0 < W; ++c0) {
            if (inside(r0 - dy, c0 - dx)) continue;   // not the first pixel of its line
            std::vector<std::size_t> line;
            for (std::ptrdiff_t r = r0, c = c0; inside(r, c); r += dy, c += dx) line.push_back(std::size_t(r * W + c));
            const std::size_t L = line.size();
            std::vector<double> M(L * L, 0.0), b(L);
            for (std::size_t k = 0; k < L; ++k)
                M[k * L + k] = double(A.alpha()[line[k]]), b[k] = double(A.alpha()[line[k]]) * double(x[line[k]]);
            for (std::size_t k = 0; k + 1 < L; ++k) {   // the edge from line[k] to line[k + 1]
                const double w = scale * double(A.weights()[d][line[k]]);
                M[k * L + k] += w, M[(k + 1) * L + k + 1] += w, M[k * L + k + 1] -= w, M[(k + 1) * L + k] -= w;
            }
            for (std::size_t k = 0; k < L; ++k)   // no pivoting: the matrix is diagonally dominant
                for (std::size_t i = k + 1; i < L; ++i) {
                    const double f = M[i * L + k] / M[k * L + k];
                    for (std::size_t j = k; j < L; ++j) M[i * L + j] -= f * M[k * L + j];
                    b[i] -= f * b[k];
                }
            for (std::size_t k = L; k-- > 0;) {
                double sum = b[k];
                for (std::size_t j = k + 1; j < L; ++j) sum -= M[k * L + j] * y[line[j]];
                y[line[k]] = sum / M[k * L + k];
            }
        }
    return y;
}

const std::vector<std::pair<int, std::size_t>> stencils = {{4, 1}, {8, 1}, {8, 2}};

}  // namespace

BOOST_AUTO_TEST_CASE(one_direction_against_a_literal_solve_in_double) {
    // Every direction of 4- and 8-neighbour stencils and of the radius-2 square, on sizes
    // around every vector width (lines across the lanes need W > lanes), in both precisions.
    const auto run = [](auto zero) {
        using T = decltype(zero);
        unsigned seed = 10;
        for (std::size_t H : {1, 2, 3, 9, 17})
            for (std::size_t W : {1, 2, 3, 5, 8, 9, 16, 17, 19})
                for (const auto& [connectivity, radius] : stencils) {
                    const ar_system<T> A = random_system<T>(H, W, grid_stencil{H, W, connectivity, radius}, seed += 7);
                    for (std::size_t d = 0; d < A.offsets().size(); ++d)
                        for (double scale : {0.0, 0.7, 5.0}) {
                            BOOST_TEST_CONTEXT(H << " x " << W << ", stencil " << connectivity << "/" << radius
                                                 << ", direction (" << A.offsets()[d].dy << ", " << A.offsets()[d].dx
                                                 << "), scale " << scale << ", " << sizeof(T) * 8 << " bit") {
                                const auto x0 = test::random_tensor<double, 2>({H, W}, seed + 99, 50, 150);
                                buffer<T> x(x0.begin(), x0.end());
                                const auto expected = literal_line_solution<T>(A, d, scale, x);
                                line_solve(A, d, scale, std::span<T>(x));
                                const double tolerance = sizeof(T) == 4 ? 2e-4 : 1e-10;
                                for (std::size_t i = 0; i < A.size(); ++i)
                                    BOOST_TEST(std::abs(double(x[i]) - expected[i]) <= tolerance * 150);
                            }
                        }
                }
    };
    run(0.0f);
    run(0.0);
}

BOOST_AUTO_TEST_CASE(wide_rows_across_the_interleaving_tiles) {
    // Horizontal lines are interleaved in tiles of 64 columns: rows of one tile, a tile and a
    // column, and two tiles and a part, in one strip and across two (17 rows > 16 lanes).
    const auto run = [](auto zero) {
        using T = decltype(zero);
        unsigned seed = 500;
        for (std::size_t H : {1, 17})
            for (std::size_t W : {64, 65, 131}) {
                const ar_system<T> A = random_system<T>(H, W, grid_stencil{H, W, 8, 2}, seed += 7);
                for (std::size_t d = 0; d < A.offsets().size(); ++d) {
                    if (A.offsets()[d].dy != 0) continue;
                    BOOST_TEST_CONTEXT(H << " x " << W << ", direction (0, " << A.offsets()[d].dx << "), "
                                         << sizeof(T) * 8 << " bit") {
                        const auto x0 = test::random_tensor<double, 2>({H, W}, seed + 99, 50, 150);
                        buffer<T> x(x0.begin(), x0.end());
                        const auto expected = literal_line_solution<T>(A, d, 0.7, x);
                        line_solve(A, d, 0.7, std::span<T>(x));
                        const double tolerance = sizeof(T) == 4 ? 2e-4 : 1e-10;
                        for (std::size_t i = 0; i < A.size(); ++i)
                            BOOST_TEST(std::abs(double(x[i]) - expected[i]) <= tolerance * 150);
                    }
                }
            }
    };
    run(0.0f);
    run(0.0);
}

BOOST_AUTO_TEST_CASE(a_line_of_three_by_hand) {
    // Weights 1 and 2, alpha 1, scale 1, x = (3, 0, 0):
    //   [2 -1 0; -1 4 -2; 0 -2 3] y = (3, 0, 0)  gives  y = (24, 9, 6) / 13,
    // along a row, a column and a diagonal alike.
    const std::vector<double> expected = {24.0 / 13, 9.0 / 13, 6.0 / 13};
    const auto check = [&](std::size_t H, std::size_t W, stencil_offset offset, std::vector<std::size_t> line) {
        BOOST_TEST_CONTEXT(H << " x " << W << ", direction (" << offset.dy << ", " << offset.dx << ")") {
            buffer<double> w(H * W, 0.0), alpha(H * W, 1.0), x(H * W, 0.0);
            w[line[0]] = 1, w[line[1]] = 2, x[line[0]] = 3;
            const ar_system<double> A(H, W, {offset}, {w}, alpha, buffer<double>(H * W, 0.0));
            line_solve(A, 0, 1.0, std::span<double>(x));
            for (std::size_t k = 0; k < 3; ++k) BOOST_TEST(std::abs(x[line[k]] - expected[k]) < 1e-14);
        }
    };
    check(1, 3, {0, 1}, {0, 1, 2});
    check(3, 1, {1, 0}, {0, 1, 2});
    check(3, 3, {1, 1}, {0, 4, 8});
    check(3, 3, {1, -1}, {2, 4, 6});
}

BOOST_AUTO_TEST_CASE(constants_sums_and_signs) {
    // A constant stays constant (L_d 1 = 0); 1^T (diag(alpha) + s L_d) = alpha^T keeps the
    // alpha-weighted sum; the inverse of that M-matrix keeps non-negative vectors non-negative.
    for (const auto& [connectivity, radius] : stencils) {
        const std::size_t H = 13, W = 21;
        const ar_system<float> A = random_system<float>(H, W, grid_stencil{H, W, connectivity, radius}, 3);
        for (std::size_t d = 0; d < A.offsets().size(); ++d) {
            BOOST_TEST_CONTEXT("stencil " << connectivity << "/" << radius << ", direction " << d) {
                buffer<float> flat(A.size(), 42.f);
                line_solve(A, d, 3.0, std::span<float>(flat));
                for (float v : flat) BOOST_TEST(std::abs(v - 42.f) < 1e-4f);
                const auto x0 = test::random_tensor<double, 2>({H, W}, 4, 0, 1);
                buffer<float> x(x0.begin(), x0.end());
                x[5] = 0, x[6] = 0;
                double before = 0, after = 0;
                for (std::size_t i = 0; i < A.size(); ++i) before += double(A.alpha()[i]) * x[i];
                line_solve(A, d, 3.0, std::span<float>(x));
                for (std::size_t i = 0; i < A.size(); ++i) {
                    after += double(A.alpha()[i]) * x[i];
                    BOOST_TEST(x[i] >= 0.f);
                }
                BOOST_TEST(std::abs(after - before) < 1e-5 * before);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(vectors_share_the_elimination_and_threads_change_nothing) {
    // Vectors solved together (two at a time, the third alone) give, bit for bit, what each
    // gives alone; so do 2 and 3 threads (horizontal strips in parallel).
    const std::size_t H = 37, W = 29;
    ar_system<float> A = random_system<float>(H, W, grid_stencil{H, W, 8}, 5);
    std::vector<buffer<float>> alone;
    for (unsigned k = 0; k < 3; ++k) {
        const auto x = test::random_tensor<double, 2>({H, W}, 20 + k, -5, 5);
        alone.emplace_back(x.begin(), x.end());
    }
    std::vector<buffer<float>> together = alone;
    for (std::size_t d = 0; d < A.offsets().size(); ++d)
        for (auto& x : alone) line_solve(A, d, 2.0, std::span<float>(x));
    for (int threads : {1, 2, 3}) {
        std::vector<buffer<float>> xs = together;
        const std::vector<std::span<float>> spans(xs.begin(), xs.end());
        for (std::size_t d = 0; d < A.offsets().size(); ++d)
            line_solve(execution::parallel_policy{threads}, A, d, 2.0, std::span<const std::span<float>>(spans));
        for (std::size_t k = 0; k < 3; ++k) BOOST_TEST(xs[k] == alone[k]);
    }
}

BOOST_AUTO_TEST_CASE(empty_and_single_pixel_grids) {
    // One pixel has no edge: y = x. An empty grid has nothing to solve.
    ar_system<float> one = random_system<float>(1, 1, grid_stencil{1, 1, 8}, 6);
    buffer<float> x(1, 7.5f);
    for (std::size_t d = 0; d < one.offsets().size(); ++d) line_solve(one, d, 4.0, std::span<float>(x));
    separable_smooth(one, std::span<float>(x));
    BOOST_TEST(x[0] == 7.5f);
    const ar_system<double> none(0, 5, {stencil_offset{0, 1}, stencil_offset{1, 0}}, {buffer<double>(), buffer<double>()},
                                 buffer<double>(), buffer<double>());
    buffer<double> nothing;
    line_solve(none, 0, 1.0, std::span<double>(nothing));
    separable_smooth(none, std::span<double>(nothing));
    BOOST_TEST(nothing.empty());
}

BOOST_AUTO_TEST_CASE(separable_smooth_is_its_schedule_of_line_solves) {
    // FGS's schedule: pass t of T scales by 1.5 strength 4^(T-1-t) / (4^T - 1).
    BOOST_TEST(std::abs(separable_scale({1, 2.0}, 0) - 1.0) < 1e-15);
    BOOST_TEST(std::abs(separable_scale({2, 3.0}, 0) - 1.2) < 1e-15);
    BOOST_TEST(std::abs(separable_scale({2, 3.0}, 1) - 0.3) < 1e-15);
    for (std::size_t passes : {1, 2, 3, 5}) {
        double sum = 0;
        for (std::size_t t = 0; t < passes; ++t) sum += separable_scale({passes, 4.0}, t);
        BOOST_TEST(std::abs(sum - 2.0) < 1e-12);
    }
    // The smoothing is a line solve per pass and direction, in order, with those scales.
    for (const auto& [connectivity, radius] : stencils) {
        const std::size_t H = 18, W = 23;
        const ar_system<double> A = random_system<double>(H, W, grid_stencil{H, W, connectivity, radius}, 7);
        const auto x0 = test::random_tensor<double, 2>({H, W}, 8, 0, 100);
        buffer<double> smoothed(x0.begin(), x0.end()), by_hand = smoothed;
        const separable_options o{3, 6.0};
        separable_smooth(A, std::span<double>(smoothed), o);
        for (std::size_t t = 0; t < o.passes; ++t)
            for (std::size_t d = 0; d < A.offsets().size(); ++d) line_solve(A, d, separable_scale(o, t), std::span<double>(by_hand));
        BOOST_TEST(smoothed == by_hand);
    }
}

BOOST_AUTO_TEST_CASE(bad_input) {
    const std::size_t H = 4, W = 5;
    const ar_system<float> A = random_system<float>(H, W, grid_stencil{H, W, 8}, 9);
    buffer<float> x(H * W, 1.f), short_x(H * W - 1, 1.f);
    test::check_invalid([&] { line_solve(A, 4, 1.0, std::span<float>(x)); }, "line_solve", "direction 4 of a stencil of 4");
    test::check_invalid([&] { line_solve(A, 0, -1.0, std::span<float>(x)); }, "line_solve", "scale must be finite and >= 0",
                        "-1");
    test::check_invalid([&] { line_solve(A, 0, std::nan(""), std::span<float>(x)); }, "line_solve", "got nan");
    test::check_invalid([&] { line_solve(A, 0, 1.0, std::span<float>(short_x)); }, "line_solve", "x has 19 entries",
                        "system of 20");
    test::check_invalid([&] { separable_smooth(A, std::span<float>(x), {0, 1.0}); }, "separable_smooth",
                        "separable_options::passes must be at least 1, got 0");
    test::check_invalid([&] { separable_smooth(A, std::span<float>(x), {2, 0.0}); }, "separable_smooth",
                        "separable_options::strength must be finite and positive, got 0");
    test::check_invalid([&] { separable_smooth(A, std::span<float>(x), {0, std::numeric_limits<double>::infinity()}); },
                        "separable_smooth", "separable_options::passes must be at least 1, got 0; separable_options::strength must be finite and positive, got inf");
    // A pixel without a data term leaves its line's system singular where it holds no other.
    buffer<float> alpha = A.alpha();
    alpha[7] = 0;
    const ar_system<float> unobserved(A.height(), A.width(), A.offsets(), A.weights(), alpha, A.rhs());
    test::check_invalid([&] { line_solve(unobserved, 1, 1.0, std::span<float>(x)); }, "line_solve", "alpha > 0",
                        "got 0", "at pixel (1, 2)");
    test::check_invalid([&] { separable_smooth(unobserved, std::span<float>(x)); }, "separable_smooth", "alpha > 0");
    // Negative weights (as Galerkin coarse systems may hold) can make a pivot vanish.
    ar_system<float> negative = A;
    negative.reweight([](std::size_t d, std::span<float> w) {
        if (d == 2) w[3] = -0.5f;
    });
    test::check_invalid([&] { line_solve(negative, 2, 1.0, std::span<float>(x)); }, "line_solve", "weights >= 0",
                        "-0.5", "direction 2 at pixel 3");
    line_solve(negative, 1, 1.0, std::span<float>(x));   // other directions are fine
    test::check_invalid([&] { separable_smooth(negative, std::span<float>(x)); }, "separable_smooth", "weights >= 0");
}

BOOST_AUTO_TEST_SUITE_END()
