#pragma once
/// @file kernel/stencil_weights.hpp
/// The weights of a `grid_stencil`'s edges from a similarity on a guide, one plane per
/// forward direction (as `kernel/stencil.hpp` reads them): from pixel rows, a row of edges
/// at a time (their logits, then kappa over the row in SIMD), or, for a similarity that is
/// a sum over channels (`channel_logit`: the distances), from the guide's planes a channel
/// at a time across a row of pixels, in the planes' precision. Every direction of a row is
/// done before the next row, so that the guide is read from memory once.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/concepts.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/kernel/stencil.hpp"
#include "nonlocal/neighborhood/grid_stencil.hpp"
#include "nonlocal/simd/exp.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::kernel {

/// What the weight of an edge {i, j} is: w_ij + w_ji, the AR system's symmetrised W (the
/// default), or w_ij, the weight of an aggregate whose similarity is symmetric.
enum class edge_sum { both_directions, one_direction };

/// [c0, c1): the columns c of a row `width` wide whose neighbour c + dx lies inside it.
inline std::pair<std::size_t, std::size_t> columns_inside(std::ptrdiff_t dx, std::size_t width) noexcept {
    const auto w = std::ptrdiff_t(width);
    const std::ptrdiff_t first = std::min(w, std::max<std::ptrdiff_t>(0, -dx));
    const std::ptrdiff_t end = std::max<std::ptrdiff_t>(0, w - std::max<std::ptrdiff_t>(0, dx));
    return {std::size_t(first), std::size_t(end)};
}

/// The planes' data, as `kernel::stencil` and `edge_weights` take them.
template <class T>
std::vector<const T*> plane_pointers(const std::vector<buffer<T>>& planes) {
    std::vector<const T*> pointers;
    for (const auto& plane : planes) pointers.push_back(plane.data());
    return pointers;
}

/// Planes of zeros, one per direction, and f(row start, shift, c0, c1, weights of the row)
/// for every direction and every row whose pixels have a neighbour in it (columns [c0, c1)),
/// every direction of a row before the next row.
template <class T, class F>
std::vector<buffer<T>> for_each_edge_row(std::size_t height, std::size_t width, const std::vector<stencil_offset>& offsets,
                                         F&& f) {
    std::vector<buffer<T>> weights;
    for (std::size_t o = 0; o < offsets.size(); ++o) weights.emplace_back(height * width, T(0));
    for (std::size_t r = 0; r < height; ++r)
        for (std::size_t o = 0; o < offsets.size(); ++o) {
            const auto [dy, dx] = offsets[o];
            const auto [c0, c1] = columns_inside(dx, width);
            if (c0 < c1 && r + std::size_t(dy) < height)
                f(r * width, std::size_t(dy * std::ptrdiff_t(width) + dx), c0, c1, weights[o].data() + r * width);
        }
    return weights;
}

/// W_ij = max(kappa(logit(g_i, g_j)) + kappa(logit(g_j, g_i)), min_weight) (or max(kappa(logit(g_i,
/// g_j)), min_weight) for `edge_sum::one_direction`) of the edges in directions `offsets` of a
/// guide given as pixel rows, once per edge, a row of edges at a time: their logits, then kappa
/// over the row in SIMD batches. A symmetric similarity's two terms are equal: one logit per edge.
template <class T, similarity S>
std::vector<buffer<T>> edge_weights_by_pixel(const pixel_rows<double>& g, const std::vector<stencil_offset>& offsets,
                                             const S& sim, double min_weight, edge_sum sum = edge_sum::both_directions) {
    const nonlocal::detail::projected_features<S, double> f(sim, as_rows(g.pixels), true);
    constexpr bool symmetric = nonlocal::detail::symmetric_similarity<S>;
    const bool both = sum == edge_sum::both_directions;
    const auto logit = [&](std::size_t i, std::size_t j) {
        return nonlocal::detail::logit(sim, (*f).row(i), (*f).row(j), i, j);
    };
    const auto kernel = [](std::vector<double>& v, std::size_t begin, std::size_t end) {
        if constexpr (std::is_same_v<weight_function_t<S>, exp_weight>) simd::exp_in_place(v.data() + begin, end - begin);
        else for (std::size_t c = begin; c < end; ++c) v[c] = weight_function_t<S>::apply(v[c]);
    };
    std::vector<double> to(g.width), from(symmetric ? 0 : g.width);
    return for_each_edge_row<T>(g.height, g.width, offsets, [&](std::size_t row, std::size_t shift, std::size_t c0, std::size_t c1, T* w) {
        for (std::size_t c = c0; c < c1; ++c) {
            to[c] = logit(row + c, row + c + shift);
            if constexpr (!symmetric) if (both) from[c] = logit(row + c + shift, row + c);
        }
        kernel(to, c0, c1);
        if constexpr (!symmetric) if (both) kernel(from, c0, c1);
        for (std::size_t c = c0; c < c1; ++c) {
            double weight = to[c];
            if constexpr (symmetric) weight *= both ? 2 : 1;
            else if (both) weight += from[c];
            w[c] = T(std::max(weight, min_weight));
        }
    });
}

