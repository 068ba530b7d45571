#pragma once
/// @file similarity/custom.hpp
/// Wrapping a user callable as a similarity.

#include <span>
#include <utility>

#include "nonlocal/concepts.hpp"

namespace nonlocal {

/// A similarity whose logit is `f(q, k)` for two `std::span<const T>`; kappa is `Kernel`.
template <class F, class Kernel = identity_weight>
struct custom_similarity {
    using weight_function = Kernel;
    F f;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        return static_cast<T>(f(q, k));
    }
};

/// `make_similarity(f)`: logit = f(q, k), kappa = identity.
/// `make_similarity<exp_weight>(f)`: s = exp(f(q, k)).
/// `f` must accept `std::span<const float>` and `std::span<const double>` (a generic lambda does).
template <class Kernel = identity_weight, class F>
custom_similarity<std::decay_t<F>, Kernel> make_similarity(F&& f) {
    return {std::forward<F>(f)};
}

}  // namespace nonlocal
