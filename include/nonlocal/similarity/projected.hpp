#pragma once
/// @file similarity/projected.hpp
/// A similarity applied to linearly projected features, theta(x_i) and phi(x_j):
/// the embedded Gaussian and the embedded dot product of the non-local block.

#include <cstddef>
#include <span>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/similarity/dot_product.hpp"

namespace nonlocal {

/// `Base` applied to q theta^T and k phi^T. theta and phi are [d_embed, d_in]
/// (PyTorch's `nn.Linear` / 1x1-convolution layout).
template <similarity Base>
struct projected : Base {
    xt::xtensor<double, 2> theta;
    xt::xtensor<double, 2> phi;

    projected() = default;
    /// Throws `std::invalid_argument` unless theta and phi have the same shape.
    template <class E1, class E2>
    projected(const xt::xexpression<E1>& theta_weight, const xt::xexpression<E2>& phi_weight, Base base = {})
        : Base(base), theta(xt::cast<double>(theta_weight.derived_cast())),
          phi(xt::cast<double>(phi_weight.derived_cast())) {
        detail::require(theta.shape() == phi.shape(), "projected", [&] {
            return "theta " + detail::shape_string(theta.shape()) + " and phi " +
                   detail::shape_string(phi.shape()) + " must have the same shape [d_embed, d_in]";
        });
    }

    template <class T>
    xt::xtensor<T, 2> project_queries(row_matrix<const T> x) const { return project(x, theta, "theta"); }
    template <class T>
    xt::xtensor<T, 2> project_keys(row_matrix<const T> x) const { return project(x, phi, "phi"); }

private:
    template <class T>
    static xt::xtensor<T, 2> project(row_matrix<const T> x, const xt::xtensor<double, 2>& w, const char* name) {
        detail::require(x.cols == w.shape(1), "projected", [&] {
            return std::string(name) + " has shape " + detail::shape_string(w.shape()) +
                   " but the features have dimension " + std::to_string(x.cols);
        });
        const xt::xtensor<T, 2> wt = xt::cast<T>(w);
        return simd::linear_rows(execution::seq, x, as_rows(wt));
    }
};

/// s = exp(theta(x_i) . phi(x_j)): the non-local block's embedded Gaussian.
struct embedded_gaussian : projected<gaussian> {
    using projected<gaussian>::projected;
};

/// s = theta(x_i) . phi(x_j): the non-local block's dot product (use with `count`).
struct embedded_dot_product : projected<dot_product> {
    using projected<dot_product>::projected;
};

static_assert(similarity<embedded_gaussian>);
static_assert(detail::has_projection<embedded_gaussian, float>);

}  // namespace nonlocal
