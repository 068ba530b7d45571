#pragma once
/// @file pairwise.hpp
/// Materialised (dis)similarity matrices: the one composition with an n x m output.

#include <concepts>
#include <cstddef>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/kernel/logit.hpp"

namespace nonlocal {

/// W [n, m] with W(i, j) = kappa(logit(x_i, y_j)) for rows x [n, d] and y [m, d]
/// (after the similarity's projections, if any): `squared_euclidean` gives the
/// squared distance matrix, `cosine` the cosine similarities, `dot_product` the Gram matrix.
template <class Arch = default_arch, class X, class Y, similarity S>
auto pairwise(const xt::xexpression<X>& x, const xt::xexpression<Y>& y, const S& similarity) {
    using T = std::common_type_t<detail::value_type_of<X>, detail::value_type_of<Y>>;
    static_assert(std::floating_point<T>, "nonlocal::pairwise: inputs must be float or double");
    const detail::contiguous<T, 2> xc(x), yc(y);
    detail::require(xc.shape(1) == yc.shape(1), "pairwise", [&] {
        return "x " + detail::shape_string(xc.shape()) + " and y " + detail::shape_string(yc.shape()) +
               " must have the same number of columns";
    });
    const detail::projected_features<S, T> xp(similarity, xc.matrix(), true), yp(similarity, yc.matrix(), false);
    const kernel::logit_evaluator<Arch, T, S> logit(similarity, (*xp).cols);
    xt::xtensor<T, 2> w = xt::empty<T>({xc.shape(0), yc.shape(0)});
    for (std::size_t i = 0; i < w.shape(0); ++i)
        for (std::size_t j = 0; j < w.shape(1); ++j)
            w(i, j) = weight_function_t<S>::apply(logit((*xp).row(i).data(), (*yp).row(j).data(), i, j));
    return w;
}

}  // namespace nonlocal
