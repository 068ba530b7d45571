#pragma once
/// @file kernel/select.hpp
/// Which kernel computes a composition, from the policies' traits alone (at compile time):
///
/// | kernel | similarity | neighborhood | normalization |
/// |---|---|---|---|
/// | `patch_window` (running sums) | `patch_distance` | `window2d` (dilation 1, not causal, no log C_i; else `gather`) | `sum` |
/// | `tiled_window` | a tiled similarity (below), or a dot product with a position bias (`with_position_bias`) | a box on a grid (`windowed_neighborhood`: `window1d`, `window2d`) | `softmax`, `sum` with exp weights, or identity weights with `sum`, `count`, `none` |
/// | `tiled_groups` (`tiled` on each group) | a tiled similarity | a partition into dense groups (`patch_group`) | as `tiled` |
/// | `tiled` | a tiled similarity, or a dot product with a bias per pair (`with_pair_bias`) | tiles classified (`tiled_neighborhood`: `dense`, `causal`, `block_mask`, `key_mask`, `element_mask`, an `intersection` of them) | as `tiled_window` |
/// | `stencil` | `edge_weights`, or a symmetric sum over channels (`channel_logit`: the distances) with q and k the same features (else `gather`) | `grid_stencil` (without log C_i; else `gather`) | `sum`, `sum_with_data`, `none` |
/// | `tiled_ranges` | a tiled similarity | any: key ranges (blocks of queries sparser than `ranges_min_density` go row by row on `gather`) | as `tiled` |
/// | `gather` | any | any | any, with a data term (`sum_with_data`) |
///
/// A tiled similarity declares its form (`similarity_traits`): `dot_product_form`,
/// `distance_form` or `cosine_form` (computed as dot products of lowered features,
/// kernel/lowering.hpp), or `channel_sum_form` (scored from differences, a channel at a
/// time). The first row that matches wins; `kernel_for<S, Nb, Nm>` names it, and
/// `nonlocal::plan` says what a call runs once the run-time conditions in parentheses are
/// known (kernel/choose.hpp). "Exp weights" are exponentials whose ratio the running row
/// maximum leaves unchanged (`softmax`, or an `exp_weight` similarity with `sum`).

#include <cstddef>
#include <type_traits>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/slices.hpp"
#include "nonlocal/kernel/lowering.hpp"
#include "nonlocal/kernel/tiled_window.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/neighborhood/grid_stencil.hpp"
#include "nonlocal/neighborhood/window.hpp"
#include "nonlocal/similarity/patch_distance.hpp"

