#pragma once
/// @file solve/csr.hpp
/// An AR system's matrix in compressed sparse row form, for solvers outside the library.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "nonlocal/solve/ar_system.hpp"

namespace nonlocal {

/// A matrix in compressed sparse row form.
struct csr_matrix {
    std::vector<std::size_t> row_offsets;
    std::vector<std::size_t> columns;
    std::vector<double> values;
};

/// The matrix A of `system` (the Laplacian of its weights plus diag(alpha), or the
/// operator it was given), columns sorted within each row.
template <class T, class Arch>
csr_matrix assemble(const ar_system<T, Arch>& system) {
    const std::size_t n = system.size();
    std::vector<std::vector<std::pair<std::size_t, double>>> rows(n);
    for (std::size_t i = 0; i < n; ++i) rows[i].push_back({i, double(system.diagonal()[i])});
    for (std::size_t o = 0; o < system.offsets().size(); ++o) {
        const auto s = std::size_t(system.shift(o));
        const auto& w = system.weights()[o];
        for (std::size_t i = 0; i + s < n; ++i)
            if (w[i] != 0) {
                rows[i].push_back({i + s, -double(w[i])});
                rows[i + s].push_back({i, -double(w[i])});
            }
    }
    csr_matrix m;
    m.row_offsets.push_back(0);
    for (auto& row : rows) {
        std::sort(row.begin(), row.end());
        for (auto [c, v] : row) m.columns.push_back(c), m.values.push_back(v);
        m.row_offsets.push_back(m.columns.size());
    }
    return m;
}

}  // namespace nonlocal
