#pragma once
/// @file normalization.hpp
/// The normalizations C_i. A row whose normalizer is zero (no admissible
/// neighbour, or weights that sum to zero) yields zeros, never NaN.

#include <cmath>
#include <cstddef>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"

namespace nonlocal {

/// C_i = sum_j exp(logit_ij) and s_ij = exp(logit_ij), whatever the similarity's
/// kappa: Transformer attention. Computed with the running row maximum subtracted.
struct softmax {
    static constexpr normalizer kind = normalizer::softmax;
};

/// C_i = sum_j s_ij.
struct sum {
    static constexpr normalizer kind = normalizer::sum;
};

/// C_i = |N(i)| (the non-local block's dot product and concatenation forms).
struct count {
    static constexpr normalizer kind = normalizer::count;
};

/// C_i = 1: the unnormalized sum.
struct none {
    static constexpr normalizer kind = normalizer::none;
};

/// C_i = sum_j s_ij + alpha_i, and alpha_i * target_i is added to the weighted sum:
///
///     y_i = (sum_j s_ij v_j + alpha_i t_i) / (sum_j s_ij + alpha_i)
///
/// This is one Jacobi sweep of the linear AR model (alpha_i > 0 on observed
/// pixels, target = the observations). Only for [n, d] inputs.
struct sum_with_data {
    static constexpr normalizer kind = normalizer::sum;

    xt::xtensor<double, 1> alpha;   ///< [n], finite and >= 0
    xt::xtensor<double, 2> target;  ///< [n, dv]

    /// Throws `std::invalid_argument` unless alpha is [n] of finite values >= 0 and target is [n, dv].
    template <class A, class E>
    sum_with_data(const xt::xexpression<A>& alpha_, const xt::xexpression<E>& target_)
        : alpha(xt::cast<double>(alpha_.derived_cast())), target(xt::cast<double>(target_.derived_cast())) {
        detail::require(target.shape(0) == alpha.size(), "sum_with_data", [&] {
            return "alpha " + detail::shape_string(alpha.shape()) + " and target " +
                   detail::shape_string(target.shape()) + " must be [n] and [n, dv]";
        });
        for (double a : alpha)
            detail::require(std::isfinite(a) && a >= 0, "sum_with_data",
                            [&] { return "alpha must be finite and >= 0, got " + std::to_string(a); });
    }

    double data_weight(std::size_t i) const { return alpha(i); }
    double data_value(std::size_t i, std::size_t c) const { return target(i, c); }

    /// Throws unless the data term fits n queries with dv value channels.
    void check(std::size_t n, std::size_t dv) const {
        detail::require(alpha.size() == n && target.shape(1) == dv, "sum_with_data", [&] {
            return "alpha " + detail::shape_string(alpha.shape()) + " and target " +
                   detail::shape_string(target.shape()) + " do not fit " + std::to_string(n) +
                   " queries with " + std::to_string(dv) + " value channels";
        });
    }
};

static_assert(normalization<softmax>);
static_assert(normalization<sum>);
static_assert(normalization<count>);
static_assert(normalization<none>);
static_assert(normalization<sum_with_data>);
static_assert(detail::has_data_term<sum_with_data>);

}  // namespace nonlocal
