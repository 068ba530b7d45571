#pragma once
/// @file kernel/choose.hpp
/// Which kernel runs one [n, d] slice of an aggregate. The compile-time
/// table (kernel/select.hpp, `kernel_for`) names the kernel the policies' traits allow;
/// the conditions only a call knows come here, in one function, `choose`:
///
/// - the running-sum, stencil kernels do not compute log C_i (`weighted_aggregate_lse`),
///   and the running-sum kernel takes neither dilation nor causal windows;
/// - a symmetric sum over channels runs on the stencil only when queries and keys are the
///   same features;
/// - a distance is lowered to a dot product (kernel/lowering.hpp) unless its cancellation
///   bound exceeds `cancellation_tolerance` under exponential weights: then the tiled
///   kernels score it from the differences of the features.
///
/// `choose` returns the kernel, how the logits are formed and, in words, why: what
/// `nonlocal::plan` reports, and what `aggregate_slice` (kernel/dispatch.hpp) runs.

#include <cstddef>
#include <string>
#include <type_traits>

#include "nonlocal/concepts.hpp"
#include "nonlocal/kernel/lowering.hpp"
#include "nonlocal/kernel/patch_window.hpp"
#include "nonlocal/kernel/select.hpp"
#include "nonlocal/row_matrix.hpp"

namespace nonlocal::kernel {


/// How a kernel forms the logits.
enum class logit_route {
    dot_product,        ///< the micro-kernels' dot products (a bias added per tile, if any)
    lowered_distance,   ///< a distance as the dot product of lowered features (kernel/lowering.hpp)
    lowered_cosine,     ///< a cosine as the dot product of normalised features
    lowered_sum,        ///< a separable logit a_i + b_j as a dot product, its activation per tile
    differences,        ///< a sum over channels of the features' differences, a channel at a time
    running_sums,       ///< patch distances by running sums (`patch_window`)
    edge_weights,       ///< edge weights on a grid stencil, precomputed or computed once per edge
    logit_member,       ///< the similarity's `logit`, pair by pair (`gather`)
};

constexpr const char* name(logit_route r) noexcept {
    switch (r) {
        case logit_route::dot_product: return "dot_product";
        case logit_route::lowered_distance: return "lowered_distance";
        case logit_route::lowered_cosine: return "lowered_cosine";
        case logit_route::lowered_sum: return "lowered_sum";
        case logit_route::differences: return "differences";
        case logit_route::running_sums: return "running_sums";
        case logit_route::edge_weights: return "edge_weights";
        case logit_route::logit_member: return "logit_member";
    }
    return "?";
}

/// The kernel one slice runs on, how it forms the logits, and why.
struct choice {
    kernel_kind kernel;
    logit_route logits;
    const char* reason;
};

/// Whether a kernel computes distances as lowered dot products: the tiled kernel, whose blocks of
/// queries each meet every key they admit, so that the lowering's pass over the features is
/// repaid by one FMA per feature and pair instead of a subtraction and an FMA. The window and
/// ranges kernels meet each key from a few blocks only, and score the differences.
constexpr bool lowers_distances(kernel_kind kind) noexcept {
    return kind == kernel_kind::tiled || kind == kernel_kind::tiled_groups;
}

/// Why the table (kernel/select.hpp) gives a composition the gather kernel: the first of its
/// policies that no other row takes. (Any neighborhood takes a tiled similarity, on the ranges
/// kernel at least; what is left is the similarity or the normalization.)
template <class S, class Nb, class Nm>
constexpr const char* gather_reason() noexcept {
    constexpr bool similarity_fits = tiled_similarity<S> || detail::pair_biased_dot_product<S> ||
                                     detail::offset_biased_dot_product<S>;
    if (!similarity_fits)
        return "the similarity declares no logit form the tiled kernels compute (similarity_traits with "
               "dot_product_form, distance_form, cosine_form, channel_sum_form or separable_form)";
    if (detail::has_data_term<Nm>) return "the normalization has a data term (sum_with_data), which only gather adds";
    if (!detail::tiled_weights<S, Nm>)
        return "exponential weights under count or none are absolute: the tiled kernels compute exponentials "
               "only as ratios (softmax, or sum)";
    return "a bias per pair or per offset is added on the tiled kernels' tiles and windows only, not over this "
           "neighborhood";
}

/// The kernel and logits of one slice of queries `q` and keys `k` (projected), given whether
/// log C_i is wanted and, for a distance, its lowered features' cancellation bound.
template <class T, class S, class Nb, class Nm>
choice choose(row_matrix<const T> q, row_matrix<const T> k, const Nb& nb, bool lse, double cancellation) {
    constexpr kernel_kind kind = kernel_for<S, Nb, Nm>;
    const auto tiled_logits = [&]() -> choice {
        if constexpr (detail::has_logit_form<S, cosine_form>) {
            return {kind, logit_route::lowered_cosine, "a cosine: the dot product of normalised features"};
        } else if constexpr (detail::has_logit_form<S, separable_form>) {
            return {kind, logit_route::lowered_sum,
                    "a separable logit: a_i + b_j as the dot product of [a_i, 1] and [1, b_j], then its activation"};
        } else if constexpr (detail::has_logit_form<S, distance_form> && !lowers_distances(kind)) {
            return {kind, logit_route::differences,
                    "a distance where each key meets few queries: the differences of the features (lowering would "
                    "cost more than it saves)"};
        } else if constexpr (detail::has_logit_form<S, distance_form>) {
            if (!detail::shifts_by_row_max<S, Nm> || cancellation <= cancellation_tolerance)
                return {kind, logit_route::lowered_distance, "a distance: the dot product of lowered features"};
            return {kind, logit_route::differences,
                    "a distance whose lowered dot product would cancel beyond cancellation_tolerance: the "
                    "differences of the features"};
        } else if constexpr (detail::has_logit_form<S, channel_sum_form>) {
            return {kind, logit_route::differences, "a sum over channels: the differences of the features"};
        } else {
            return {kind, logit_route::dot_product, "a dot product"};
        }
    };
    (void)q, (void)k, (void)nb, (void)cancellation;
    if constexpr (kind == kernel_kind::tiled || kind == kernel_kind::tiled_window || kind == kernel_kind::tiled_groups ||
                  kind == kernel_kind::tiled_ranges) {
        return tiled_logits();
    } else if constexpr (kind == kernel_kind::stencil) {
        if (lse) return {kernel_kind::gather, logit_route::logit_member, "the stencil kernel does not compute log C_i"};
        if constexpr (!precomputed_edge_weights<S>)
            if (q.data != k.data)
                return {kernel_kind::gather, logit_route::logit_member,
                        "queries and keys are different features: the stencil computes each edge's weight once "
                        "from one set"};
        return {kind, logit_route::edge_weights, "edge weights over a grid stencil"};
    } else if constexpr (kind == kernel_kind::patch_window) {
        if (lse)
            return {kernel_kind::gather, logit_route::logit_member, "the running-sum kernel does not compute log C_i"};
        if (!patch_window_handles(nb))
            return {kernel_kind::gather, logit_route::logit_member,
                    "the running-sum kernel takes neither dilated nor causal windows"};
        return {kind, logit_route::running_sums, "patch distances by running sums"};
    } else {
        return {kernel_kind::gather, logit_route::logit_member, gather_reason<S, Nb, Nm>()};
    }
}

}  // namespace nonlocal::kernel