namespace nonlocal {
namespace detail {

/// A neighborhood that partitions the tokens into groups that attend densely among
/// themselves (`patch_group`): `groups()` groups of `group_size()` tokens, `member(g, t)`.
template <class Nb>
concept partitioning_neighborhood = requires(const Nb& nb, std::size_t g) {
    { nb.groups() } -> std::convertible_to<std::size_t>;
    { nb.group_size() } -> std::convertible_to<std::size_t>;
    { nb.member(g, g) } -> std::convertible_to<std::size_t>;
};

/// Weights the tiled kernels compute: exp(logit - row maximum) under a ratio, or the logit itself.
template <class S, class Nm>
inline constexpr bool tiled_weights =
    !has_data_term<Nm> && (shifts_by_row_max<S, Nm> || std::is_same_v<effective_weight_function<S, Nm>, identity_weight>);

}  // namespace detail

namespace kernel {

/// A similarity whose logits the tiled kernels compute without a bias: a dot product, a
/// distance or cosine (lowered to a dot product), or a sum over channels.
template <class S>
concept tiled_similarity = detail::is_dot_product_similarity<S> || lowered_similarity<S> || detail::difference_scored<S>;

/// The kernels of the table above.
enum class kernel_kind { patch_window, tiled_window, tiled_groups, tiled, stencil, tiled_ranges, gather };

/// Whether the running-sum kernel computes a composition (rows 1 of the table).
template <class S, class Nb, class Nm>
inline constexpr bool patch_window_applies =
    std::is_same_v<S, patch_distance> && std::is_same_v<Nb, window2d> && Nm::kind == normalizer::sum &&
    !detail::has_data_term<Nm>;

/// Whether the tiled window kernel computes a composition (row 2).
template <class S, class Nb, class Nm>
inline constexpr bool tiled_window_applies =
    (tiled_similarity<S> || detail::offset_biased_dot_product<S>) && windowed_neighborhood<Nb> &&
    detail::tiled_weights<S, Nm>;

/// Whether the tiled kernel computes a composition (row 4).
template <class S, class Nb, class Nm>
inline constexpr bool tiled_applies =
    (tiled_similarity<S> || detail::pair_biased_dot_product<S>) && tiled_neighborhood<Nb> &&
    detail::tiled_weights<S, Nm>;

/// Whether the tiled kernel computes a composition group by group (row 3): a tiled similarity
/// (without a bias, whose pairs' positions the groups renumber).
template <class S, class Nb, class Nm>
inline constexpr bool tiled_groups_applies =
    detail::partitioning_neighborhood<Nb> && tiled_similarity<S> && tiled_applies<S, dense, Nm>;

/// Precomputed edge weights (`edge_weights`): planes per stencil direction.
template <class S>
concept precomputed_edge_weights = requires(const S& s) {
    s.planes();
    s.offsets();
};

/// Whether the stencil kernel computes a composition (row 5): precomputed edge weights, summed
/// as they are (identity kernel), or a symmetric sum over channels whose weights it computes
/// once, over a grid_stencil, with or without a data term.
template <class S, class Nb, class Nm>
inline constexpr bool stencil_applies =
    ((precomputed_edge_weights<S> && std::is_same_v<weight_function_t<S>, identity_weight>) ||
     (detail::channel_sum_similarity<S> && detail::symmetric_similarity<S>)) &&
    std::is_same_v<Nb, grid_stencil> && (Nm::kind == normalizer::sum || Nm::kind == normalizer::none) &&
    (!detail::has_data_term<Nm> || detail::batched_data_term<Nm> || requires(const Nm& nm) {
        nm.alpha[0];
        nm.target[0];
    });

/// Whether the ranges kernel computes a composition (row 6): a tiled similarity over any
/// neighborhood.
template <class S, class Nb, class Nm>
inline constexpr bool tiled_ranges_applies = tiled_similarity<S> && detail::tiled_weights<S, Nm>;

/// The kernel of the first row of the table that matches.
template <class S, class Nb, class Nm>
inline constexpr kernel_kind kernel_for = patch_window_applies<S, Nb, Nm>   ? kernel_kind::patch_window
                                               : tiled_window_applies<S, Nb, Nm> ? kernel_kind::tiled_window
                                               : tiled_groups_applies<S, Nb, Nm> ? kernel_kind::tiled_groups
                                               : tiled_applies<S, Nb, Nm>        ? kernel_kind::tiled
                                               : stencil_applies<S, Nb, Nm>      ? kernel_kind::stencil
                                               : tiled_ranges_applies<S, Nb, Nm> ? kernel_kind::tiled_ranges
                                                                                 : kernel_kind::gather;

/// The former name of `kernel_for`.
template <class S, class Nb, class Nm>
[[deprecated("use nonlocal::kernel_for")]] inline constexpr kernel_kind selected_kernel = kernel_for<S, Nb, Nm>;

/// The kernel's name, as the table above spells it.
constexpr const char* name(kernel_kind k) noexcept {
    switch (k) {
        case kernel_kind::patch_window: return "patch_window";
        case kernel_kind::tiled_window: return "tiled_window";
        case kernel_kind::tiled_groups: return "tiled_groups";
        case kernel_kind::tiled: return "tiled";
        case kernel_kind::stencil: return "stencil";
        case kernel_kind::tiled_ranges: return "tiled_ranges";
        case kernel_kind::gather: return "gather";
    }
    return "?";
}

}  // namespace kernel

using kernel::kernel_kind;
/// The kernel that computes a composition of similarity S, neighborhood Nb and normalization
/// Nm, from their traits (kernel/select.hpp's table), before any run-time condition; e.g.
/// `static_assert(nonlocal::kernel_for<my_similarity, nonlocal::dense, nonlocal::softmax> ==
/// nonlocal::kernel_kind::tiled)`.
template <class S, class Nb, class Nm>
inline constexpr kernel_kind kernel_for = kernel::kernel_for<S, Nb, Nm>;
}  // namespace nonlocal
