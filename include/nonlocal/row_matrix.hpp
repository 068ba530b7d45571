#pragma once
/// @file row_matrix.hpp
/// `row_matrix`: the view of rows that kernels, policies' projections and user code
/// exchange, over a pointer or a two-dimensional xtensor container.

#include <cstddef>
#include <span>
#include <type_traits>

#include <xtensor/xtensor.hpp>

namespace nonlocal {

/// A row-major matrix seen as `rows` contiguous rows of `cols` values.
/// Rows are not SIMD-aligned.
template <class T>
struct row_matrix {
    T* data = nullptr;
    std::size_t rows = 0;
    std::size_t cols = 0;

    std::span<T> row(std::size_t i) const noexcept { return {data + i * cols, cols}; }
    T& operator()(std::size_t i, std::size_t j) const noexcept { return data[i * cols + j]; }
    operator row_matrix<const T>() const noexcept { return {data, rows, cols}; }
};

/// A `row_matrix` over a two-dimensional xtensor container.
template <class T>
row_matrix<T> as_rows(xt::xtensor<std::remove_const_t<T>, 2>& x) noexcept {
    return {x.data(), x.shape(0), x.shape(1)};
}
template <class T>
row_matrix<const T> as_rows(const xt::xtensor<T, 2>& x) noexcept {
    return {x.data(), x.shape(0), x.shape(1)};
}

}  // namespace nonlocal
