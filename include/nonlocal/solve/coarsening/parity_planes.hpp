#pragma once
/// @file solve/coarsening/parity_planes.hpp
/// A system's weights split by column parity, with borders of zeros, as operator-dependent
/// interpolation reads them: fine pixels of one parity class side by side, as the coarse
/// points they belong to are, loaded in batches without a check.

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/solve/ar_system.hpp"

namespace nonlocal::detail {

/// Calls f(std::integral_constant<int, i>{}) for i in [first, last).
template <int first, int last, class F>
void static_for(F&& f) {
    if constexpr (first < last) {
        f(std::integral_constant<int, first>{});
        static_for<first + 1, last>(f);
    }
}

/// A batch V loaded from p.
template <class V, class T>
V load_as(const T* p) {
    return V::load_unaligned(p);
}
/// The first `count` lanes of v to p (all of them: a plain store).
template <class V, class T>
void store_lanes(T* p, V v, std::size_t count) {
    if (count == V::size) return v.store_unaligned(p);
    alignas(64) T lanes[V::size];
    v.store_aligned(lanes);
    std::copy(lanes, lanes + count, p);
}
/// The diagonal and forward weights (east, south-west, south, south-east) of a system
/// whose stencil reaches one pixel, split by column parity, with two zero rows above and
/// below, a zero column on the left and a batch and a column of zeros on the right: pixel
/// (r, c) of a quantity is element c / 2 of its row r, parity c % 2. A batch of pixels
/// within two of the grid, or past its end, and their neighbours then load without a
/// check, and fine pixels of one parity class lie next to each other, as the coarse
/// points they belong to do.
template <class T, class Arch = default_arch>
class parity_planes {
public:
    enum quantity { diagonal, east, south_west, south, south_east };
    static constexpr int quantities = 5;

    explicit parity_planes(const ar_system<T, Arch>& A)
        : rows_(A.height() + 4), stride_((A.width() + 1) / 2 + 2 + xsimd::batch<T, Arch>::size),
          data_(std::size_t(quantities) * 2 * rows_ * stride_, T(0)) {
        const std::size_t W = A.width();
        const auto split = [&](int q, const T* values) {
            for (std::size_t r = 0; r < A.height(); ++r) {
                const T* v = values + r * W;
                T *even = mutable_row(q, std::ptrdiff_t(r), 0), *odd = mutable_row(q, std::ptrdiff_t(r), 1);
                for (std::size_t k = 0; k < W / 2; ++k) even[k] = v[2 * k], odd[k] = v[2 * k + 1];
                if (W % 2) even[W / 2] = v[W - 1];
            }
        };
        split(diagonal, A.diagonal().data());
        for (std::size_t o = 0; o < A.offsets().size(); ++o) {
            const auto [dy, dx] = A.offsets()[o];
            split(dy == 0 ? east : dx < 0 ? south_west : dx == 0 ? south : south_east, A.weights()[o].data());
        }
    }
    /// Element 0 of row r (in [-2, height + 2)) of quantity q, parity p.
    const T* row(int q, std::ptrdiff_t r, int p) const {
        return data_.data() + ((std::size_t(q) * 2 + std::size_t(p)) * rows_ + std::size_t(r + 2)) * stride_ + 1;
    }

private:
    T* mutable_row(int q, std::ptrdiff_t r, int p) { return const_cast<T*>(row(q, r, p)); }
    std::size_t rows_, stride_;
    buffer<T> data_;
};

}  // namespace nonlocal::detail
