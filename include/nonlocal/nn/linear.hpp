#pragma once
/// @file nn/linear.hpp
/// y = x W^T + b with PyTorch's `nn.Linear` layout: `linear_layer`, whose W^T is packed
/// once when it is built, and `linear`, which packs the weight for one product.

#include <concepts>
#include <cstddef>
#include <string>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"

namespace nonlocal::nn {

/// The precision a layer's products run in (`precision::bf16`: float layers' weights and
/// inputs rounded to bfloat16, accumulated in float): `layer.to(precision::bf16)`.
using nonlocal::precision;

/// A linear layer, y = x W^T + b, as PyTorch's `nn.Linear`: weight [out, in], bias [out]
/// or none (`bias=False`). W^T is packed for the GEMM once, when the layer is built, and
/// only the packed panels are kept: applying the layer reads them directly, and `weight()`
/// unpacks a copy. In `precision::bf16` the panels hold the weights rounded to bfloat16, and
/// x is rounded as the product packs it (float layers only).
template <class T = float>
class linear_layer {
public:
    linear_layer() = default;

    /// Throws `std::invalid_argument` unless bias is [out] or empty, or for `precision::bf16`
    /// unless T is float.
    explicit linear_layer(const xt::xtensor<T, 2>& weight, xt::xtensor<T, 1> bias = {},
                          nonlocal::precision p = nonlocal::precision::native)
        : bias_(std::move(bias)) {
        detail::require(bias_.size() == 0 || bias_.size() == weight.shape(0), "nn::linear_layer", [&] {
            return "weight " + detail::shape_string(weight.shape()) + " and bias " +
                   detail::shape_string(bias_.shape()) + " must be [out, in] and [out] or [0]";
        });
        packed_ = simd::packed_weight<T>(execution::seq, as_rows(weight), p);
    }

    /// The precision of the layer's products.
    nonlocal::precision precision() const noexcept { return packed_.precision(); }
    /// The layer's products in precision `p` from now on, its weights converted once (to
    /// bfloat16 they are rounded; back to `precision::native` they keep the rounded values).
    /// Throws `std::invalid_argument` for `precision::bf16` unless T is float.
    linear_layer& to(nonlocal::precision p) {
        if (p != precision()) {
            const xt::xtensor<T, 2> w = weight();
            packed_ = simd::packed_weight<T>(execution::seq, as_rows(w), p);
        }
        return *this;
    }

    /// [out, in], unpacked from the panels.
    xt::xtensor<T, 2> weight() const {
        xt::xtensor<T, 2> w = xt::empty<T>({out_features(), in_features()});
        packed_.unpack(row_matrix<T>{w.data(), out_features(), in_features()});
        return w;
    }
    const xt::xtensor<T, 1>& bias() const noexcept { return bias_; }   ///< [out], or [0]
    std::size_t in_features() const noexcept { return packed_.in(); }
    std::size_t out_features() const noexcept { return packed_.out(); }
    /// W^T as the GEMM reads it, for `simd::linear_rows` with an epilogue of one's own.
    const simd::packed_weight<T>& packed() const noexcept { return packed_; }
    /// The bias for `simd::epilogue`: its data, or none.
    const T* bias_data() const noexcept { return bias_.size() ? bias_.data() : nullptr; }

    /// a(x W^T + b) for x [n, in]: [n, out], on the threads of `policy` (the result does not
    /// depend on their number). Throws `std::invalid_argument` naming the shapes unless x has
    /// `in` columns.
    template <class Arch = default_arch, execution_policy Ex, class X>
    xt::xtensor<T, 2> operator()(Ex policy, const xt::xexpression<X>& x,
                                 simd::activation a = simd::activation::identity) const {
        const detail::contiguous<T, 2> xc(x);
        detail::require(xc.shape(1) == in_features(), "nn::linear_layer", [&] {
            return "x " + detail::shape_string(xc.shape()) + " does not fit weight [" +
                   std::to_string(out_features()) + ", " + std::to_string(in_features()) + "] ([out, in])";
        });
        xt::xtensor<T, 2> y = xt::empty<T>({xc.shape(0), out_features()});
        simd::with_activation(a, [&](auto act) {
            simd::linear_rows<Arch>(policy, xc.matrix(), packed_,
                                    simd::store_rows<T, decltype(act)>{y.data(), out_features(), {bias_data(), act}});
        });
        return y;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class X>
    xt::xtensor<T, 2> operator()(const xt::xexpression<X>& x, simd::activation a = simd::activation::identity) const {
        return operator()<Arch>(execution::seq, x, a);
    }

private:
    xt::xtensor<T, 1> bias_;
    simd::packed_weight<T> packed_;
};

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
    return simd::linear_rows<Arch>(policy, xc.matrix(), wc.matrix(), static_cast<const T*>(nullptr));
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
    return simd::linear_rows<Arch>(policy, xc.matrix(), wc.matrix(), bc.data());
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
