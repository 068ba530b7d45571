#pragma once
/// @file weighted_aggregate.hpp
/// The one computation of the library:
///
///     y_i = (1 / C_i) * sum_{j in N(i)} kappa(logit(q_i, k_j)) * v_j
///
/// with the similarity (logit, kappa), the neighborhood N and the
/// normalization C as compile-time policies.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/slices.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/kernel/dispatch.hpp"

namespace nonlocal {

namespace detail {

template <class... E>
using common_value_type = std::common_type_t<value_type_of<E>...>;

/// Every slice of checked, contiguous inputs. With several threads, slices run
/// in parallel when there are enough of them, otherwise each slice's tiles do.
template <class Arch, class T, std::size_t R, class S, class Nb, class Nm>
void aggregate_all(int threads, const contiguous<T, R>& q, const contiguous<T, R>& k, const contiguous<T, R>& v,
                   const aggregate_shape<R>& shape, const S& s, const Nb& nb, const Nm& nm, T* out, T* lse) {
    check_policies(shape, s, nb, nm);
    const std::size_t slices = shape.batch * shape.heads;
    const bool across_slices = slices >= static_cast<std::size_t>(threads);
    parallel_for(slices, across_slices ? threads : 1, [&](std::size_t index) {
        const auto m = shape.slice(index, q.data(), k.data(), v.data(), out);
        with_slice_policies(shape, index, s, nb, nm, [&](const auto& si, const auto& nbi, const auto& nmi) {
            aggregate_slice<Arch>(m.q, m.k, m.v, si, nbi, nmi, m.out, lse ? lse + index * shape.n : nullptr,
                                  across_slices ? 1 : threads);
        });
    });
}

template <class Q, class K, class V>
constexpr std::size_t checked_rank() {
    constexpr std::size_t R = common_rank<Q, K, V>();
    static_assert(R != dynamic_rank,
                  "nonlocal::weighted_aggregate: pass at least one xt::xtensor (or view of one): the rank must be "
                  "known at compile time");
    return R;
}

/// q, k and v as contiguous `T` of rank R, with their checked shapes.
template <class T, std::size_t R>
struct checked_inputs {
    contiguous<T, R> q, k, v;
    aggregate_shape<R> shape;

    template <class Q, class K, class V>
    checked_inputs(std::string_view where, const xt::xexpression<Q>& q_, const xt::xexpression<K>& k_,
                   const xt::xexpression<V>& v_)
        : q(q_), k(k_), v(v_), shape(where, q.shape(), k.shape(), v.shape()) {
        static_assert(std::floating_point<T>, "nonlocal::weighted_aggregate: inputs must be float or double");
    }

