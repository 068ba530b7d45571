#pragma once
/// @file weighted_aggregate.hpp
/// The one computation of the library:
///
///     y_i = (1 / C_i) * sum_{j in N(i)} kappa(logit(q_i, k_j)) * v_j
///
/// with the similarity (logit, kappa), the neighborhood N and the
/// normalization C as compile-time policies.

#include <concepts>
#include <cstddef>
#include <string>
#include <type_traits>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/slices.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/kernel/gather.hpp"

namespace nonlocal {

namespace detail {

template <class... E>
using common_value_type = std::common_type_t<value_type_of<E>...>;

/// The rank shared by q, k and v, which must be known at compile time for one of them.
template <class Q, class K, class V>
constexpr std::size_t common_rank() {
    constexpr std::size_t ranks[] = {static_rank<Q>, static_rank<K>, static_rank<V>};
    for (std::size_t r : ranks)
        if (r != dynamic_rank) return r;
    return dynamic_rank;
}

/// Dispatches one [n, d] slice to the kernel that fits the policies.
template <class Arch, class T, class S, class Nb, class Nm>
void aggregate_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                     const Nm& nm, row_matrix<T> out) {
    const projected_features<S, T> qp(s, q, true), kp(s, k, false);
    kernel::gather<Arch>(*qp, *kp, v, s, nb, nm, out);
}

/// Runs the aggregate on every [n, d] slice of checked, contiguous inputs.
template <class Arch, class T, std::size_t R, class S, class Nb, class Nm>
void aggregate_all(const contiguous<T, R>& q, const contiguous<T, R>& k, const contiguous<T, R>& v,
                   const aggregate_shape<R>& shape, const S& s, const Nb& nb, const Nm& nm, T* out) {
    aggregate_slices(q, k, v, s, nb, nm, out, shape, [&](const auto& sh, auto qs, auto ks, auto vs, auto os) {
        aggregate_slice<Arch>(qs, ks, vs, sh, nb, nm, os);
    });
}

}  // namespace detail

/// The weighted aggregate of values `v` [m, dv] for queries `q` [n, dq] over keys `k` [m, dq]:
/// result [n, dv]. Batched [B, n, d] and multi-head [B, H, n, d] inputs are
/// sliced; keys and values may have fewer heads than queries (grouped-query).
///
/// Inputs are xtensor expressions of float or double of equal rank; the result
/// has their common value type. Throws `std::invalid_argument` naming the
/// shapes when they do not fit each other or the policies.
template <class Arch = default_arch, class Q, class K, class V, similarity S, neighborhood Nb, normalization Nm>
auto weighted_aggregate(const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
                        const S& similarity, const Nb& neighborhood, const Nm& normalization) {
    using T = detail::common_value_type<Q, K, V>;
    static_assert(std::floating_point<T>, "nonlocal::weighted_aggregate: inputs must be float or double");
    constexpr std::size_t R = detail::common_rank<Q, K, V>();
    static_assert(R != detail::dynamic_rank,
                  "nonlocal::weighted_aggregate: pass at least one xt::xtensor (or view of one): the rank must be "
                  "known at compile time");
    xt::xtensor<T, R> out;
    {
        const detail::contiguous<T, R> qc(q), kc(k), vc(v);
        const detail::aggregate_shape<R> shape("weighted_aggregate", qc.shape(), kc.shape(), vc.shape());
        out = xt::empty<T>(shape.out);
        detail::aggregate_all<Arch>(qc, kc, vc, shape, similarity, neighborhood, normalization, out.data());
    }
    return out;
}

/// The same, written into `out`, which must be a row-major container of the
/// result's shape and value type (otherwise `std::invalid_argument`).
template <class Arch = default_arch, class Q, class K, class V, similarity S, neighborhood Nb, normalization Nm,
          class Out>
void weighted_aggregate(const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
                        const S& similarity, const Nb& neighborhood, const Nm& normalization,
                        xt::xexpression<Out>& out) {
    using T = detail::common_value_type<Q, K, V>;
    constexpr std::size_t R = detail::common_rank<Q, K, V>();
    static_assert(R != detail::dynamic_rank, "nonlocal::weighted_aggregate: the rank must be known at compile time");
    Out& o = out.derived_cast();
    static_assert(std::is_same_v<typename Out::value_type, T> && xt::has_data_interface<Out>::value &&
                      Out::static_layout == xt::layout_type::row_major,
                  "nonlocal::weighted_aggregate: out must be a row-major container of the inputs' value type");
    static_assert(detail::static_rank<Out> == R, "nonlocal::weighted_aggregate: out must have the inputs' rank");
    const detail::contiguous<T, R> qc(q), kc(k), vc(v);
    const detail::aggregate_shape<R> shape("weighted_aggregate", qc.shape(), kc.shape(), vc.shape());
    std::array<std::size_t, R> out_shape{};
    std::copy(o.shape().begin(), o.shape().end(), out_shape.begin());
    detail::require(out_shape == shape.out, "weighted_aggregate", [&] {
        return "out has shape " + detail::shape_string(out_shape) + " but the result is " +
               detail::shape_string(shape.out);
    });
    detail::aggregate_all<Arch>(qc, kc, vc, shape, similarity, neighborhood, normalization,
                                o.data() + o.data_offset());
}

}  // namespace nonlocal
