#pragma once
/// @file concepts/similarity.hpp
/// The similarity concept: logit(q_i, k_j) and the weight function kappa applied to it, the
/// forms a logit may declare (`similarity_traits`) so that the fast kernels compute it, and
/// the checks that refuse a form without what it needs.

#include <concepts>
#include <cmath>
#include <cstddef>
#include <span>
#include <type_traits>

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

}  // namespace nonlocal
