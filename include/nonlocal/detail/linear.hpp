#pragma once
/// @file detail/linear.hpp
/// y = x W^T (+ b) on row matrices, the projection behind `nn::linear` and the
/// projected similarities.

#include <cstddef>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::detail {

/// x [n, in] times weight^T, weight [out, in] (PyTorch's layout), plus bias [out] when given.
template <class Arch = default_arch, class T>
xt::xtensor<T, 2> linear_rows(row_matrix<const T> x, row_matrix<const T> weight, const T* bias = nullptr) {
    xt::xtensor<T, 2> y = xt::empty<T>({x.rows, weight.rows});
    for (std::size_t i = 0; i < x.rows; ++i)
        for (std::size_t o = 0; o < weight.rows; ++o)
            y(i, o) = simd::dot<Arch>(x.row(i).data(), weight.row(o).data(), x.cols) + (bias ? bias[o] : T(0));
    return y;
}

}  // namespace nonlocal::detail
