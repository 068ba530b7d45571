#pragma once
/// @file kernel/dispatch.hpp
/// Running one [n, d] slice of an aggregate on the kernel `kernel::choose` names
/// (kernel/choose.hpp): the tiled kernels, the partitions' groups, the stencil kernels, the
/// running-sum window and the gather kernel, and the merge of a slice's log C_i.

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/concepts.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/kernel/choose.hpp"
#include "nonlocal/kernel/gather.hpp"
#include "nonlocal/kernel/lowering.hpp"
#include "nonlocal/kernel/patch_window.hpp"
#include "nonlocal/kernel/select.hpp"
#include "nonlocal/kernel/stencil.hpp"
#include "nonlocal/kernel/stencil_weights.hpp"
#include "nonlocal/kernel/tiled.hpp"
#include "nonlocal/kernel/tiled_ranges.hpp"
#include "nonlocal/kernel/tiled_window.hpp"
#include "nonlocal/neighborhood/dense.hpp"
#include "nonlocal/similarity/edge_weights.hpp"

namespace nonlocal {
namespace detail {

template <class Arch, class T, class S, class Nb, class Nm>
void aggregate_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                     const Nm& nm, row_matrix<T> out, T* lse, int threads);

/// A partitioning neighborhood's slice as `dense` over each group: the group's rows of q, k
/// and v gathered into contiguous matrices, the slice computed by the tiled kernel, its rows
/// scattered back (MobileViT's unfold -> attention -> fold).
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
    const execution::parallel_policy policy{threads};
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
            engine.pass(policy, xc,
                        [yc](std::size_t i, auto, auto neighbors) { kernel::lane_store(yc, i, neighbors); });
        } else if constexpr (has_data_term<Nm>) {
            // b_i = alpha_i t_i, t read in place for one channel, else channel c of it.
            const auto run = [&](const auto* t) {
                const auto alpha = [a = nm.alpha](std::size_t i, auto like) { return kernel::lane_load(a, i, like); };
                const auto weighted_target = [a = nm.alpha, t](std::size_t i, auto like) {
                    return kernel::lane_load(a, i, like) * kernel::lane_load(t, i, like);
                };
                engine.template pass<true>(policy, xc, kernel::data_term_finish(yc, alpha, weighted_target));
            };
            if (dv == 1) {
                run(nm.target);
            } else {
                for (std::size_t i = 0; i < n; ++i) target[i] = T(nm.target[i * dv + c]);
                run(target.data());
            }
        } else {
            engine.template pass<true>(policy, xc, kernel::data_term_finish(yc, zero, zero));
        }
        if (dv > 1)
            for (std::size_t i = 0; i < n; ++i) out(i, c) = y[i];
    }
}

/// The stencil kernel for a symmetric sum over channels, when queries and keys are the same
/// features: the weight of every edge computed once, a channel at a time across a row of
/// pixels, then the aggregate over them. The kernel does not shift the weights by a row
/// maximum, as the others do for exponentials: the pixels whose weights all underflow to 0
/// (where the shift still gives a ratio) are computed again by the gather kernel.
template <class Arch, class T, class S, class Nm>
void aggregate_stencil_channels(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s,
                                const grid_stencil& nb, const Nm& nm, row_matrix<T> out, int threads) {
    image_planes<T> planes{nb.height, nb.width, q.cols, buffer<T>(q.rows * q.cols)};
    for (std::size_t c = 0; c < q.cols; ++c)
        for (std::size_t i = 0; i < q.rows; ++i) planes.channel(c)[i] = q(i, c);
    const std::vector<stencil_offset> offsets = nb.forward_offsets();
    const std::vector<buffer<T>> weights =
        kernel::edge_weights_by_channel<Arch, T>(planes, offsets, s, 0.0, kernel::edge_sum::one_direction);
    const std::vector<const T*> pointers = kernel::plane_pointers(weights);
    const edge_weights<T> edges(nb.height, nb.width, offsets, pointers);
    aggregate_stencil<Arch>(v, edges, nb, nm, out, threads);
    if constexpr (std::is_same_v<weight_function_t<S>, exp_weight> && Nm::kind != normalizer::none) {
        buffer<T> sums(q.rows);
        const kernel::stencil<Arch, T> engine(nb.height, nb.width, offsets, pointers);
        engine.edge_sums([](auto w) { return w; }, [&](std::size_t i, auto sum) { kernel::lane_store(sums.data(), i, sum); });
        for (std::size_t i = 0; i < q.rows; ++i)
            if (sums[i] == T(0)) kernel::gather<Arch>(q, k, v, s, nb, nm, out, static_cast<T*>(nullptr), i, i + 1);
    }
}