    template <class Arch, class S, class Nb, class Nm, class Ex>
    void run(Ex policy, const S& s, const Nb& nb, const Nm& nm, T* out, T* lse) const {
        aggregate_all<Arch>(thread_count(policy), q, k, v, shape, s, nb, nm, out, lse);
    }
};

template <class Q, class K, class V>
using inputs_of = checked_inputs<common_value_type<Q, K, V>, checked_rank<Q, K, V>()>;

}  // namespace detail

/// The weighted aggregate of values `v` [m, dv] for queries `q` [n, dq] over keys `k` [m, dq]:
/// result [n, dv]. Batched [B, n, d] and multi-head [B, H, n, d] inputs are
/// sliced; keys and values may have fewer heads than queries (grouped-query).
///
/// Inputs are xtensor expressions of float or double of equal rank; the result
/// has their common value type. Throws `std::invalid_argument` naming the
/// shapes when they do not fit each other or the policies. `Arch` selects the
/// SIMD instruction set; the first argument may be an execution policy.
template <class Arch = default_arch, execution_policy Ex, class Q, class K, class V, similarity S, neighborhood Nb,
          normalization Nm>
auto weighted_aggregate(Ex policy, const xt::xexpression<Q>& q, const xt::xexpression<K>& k,
                        const xt::xexpression<V>& v, const S& similarity, const Nb& neighborhood,
                        const Nm& normalization) {
    using T = detail::common_value_type<Q, K, V>;
    const detail::inputs_of<Q, K, V> in("weighted_aggregate", q, k, v);
    xt::xtensor<T, detail::checked_rank<Q, K, V>()> out = xt::empty<T>(in.shape.out);
    in.template run<Arch>(policy, similarity, neighborhood, normalization, out.data(), static_cast<T*>(nullptr));
    return out;
}

/// @copydoc weighted_aggregate
template <class Arch = default_arch, class Q, class K, class V, similarity S, neighborhood Nb, normalization Nm>
auto weighted_aggregate(const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
                        const S& similarity, const Nb& neighborhood, const Nm& normalization) {
    return weighted_aggregate<Arch>(execution::seq, q, k, v, similarity, neighborhood, normalization);
}

/// The same, written into `out`, which must be a row-major container of the
/// result's shape and value type (otherwise `std::invalid_argument`).
template <class Arch = default_arch, execution_policy Ex, class Q, class K, class V, similarity S, neighborhood Nb,
          normalization Nm, class Out>
void weighted_aggregate(Ex policy, const xt::xexpression<Q>& q, const xt::xexpression<K>& k,
                        const xt::xexpression<V>& v, const S& similarity, const Nb& neighborhood,
                        const Nm& normalization, xt::xexpression<Out>& out) {
    using T = detail::common_value_type<Q, K, V>;
    constexpr std::size_t R = detail::checked_rank<Q, K, V>();
    Out& o = out.derived_cast();
    static_assert(std::is_same_v<typename Out::value_type, T> && xt::has_data_interface<Out>::value &&
                      Out::static_layout == xt::layout_type::row_major,
                  "nonlocal::weighted_aggregate: out must be a row-major container of the inputs' value type");
    static_assert(detail::static_rank<Out> == R, "nonlocal::weighted_aggregate: out must have the inputs' rank");
    const detail::inputs_of<Q, K, V> in("weighted_aggregate", q, k, v);
    std::array<std::size_t, R> out_shape{};
    std::copy(o.shape().begin(), o.shape().end(), out_shape.begin());
    detail::require(out_shape == in.shape.out, "weighted_aggregate", [&] {
        return "out has shape " + detail::shape_string(out_shape) + " but the result is " +
               detail::shape_string(in.shape.out);
    });
    in.template run<Arch>(policy, similarity, neighborhood, normalization, o.data() + o.data_offset(),
                          static_cast<T*>(nullptr));
}

/// @copydoc weighted_aggregate(Ex, const xt::xexpression<Q>&, const xt::xexpression<K>&, const xt::xexpression<V>&, const S&, const Nb&, const Nm&, xt::xexpression<Out>&)
template <class Arch = default_arch, class Q, class K, class V, similarity S, neighborhood Nb, normalization Nm,
          class Out>
void weighted_aggregate(const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
                        const S& similarity, const Nb& neighborhood, const Nm& normalization,
                        xt::xexpression<Out>& out) {
    weighted_aggregate<Arch>(execution::seq, q, k, v, similarity, neighborhood, normalization, out);
}

/// The aggregate and log C_i per query: for softmax weights the log-sum-exp
/// log sum_j exp(logit_ij) (-inf for a query without neighbours), which lets
/// results over disjoint key sets be merged exactly. `lse` has the shape of
/// the queries without their feature axis.
template <class T, std::size_t R>
struct aggregate_with_lse {
    xt::xtensor<T, R> out;
    xt::xtensor<T, R - 1> lse;
};

/// `weighted_aggregate` that also returns log C_i.
template <class Arch = default_arch, execution_policy Ex = execution::sequenced_policy, class Q, class K, class V,
          similarity S, neighborhood Nb, normalization Nm>
auto weighted_aggregate_lse(Ex policy, const xt::xexpression<Q>& q, const xt::xexpression<K>& k,
                            const xt::xexpression<V>& v, const S& similarity, const Nb& neighborhood,
                            const Nm& normalization) {
    using T = detail::common_value_type<Q, K, V>;
    constexpr std::size_t R = detail::checked_rank<Q, K, V>();
    const detail::inputs_of<Q, K, V> in("weighted_aggregate_lse", q, k, v);
    std::array<std::size_t, R - 1> lse_shape{};
    std::copy(in.shape.out.begin(), in.shape.out.end() - 1, lse_shape.begin());
    aggregate_with_lse<T, R> result{xt::empty<T>(in.shape.out), xt::empty<T>(lse_shape)};
    in.template run<Arch>(policy, similarity, neighborhood, normalization, result.out.data(), result.lse.data());
    return result;
}

}  // namespace nonlocal

