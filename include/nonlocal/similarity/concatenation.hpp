#pragma once
/// @file similarity/concatenation.hpp
/// The non-local block's concatenation similarity, computed separably.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/simd/linear.hpp"

namespace nonlocal {

/// s = ReLU(w_f . [theta x_i, phi x_j]), kappa = identity (use with `count`).
///
/// The logit splits as a_i + b_j with a_i = (w_f[:e] theta) . x_i and
/// b_j = (w_f[e:] phi) . x_j, so both are one dot product per token, computed
/// once, and each pair costs one addition: O(1) instead of O(e).
/// theta and phi are [e, d], w_f has 2e entries.
struct concatenation {
    using weight_function = identity_weight;
    using traits = similarity_traits<separable_form>;
    /// w_f[:e] theta and w_f[e:] phi, each [1, d].
    xt::xtensor<double, 2> query_row;
    xt::xtensor<double, 2> key_row;

    concatenation() = default;
    /// Throws `std::invalid_argument` unless theta and phi are [e, d] and w_f has 2e entries.
    template <class E1, class E2, class E3>
    concatenation(const xt::xexpression<E1>& theta, const xt::xexpression<E2>& phi,
                  const xt::xexpression<E3>& w_f) {
        const xt::xtensor<double, 2> t = xt::cast<double>(theta.derived_cast());
        const xt::xtensor<double, 2> p = xt::cast<double>(phi.derived_cast());
        const xt::xtensor<double, 1> w = xt::cast<double>(w_f.derived_cast());
        detail::require(t.shape() == p.shape() && w.size() == 2 * t.shape(0), "concatenation", [&] {
            return "theta " + detail::shape_string(t.shape()) + " and phi " + detail::shape_string(p.shape()) +
                   " must be [e, d] and w_f " + detail::shape_string(w.shape()) + " must be [2e]";
        });
        const std::size_t e = t.shape(0);
        query_row = xt::zeros<double>({std::size_t(1), t.shape(1)});
        key_row = xt::zeros<double>({std::size_t(1), t.shape(1)});
        for (std::size_t r = 0; r < e; ++r)
            for (std::size_t c = 0; c < t.shape(1); ++c) {
                query_row(0, c) += w(r) * t(r, c);
                key_row(0, c) += w(e + r) * p(r, c);
            }
    }

    template <class T>
    T logit(std::span<const T> a, std::span<const T> b) const {
        return activation(a[0] + b[0]);
    }
    /// ReLU, of a value or an xsimd batch.
    template <class V>
    V activation(V sum) const {
        if constexpr (std::is_floating_point_v<V>) return std::max(sum, V(0));
        else return xsimd::max(sum, V(0));
    }
    template <class T>
    xt::xtensor<T, 2> project_queries(row_matrix<const T> x) const { return project(x, query_row); }
    template <class T>
    xt::xtensor<T, 2> project_keys(row_matrix<const T> x) const { return project(x, key_row); }

private:
    template <class T>
    static xt::xtensor<T, 2> project(row_matrix<const T> x, const xt::xtensor<double, 2>& row) {
        detail::require(x.cols == row.shape(1), "concatenation", [&] {
            return "theta and phi are [e, " + std::to_string(row.shape(1)) +
                   "] but the features have dimension " + std::to_string(x.cols);
        });
        const xt::xtensor<T, 2> r = xt::cast<T>(row);
        return simd::linear_rows(execution::seq, x, as_rows(r));
    }
};

static_assert(similarity<concatenation>);

}  // namespace nonlocal
