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

#include <algorithm>
#include <concepts>
#include <cmath>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/row_matrix.hpp"

namespace nonlocal {

// ---------------------------------------------------------------- weight functions (kappa)

/// kappa(l) = l: the weight is the logit.
struct identity_weight {
    template <class T>
    static T apply(T logit) noexcept { return logit; }
};

/// kappa(l) = exp(l). With `sum` normalization the kernels subtract the running
/// row maximum first, which leaves the ratio unchanged and cannot overflow.
struct exp_weight {
    template <class T>
    static T apply(T logit) noexcept { return std::exp(logit); }
};

template <class K>
inline constexpr bool is_weight_function_v = std::is_same_v<K, identity_weight> || std::is_same_v<K, exp_weight>;

namespace detail {
template <class S>
struct weight_function_of {};
template <class S>
    requires requires { typename S::weight_function; }
struct weight_function_of<S> {
    using type = typename S::weight_function;
};
template <class S>
    requires(!requires { typename S::weight_function; } && requires { typename S::kernel; })
struct weight_function_of<S> {   // the name before 0.1.0, kept for one release
    using type = typename S::kernel;
};
}  // namespace detail

/// The weight function kappa of similarity S: its `weight_function` member type (or, until
/// the release after 0.1.0, its `kernel`).
template <class S>
using weight_function_t = typename detail::weight_function_of<S>::type;

/// The names before 0.1.0, kept for one release.
using identity_kernel [[deprecated("use nonlocal::identity_weight")]] = identity_weight;
using exp_kernel [[deprecated("use nonlocal::exp_weight")]] = exp_weight;
template <class K>
[[deprecated("use nonlocal::is_weight_function_v")]] inline constexpr bool is_kernel_v = is_weight_function_v<K>;

// ---------------------------------------------------------------- similarity

// ---------------------------------------------------------------- similarity traits

/// How a similarity's logit is formed. A similarity declares one with
/// `using traits = nonlocal::similarity_traits<Form, Properties...>`, and the form decides
/// which kernels compute it (`nonlocal::kernel_for`, `nonlocal::plan`).
struct opaque_form {};       ///< only `logit` is known: the gather kernel
struct dot_product_form {};  ///< logit = scale(d) <q, k>
struct distance_form {};     ///< logit = scale(d) |q - k|^2
struct cosine_form {};       ///< logit = scale(d) <q, k> / (|q| |k|), 0 when q or k is 0
struct channel_sum_form {};  ///< logit = sum_c channel_logit(q_c - k_c)
struct separable_form {};    ///< logit = activation(q + k) for projected features of one value each

/// A property a similarity may declare after its form: logit(x_i, x_j) = logit(x_j, x_i) when
/// queries and keys are the same features, which lets symmetrised weights (`ar_system`)
/// evaluate each pair once.
struct symmetric {};

template <class F>
inline constexpr bool is_logit_form_v =
    std::is_same_v<F, opaque_form> || std::is_same_v<F, dot_product_form> || std::is_same_v<F, distance_form> ||
    std::is_same_v<F, cosine_form> || std::is_same_v<F, channel_sum_form> || std::is_same_v<F, separable_form>;

/// A similarity's declared form and properties: `similarity_traits<dot_product_form>`,
/// `similarity_traits<distance_form, symmetric>`, ...
template <class Form, class... Properties>
struct similarity_traits {
    static_assert(is_logit_form_v<Form>,
                  "nonlocal::similarity_traits: the first argument must be a logit form: opaque_form, "
                  "dot_product_form, distance_form, cosine_form, channel_sum_form or separable_form");
    static_assert((std::is_same_v<Properties, symmetric> && ...),
                  "nonlocal::similarity_traits: the properties after the form are: symmetric");
    using form = Form;
    static constexpr bool is_symmetric = (std::is_same_v<Properties, symmetric> || ...);
};

namespace detail {
template <class S>
struct traits_of {
    using type = similarity_traits<opaque_form>;
};
template <class S>
    requires requires { typename S::traits; }
struct traits_of<S> {
    using type = typename S::traits;
};
template <class T>
inline constexpr bool is_similarity_traits_v = false;
template <class F, class... P>
inline constexpr bool is_similarity_traits_v<similarity_traits<F, P...>> = true;
}  // namespace detail

/// The traits a similarity declares (`similarity_traits<opaque_form>` when it declares none).
template <class S>
using traits_of_t = typename detail::traits_of<S>::type;

/// The logit form a similarity declares.
template <class S>
using logit_form_t = typename traits_of_t<S>::form;

namespace detail {
/// What each form requires of the similarity beside `logit`: `double scale(std::size_t d)`
/// for the dot product, distance and cosine forms, `channel_logit` of a float, a double
/// (and of an xsimd batch of them) for channel sums, `activation` of the same for separable ones.
template <class S>
concept declared_form_fits =
    is_similarity_traits_v<traits_of_t<S>> &&
    (std::is_same_v<logit_form_t<S>, opaque_form> ||
     ((std::is_same_v<logit_form_t<S>, dot_product_form> || std::is_same_v<logit_form_t<S>, distance_form> ||
       std::is_same_v<logit_form_t<S>, cosine_form>) &&
      requires(const S& s, std::size_t d) {
          { s.scale(d) } -> std::convertible_to<double>;
      }) ||
     (std::is_same_v<logit_form_t<S>, channel_sum_form> && requires(const S& s, float f, double x) {
         { s.channel_logit(f) } -> std::convertible_to<float>;
         { s.channel_logit(x) } -> std::convertible_to<double>;
     }) ||
     (std::is_same_v<logit_form_t<S>, separable_form> && requires(const S& s, float f, double x) {
         { s.activation(f) } -> std::convertible_to<float>;
         { s.activation(x) } -> std::convertible_to<double>;
     }));

/// A similarity written for the member names that declared its traits before `similarity_traits`
/// (`is_dot_product`, `is_symmetric`) without a `traits` type: it would silently run on the
/// gather kernel, so it is refused.
template <class S>
concept undeclared_legacy_traits =
    !requires { typename S::traits; } && (requires { S::is_dot_product; } || requires { S::is_symmetric; });
}  // namespace detail

/// A similarity policy: `using weight_function = identity_weight` or `exp_weight`, and
/// a member `logit(q, k)` taking two `std::span<const T>` for T = float and
/// double (a function template does it). A similarity that needs the positions
/// of the pair writes `logit(q, k, i, j)` instead.
///
/// Optional:
/// - `using traits = similarity_traits<Form, symmetric>`: the form of the logit (above), which
///   lets the fast kernels compute it, and its properties. A form that needs `scale(d)` or
///   `channel_logit` without them fails this concept;
/// - `project_queries(row_matrix<const T>)` / `project_keys(...)` returning
///   `xt::xtensor<T, 2>`: features are transformed once before the aggregate
///   (embedded Gaussian, concatenation);
/// - `for_head(h)`: the similarity to use for head h of a [B, H, n, d] input;
/// - `template <class V> V channel_logit(V difference) const` with logit(q, k) =
///   sum_c channel_logit(q[c] - k[c]), V being float, double or an xsimd batch of
///   them: required by `channel_sum_form`, and used by a `distance_form` that has it to
///   compute a grid stencil's edge weights a channel at a time (`ar_system`).
///
/// If you see "the required expression s.logit(a, b) is invalid", your logit
/// does not accept `std::span<const float>` and `std::span<const double>`. If
/// `declared_form_fits` fails, the form you declared needs `scale(d)` or `channel_logit`;
/// if `undeclared_legacy_traits` holds, replace `is_dot_product` / `is_symmetric` by
/// `using traits = nonlocal::similarity_traits<nonlocal::dot_product_form>` (and `symmetric`).
template <class S>
concept similarity =
    is_weight_function_v<weight_function_t<S>> && detail::declared_form_fits<S> && !detail::undeclared_legacy_traits<S> &&
    (requires(const S& s, std::span<const double> a, std::span<const float> f) {
        { s.logit(a, a) } -> std::convertible_to<double>;
        { s.logit(f, f) } -> std::convertible_to<float>;
    } || requires(const S& s, std::span<const double> a, std::span<const float> f, std::size_t i) {
        { s.logit(a, a, i, i) } -> std::convertible_to<double>;
        { s.logit(f, f, i, i) } -> std::convertible_to<float>;
    });

// ---------------------------------------------------------------- neighborhood

/// The keys `first, first + stride, ..., first + (count - 1) * stride`.
struct key_range {
    std::size_t first = 0;
    std::size_t count = 0;
    std::size_t stride = 1;
};

/// Sizes of one aggregate: n queries, m keys.
struct extents {
    std::size_t queries = 0;
    std::size_t keys = 0;
};

/// Which [n, d] slice of a batched, multi-head aggregate: head `head` of batch item `item`,
/// of `items` items with `heads` heads each (slice `item * heads + head`).
struct slice_index {
    std::size_t item = 0;
    std::size_t head = 0;
    std::size_t items = 1;
    std::size_t heads = 1;
};

/// Stands for the callback a neighborhood is handed, in the `neighborhood` concept's check:
/// a neighborhood's `for_each_range` must take any function of a `key_range`.
struct key_range_sink {
    void operator()(key_range) const noexcept {}
};

/// A neighborhood policy: a member
/// `template <class F> void for_each_range(std::size_t i, extents e, F&& f) const`
/// that calls `f(key_range{...})` for the keys of query i, in increasing order
/// and without repeats. Optional: `void check(extents e) const` throwing
/// `std::invalid_argument` when the policy does not fit n and m; `for_slice(slice_index)`
/// returning the neighborhood of one slice of a batched or multi-head input (a mask per
/// batch item), with `void check_slices(std::size_t items, std::size_t heads) const`.
///
/// If you see "the required expression nb.for_each_range(i, e, sink) is
/// invalid", check the name and that the member is `const`.
template <class N>
concept neighborhood = requires(const N& nb, std::size_t i, extents e, key_range_sink sink) {
    nb.for_each_range(i, e, sink);
};

/// How much of a tile of queries x keys a neighborhood admits.
enum class tile_coverage {
    none,     ///< no pair: the tile is skipped
    partial,  ///< some pairs: `admits(i, j)` masks the tile
    full,     ///< every pair: no mask
};

/// A neighborhood that can also classify tiles [i0, i1) x [j0, j1) and test
/// single pairs, which lets the tiled kernels skip empty tiles and mask only
/// the partial ones: members `tile_coverage coverage(i0, i1, j0, j1) const` and
/// `bool admits(i, j) const`. Optional: `std::size_t key_end(i, e) const`, one past
/// the last key that queries 0..i admit, so that the kernels stop there (causal);
/// `void restrict_tile(i0, rows, j0, cols, unsigned char* keep, std::size_t ld) const`,
/// which clears `keep[c * ld + r]` for each pair (i0 + r, j0 + c) it does not admit, a
/// whole key column at a time (masks), instead of asking `admits` pair by pair.
template <class N>
concept tiled_neighborhood = neighborhood<N> && requires(const N& nb, std::size_t i) {
    { nb.coverage(i, i, i, i) } -> std::same_as<tile_coverage>;
    { nb.admits(i, i) } -> std::convertible_to<bool>;
};

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

// ---------------------------------------------------------------- detection of optional members

namespace detail {

template <class S, class T>
concept has_projection = requires(const S& s, row_matrix<const T> x) {
    { s.project_queries(x) } -> std::same_as<xt::xtensor<T, 2>>;
    { s.project_keys(x) } -> std::same_as<xt::xtensor<T, 2>>;
};

/// A similarity that declares the logit form `F`.
template <class S, class F>
concept has_logit_form = std::is_same_v<logit_form_t<S>, F>;

template <class S>
concept is_dot_product_similarity = has_logit_form<S, dot_product_form>;

template <class S>
concept has_for_head = requires(const S& s, std::size_t h) {
    { s.for_head(h) };
};

template <class S>
concept positional_logit = requires(const S& s, std::span<const double> a, std::size_t i) {
    s.logit(a, a, i, i);
};

template <class S>
concept symmetric_similarity = traits_of_t<S>::is_symmetric;

/// A similarity whose logit is a sum over feature channels of `channel_logit(q_c - k_c)`
/// (`channel_sum_form`, or a `distance_form` that has `channel_logit`), with no positions
/// and no projection.
template <class S>
concept channel_sum_similarity = (has_logit_form<S, channel_sum_form> || has_logit_form<S, distance_form>) &&
                                 requires(const S& s, float f, double d) {
    { s.channel_logit(f) } -> std::convertible_to<float>;
    { s.channel_logit(d) } -> std::convertible_to<double>;
} && !positional_logit<S> && !has_projection<S, float> && !has_projection<S, double>;

template <class N>
concept has_check = requires(const N& nb, extents e) { nb.check(e); };

template <class N>
concept has_data_term = requires(const N& nm, std::size_t i) {
    { nm.data_weight(i) } -> std::convertible_to<double>;
    { nm.data_value(i, i) } -> std::convertible_to<double>;
};

/// The weight function actually applied: softmax normalization replaces kappa by exp.
template <class S, class Nm>
using effective_weight_function =
    std::conditional_t<Nm::kind == normalizer::softmax, exp_weight, weight_function_t<S>>;

/// Weights are shifted by the running row maximum when that leaves y unchanged.
template <class S, class Nm>
inline constexpr bool shifts_by_row_max =
    std::is_same_v<effective_weight_function<S, Nm>, exp_weight> &&
    (Nm::kind == normalizer::softmax || Nm::kind == normalizer::sum);

/// logit(q_i, k_j) whichever form the similarity has.
template <class S, class T>
T logit(const S& s, std::span<const T> q, std::span<const T> k, std::size_t i, std::size_t j) {
    if constexpr (positional_logit<S>) {
        return static_cast<T>(s.logit(q, k, i, j));
    } else {
        (void)i, (void)j;
        return static_cast<T>(s.logit(q, k));
    }
}

/// Features after the similarity's projection (the input itself when it has none).
template <class S, class T>
class projected_features {
public:
    projected_features(const S& s, row_matrix<const T> x, bool queries) {
        if constexpr (has_projection<S, T>) {
            storage_ = queries ? s.project_queries(x) : s.project_keys(x);
            view_ = {storage_.data(), storage_.shape(0), storage_.shape(1)};
        } else {
            (void)s, (void)queries;
            view_ = x;
        }
    }
    row_matrix<const T> operator*() const noexcept { return view_; }

private:
    xt::xtensor<T, 2> storage_;
    row_matrix<const T> view_;
};

template <class N>
concept has_key_end = requires(const N& nb, std::size_t i, extents e) {
    { nb.key_end(i, e) } -> std::convertible_to<std::size_t>;
};

/// One past the last key any query up to i may admit: `nb.key_end(i, e)` when the
/// neighborhood has it (causal), m otherwise. The tiled kernels stop there.
template <class N>
std::size_t key_end(const N& nb, std::size_t i, extents e) {
    if constexpr (has_key_end<N>) return std::min<std::size_t>(nb.key_end(i, e), e.keys);
    else return (void)nb, (void)i, e.keys;
}

template <class N>
void check(const N& nb, extents e) {
    if constexpr (has_check<N>) nb.check(e);
}

template <class N>
concept has_restrict_tile = requires(const N& nb, std::size_t i, unsigned char* keep) {
    nb.restrict_tile(i, i, i, i, keep, i);
};

/// Clears `keep[c * ld + r]` for the pairs (i0 + r, j0 + c), r < rows and c < cols, that
/// `nb` does not admit: through `nb.restrict_tile` when it has one, pair by pair otherwise.
template <class N>
void restrict_tile(const N& nb, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                   unsigned char* keep, std::size_t ld) {
    if constexpr (has_restrict_tile<N>) {
        nb.restrict_tile(i0, rows, j0, cols, keep, ld);
    } else {
        for (std::size_t c = 0; c < cols; ++c)
            for (std::size_t r = 0; r < rows; ++r)
                if (!nb.admits(i0 + r, j0 + c)) keep[c * ld + r] = 0;
    }
}

/// A policy with one instance per slice: `for_slice(slice_index)` and `check_slices(items, heads)`.
template <class P>
concept sliced_policy = requires(const P& p, slice_index at, std::size_t count) {
    p.for_slice(at);
    p.check_slices(count, count);
};

/// The instance of policy `p` for slice `at`: `p.for_slice(at)` when it has one, `p` otherwise.
template <class P>
auto of_slice(const P& p, slice_index at) {
    if constexpr (sliced_policy<P>) return p.for_slice(at);
    else return (void)at, p;
}

template <class P>
void check_slices(const P& p, std::size_t items, std::size_t heads) {
    if constexpr (sliced_policy<P>) p.check_slices(items, heads);
    else (void)p, (void)items, (void)heads;
}

}  // namespace detail
}  // namespace nonlocal
