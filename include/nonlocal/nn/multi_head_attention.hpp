#pragma once
/// @file nn/multi_head_attention.hpp
/// Multi-head attention with the weights of PyTorch's `nn.MultiheadAttention`,
/// so that trained weights load from .npy files.
///
/// Weight layout (E = embed_dim, h = num_heads, E divisible by h, each y = x W^T + b as
/// `nn.Linear`):
/// - `in_proj_weight` [3E, E]: rows [0, E) project queries, [E, 2E) keys, [2E, 3E) values;
///   or, for a layer built with `kdim` or `vdim` other than E, `q_proj_weight` [E, E],
///   `k_proj_weight` [E, kdim] and `v_proj_weight` [E, vdim];
/// - `in_proj_bias` [3E], or none for a layer built with `bias=False`;
/// - `out_proj.weight` [E, E] and `out_proj.bias` [E] (none: `bias=False`).
/// Head i uses features [i E / h, (i + 1) E / h) of the projections, and the scale is
/// 1 / sqrt(E / h). Grouped-query attention projects keys and values to fewer heads,
/// E_kv = h_kv E / h features, query head i reading key and value head i / (h / h_kv).
/// `nn::load_npy` (nn/io/transformer.hpp) reads them from a state_dict saved as one .npy per entry.

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/attention.hpp"
#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/nn/attention_options.hpp"
#include "nonlocal/nn/attention_weights.hpp"
#include "nonlocal/nn/linear.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/intersection.hpp"
#include "nonlocal/neighborhood/mask.hpp"
#include "nonlocal/similarity/pair_bias.hpp"

namespace nonlocal::detail {
/// Entries [first, first + count) of an in-projection's bias, or none when it has none.
template <class T>
xt::xtensor<T, 1> bias_part(const xt::xtensor<T, 1>& bias, std::size_t first, std::size_t count) {
    if (bias.size() == 0) return {};
    return xt::view(bias, xt::range(first, first + count));
}
}  // namespace nonlocal::detail

namespace nonlocal::nn {

/// y = MultiheadAttention(query, key, value) over tokens [B, L, E] or [L, E] of T (float or
/// double): `multi_head_attention` is the float layer, as PyTorch's default.
template <class T>
struct basic_multi_head_attention {
    static_assert(std::floating_point<T>, "nonlocal::nn::basic_multi_head_attention: T is float or double");

    std::size_t embed_dim = 0;   ///< E
    std::size_t num_heads = 0;   ///< h, the query heads, of E / h features each
    linear_layer<T> q_proj;      ///< [E, E] and [E] or none
    linear_layer<T> k_proj;      ///< [E_kv, kdim] and [E_kv] or none
    linear_layer<T> v_proj;      ///< [E_kv, vdim] and [E_kv] or none
    linear_layer<T> out_proj;    ///< `out_proj.weight` [E, E] and `out_proj.bias` [E] or none

    /// PyTorch's packed in-projection: `in_proj_weight` [E + 2 E_kv, E] (the rows of q, then
    /// k, then v) and `in_proj_bias` [E + 2 E_kv] or [0], with E_kv = E (`nn.MultiheadAttention`)
    /// or fewer (grouped-query attention: E_kv / (E / h) key and value heads).
    /// Throws `std::invalid_argument` unless the weights have these shapes and those the
    /// members list, h divides E, and the key and value heads divide h.
    basic_multi_head_attention(std::size_t num_heads_, const xt::xtensor<T, 2>& in_weight,
                               const xt::xtensor<T, 1>& in_bias, xt::xtensor<T, 2> out_weight,
                               xt::xtensor<T, 1> out_bias)
        : embed_dim(out_weight.shape(0)), num_heads(num_heads_) {
        const std::size_t E = embed_dim, rows = in_weight.shape(0), kv = rows > E ? (rows - E) / 2 : 0;
        detail::require(E > 0 && rows == E + 2 * kv && kv > 0 && in_weight.shape(1) == E &&
                            (in_bias.size() == rows || in_bias.size() == 0),
                        "nn::multi_head_attention", [&] {
                            return "expected in_proj_weight [E + 2 E_kv, E] ([3E, E] without grouped queries) and "
                                   "in_proj_bias [E + 2 E_kv] or [0] with E = " + std::to_string(E) +
                                   " (out_proj_weight's rows); got " + detail::shape_string(in_weight.shape()) +
                                   " and " + detail::shape_string(in_bias.shape());
                        });
        q_proj = rows_of(in_weight, in_bias, 0, E);
        k_proj = rows_of(in_weight, in_bias, E, kv);
        v_proj = rows_of(in_weight, in_bias, E + kv, kv);
        out_proj = linear_layer<T>(std::move(out_weight), std::move(out_bias));
        check();
    }