namespace nonlocal {

/// What `weighted_aggregate` runs for a call: the kernel (`kernel_kind`), how it forms the
/// logits (`kernel::logit_route`) and, in words, why, fallbacks included. Made by `plan`.
class aggregate_plan {
public:
    explicit aggregate_plan(kernel::choice c) noexcept : choice_(c) {}
    /// The kernel that runs the call.
    kernel_kind kernel() const noexcept { return choice_.kernel; }
    /// How that kernel forms the logits.
    kernel::logit_route logits() const noexcept { return choice_.logits; }
    /// Why: what the policies declare, or what they lack for a faster kernel.
    std::string_view reason() const noexcept { return choice_.reason; }
    /// "kernel (logits): reason".
    std::string describe() const {
        return std::string(kernel::name(kernel())) + " (" + kernel::name(logits()) + "): " + std::string(reason());
    }

private:
    kernel::choice choice_;
};

/// The plan of `weighted_aggregate(q, k, v, similarity, neighborhood, normalization)`, or of
/// `weighted_aggregate_lse` when `log_normalizer` is true: the kernel it runs and why,
/// decided as the call decides it, on the inputs' first slice (the slices of a batch or of
/// heads differ only where their per-slice policies do). Throws what the call throws for
/// inputs that do not fit.
template <class Arch = default_arch, class Q, class K, class V, similarity S, neighborhood Nb, normalization Nm>
aggregate_plan plan(const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
                    const S& similarity, const Nb& neighborhood, const Nm& normalization, bool log_normalizer = false) {
    using T = detail::common_value_type<Q, K, V>;
    const detail::inputs_of<Q, K, V> in("plan", q, k, v);
    detail::check_policies(in.shape, similarity, neighborhood, normalization);
    const std::size_t slices = in.shape.batch * in.shape.heads;
    if (slices == 0)
        return aggregate_plan(kernel::choice{kernel_for<S, Nb, Nm>, kernel::logit_route::logit_member,
                                             "no slice: nothing runs"});
    const auto m = in.shape.slice(0, in.q.data(), in.k.data(), in.v.data(), static_cast<T*>(nullptr));
    std::optional<kernel::choice> made;
    detail::with_slice_policies(in.shape, 0, similarity, neighborhood, normalization,
                                [&](const auto& si, const auto& nbi, const auto& nmi) {
        using Si = std::decay_t<decltype(si)>;
        using Nbi = std::decay_t<decltype(nbi)>;
        using Nmi = std::decay_t<decltype(nmi)>;
        made = detail::with_choice<Arch, T, Si, Nbi, Nmi>(m.q, m.k, si, nbi, log_normalizer,
                                                    [](kernel::choice c, auto&&...) { return c; });
        if (made->kernel == kernel_kind::tiled_ranges) {
            const extents e{in.shape.n, in.shape.m};
            const auto [tiled, blocks, keys] = kernel::sample_blocks(nbi, e, kernel::choose_layout(nbi, e));
            if (2 * tiled < blocks)
                made = kernel::choice{kernel_kind::gather, kernel::logit_route::logit_member,
                                      "most blocks of queries are sparser than ranges_min_density: row by row"};
            else if (tiled < blocks)
                made->reason = "a neighborhood of key ranges: blocks of queries meet their keys' union, the blocks "
                               "sparser than ranges_min_density go row by row on gather";
        }
    });
    return aggregate_plan(*made);
}

}  // namespace nonlocal
