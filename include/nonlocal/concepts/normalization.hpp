#pragma once
/// @file concepts/normalization.hpp
/// The normalization concept: what C_i is.

#include <concepts>

namespace nonlocal {

// ---------------------------------------------------------------- normalization

/// What C_i is.
enum class normalizer {
    softmax,  ///< sum over j of exp(logit): kappa is replaced by exp, computed stably
    sum,      ///< sum over j of kappa(logit)
    count,    ///< |N(i)|
    none,     ///< 1
};

/// A normalization policy: `static constexpr normalizer kind`. The `sum`
/// kind may add a data term with members `data_weight(i)` and `data_value(i, c)`.
template <class N>
concept normalization = requires {
    { N::kind } -> std::convertible_to<normalizer>;
};

}  // namespace nonlocal
