#pragma once
/// @file simd/epilogue.hpp
/// What the projections' GEMM does with each finished vector of y while it is still in a
/// register: the bias and the activation (`epilogue`), then a store into rows, or an
/// addition to them (`store_rows`).

#include <cstddef>

#include "nonlocal/simd/activation.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::simd {

/// The elementwise work a layer does on x W^T before storing it: a(x W^T + bias). `Act` an
/// `activation` or, for code compiled for one (`with_activation`), its
/// std::integral_constant.
template <class T, class Act = activation>
struct epilogue {
    const T* bias = nullptr;   ///< [out], or none
    Act act = {};

    template <class Batch>
    Batch operator()(Batch v, std::size_t column, std::size_t lanes) const noexcept {
        if (bias) v += load_lanes<Batch>(bias + column, lanes);
        return activate(act, v);
    }
};

/// A store of `linear_rows` into rows `ld` apart: y[row, column] = epilogue(x W^T), or, when
/// `add`, y[row, column] += epilogue(x W^T) (a residual connection).
template <class T, class Act = activation>
struct store_rows {
    T* y;
    std::size_t ld;
    epilogue<T, Act> then{};
    bool add = false;

    template <class Batch>
    void operator()(std::size_t row, std::size_t column, const Batch& v, std::size_t lanes) const noexcept {
        T* to = y + row * ld + column;
        const Batch result = then(v, column, lanes);
        store_lanes(add ? load_lanes<Batch>(to, lanes) + result : result, lanes, to);
    }
};

}  // namespace nonlocal::simd
