#pragma once
/// @file nn/linear.hpp
/// y = x W^T + b with PyTorch's `nn.Linear` layout.

#include <concepts>
#include <cstddef>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"

namespace nonlocal::nn {

/// x [n, in], weight [out, in], optional bias [out] -> [n, out], on the threads of
/// `policy` (the result does not depend on their number).
/// Throws `std::invalid_argument` naming the shapes when they do not fit.
template <class Arch = default_arch, execution_policy Ex, class X, class W>
auto linear(Ex policy, const xt::xexpression<X>& x, const xt::xexpression<W>& weight) {
    using T = std::common_type_t<detail::value_type_of<X>, detail::value_type_of<W>>;
    static_assert(std::floating_point<T>, "nonlocal::nn::linear: inputs must be float or double");
    const detail::contiguous<T, 2> xc(x), wc(weight);
    detail::require(xc.shape(1) == wc.shape(1), "nn::linear", [&] {
        return "x " + detail::shape_string(xc.shape()) + " does not fit weight " +
               detail::shape_string(wc.shape()) + " ([out, in])";
    });
    return simd::linear_rows<Arch>(xc.matrix(), wc.matrix(), static_cast<const T*>(nullptr),
                                     detail::thread_count(policy));
}

/// The same with a bias [out].
template <class Arch = default_arch, execution_policy Ex, class X, class W, class B>
auto linear(Ex policy, const xt::xexpression<X>& x, const xt::xexpression<W>& weight, const xt::xexpression<B>& bias) {
    using T = std::common_type_t<detail::value_type_of<X>, detail::value_type_of<W>>;
    const detail::contiguous<T, 2> xc(x), wc(weight);
    const detail::contiguous<T, 1> bc(bias);
    detail::require(xc.shape(1) == wc.shape(1) && bc.shape(0) == wc.shape(0), "nn::linear", [&] {
        return "x " + detail::shape_string(xc.shape()) + ", weight " + detail::shape_string(wc.shape()) +
               " and bias " + detail::shape_string(bc.shape()) + " must be [n, in], [out, in] and [out]";
    });
    return simd::linear_rows<Arch>(xc.matrix(), wc.matrix(), bc.data(), detail::thread_count(policy));
}

/// `linear` on the calling thread.
template <class Arch = default_arch, class X, class W>
auto linear(const xt::xexpression<X>& x, const xt::xexpression<W>& weight) {
    return linear<Arch>(execution::seq, x, weight);
}
template <class Arch = default_arch, class X, class W, class B>
auto linear(const xt::xexpression<X>& x, const xt::xexpression<W>& weight, const xt::xexpression<B>& bias) {
    return linear<Arch>(execution::seq, x, weight, bias);
}

}  // namespace nonlocal::nn
