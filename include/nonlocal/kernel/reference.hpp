#pragma once
/// @file kernel/reference.hpp
/// The oracle: every composition computed as literally as the formula, in
/// double precision, materialising each row's neighbour list and weights.
/// Tests compare every fast kernel with it; it is never the fast path.

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/slices.hpp"
#include "nonlocal/detail/tensor.hpp"

namespace nonlocal::reference {

namespace detail {

/// y_i = (sum_j s_ij v_j [+ alpha_i t_i]) / (C_i [+ alpha_i]) for one [n, d] slice.
template <class S, class Nb, class Nm>
void aggregate_slice(row_matrix<const double> q_in, row_matrix<const double> k_in, row_matrix<const double> v,
                     const S& s, const Nb& nb, const Nm& nm, row_matrix<double> out) {
    const nonlocal::detail::projected_features<S, double> q(s, q_in, true), k(s, k_in, false);
    using kappa = nonlocal::detail::effective_weight_function<S, Nm>;
    for (std::size_t i = 0; i < out.rows; ++i) {
        std::vector<std::size_t> neighbors;
        nb.for_each_range(i, extents{q_in.rows, k_in.rows}, [&](key_range r) {
            for (std::size_t t = 0; t < r.count; ++t) neighbors.push_back(r.first + t * r.stride);
        });
        std::vector<double> logits;
        for (std::size_t j : neighbors) logits.push_back(nonlocal::detail::logit(s, (*q).row(i), (*k).row(j), i, j));

        // exp(l - M) / sum exp(l - M) = exp(l) / sum exp(l): subtract the row maximum M
        // where the ratio allows it, so that large logits stay finite.
        double shift = 0;
        if constexpr (nonlocal::detail::shifts_by_row_max<S, Nm>) {
            shift = -std::numeric_limits<double>::infinity();
            for (double l : logits) shift = std::max(shift, l);
            if (std::isinf(shift)) shift = 0;
        }
        std::vector<double> weights;
        for (double l : logits) weights.push_back(kappa::apply(l - shift));

        double normalizer = 1;
        if constexpr (Nm::kind == normalizer::count) normalizer = static_cast<double>(neighbors.size());
        if constexpr (Nm::kind == normalizer::sum || Nm::kind == normalizer::softmax) {
            normalizer = 0;
            for (double w : weights) normalizer += w;
        }
        for (std::size_t c = 0; c < out.cols; ++c) {
            double numerator = 0;
            for (std::size_t t = 0; t < neighbors.size(); ++t) numerator += weights[t] * v(neighbors[t], c);
            double denominator = normalizer;
            if constexpr (nonlocal::detail::has_data_term<Nm>) {
                const double weight = nm.data_weight(i);   // 0 adds nothing, even where exp(-shift) overflows
                const double alpha = weight > 0 ? weight * std::exp(-shift) : 0.0;
                if (std::isinf(alpha)) {
                    out(i, c) = nm.data_value(i, c);
                    continue;
                }
                numerator += alpha * nm.data_value(i, c);
                denominator += alpha;
            }
            out(i, c) = denominator == 0 ? 0.0 : numerator / denominator;
        }
    }
}

}  // namespace detail

/// The weighted aggregate of `nonlocal::weighted_aggregate`, in double precision,
/// for [n, d], [B, n, d] and [B, H, n, d] inputs.
template <class Q, class K, class V, similarity S, neighborhood Nb, normalization Nm>
auto weighted_aggregate(const xt::xexpression<Q>& q, const xt::xexpression<K>& k, const xt::xexpression<V>& v,
                        const S& s, const Nb& nb, const Nm& nm) {
    constexpr std::size_t R = nonlocal::detail::common_rank<Q, K, V>();
    const nonlocal::detail::contiguous<double, R> qc(xt::cast<double>(q.derived_cast()));
    const nonlocal::detail::contiguous<double, R> kc(xt::cast<double>(k.derived_cast()));
    const nonlocal::detail::contiguous<double, R> vc(xt::cast<double>(v.derived_cast()));
    const nonlocal::detail::aggregate_shape<R> shape("reference::weighted_aggregate", qc.shape(), kc.shape(),
                                                     vc.shape());
    xt::xtensor<double, R> out = xt::zeros<double>(shape.out);
    nonlocal::detail::check_policies(shape, s, nb, nm);
    for (std::size_t index = 0; index < shape.slices(); ++index) {
        const auto m = shape.slice(index, qc.data(), kc.data(), vc.data(), out.data());
        nonlocal::detail::with_slice_policies(shape, index, s, nb, nm, [&](const auto& si, const auto& nbi,
                                                                            const auto& nmi) {
            detail::aggregate_slice(m.q, m.k, m.v, si, nbi, nmi, m.out);
        });
    }
    return out;
}

}  // namespace nonlocal::reference
