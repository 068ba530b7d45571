#pragma once
/// @file simd/convolution/weights.hpp
/// A convolution's weights as its algorithms read them, and the GEMM algorithms' product of
/// one group's weights with its columns, the bias and activation applied as it stores.

#include <cstddef>
#include <span>
#include <type_traits>

#include "nonlocal/config.hpp"
#include "nonlocal/simd/activation.hpp"
#include "nonlocal/simd/linear.hpp"

namespace nonlocal::simd {

/// `nn.Conv2d`'s weight [Cout, Cin / groups, kh, kw] as `taps`, the same packed a group at a
/// time for the GEMM algorithms (`packed`, empty for the direct one), the bias [Cout] or
/// null, and the activation applied to each output.
template <class T>
struct conv_weights {
    const T* taps = nullptr;
    std::span<const packed_rows<T>> packed;
    const T* bias = nullptr;
    activation act = activation::identity;
};

/// The planes of `group` = act(W_group columns + bias) through the micro-kernel, each
/// finished vector handed to `put(v, channel, column, lanes)` (channel within the group,
/// lanes [0, lanes) of v its columns [column, column + lanes)).
template <class Arch, execution_policy Ex, class T, class Columns, class Put>
void group_product(Ex policy, const conv_weights<T>& w, std::size_t out_per_group, std::size_t group,
                   const Columns& columns, const Put& put) {
    const T* bias = w.bias ? w.bias + group * out_per_group : nullptr;
    with_activation(w.act, [&](auto act) {
        linear_rows<Arch>(
            policy, w.packed[group], columns,
            [&](std::size_t channel, std::size_t column, const auto& v, std::size_t lanes) {
                using batch = std::decay_t<decltype(v)>;
                put(activate(act(), bias ? v + batch(bias[channel]) : v), channel, column, lanes);
            });
    });
}

}  // namespace nonlocal::simd