/// The same weights for a similarity that is a sum over channels, from the guide's planes,
/// across the pixels of a row in batches of P on architecture Arch: logit = sum_k
/// channel_logit(g_k[i] - g_k[j]) over the planes, kappa in SIMD (float's exp to about 2 ulp:
/// `simd::exp_nonpositive`, valid up to logit 88). A NaN weight stays NaN, for the caller's check.
template <class Arch, class T, class P, class S>
std::vector<buffer<T>> edge_weights_by_channel(const image_planes<P>& g, const std::vector<stencil_offset>& offsets,
                                               const S& sim, double min_weight, edge_sum sum = edge_sum::both_directions) {
    using batch = xsimd::batch<P, Arch>;
    constexpr bool symmetric = nonlocal::detail::symmetric_similarity<S>;
    const bool both = sum == edge_sum::both_directions;
    const auto kappa = [](auto logit) {
        using V = decltype(logit);
        if constexpr (!std::is_same_v<weight_function_t<S>, exp_weight>) return logit;
        else if constexpr (std::is_arithmetic_v<V>) return std::exp(logit);
        // The logit second: x86's min returns its second operand when either is NaN, and
        // exp_nonpositive keeps NaN, so a NaN logit gives a NaN weight.
        else if constexpr (std::is_same_v<P, float>) return simd::exp_nonpositive(xsimd::min(V(88.f), logit));
        else return simd::exp(logit);
    };
    // W of the edges from pixel i (and the next ones, for a batch V) to i + shift.
    const auto weight = [&](auto like, std::size_t i, std::size_t shift) {
        using V = decltype(like);
        V forward(P(0)), backward(P(0));
        for (std::size_t k = 0; k < g.channels; ++k) {
            const P* plane = g.channel(k);
            const V difference = lane_load(plane, i, like) - lane_load(plane, i + shift, like);
            forward += sim.channel_logit(difference);
            if constexpr (!symmetric) if (both) backward += sim.channel_logit(V(-difference));
        }
        if (!both) return V(kappa(forward));
        return symmetric ? V(V(P(2)) * kappa(forward)) : V(kappa(forward) + kappa(backward));
    };
    // The row's weights in P, then stored as T (in place when they are the same type).
    std::vector<P> row_weights(std::is_same_v<P, T> ? 0 : g.width);
    return for_each_edge_row<T>(g.height, g.width, offsets, [&](std::size_t row, std::size_t shift, std::size_t c0, std::size_t c1, T* w) {
        P* out = std::is_same_v<P, T> ? reinterpret_cast<P*>(w) : row_weights.data();
        std::size_t c = c0;
        // The weight second: x86's max returns its second operand when either is NaN, so a
        // NaN weight stays NaN (as std::max keeps it in the scalar tail).
        for (; c + batch::size <= c1; c += batch::size)
            xsimd::max(batch(P(min_weight)), weight(batch{}, row + c, shift)).store_unaligned(out + c);
        for (; c < c1; ++c) out[c] = std::max(weight(P{}, row + c, shift), P(min_weight));
        if constexpr (!std::is_same_v<P, T>)
            for (c = c0; c < c1; ++c) w[c] = T(row_weights[c]);
    });
}

}  // namespace nonlocal::kernel