    /// Separate projections: PyTorch's `q_proj_weight`, `k_proj_weight` and `v_proj_weight`
    /// (a layer built with `kdim` or `vdim` other than E), or grouped-query attention.
    /// Throws `std::invalid_argument` as the other constructor does.
    basic_multi_head_attention(std::size_t num_heads_, linear_layer<T> q, linear_layer<T> k, linear_layer<T> v,
                               linear_layer<T> out)
        : embed_dim(q.out_features()), num_heads(num_heads_), q_proj(std::move(q)), k_proj(std::move(k)),
          v_proj(std::move(v)), out_proj(std::move(out)) {
        check();
    }

    /// The projections in precision `p` from now on (`linear_layer::to`); the attention
    /// itself, Q K^T and P V, stays in T.
    basic_multi_head_attention& to(precision p) {
        for (linear_layer<T>* projection : {&q_proj, &k_proj, &v_proj, &out_proj}) projection->to(p);
        return *this;
    }

    std::size_t head_dim() const noexcept { return embed_dim / num_heads; }                ///< E / h
    std::size_t kv_heads() const noexcept { return k_proj.out_features() / head_dim(); }   ///< E_kv / (E / h)
    std::size_t kdim() const noexcept { return k_proj.in_features(); }                     ///< features of key
    std::size_t vdim() const noexcept { return v_proj.in_features(); }                     ///< features of value

