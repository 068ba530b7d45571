#pragma once
/// @file detail/tensor.hpp
/// Contiguous row-major access to xtensor expressions: kernels read raw rows,
/// and any other expression (strided view, generator, other value type) is
/// evaluated into a temporary exactly once.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>

#include <xtensor/xtensor.hpp>
#include <xtensor/xshape.hpp>
#include <xtensor/xutils.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/row_matrix.hpp"

namespace nonlocal::detail {

inline constexpr std::size_t dynamic_rank = SIZE_MAX;

/// The rank of an expression (container, view, function of them), or
/// `dynamic_rank` when only known at run time.
template <class E>
inline constexpr std::size_t static_rank = [] {
    constexpr std::ptrdiff_t d = xt::static_dimension<typename std::decay_t<E>::shape_type>::value;
    return d < 0 ? dynamic_rank : static_cast<std::size_t>(d);
}();

/// An expression of static rank `N`, readable as contiguous row-major `T`.
/// Borrows the expression's buffer when it already is one, copies otherwise.
template <class T, std::size_t N>
class contiguous {
public:
    template <class E>
    explicit contiguous(const xt::xexpression<E>& expression) {
        const E& e = expression.derived_cast();
        static_assert(static_rank<E> == N || static_rank<E> == dynamic_rank, "nonlocal: unexpected tensor rank");
        require(e.dimension() == N, "contiguous", [&] {
            return "expected a tensor of rank " + std::to_string(N) + ", got shape " + shape_string(e.shape());
        });
        if constexpr (can_borrow<E>()) {
            data_ = e.data() + e.data_offset();
            std::copy(e.shape().begin(), e.shape().end(), shape_.begin());
        } else {
            storage_ = e;
            data_ = storage_.data();
            std::copy(storage_.shape().begin(), storage_.shape().end(), shape_.begin());
        }
    }
    contiguous(const contiguous&) = delete;
    contiguous& operator=(const contiguous&) = delete;

    const T* data() const noexcept { return data_; }
    const std::array<std::size_t, N>& shape() const noexcept { return shape_; }
    std::size_t shape(std::size_t axis) const noexcept { return shape_[axis]; }

    /// The last two axes as a matrix, at `offset` values from the start.
    row_matrix<const T> matrix(std::size_t offset = 0) const noexcept {
        static_assert(N >= 2);
        return {data_ + offset, shape_[N - 2], shape_[N - 1]};
    }

private:
    template <class E>
    static constexpr bool can_borrow() {
        using D = std::decay_t<E>;
        if constexpr (!xt::has_data_interface<D>::value) {
            return false;
        } else {
            return std::is_same_v<typename D::value_type, T> &&
                   D::static_layout == xt::layout_type::row_major;
        }
    }

    xt::xtensor<T, N> storage_;
    const T* data_ = nullptr;
    std::array<std::size_t, N> shape_{};
};

/// The value type of an expression.
template <class E>
using value_type_of = typename std::decay_t<E>::value_type;

/// to[b][j][i] = from[b][i][j] for each of `batches` [rows, cols] matrices: channel-first
/// maps [B, C, P] as tokens [B, P, C], and back.
/// In blocks of 16 x 16, whose 16 source and 16 target rows stay in L1 while the block is
/// copied (row by row, a transpose of large matrices touches a new cache line per value).
template <class T>
void transpose_each(const T* from, std::size_t batches, std::size_t rows, std::size_t cols, T* to) noexcept {
    constexpr std::size_t block = 16;
    for (std::size_t b = 0; b < batches; ++b, from += rows * cols, to += rows * cols)
        for (std::size_t i0 = 0; i0 < rows; i0 += block)
            for (std::size_t j0 = 0; j0 < cols; j0 += block) {
                const std::size_t i1 = std::min(rows, i0 + block), j1 = std::min(cols, j0 + block);
                for (std::size_t i = i0; i < i1; ++i)
                    for (std::size_t j = j0; j < j1; ++j) to[j * rows + i] = from[i * cols + j];
            }
}

/// f(plane of x, plane of y) for each of the B C planes of x [B, C, H, W] or [C, H, W]
/// (pooling, resizing): the result [B, C, Ho, Wo] or [C, Ho, Wo].
template <class X, class F>
auto map_planes(const xt::xexpression<X>& x, std::size_t Ho, std::size_t Wo, F&& f) {
    using T = detail::value_type_of<X>;
    constexpr std::size_t R = detail::static_rank<X>;
    static_assert(R == 3 || R == 4, "nonlocal: x is [B, C, H, W] or [C, H, W]");
    const detail::contiguous<T, R> xc(x);
    std::array<std::size_t, R> shape = xc.shape();
    const std::size_t H = shape[R - 2], W = shape[R - 1];
    shape[R - 2] = Ho;
    shape[R - 1] = Wo;
    xt::xtensor<T, R> y = xt::empty<T>(shape);
    const std::size_t planes = Ho && Wo ? y.size() / (Ho * Wo) : 0;
    for (std::size_t i = 0; i < planes; ++i) f(xc.data() + i * H * W, y.data() + i * Ho * Wo);
    return y;
}

}  // namespace nonlocal::detail
