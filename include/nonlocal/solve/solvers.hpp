#pragma once
/// @file solve/solvers.hpp
/// Solvers of the AR system A x = b: Jacobi, multi-colour SOR, preconditioned
/// conjugate gradients, multigrid V-cycles (alone or as CG's preconditioner) and
/// full multigrid followed by CG. Each returns a report; non-convergence is
/// reported in it, never silent.

#include <algorithm>
#include <concepts>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>
#include <numbers>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/solve/multigrid.hpp"

namespace nonlocal {

/// Stopping rule of the iterative solvers: |b - A x| <= tolerance |b|; the tolerance must be
/// >= 0 (not NaN). For b = 0 every solver returns x = 0, the solution, after no iteration.
struct solve_options {
    double tolerance = 1e-4;
    std::size_t max_iterations = 1000;
};

/// What a solve did.
struct solve_report {
    std::string method;
    std::size_t iterations = 0;
    double relative_residual = 0;
    bool converged = false;
    double seconds = 0;
};

/// A solver's vectors, read (`vector_in`) or written (`vector_out`): any contiguous array of T
/// (`std::vector`, `buffer`, `std::span`), T deduced from the system alone.
template <class T>
using vector_in = std::type_identity_t<std::span<const T>>;
template <class T>
using vector_out = std::type_identity_t<std::span<T>>;

namespace detail {

/// sum of term(i) for i in [0, n), in double, in 8 independent partial sums: one chain
/// of dependent additions would cost an add latency (4 cycles) per element; 8 lanes of
/// partial sums vectorise and overlap. Inner products and norms accumulate this way
/// whatever the precision of the vectors.
template <class Term>
double partial_sums(std::size_t n, Term&& term) {
    constexpr std::size_t lanes = 8;
    double partial[lanes] = {};
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (std::size_t k = 0; k < lanes; ++k) partial[k] += term(i + k);
    double sum = 0;
    for (; i < n; ++i) sum += term(i);
    for (double p : partial) sum += p;
    return sum;
}
template <class T>
double dot(const T* a, const T* b, std::size_t n) {
    return partial_sums(n, [&](std::size_t i) { return double(a[i]) * double(b[i]); });
}
template <class T>
double norm(std::span<const T> a) { return std::sqrt(dot(a.data(), a.data(), a.size())); }

/// r = b - A x; returns |r|.
template <class T, class Arch, execution_policy Ex>
double residual(Ex policy, const ar_system<T, Arch>& A, std::span<const T> b, std::span<const T> x, buffer<T>& r) {
    A.residual(policy, b.data(), x.data(), r.data());
    return norm<T>(r);
}


/// Throws (from `where`) unless b and x have an entry per pixel and the tolerance is >= 0.
template <class T, class Arch>
void require_inputs(const ar_system<T, Arch>& A, std::span<const T> b, std::span<const T> x, const solve_options& options,
                    std::string_view where) {
    A.require_size(x, where);
    A.require_size(b, where, "b");
    field_checks("solve_options").need(options.tolerance >= 0, "tolerance", "at least 0", options.tolerance).check(where);
}

/// For b = 0 (|b| = `b_norm`): x = 0, the solution, and true; the report says it converged.
template <class T>
bool zero_solution(double b_norm, std::span<T> x, solve_report& report) {
    if (b_norm != 0) return false;
    std::fill(x.begin(), x.end(), T(0));
    report.relative_residual = 0, report.converged = true;
    return true;
}

class stopwatch {
public:
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

private:
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

/// The checks and the loop every iterative solver shares: |b - A x| / |b| before each
/// iteration, `step(x, r)` (r = b - A x) until the tolerance or the budget is reached.
template <class T, class Arch, execution_policy Ex, class Step>
solve_report iterate(Ex policy, const char* method, const ar_system<T, Arch>& A, std::span<const T> b, std::span<T> x,
                     const solve_options& options, Step&& step) {
    require_inputs<T>(A, b, x, options, method);
    const stopwatch clock;
    solve_report report{method};
    buffer<T> r(A.size());
    const double b_norm = norm(b);
    if (!zero_solution(b_norm, x, report))
        for (;;) {
            report.relative_residual = residual<T>(policy, A, b, x, r) / b_norm;
            report.converged = report.relative_residual <= options.tolerance;
            if (report.converged || report.iterations == options.max_iterations) break;
            step(x, r);
            ++report.iterations;
        }
    report.seconds = clock.seconds();
    return report;
}

/// z = M^-1 r by a preconditioner that takes an execution policy (`multigrid`) or none
/// (`jacobi_preconditioner`, or one of the user's own).
template <class Preconditioner, execution_policy Ex, class T>
void precondition(const Preconditioner& M, Ex policy, std::span<const T> r, std::span<T> z) {
    if constexpr (std::invocable<const Preconditioner&, Ex, std::span<const T>, std::span<T>>) M(policy, r, z);
    else M(r, z);
}
}  // namespace detail

// Every solver takes an execution policy first, for the passes over the pixels (products
// with A, residuals, the V-cycles' sweeps; their results do not depend on the thread count),
// or none, on the calling thread.

/// Jacobi iterations on A x = b, each one normalised aggregate of the neighbours
/// plus the data term (`ar_system::jacobi_step` when b is the system's own),
/// computed in place from the residual the loop has already: x + D^-1 (b - A x)
/// = D^-1 (b + sum_j W_ij x_j).
template <execution_policy Ex, class T, class Arch>
solve_report jacobi(Ex policy, const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                    const solve_options& options = {}) {
    return detail::iterate<T>(policy, "jacobi", A, b, x, options, [&](std::span<T> xk, const buffer<T>& r) {
        for (std::size_t i = 0; i < xk.size(); ++i)
            if (A.diagonal()[i] > 0) xk[i] += r[i] / A.diagonal()[i];
    });
}
template <class T, class Arch>
solve_report jacobi(const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                    const solve_options& options = {}) {
    return jacobi(execution::seq, A, b, x, options);
}
/// Jacobi iterations on the system's own A x = b.
template <execution_policy Ex, class T, class Arch>
solve_report jacobi(Ex policy, const ar_system<T, Arch>& A, vector_out<T> x,
                    const solve_options& options = {}) {
    return jacobi(policy, A, A.rhs(), x, options);
}
template <class T, class Arch>
solve_report jacobi(const ar_system<T, Arch>& A, vector_out<T> x, const solve_options& options = {}) {
    return jacobi(execution::seq, A, A.rhs(), x, options);
}

/// Successive over-relaxation in (R + 1)^2 colours for a stencil of reach R
/// (row and column modulo R + 1; four colours for 4 or 8 neighbours): pixels of
/// one colour are never neighbours, so each colour updates in place
/// independently (red-black ordering generalised to wider stencils). omega = 1
/// is Gauss-Seidel. The sweeps run on the calling thread, the residuals on the policy's.
template <execution_policy Ex, class T, class Arch>
solve_report sor(Ex policy, const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                 double omega = 1.6, const solve_options& options = {}) {
    detail::require(omega > 0 && omega < 2, "sor", [&] { return "omega must be in (0, 2), got " + std::to_string(omega); });
    const std::size_t H = A.height(), W = A.width(), period = A.reach() + 1;
    return detail::iterate<T>(policy, "sor", A, b, x, options, [&](std::span<T> xk, const buffer<T>&) {
        for (std::size_t color = 0; color < period * period; ++color)
            for (std::size_t row = color / period; row < H; row += period)
                for (std::size_t col = color % period; col < W; col += period) {
                    const std::size_t i = row * W + col;
                    double s = b[i];
                    for (std::size_t o = 0; o < A.offsets().size(); ++o) {
                        const std::ptrdiff_t sh = A.shift(o);
                        if (i + sh < A.size() && A.weights()[o][i] != 0) s += A.weights()[o][i] * xk[i + sh];
                        if (std::ptrdiff_t(i) - sh >= 0 && A.weights()[o][i - sh] != 0) s += A.weights()[o][i - sh] * xk[i - sh];
                    }
                    if (A.diagonal()[i] > 0) xk[i] += omega * (s / A.diagonal()[i] - xk[i]);
                }
    });
}
template <class T, class Arch>
solve_report sor(const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x, double omega = 1.6,
                 const solve_options& options = {}) {
    return sor(execution::seq, A, b, x, omega, options);
}
/// SOR on the system's own A x = b.
template <execution_policy Ex, class T, class Arch>
solve_report sor(Ex policy, const ar_system<T, Arch>& A, vector_out<T> x, double omega = 1.6,
                 const solve_options& options = {}) {
    return sor(policy, A, A.rhs(), x, omega, options);
}
template <class T, class Arch>
solve_report sor(const ar_system<T, Arch>& A, vector_out<T> x, double omega = 1.6, const solve_options& options = {}) {
    return sor(execution::seq, A, A.rhs(), x, omega, options);
}

/// The diagonal (Jacobi) preconditioner: z = D^-1 r.
template <class T = double, class Arch = default_arch>
struct jacobi_preconditioner {
    const ar_system<T, Arch>* A;
    explicit jacobi_preconditioner(const ar_system<T, Arch>& system) : A(&system) {}
    void operator()(std::span<const T> r, std::span<T> z) const {
        A->require_size(r, "jacobi_preconditioner", "r");
        A->require_size(z, "jacobi_preconditioner", "z");
        for (std::size_t i = 0; i < r.size(); ++i) z[i] = A->diagonal()[i] > 0 ? r[i] / A->diagonal()[i] : r[i];
    }
    static constexpr const char* name = "jacobi";
};

/// Preconditioned conjugate gradients on A x = b from the given x (a warm start).
/// Solving for several right-hand sides of one system shares its preconditioner.
/// `M(policy, r, z)` or `M(r, z)` sets z = M^-1 r for spans of T (`multigrid`,
/// `jacobi_preconditioner`).
template <execution_policy Ex, class T, class Arch, class Preconditioner>
solve_report pcg(Ex policy, const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                 const Preconditioner& M, const solve_options& options = {}) {
    detail::require_inputs<T>(A, b, x, options, "pcg");
    const detail::stopwatch clock;
    solve_report report{std::string("pcg + ") + Preconditioner::name};
    const double b_norm = detail::norm(b);
    if (detail::zero_solution(b_norm, x, report)) return report;
    const std::size_t n = A.size();
    buffer<T> r(n), z(n), p(n), q(n);
    report.relative_residual = detail::residual<T>(policy, A, b, x, r) / b_norm;
    double rz = 0;
    if (!(report.relative_residual <= options.tolerance)) {   // no preconditioning for a start that meets the tolerance
        detail::precondition(M, policy, std::span<const T>(r), std::span<T>(z));
        p = z;
        rz = detail::dot(r.data(), z.data(), n);
    }
    // Each iteration: q = A p with <p, q> in one pass; r -= step q with |r|^2 in one; the
    // preconditioner; <r, z>; then x += step p and p = z + beta p in one pass.
    while (!(report.converged = report.relative_residual <= options.tolerance) &&
           report.iterations < options.max_iterations) {
        const double pq = A.apply_and_dot(policy, p.data(), q.data());
        if (!(pq > 0)) break;   // A not positive definite along p (or NaN): stop, not converged
        const T step = T(rz / pq);
        const double rr = detail::partial_sums(n, [&](std::size_t i) {
            r[i] -= step * q[i];
            return double(r[i]) * double(r[i]);
        });
        ++report.iterations;
        report.relative_residual = std::sqrt(rr) / b_norm;
        if (report.relative_residual <= options.tolerance || report.iterations == options.max_iterations) {
            for (std::size_t j = 0; j < n; ++j) x[j] += step * p[j];
            continue;   // the loop's test records convergence and stops
        }
        detail::precondition(M, policy, std::span<const T>(r), std::span<T>(z));
        const double rz_next = detail::dot(r.data(), z.data(), n);
        const T beta = T(rz_next / rz);
        for (std::size_t j = 0; j < n; ++j) {
            x[j] += step * p[j];
            p[j] = z[j] + beta * p[j];
        }
        rz = rz_next;
    }
    report.seconds = clock.seconds();
    return report;
}

template <class T, class Arch, class Preconditioner>
solve_report pcg(const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x, const Preconditioner& M,
                 const solve_options& options = {}) {
    return pcg(execution::seq, A, b, x, M, options);
}
/// Preconditioned conjugate gradients on the system's own A x = b.
template <execution_policy Ex, class T, class Arch, class Preconditioner>
solve_report pcg(Ex policy, const ar_system<T, Arch>& A, vector_out<T> x, const Preconditioner& M,
                 const solve_options& options = {}) {
    return pcg(policy, A, A.rhs(), x, M, options);
}
template <class T, class Arch, class Preconditioner>
solve_report pcg(const ar_system<T, Arch>& A, vector_out<T> x, const Preconditioner& M,
                 const solve_options& options = {}) {
    return pcg(execution::seq, A, A.rhs(), x, M, options);
}

/// V-cycles of `M` (a multigrid of A) alone on A x = b, from the given x.
template <execution_policy Ex, class T, class Arch>
solve_report multigrid_solve(Ex policy, const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                             const multigrid<T, Arch>& M, const solve_options& options = {}) {
    buffer<T> z(A.size());
    return detail::iterate<T>(policy, "multigrid", A, b, x, options, [&](std::span<T> xk, const buffer<T>& r) {
        M(policy, std::span<const T>(r), std::span<T>(z));
        for (std::size_t i = 0; i < xk.size(); ++i) xk[i] += z[i];
    });
}
template <class T, class Arch>
solve_report multigrid_solve(const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                             const multigrid<T, Arch>& M, const solve_options& options = {}) {
    return multigrid_solve(execution::seq, A, b, x, M, options);
}
/// Full multigrid, then conjugate gradients preconditioned by the same hierarchy until
/// the tolerance: x (its input ignored) = `M.full(b)`, which counts as the first
/// iteration, and while |b - A x| > tolerance |b|, PCG iterations from there.
template <execution_policy Ex, class T, class Arch>
solve_report full_multigrid(Ex policy, const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                            const multigrid<T, Arch>& M, const solve_options& options = {}) {
    detail::require_inputs<T>(A, b, x, options, "full_multigrid");
    const detail::stopwatch clock;
    M.full(policy, b, x);
    const std::size_t left = options.max_iterations > 0 ? options.max_iterations - 1 : 0;
    solve_report report = pcg(policy, A, b, x, M, {options.tolerance, left});
    report.method = "full multigrid + pcg";
    report.iterations += 1;
    report.seconds = clock.seconds();
    return report;
}
template <class T, class Arch>
solve_report full_multigrid(const ar_system<T, Arch>& A, vector_in<T> b, vector_out<T> x,
                            const multigrid<T, Arch>& M, const solve_options& options = {}) {
    return full_multigrid(execution::seq, A, b, x, M, options);
}

/// V-cycles alone on the system's own A x = b, from the given x.
template <execution_policy Ex, class T, class Arch>
solve_report multigrid_solve(Ex policy, const ar_system<T, Arch>& A, vector_out<T> x,
                             const solve_options& options = {}) {
    A.require_size(x, "multigrid_solve");
    return multigrid_solve(policy, A, A.rhs(), x, multigrid(A), options);
}
template <class T, class Arch>
solve_report multigrid_solve(const ar_system<T, Arch>& A, vector_out<T> x, const solve_options& options = {}) {
    return multigrid_solve(execution::seq, A, x, options);
}

}  // namespace nonlocal