/// The lowered features of a distance or cosine similarity's slice, when it has that form.
template <class Arch, class T, class S>
struct lowering_of {
    explicit lowering_of(const S&, row_matrix<const T>, row_matrix<const T>) {}
    double cancellation() const noexcept { return 0; }
};
template <class Arch, class T, kernel::lowered_similarity S>
struct lowering_of<Arch, T, S> {
    kernel::lowered_features<Arch, T> features;
    lowering_of(const S& s, row_matrix<const T> q, row_matrix<const T> k)
        : features(q, k, scale_of(s, q.cols), logit_form_t<S>{}) {}
    static double scale_of(const S& s, std::size_t d) {
        if constexpr (has_logit_form<S, separable_form>) return (void)s, (void)d, 1.0;
        else return s.scale(d);
    }
    double cancellation() const noexcept { return features.cancellation_bound(); }
};

/// The choice for one slice (kernel/choose.hpp's `choose`), with the features it is made on:
/// `f(choice, projected queries, projected keys, lowering)`.
template <class Arch, class T, class S, class Nb, class Nm, class F>
decltype(auto) with_choice(row_matrix<const T> q, row_matrix<const T> k, const S& s, const Nb& nb, bool lse, F&& f) {
    constexpr kernel::kernel_kind kind = kernel::kernel_for<S, Nb, Nm>;
    constexpr bool tiled = kind == kernel::kernel_kind::tiled || kind == kernel::kernel_kind::tiled_window ||
                           kind == kernel::kernel_kind::tiled_ranges;
    if constexpr (kind == kernel::kernel_kind::tiled_groups || kind == kernel::kernel_kind::stencil ||
                  kind == kernel::kernel_kind::patch_window) {
        // These kernels take the features as they are; the choice needs nothing computed.
        const lowering_of<Arch, T, void*> none(nullptr, q, k);
        return f(kernel::choose<T, S, Nb, Nm>(q, k, nb, lse, 0.0), q, k, none);
    } else {
        const projected_features<S, T> qp(s, q, true), kp(s, k, false);
        if constexpr (tiled && (detail::has_logit_form<S, cosine_form> || detail::has_logit_form<S, separable_form> ||
                                (detail::has_logit_form<S, distance_form> && kernel::lowers_distances(kind)))) {
            const lowering_of<Arch, T, S> lowered(s, *qp, *kp);
            return f(kernel::choose<T, S, Nb, Nm>(*qp, *kp, nb, lse, lowered.cancellation()), *qp, *kp, lowered);
        } else {
            const lowering_of<Arch, T, void*> none(nullptr, *qp, *kp);
            return f(kernel::choose<T, S, Nb, Nm>(*qp, *kp, nb, lse, 0.0), *qp, *kp, none);
        }
    }
}

