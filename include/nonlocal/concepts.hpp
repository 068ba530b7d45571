#pragma once
/// @file concepts.hpp
/// The three policy concepts of `weighted_aggregate`
///
///     y_i = (1 / C_i) * sum_{j in N(i)} kappa(logit(q_i, k_j)) * v_j
///
/// - a *similarity* gives logit and kappa,
/// - a *neighborhood* gives N(i),
/// - a *normalization* gives C_i.
///
/// Each policy is a small struct; the concepts below are what a user-written
/// policy must provide. When a call does not compile, the first error names
/// the concept that failed; the comment at that concept says what is missing.

/// Each concept has a header of its own in `concepts/`; `concepts/detection.hpp` holds what
/// the kernels detect of a policy.

#include "nonlocal/concepts/detection.hpp"
#include "nonlocal/concepts/neighborhood.hpp"
#include "nonlocal/concepts/normalization.hpp"
#include "nonlocal/concepts/similarity.hpp"
