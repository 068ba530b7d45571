// The AR system and its solvers on every architecture the build allows (`test::for_each_arch`),
// against the double-precision forms of the same system: its CSR matrix (`assemble`) and a
// dense direct solve.
#include <cmath>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"
#include "support/systems.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_solve_archs)

namespace {
/// Grids of awkward sizes: single pixels, lines, widths around the SIMD widths.
const std::vector<std::pair<std::size_t, std::size_t>> grids = {{1, 1}, {1, 17}, {9, 1}, {7, 9}, {5, 33}, {20, 16}};
const std::vector<std::pair<int, std::size_t>> stencils = {{4, 1}, {8, 1}, {8, 2}};

/// A random guide with observations on about a third of the pixels, or on all of them.
struct problem {
    std::size_t H, W;
    xt::xtensor<double, 3> guide;
    xt::xtensor<double, 2> xhat, alpha;
    problem(std::size_t h, std::size_t w, unsigned seed, bool everywhere = false) : H(h), W(w) {
        guide = test::random_tensor<double, 3>({h, w, 3}, seed, 0, 60);
        xhat = test::random_tensor<double, 2>({h, w}, seed + 1, 100, 200);
        const auto u = test::random_tensor<double, 2>({h, w}, seed + 2, 0, 1);
        alpha = xt::where(everywhere || u < 0.33, 0.5, 0.0);
        alpha(0, 0) = 0.5;
    }
    template <class T = double, class Arch = default_arch>
    ar_system<T, Arch> system(int connectivity, std::size_t radius) const {
        return ar_system<T, Arch>(guide, grid_stencil{H, W, connectivity, radius}, color_weights(H, W, 3, 40.0), xhat,
                                  alpha);
    }
};

/// y = A x from the CSR matrix, in double, and the size of each row's terms, sum_j |a_ij x_j|
/// (the scale of its rounding error).
std::pair<std::vector<double>, std::vector<double>> csr_product(const csr_matrix& m, const std::vector<double>& x) {
    std::vector<double> y(x.size(), 0.0), size(x.size(), 0.0);
    for (std::size_t i = 0; i + 1 < m.row_offsets.size(); ++i)
        for (std::size_t t = m.row_offsets[i]; t < m.row_offsets[i + 1]; ++t) {
            y[i] += m.values[t] * x[m.columns[t]];
            size[i] += std::abs(m.values[t] * x[m.columns[t]]);
        }
    return {y, size};
}

/// One Jacobi sweep from the CSR matrix, in double: x_i <- (b_i - sum_{j != i} a_ij x_j) / a_ii.
std::vector<double> csr_jacobi(const csr_matrix& m, const std::vector<double>& b, const std::vector<double>& x) {
    std::vector<double> y(x.size(), 0.0);
    for (std::size_t i = 0; i + 1 < m.row_offsets.size(); ++i) {
        double off_diagonal = 0, diagonal = 0;
        for (std::size_t t = m.row_offsets[i]; t < m.row_offsets[i + 1]; ++t) {
            if (m.columns[t] == i) diagonal = m.values[t];
            else off_diagonal += m.values[t] * x[m.columns[t]];
        }
        y[i] = diagonal > 0 ? (b[i] - off_diagonal) / diagonal : 0.0;
    }
    return y;
}

template <class T>
std::vector<double> as_double(std::span<const T> x) {
    return std::vector<double>(x.begin(), x.end());
}
}  // namespace

BOOST_AUTO_TEST_CASE(apply_and_jacobi_step_match_the_matrix) {
    test::for_each_arch([]<class Arch>(Arch) {
        const auto check = [&]<class T>(T, const problem& p, int connectivity, std::size_t radius) {
            const csr_matrix m = assemble(p.system(connectivity, radius));
            const ar_system<T, Arch> A = p.system<T, Arch>(connectivity, radius);
            const auto random = test::random_tensor<double, 1>({p.H * p.W}, 5, 100, 200);
            const std::vector<T> x(random.begin(), random.end());
            const std::vector<double> xd = as_double(std::span<const T>(x));
            const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
            const auto [ax, size] = csr_product(m, xd);
            const std::vector<double> step = csr_jacobi(m, as_double(std::span<const T>(A.rhs())), xd);
            const buffer<T> y = A.apply(std::span<const T>(x)), z = A.jacobi_step(std::span<const T>(x));
            for (std::size_t i = 0; i < x.size(); ++i) {
                BOOST_TEST(std::abs(double(y[i]) - ax[i]) <= tol * size[i], "apply at " << i);
                BOOST_TEST(std::abs(double(z[i]) - step[i]) <= tol * std::abs(step[i]), "jacobi_step at " << i);
            }
        };
        for (auto [connectivity, radius] : stencils)
            for (auto [H, W] : grids) {
                const problem p(H, W, unsigned(3 * H + W + connectivity));
                check(float{}, p, connectivity, radius);
                check(double{}, p, connectivity, radius);
            }
    });
}

BOOST_AUTO_TEST_CASE(solvers_reach_the_dense_solution) {
    test::for_each_arch([]<class Arch>(Arch) {
        for (auto [connectivity, radius] : stencils)
            for (auto [H, W] : grids) {
                const problem p(H, W, unsigned(H + 7 * W + connectivity));
                const std::vector<double> exact = test::dense_solve(p.system(connectivity, radius));
                const ar_system<float, Arch> A = p.system<float, Arch>(connectivity, radius);
                const solve_options options{1e-4, 2000};   // a float-sized tolerance
                const std::string grid = std::to_string(H) + " x " + std::to_string(W);
                const auto close = [&](const solve_report& r, const std::vector<float>& x, const char* what) {
                    BOOST_TEST(r.converged, what << " on " << grid);
                    for (std::size_t i = 0; i < x.size(); ++i)
                        BOOST_TEST(std::abs(double(x[i]) - exact[i]) <= 1e-3 * exact[i], what << " at " << i);
                };
                std::vector<float> x(A.size(), 150.f);
                close(pcg(A, x, multigrid(A), options), x, "pcg + multigrid");
                x.assign(A.size(), 150.f);
                close(pcg(A, x, jacobi_preconditioner(A), options), x, "pcg + Jacobi");
                x.assign(A.size(), 150.f);
                close(multigrid_solve(A, x, options), x, "V-cycles");
            }
    });
}

BOOST_AUTO_TEST_CASE(line_solves_match_the_default_architecture) {
    // A direct solve along each direction is exact up to rounding whatever the architecture:
    // the lanes only change the order of independent lines.
    test::for_each_arch([]<class Arch>(Arch) {
        for (auto [H, W] : grids) {
            const problem p(H, W, unsigned(11 * H + W), true);   // line solves need alpha > 0
            const ar_system<float, Arch> A = p.system<float, Arch>(8, 1);
            const ar_system<float> reference = p.system<float>(8, 1);
            const auto random = test::random_tensor<double, 1>({H * W}, 17, 100, 200);
            std::vector<float> x(random.begin(), random.end()), y = x;
            separable_smooth(A, std::span<float>(x));
            separable_smooth(reference, std::span<float>(y));
            for (std::size_t i = 0; i < x.size(); ++i) BOOST_TEST(std::abs(x[i] - y[i]) <= 1e-4f * std::abs(y[i]));
        }
    });
}

BOOST_AUTO_TEST_SUITE_END()
