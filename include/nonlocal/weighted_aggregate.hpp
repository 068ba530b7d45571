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
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/slices.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/kernel/gather.hpp"
#include "nonlocal/kernel/patch_window.hpp"
#include "nonlocal/kernel/select.hpp"
#include "nonlocal/kernel/stencil.hpp"
#include "nonlocal/kernel/stencil_weights.hpp"
#include "nonlocal/similarity/edge_weights.hpp"
#include "nonlocal/kernel/tiled.hpp"
#include "nonlocal/kernel/tiled_window.hpp"
#include "nonlocal/neighborhood/dense.hpp"

namespace nonlocal {

namespace detail {

template <class... E>
using common_value_type = std::common_type_t<value_type_of<E>...>;

template <class Arch, class T, class S, class Nb, class Nm>
void aggregate_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                     const Nm& nm, row_matrix<T> out, T* lse, int threads);

/// A partitioning neighborhood's slice as `dense` over each group: the group's rows of q, k
/// and v gathered into contiguous matrices, the slice computed (by the tiled kernel, when the
/// similarity is a dot product), its rows scattered back. MobileViT's unfold -> attention ->
/// fold: with 2 x 2 patches on a 32 x 32 map and 36 features per head, 4.5 times as fast as
/// the gather kernel, which takes one query at a time over the patch_group's strided key ranges.
template <class Arch, class T, class S, class Nb, class Nm>
void aggregate_groups(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                      const Nm& nm, row_matrix<T> out, T* lse, int threads) {
    const std::size_t size = nb.group_size();
    std::vector<T> qg(size * q.cols), kg(size * k.cols), vg(size * v.cols), og(size * out.cols), lg(lse ? size : 0);
    const auto gather = [&](row_matrix<const T> from, std::vector<T>& to, std::size_t g) {
        for (std::size_t t = 0; t < size; ++t) std::copy_n(from.row(nb.member(g, t)).data(), from.cols, &to[t * from.cols]);
        return row_matrix<const T>{to.data(), size, from.cols};
    };
    for (std::size_t g = 0; g < nb.groups(); ++g) {
        aggregate_slice<Arch>(gather(q, qg, g), gather(k, kg, g), gather(v, vg, g), s, dense{}, nm,
                              row_matrix<T>{og.data(), size, out.cols}, lse ? lg.data() : nullptr, threads);
        for (std::size_t t = 0; t < size; ++t) {
            const std::size_t i = nb.member(g, t);
            std::copy_n(&og[t * out.cols], out.cols, out.row(i).data());
            if (lse) lse[i] = lg[t];
        }
    }
}

/// The stencil kernel over a slice: for each value channel, the neighbours' values weighted by
/// the edge weights, divided by their sum plus alpha_i (with alpha_i t_i added) for `sum` and
/// `sum_with_data`, as they are for `none`. Planes of another value type are converted once.
template <class Arch, class T, class S, class Nm>
void aggregate_stencil(row_matrix<const T> v, const S& s, const grid_stencil& nb, const Nm& nm, row_matrix<T> out,
                       int threads) {
    s.check_stencil(nb);
    using U = std::remove_cv_t<std::remove_pointer_t<typename std::decay_t<decltype(s.planes())>::value_type>>;
    std::vector<std::vector<T>> converted;
    std::vector<const T*> planes;
    for (const U* plane : s.planes()) {
        if constexpr (std::is_same_v<U, T>) {
            planes.push_back(plane);
        } else {
            converted.emplace_back(plane, plane + v.rows);
            planes.push_back(converted.back().data());
        }
    }
    const kernel::stencil<Arch, T> engine(nb.height, nb.width, s.offsets(), std::move(planes));
    const std::size_t n = v.rows, dv = v.cols;
    std::vector<T> x(dv == 1 ? 0 : n), y(dv == 1 ? 0 : n), target(dv == 1 || !has_data_term<Nm> ? 0 : n);
    for (std::size_t c = 0; c < dv; ++c) {
        const T* xc = v.data;
        T* yc = out.data;
        if (dv > 1) {
            for (std::size_t i = 0; i < n; ++i) x[i] = v(i, c);
            xc = x.data(), yc = y.data();
        }
        const auto zero = [](std::size_t, auto like) { return decltype(like)(T(0)); };
        if constexpr (Nm::kind == normalizer::none) {
            engine.pass(xc, threads, [yc](std::size_t i, auto, auto neighbours) { kernel::lane_store(yc, i, neighbours); });
        } else if constexpr (has_data_term<Nm>) {
            // b_i = alpha_i t_i, t read in place for one channel, else channel c of it.
            const auto run = [&](const auto* t) {
                const auto alpha = [a = nm.alpha](std::size_t i, auto like) { return kernel::lane_load(a, i, like); };
                const auto weighted_target = [a = nm.alpha, t](std::size_t i, auto like) {
                    return kernel::lane_load(a, i, like) * kernel::lane_load(t, i, like);
                };
                engine.template pass<true>(xc, threads, kernel::data_term_finish(yc, alpha, weighted_target));
            };
            if (dv == 1) {
                run(nm.target);
            } else {
                for (std::size_t i = 0; i < n; ++i) target[i] = T(nm.target[i * dv + c]);
                run(target.data());
            }
        } else {
            engine.template pass<true>(xc, threads, kernel::data_term_finish(yc, zero, zero));
        }
        if (dv > 1)
            for (std::size_t i = 0; i < n; ++i) out(i, c) = y[i];
    }
}

/// The stencil kernel for a symmetric sum over channels, when queries and keys are the same
/// features: the weight of every edge computed once, a channel at a time across a row of
/// pixels, then the aggregate over them. The kernel does not shift the weights by a row
/// maximum, as the others do for exponentials: the pixels whose weights all underflow to 0
/// (where the shift still gives a ratio) are computed again by the gather kernel. Returns
/// false, computing nothing, when queries and keys differ.
template <class Arch, class T, class S, class Nm>
bool aggregate_stencil_channels(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s,
                                const grid_stencil& nb, const Nm& nm, row_matrix<T> out, int threads) {
    if (q.data != k.data) return false;
    image_planes<T> planes{nb.height, nb.width, q.cols, buffer<T>(q.rows * q.cols)};
    for (std::size_t c = 0; c < q.cols; ++c)
        for (std::size_t i = 0; i < q.rows; ++i) planes.channel(c)[i] = q(i, c);
    const std::vector<stencil_offset> offsets = nb.forward_offsets();
    const std::vector<buffer<T>> weights =
        kernel::edge_weights_by_channel<Arch, T>(planes, offsets, s, 0.0, kernel::edge_sum::one_direction);
    const std::vector<const T*> pointers = kernel::plane_pointers(weights);
    const edge_weights<T> edges(nb.height, nb.width, offsets, pointers);
    aggregate_stencil<Arch>(v, edges, nb, nm, out, threads);
    if constexpr (std::is_same_v<typename S::kernel, exp_kernel> && Nm::kind != normalizer::none) {
        buffer<T> sums(q.rows);
        const kernel::stencil<Arch, T> engine(nb.height, nb.width, offsets, pointers);
        engine.edge_sums([](auto w) { return w; }, [&](std::size_t i, auto sum) { kernel::lane_store(sums.data(), i, sum); });
        for (std::size_t i = 0; i < q.rows; ++i)
            if (sums[i] == T(0)) kernel::gather<Arch>(q, k, v, s, nb, nm, out, static_cast<T*>(nullptr), i, i + 1);
    }
    return true;
}

/// One [n, d] slice: projects the features and runs the kernel `kernel::selected_kernel`
/// names (kernel/select.hpp) over the slice's query tiles, on `threads` threads.
template <class Arch, class T, class S, class Nb, class Nm>
void aggregate_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                     const Nm& nm, row_matrix<T> out, T* lse, int threads) {
    using kernel::kernel_kind;
    constexpr kernel_kind kind = kernel::selected_kernel<S, Nb, Nm>;
    if constexpr (kind == kernel_kind::tiled_groups) {
        return aggregate_groups<Arch>(q, k, v, s, nb, nm, out, lse, threads);
    } else if constexpr (kind == kernel_kind::stencil && kernel::precomputed_edge_weights<S>) {
        if (!lse) return aggregate_stencil<Arch>(v, s, nb, nm, out, threads);
    } else if constexpr (kind == kernel_kind::stencil) {
        if (!lse && aggregate_stencil_channels<Arch>(q, k, v, s, nb, nm, out, threads)) return;
    } else if constexpr (kind == kernel_kind::patch_window) {
        require(s.height == nb.height && s.width == nb.width, "weighted_aggregate", [&] {
            return "patch_distance is for a " + std::to_string(s.height) + " x " + std::to_string(s.width) +
                   " image but window2d for " + std::to_string(nb.height) + " x " + std::to_string(nb.width);
        });
        if (!lse && kernel::patch_window_handles(nb)) return kernel::patch_window<Arch>(q, k, v, s, nb, out, threads);
    }
    if constexpr (offset_biased_dot_product<S> && std::is_same_v<Nb, window2d>) s.check_window(nb);
    const projected_features<S, T> qp(s, q, true), kp(s, k, false);
    const auto run = [&](const auto& job) { parallel_for(job.tiles(), threads, [&](std::size_t t) { job.run(t); }); };
    if constexpr (kind == kernel_kind::tiled_window)
        run(kernel::tiled_window_slice<Arch, T, S, Nb, Nm>(*qp, *kp, v, s, nb, out, lse));
    else if constexpr (kind == kernel_kind::tiled)
        run(kernel::tiled_slice<Arch, T, S, Nb, Nm>(*qp, *kp, v, s, nb, out, lse));
    else
        run(kernel::gather_slice<Arch, T, S, Nb, Nm>(*qp, *kp, v, s, nb, nm, out, lse));
}

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