/// One [n, d] slice on the kernel `kernel::choose` picks, over its query tiles on `threads` threads.
template <class Arch, class T, class S, class Nb, class Nm>
void aggregate_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                     const Nm& nm, row_matrix<T> out, T* lse, int threads) {
    using kernel::kernel_kind;
    using kernel::logit_route;
    if constexpr (offset_biased_dot_product<S> && std::is_same_v<Nb, window2d>) s.check_window(nb);
    if constexpr (kernel::kernel_for<S, Nb, Nm> == kernel_kind::patch_window)
        require(s.height == nb.height && s.width == nb.width, "weighted_aggregate", [&] {
            return "patch_distance is for a " + std::to_string(s.height) + " x " + std::to_string(s.width) +
                   " image but window2d for " + std::to_string(nb.height) + " x " + std::to_string(nb.width);
        });
    const auto run = [&](const auto& job) { parallel_for(job.tiles(), threads, [&](std::size_t t) { job.run(t); }); };
    constexpr kernel_kind kind = kernel::kernel_for<S, Nb, Nm>;
    if constexpr (kind == kernel_kind::tiled_groups) {
        return aggregate_groups<Arch>(q, k, v, s, nb, nm, out, lse, threads);
    } else if constexpr (kind == kernel_kind::stencil || kind == kernel_kind::patch_window) {
        // These kernels take the features unprojected; their fallback is the gather kernel.
        const kernel::choice c = kernel::choose<T, S, Nb, Nm>(q, k, nb, lse != nullptr, 0.0);
        if constexpr (kind == kernel_kind::stencil && kernel::precomputed_edge_weights<S>) {
            if (c.kernel == kernel_kind::stencil) return aggregate_stencil<Arch>(v, s, nb, nm, out, threads);
        } else if constexpr (kind == kernel_kind::stencil) {
            if (c.kernel == kernel_kind::stencil) return aggregate_stencil_channels<Arch>(q, k, v, s, nb, nm, out, threads);
        } else {
            if (c.kernel == kernel_kind::patch_window)
                return kernel::patch_window<Arch>(execution::parallel_policy{threads}, q, k, v, s, nb, out);
        }
        const projected_features<S, T> qg(s, q, true), kg(s, k, false);
        return run(kernel::gather_slice<Arch, T, S, Nb, Nm>(*qg, *kg, v, s, nb, nm, out, lse));
    }
    // The tiled kernels over features `qf`, `kf` with similarity `sf`.
    const auto tiled = [&](row_matrix<const T> qf, row_matrix<const T> kf, const auto& sf) {
        using Sf = std::decay_t<decltype(sf)>;
        if constexpr (kernel::tiled_window_applies<Sf, Nb, Nm>)
            run(kernel::tiled_window_slice<Arch, T, Sf, Nb, Nm>(qf, kf, v, sf, nb, out, lse));
        else if constexpr (kernel::tiled_applies<Sf, Nb, Nm>)
            run(kernel::tiled_slice<Arch, T, Sf, Nb, Nm>(qf, kf, v, sf, nb, out, lse));
        else if constexpr (kernel::tiled_ranges_applies<Sf, Nb, Nm>)
            run(kernel::tiled_ranges_slice<Arch, T, Sf, Nb, Nm>(qf, kf, v, sf, nb, nm, out, lse));
    };
    with_choice<Arch, T, S, Nb, Nm>(q, k, s, nb, lse != nullptr, [&](kernel::choice c, row_matrix<const T> qp,
                                                                  row_matrix<const T> kp, const auto& lowered) {
        if constexpr (kind == kernel_kind::tiled || kind == kernel_kind::tiled_window ||
                      kind == kernel_kind::tiled_ranges) {
            if constexpr (requires { lowered.features; })
                if (c.logits == logit_route::lowered_distance || c.logits == logit_route::lowered_cosine ||
                    c.logits == logit_route::lowered_sum)
                    return tiled(lowered.features.queries(), lowered.features.keys(), kernel::lowered_dot<S>{{}, s});
            if constexpr (!has_logit_form<S, cosine_form> && !has_logit_form<S, separable_form>) return tiled(qp, kp, s);
        }
        if (c.kernel == kernel_kind::gather) {
            run(kernel::gather_slice<Arch, T, S, Nb, Nm>(qp, kp, v, s, nb, nm, out, lse));
        }
    });
}

}  // namespace detail
}  // namespace nonlocal