    /// Attention of `query` [B, L, E] over `key` [B, S, kdim] and `value` [B, S, vdim] (or
    /// [L, E], [S, kdim] and [S, vdim]), keys restricted to `neighborhood` (e.g. `causal{}`
    /// for a decoder), on the threads of `policy` (projections and attention; the result does
    /// not depend on their number).
    template <class Arch = default_arch, execution_policy Ex, class Q, class K, class V, neighborhood Nb = dense>
    auto operator()(Ex policy, const xt::xexpression<Q>& query, const xt::xexpression<K>& key,
                    const xt::xexpression<V>& value, const Nb& neighborhood = {}) const {
        return forward<Arch>(policy, query, key, value, {}, neighborhood).output;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class Q, class K, class V, neighborhood Nb = dense>
    auto operator()(const xt::xexpression<Q>& query, const xt::xexpression<K>& key, const xt::xexpression<V>& value,
                    const Nb& neighborhood = {}) const {
        return operator()<Arch>(execution::seq, query, key, value, neighborhood);
    }

    /// The same with PyTorch's masks and, when `options.need_weights`, the attention weights
    /// (`nn.MultiheadAttention.forward`): `.output` as `operator()` gives it and `.weights`
    /// [B, L, S] averaged over the heads or [B, H, L, S] ([L, S] or [H, L, S] for unbatched
    /// inputs), none unless asked for. A query that no key is left to is 0 in the output
    /// and the weights, where PyTorch gives NaN. Throws `std::invalid_argument` naming a mask
    /// whose shape is not one of those `attention_options` lists.
    template <class Arch = default_arch, execution_policy Ex, class Q, class K, class V, neighborhood Nb = dense>
    auto forward(Ex policy, const xt::xexpression<Q>& query, const xt::xexpression<K>& key,
                 const xt::xexpression<V>& value, const attention_options& options, const Nb& neighborhood = {}) const {
        constexpr std::size_t R = detail::static_rank<Q>;
        static_assert(R == 2 || R == 3, "nonlocal::nn::multi_head_attention: inputs are [B, L, E] or [L, E]");
        std::array<std::size_t, R> shape;
        std::copy_n(query.derived_cast().shape().begin(), R, shape.begin());
        attention_result<R, T> result;
        result.output = xt::empty<T>(shape);
        result.weights = forward_to<Arch>(policy, result.output.data(), false, query, key, value, options, neighborhood);
        return result;
    }
    /// The same on the calling thread.
    template <class Arch = default_arch, class Q, class K, class V, neighborhood Nb = dense>
    auto forward(const xt::xexpression<Q>& query, const xt::xexpression<K>& key, const xt::xexpression<V>& value,
                 const attention_options& options, const Nb& neighborhood = {}) const {
        return forward<Arch>(execution::seq, query, key, value, options, neighborhood);
    }

    /// `forward`'s output written to y [B * L, E] or, when `add`, added to what y holds (the
    /// residual connection of an encoder layer, in the same pass); the weights when asked for.
    /// y may hold the inputs themselves: they are read before y is written.
    template <class Arch = default_arch, execution_policy Ex, class Q, class K, class V, neighborhood Nb = dense>
    std::optional<xt::xarray<T>> forward_to(Ex policy, T* y, bool add, const xt::xexpression<Q>& query,
                                            const xt::xexpression<K>& key, const xt::xexpression<V>& value,
                                            const attention_options& options, const Nb& neighborhood = {}) const {
        constexpr std::size_t R = detail::static_rank<Q>;
        static_assert(R == 2 || R == 3, "nonlocal::nn::multi_head_attention: inputs are [B, L, E] or [L, E]");
        const detail::contiguous<T, R> q(query), k(key), v(value);
        const std::size_t B = R == 3 ? q.shape(0) : 1, L = q.shape(R - 2), S = k.shape(R - 2);
        const std::size_t E = embed_dim, h = num_heads, hd = head_dim();
        detail::require(q.shape(R - 1) == E && k.shape(R - 1) == kdim() && v.shape(R - 1) == vdim() &&
                            k.shape(R - 2) == v.shape(R - 2) && (R == 2 || (k.shape(0) == B && v.shape(0) == B)),
                        "nn::multi_head_attention", [&] {
                            return "query " + detail::shape_string(q.shape()) + ", key " +
                                   detail::shape_string(k.shape()) + " and value " + detail::shape_string(v.shape()) +
                                   " must be [B, L, E], [B, S, kdim] and [B, S, vdim] with E = " + std::to_string(E) +
                                   ", kdim = " + std::to_string(kdim()) + " and vdim = " + std::to_string(vdim());
                        });
        const auto masks = options.masks(R == 3, B, h, L, S);
        std::optional<xt::xarray<T>> weights;
        // The heads and the merged output in `buffer`s, whose large blocks are kept for the next
        // call: allocated anew (xtensor's allocator, notably xsimd's aligned one under
        // XTENSOR_USE_XSIMD), each block would be page-faulted in again on every call.
        // The projections' stores write every value of q, k and v: they start unwritten.
        const auto heads_of = [&](auto& data, std::size_t heads, std::size_t rows) {
            data.resize(B * heads * rows * hd);
            return xt::adapt(data.data(), data.size(), xt::no_ownership(),
                             std::array<std::size_t, 4>{B, heads, rows, hd});
        };
        uninitialized_buffer<T> q_data, k_data, v_data;
        buffer<T> o_data;
        auto qh = heads_of(q_data, h, L), kh = heads_of(k_data, kv_heads(), S), vh = heads_of(v_data, kv_heads(), S);
        auto o = heads_of(o_data, h, L);
        if (q.data() == k.data() && k.data() == v.data() && L == S && kdim() == E && vdim() == E) {
            const linear_layer<T>* all[] = {&q_proj, &k_proj, &v_proj};
            T* const targets[] = {q_data.data(), k_data.data(), v_data.data()};
            project_to_heads<Arch>(policy, all, q.data(), B, L, targets);
        } else {
            for (const auto& [proj, x, rows, target] :
                 {std::tuple{&q_proj, q.data(), L, q_data.data()}, std::tuple{&k_proj, k.data(), S, k_data.data()},
                  std::tuple{&v_proj, v.data(), S, v_data.data()}}) {
                const linear_layer<T>* one[] = {proj};
                T* const targets[] = {target};
                project_to_heads<Arch>(policy, one, x, B, rows, targets);
            }
        }
        const auto attend = [&](const auto& similarity, const auto& nb) {
            if (!options.need_weights)
                return weighted_aggregate<Arch>(policy, qh, kh, vh, similarity, nb, softmax{}, o);
            auto a = weighted_aggregate_lse<Arch>(policy, qh, kh, vh, similarity, nb, softmax{});
            weights = detail::attention_weights<Arch, T>(qh, kh, a.lse, similarity, nb, options.average_attn_weights, R == 3);
            std::copy(a.out.begin(), a.out.end(), o.begin());
        };
        // The masks narrow the neighborhood; without them a window keeps its own kernel.
        const auto masked = [&](const auto& similarity) {
            if constexpr (!tiled_neighborhood<Nb>)
                if (!options.key_padding_mask && !options.attn_mask) return attend(similarity, neighborhood);
            return attend(similarity, intersect(intersect(neighborhood, masks.keys), masks.pairs));
        };
        if (options.attn_bias) masked(with_pair_bias(scaled_dot_product{}, *options.attn_bias));
        else masked(scaled_dot_product{});
        // The heads merged into rows [B * L, E], in q's block (its values are no longer needed).
        T* merged = q_data.data();
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < L; ++t)
                for (std::size_t head = 0; head < h; ++head)
                    std::copy_n(&o(b, head, t, 0), hd, merged + (b * L + t) * E + head * hd);
        simd::linear_rows<Arch>(policy, row_matrix<const T>{merged, B * L, E}, out_proj.packed(),
                                simd::store_rows<T, simd::no_activation>{y, E, {out_proj.bias_data()}, add});
        return weights;
    }

private:
    /// Each projection of `projections` of x [B * rows, in] stored as heads [B, out / hd, rows,
    /// hd] into `heads` (one target per projection) as its GEMM finishes the rows: for
    /// self-attention the three share one pass over x, their columns side by side.
    template <class Arch, execution_policy Ex>
    void project_to_heads(Ex policy, std::span<const linear_layer<T>* const> projections, const T* x, std::size_t B,
                          std::size_t rows, std::span<T* const> heads) const {
        const std::size_t hd = head_dim();
        std::vector<const simd::packed_weight<T>*> weights;
        // Where each output column goes, worked out once rather than by divisions in every
        // store: its projection, its column there, and its head and feature in that head.
        struct destination {
            std::uint32_t part, column, head, feature;
        };
        std::vector<destination> to;
        for (std::uint32_t part = 0; part < projections.size(); ++part) {
            weights.push_back(&projections[part]->packed());
            for (std::uint32_t f = 0; f < projections[part]->out_features(); ++f)
                to.push_back({part, f, std::uint32_t(f / hd), std::uint32_t(f % hd)});
        }
        simd::linear_rows<Arch>(
            policy, row_matrix<const T>{x, B * rows, projections[0]->in_features()},
            std::span<const simd::packed_weight<T>* const>(weights),
            [&](std::size_t row, std::size_t column, const auto& acc, std::size_t lanes) {
                using batch = std::decay_t<decltype(acc)>;
                const destination first = to[column];   // a vector's columns are of one projection
                const linear_layer<T>& projection = *projections[first.part];
                const batch v = simd::epilogue<T, simd::no_activation>{projection.bias_data()}(acc, first.column, lanes);
                // Token t of image b in this projection's heads [B, out / hd, rows, hd].
                const std::size_t b = row / rows, t = row % rows;
                T* const image = heads[first.part] + b * projection.out_features() * rows + t * hd;
                // Lanes [l, l + n) of one head each, stored from the register.
                for (std::size_t l = 0; l < lanes;) {
                    const destination& at = to[column + l];
                    const std::size_t n = std::min<std::size_t>(lanes - l, hd - at.feature);
                    simd::store_lanes(v, l, l + n, image + at.head * rows * hd + at.feature);
                    l += n;
                }
            });
    }

