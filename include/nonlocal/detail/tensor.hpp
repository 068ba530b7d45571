#pragma once
/// @file detail/tensor.hpp
/// Contiguous row-major access to xtensor expressions: kernels read raw rows,
/// and any other expression (strided view, generator, other value type) is
/// evaluated into a temporary exactly once.

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
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

/// copy(c, r) for c < channels and r < pixels, in blocks of 16 x 16, whose 16 rows of a
/// map and 16 tokens stay in L1 while the block is copied (row by row, a transpose of large
/// matrices touches a new cache line per value). Within a block, the inner loop goes along
/// the side whose other end has the shorter stride: along the pixels when there are fewer
/// channels (each token's values land `channels` apart), else along the channels. The other
/// way, a map of 1024 pixels written from tokens of 144 channels lands each value 4 KiB from
/// the last, 16 writes to one set of the L1 cache, and takes 9 times as long.
template <class Copy>
void for_each_transposed(std::size_t channels, std::size_t pixels, Copy&& copy) {
    constexpr std::size_t block = 16;
    for (std::size_t c0 = 0; c0 < channels; c0 += block)
        for (std::size_t r0 = 0; r0 < pixels; r0 += block) {
            const std::size_t c1 = std::min(channels, c0 + block), r1 = std::min(pixels, r0 + block);
            if (channels <= pixels)
                for (std::size_t c = c0; c < c1; ++c)
                    for (std::size_t r = r0; r < r1; ++r) copy(c, r);
            else
                for (std::size_t r = r0; r < r1; ++r)
                    for (std::size_t c = c0; c < c1; ++c) copy(c, r);
        }
}

/// tokens [B, P, C] from channel-first maps [B, C, P]: token r of each image is pixel
/// pixel_of(r) of its map (by default, pixel r).
template <class T, class PixelOf = std::identity>
void maps_to_tokens(const T* maps, std::size_t batches, std::size_t channels, std::size_t pixels, T* tokens,
                    PixelOf pixel_of = {}) {
    for (std::size_t b = 0; b < batches; ++b, maps += channels * pixels, tokens += channels * pixels)
        for_each_transposed(channels, pixels, [&](std::size_t c, std::size_t r) {
            tokens[r * channels + c] = maps[c * pixels + pixel_of(r)];
        });
}

/// Channel-first maps [B, C, P] from tokens [B, P, C], `maps_to_tokens` undone: pixel
/// pixel_of(r) of each map is token r of its image.
template <class T, class PixelOf = std::identity>
void tokens_to_maps(const T* tokens, std::size_t batches, std::size_t pixels, std::size_t channels, T* maps,
                    PixelOf pixel_of = {}) {
    for (std::size_t b = 0; b < batches; ++b, maps += channels * pixels, tokens += channels * pixels)
        for_each_transposed(channels, pixels, [&](std::size_t c, std::size_t r) {
            maps[c * pixels + pixel_of(r)] = tokens[r * channels + c];
        });
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
