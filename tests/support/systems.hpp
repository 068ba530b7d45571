#pragma once
// Dense forms of AR systems for the tests: the matrix from its products with the
// unit vectors, and a direct solve by Gaussian elimination, both in double.

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include <nonlocal/solve/ar_system.hpp>

namespace nonlocal::test {

/// A as a dense n x n matrix (row-major), from its products with the unit vectors.
inline std::vector<double> dense_matrix(const ar_system<>& A) {
    const std::size_t n = A.size();
    std::vector<double> M(n * n), e(n, 0.0), col(n);
    for (std::size_t j = 0; j < n; ++j) {
        e[j] = 1;
        A.apply(execution::seq, e.data(), col.data());
        e[j] = 0;
        for (std::size_t i = 0; i < n; ++i) M[i * n + j] = col[i];
    }
    return M;
}

/// x = A^-1 b (b the system's own right-hand side) by Gaussian elimination with partial pivoting.
inline std::vector<double> dense_solve(const ar_system<>& A) {
    const std::size_t n = A.size();
    std::vector<double> M = dense_matrix(A), b(A.rhs().begin(), A.rhs().end());
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

}  // namespace nonlocal::test