    /// Rows [first, first + count) of an in-projection and its bias (none when it has none).
    static linear_layer<T> rows_of(const xt::xtensor<T, 2>& weight, const xt::xtensor<T, 1>& bias, std::size_t first,
                                   std::size_t count) {
        return linear_layer<T>(xt::xtensor<T, 2>(xt::view(weight, xt::range(first, first + count), xt::all())),
                               detail::bias_part(bias, first, count));
    }

    void check() const {
        const std::size_t E = embed_dim, h = num_heads;
        const std::size_t hd = h && E % h == 0 ? E / h : 0, kv = k_proj.out_features();
        detail::require(E > 0 && hd > 0 && q_proj.in_features() == E && kv > 0 && kv % hd == 0 &&
                            h % (kv / hd) == 0 && v_proj.out_features() == kv && kdim() > 0 && vdim() > 0 &&
                            out_proj.in_features() == E && out_proj.out_features() == E,
                        "nn::multi_head_attention", [&] {
                            const auto shape = [](const linear_layer<T>& p) {
                                return "[" + std::to_string(p.out_features()) + ", " + std::to_string(p.in_features()) + "]";
                            };
                            return "expected q_proj [E, E], k_proj [E_kv, kdim], v_proj [E_kv, vdim] and out_proj "
                                   "[E, E] with num_heads dividing E, E_kv a multiple of E / num_heads and its heads "
                                   "dividing num_heads; got " + shape(q_proj) + ", " + shape(k_proj) + ", " +
                                   shape(v_proj) + ", " + shape(out_proj) + " and num_heads = " + std::to_string(h);
                        });
    }

};

/// The float layer, as PyTorch's default dtype.
using multi_head_attention = basic_multi_head_attention<float>;

}  // namespace nonlocal::nn
