#pragma once
/// @file nn/multi_head_attention.hpp
/// Multi-head attention with the weights of PyTorch's `nn.MultiheadAttention`,
/// so that trained weights load from .npy files.
///
/// Weight layout (E = embed_dim, h = num_heads, E divisible by h):
/// - `in_proj_weight` [3E, E]: rows [0, E) project queries, [E, 2E) keys, [2E, 3E) values
///   (each y = x W^T + b, as `nn.Linear`);
/// - `in_proj_bias` [3E], or empty for a layer built with `bias=False`;
/// - `out_proj.weight` [E, E] and `out_proj.bias` [E] (empty: `bias=False`).
/// Head i uses features [i E / h, (i + 1) E / h) of the projections, and the
/// scale is 1 / sqrt(E / h). Export from PyTorch with, for each name,
/// `numpy.save(name + ".npy", module.state_dict()[name].numpy())`, writing
/// `out_proj.weight` as `out_proj_weight.npy` and `out_proj.bias` as `out_proj_bias.npy`.

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
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
#include "nonlocal/nn/linear.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/detail/npy.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/intersection.hpp"
#include "nonlocal/neighborhood/mask.hpp"
#include "nonlocal/similarity/pair_bias.hpp"

namespace nonlocal::nn {

/// The masks and outputs of `multi_head_attention::forward`, as `nn.MultiheadAttention.forward`
/// takes them. As in PyTorch, a set entry of a boolean mask marks what is *not* attended.
struct attention_options {
    /// [B, S] ([S] for unbatched inputs): keys that are padding.
    std::optional<xt::xarray<bool>> key_padding_mask;
    /// [L, S] or [B * H, L, S]: pairs not attended (PyTorch's boolean attn_mask).
    std::optional<xt::xarray<bool>> attn_mask;
    /// [L, S] or [B * H, L, S]: added to the scaled logits, -inf dropping the pair (PyTorch's
    /// float attn_mask); tiles of -inf are skipped, as a boolean mask's are.
    std::optional<xt::xarray<float>> attn_bias;
    /// Whether to return the attention weights, and averaged over the heads or per head.
    bool need_weights = false;
    bool average_attn_weights = true;

    /// The boolean masks (and the -inf entries of `attn_bias`) as neighborhoods of
    /// `weighted_aggregate`, checked against the shapes, with `attn_bias`'s shape.
    struct policies {
        key_mask keys;
        element_mask pairs;
    };
    policies masks(bool batched, std::size_t B, std::size_t H, std::size_t L, std::size_t S) const {
        using shape = std::vector<std::size_t>;
        const auto require_shape = [&](const char* name, const auto& mask, std::initializer_list<shape> allowed) {
            const shape actual(mask.shape().begin(), mask.shape().end());
            std::string expected;
            for (const shape& a : allowed) {
                if (actual == a) return;
                expected += (expected.empty() ? "" : " or ") + detail::shape_string(a);
            }
            detail::fail("nn::multi_head_attention",
                         std::string(name) + " " + detail::shape_string(actual) + " must be " + expected);
        };
        policies p;
        if (key_padding_mask) {
            require_shape("key_padding_mask", *key_padding_mask, {batched ? shape{B, S} : shape{S}});
            p.keys = key_mask(!*key_padding_mask);
        }
        if (attn_mask) require_shape("attn_mask", *attn_mask, {shape{L, S}, shape{B * H, L, S}});
        if (attn_bias) require_shape("attn_bias", *attn_bias, {shape{L, S}, shape{B * H, L, S}});
        // The pairs an additive mask drops (-inf) leave the neighborhood too, so that the tiles
        // they fill are skipped: PyTorch's float causal mask runs as a boolean one does.
        constexpr float minus_inf = -std::numeric_limits<float>::infinity();
        const bool drops = attn_bias && xt::any(xt::equal(*attn_bias, minus_inf));
        if (attn_mask && drops)
            p.pairs = element_mask(xt::xarray<bool>(!*attn_mask && xt::not_equal(*attn_bias, minus_inf)));
        else if (attn_mask) p.pairs = element_mask(!*attn_mask);
        else if (drops) p.pairs = element_mask(xt::not_equal(*attn_bias, minus_inf));
        return p;
    }
};

/// The output of `multi_head_attention::forward`, and its weights when asked for.
template <std::size_t R>
struct attention_result {
    xt::xtensor<float, R> output;
    std::optional<xt::xarray<float>> weights;
};

/// y = MultiheadAttention(query, key, value) over float tokens [B, L, E] or [L, E].
struct multi_head_attention {
    std::size_t embed_dim = 0;
    std::size_t num_heads = 0;
    linear_layer<float> in_proj;    ///< `in_proj_weight` [3E, E] and `in_proj_bias` [3E] or [0], in 3 parts
    linear_layer<float> out_proj;   ///< `out_proj.weight` [E, E] and `out_proj.bias` [E] or [0]

    /// Throws `std::invalid_argument` unless the weights have the shapes above and h divides E.
    multi_head_attention(std::size_t num_heads_, xt::xtensor<float, 2> in_weight, xt::xtensor<float, 1> in_bias,
                         xt::xtensor<float, 2> out_weight, xt::xtensor<float, 1> out_bias)
        : embed_dim(out_weight.shape(0)), num_heads(num_heads_) {
        const std::size_t E = embed_dim;
        detail::require(E > 0 && num_heads > 0 && E % num_heads == 0 &&
                            in_weight.shape() == std::array<std::size_t, 2>{3 * E, E} &&
                            (in_bias.size() == 3 * E || in_bias.size() == 0) &&
                            out_weight.shape() == std::array<std::size_t, 2>{E, E} &&
                            (out_bias.size() == E || out_bias.size() == 0),
                        "nn::multi_head_attention", [&] {
                            return "expected in_proj_weight [3E, E], in_proj_bias [3E] or [0], out_proj_weight "
                                   "[E, E], out_proj_bias [E] or [0] with num_heads dividing E; got " +
                                   detail::shape_string(in_weight.shape()) + ", " +
                                   detail::shape_string(in_bias.shape()) + ", " +
                                   detail::shape_string(out_weight.shape()) + ", " +
                                   detail::shape_string(out_bias.shape()) + " and num_heads = " +
                                   std::to_string(num_heads);
                        });
        in_proj = linear_layer<float>(std::move(in_weight), std::move(in_bias), 3);
        out_proj = linear_layer<float>(std::move(out_weight), std::move(out_bias));
    }

    /// Loads `<prefix>in_proj_weight.npy`, `<prefix>in_proj_bias.npy`,
    /// `<prefix>out_proj_weight.npy` and `<prefix>out_proj_bias.npy` (float32, or float64 or
    /// integers converted to float); a layer saved with `bias=False` has no bias files, and
    /// loads without them. Throws `std::runtime_error` naming a file that cannot be read, and
    /// `std::invalid_argument` naming one of another element type or rank.
    static multi_head_attention load_npy(const std::string& prefix, std::size_t num_heads) {
        const auto bias = [&](const std::string& name) {
            const std::string path = prefix + name;
            return std::filesystem::exists(path) ? load_weights<1>(path) : xt::xtensor<float, 1>();
        };
        return {num_heads, load_weights<2>(prefix + "in_proj_weight.npy"), bias("in_proj_bias.npy"),
                load_weights<2>(prefix + "out_proj_weight.npy"), bias("out_proj_bias.npy")};
    }

    /// Attention of `query` [B, L, E] over `key` and `value` [B, S, E] (or [L, E] and
    /// [S, E]), keys restricted to `neighborhood` (e.g. `causal{}` for a decoder), on the
    /// threads of `policy` (projections and attention; the result does not depend on their number).
    template <class Arch = default_arch, class Q, class K, class V, neighborhood Nb = dense,
              execution_policy Ex = execution::sequenced_policy>
    auto operator()(const xt::xexpression<Q>& query, const xt::xexpression<K>& key, const xt::xexpression<V>& value,
                    const Nb& neighborhood = {}, Ex policy = {}) const {
        return forward<Arch>(query, key, value, {}, neighborhood, policy).output;
    }

    /// The same with PyTorch's masks and, when `options.need_weights`, the attention weights
    /// (`nn.MultiheadAttention.forward`): `.output` as `operator()` gives it and `.weights`
    /// [B, L, S] averaged over the heads or [B, H, L, S] ([L, S] or [H, L, S] for unbatched
    /// inputs), none unless asked for. A query that no key is left to is 0 in the output
    /// and the weights, where PyTorch gives NaN. Throws `std::invalid_argument` naming a mask
    /// whose shape is not one of those `attention_options` lists.
    template <class Arch = default_arch, class Q, class K, class V, neighborhood Nb = dense,
              execution_policy Ex = execution::sequenced_policy>
    auto forward(const xt::xexpression<Q>& query, const xt::xexpression<K>& key, const xt::xexpression<V>& value,
                 const attention_options& options, const Nb& neighborhood = {}, Ex policy = {}) const {
        constexpr std::size_t R = detail::static_rank<Q>;
        static_assert(R == 2 || R == 3, "nonlocal::nn::multi_head_attention: inputs are [B, L, E] or [L, E]");
        std::array<std::size_t, R> shape;
        std::copy_n(query.derived_cast().shape().begin(), R, shape.begin());
        attention_result<R> result;
        result.output = xt::empty<float>(shape);
        result.weights = forward_to<Arch>(result.output.data(), false, query, key, value, options, neighborhood, policy);
        return result;
    }

    /// `forward`'s output written to y [B * L, E] or, when `add`, added to what y holds (the
    /// residual connection of an encoder layer, in the same pass); the weights when asked for.
    /// y may hold the inputs themselves: they are read before y is written.
    template <class Arch = default_arch, class Q, class K, class V, neighborhood Nb = dense,
              execution_policy Ex = execution::sequenced_policy>
    std::optional<xt::xarray<float>> forward_to(float* y, bool add, const xt::xexpression<Q>& query,
                                                const xt::xexpression<K>& key, const xt::xexpression<V>& value,
                                                const attention_options& options, const Nb& neighborhood = {},
                                                Ex policy = {}) const {
        constexpr std::size_t R = detail::static_rank<Q>;
        static_assert(R == 2 || R == 3, "nonlocal::nn::multi_head_attention: inputs are [B, L, E] or [L, E]");
        const detail::contiguous<float, R> q(query), k(key), v(value);
        const std::size_t B = R == 3 ? q.shape(0) : 1, L = q.shape(R - 2), S = k.shape(R - 2);
        const std::size_t E = embed_dim, h = num_heads, hd = E / h;
        detail::require(q.shape(R - 1) == E && k.shape(R - 1) == E && v.shape(R - 1) == E &&
                            k.shape(R - 2) == v.shape(R - 2) && (R == 2 || (k.shape(0) == B && v.shape(0) == B)),
                        "nn::multi_head_attention", [&] {
                            return "query " + detail::shape_string(q.shape()) + ", key " +
                                   detail::shape_string(k.shape()) + " and value " + detail::shape_string(v.shape()) +
                                   " must be [B, L, E], [B, S, E] and [B, S, E] with E = " + std::to_string(E);
                        });
        const auto masks = options.masks(R == 3, B, h, L, S);
        const int threads = detail::thread_count(policy);
        std::optional<xt::xarray<float>> weights;
        // The heads and the merged output in `buffer`s, whose large blocks are kept for the next
        // call: allocated anew (xtensor's allocator, notably xsimd's aligned one under
        // XTENSOR_USE_XSIMD), each block is page-faulted in again on every call, which made
        // this layer twice as slow at n = 1024.
        const auto heads_of = [&](buffer<float>& data, std::size_t rows) {
            data.resize(B * h * rows * hd);
            return xt::adapt(data.data(), data.size(), xt::no_ownership(), std::array<std::size_t, 4>{B, h, rows, hd});
        };
        buffer<float> q_data, k_data, v_data, o_data;
        auto qh = heads_of(q_data, L), kh = heads_of(k_data, S), vh = heads_of(v_data, S), o = heads_of(o_data, L);
        // Each projection's GEMM stores its rows [B * rows, E] as heads [B, h, rows, hd].
        float* heads[3] = {q_data.data(), k_data.data(), v_data.data()};
        const auto project = [&](const float* x, std::size_t rows, std::span<const simd::packed_weight<float>::panel> panels) {
            const simd::epilogue<float> bias{in_proj.bias_data()};
            simd::linear_rows<Arch>(
                row_matrix<const float>{x, B * rows, E}, in_proj.packed(), panels,
                [&](std::size_t row, std::size_t column, const auto& acc, std::size_t lanes) {
                    using batch = std::decay_t<decltype(acc)>;
                    alignas(64) float values[batch::size];
                    bias(acc, column, lanes).store_aligned(values);
                    const std::size_t part = column / E, b = row / rows, t = row % rows;
                    for (std::size_t l = 0; l < lanes;) {
                        const std::size_t f = column % E + l, head = f / hd, d = f % hd;
                        const std::size_t count = std::min(lanes - l, hd - d);
                        std::copy_n(values + l, count, heads[part] + ((b * h + head) * rows + t) * hd + d);
                        l += count;
                    }
                },
                threads);
        };
        // Self-attention projects the three parts in one pass over the query.
        if (q.data() == k.data() && k.data() == v.data() && L == S) {
            project(q.data(), L, in_proj.packed().panels());
        } else {
            project(q.data(), L, in_proj.packed().part(0));
            project(k.data(), S, in_proj.packed().part(1));
            project(v.data(), S, in_proj.packed().part(2));
        }
        const auto attend = [&](const auto& similarity, const auto& nb) {
            if (!options.need_weights)
                return weighted_aggregate<Arch>(policy, qh, kh, vh, similarity, nb, softmax{}, o);
            auto a = weighted_aggregate_lse<Arch>(policy, qh, kh, vh, similarity, nb, softmax{});
            weights = attention_weights<Arch>(qh, kh, a.lse, similarity, nb, options.average_attn_weights, R == 3);
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
        float* merged = q_data.data();
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < L; ++t)
                for (std::size_t head = 0; head < h; ++head)
                    std::copy_n(&o(b, head, t, 0), hd, merged + (b * L + t) * E + head * hd);
        simd::linear_rows<Arch>(row_matrix<const float>{merged, B * L, E}, out_proj.packed(),
                                simd::store_rows<float>{y, E, {out_proj.bias_data()}, add}, threads);
        return weights;
    }

private:
    template <std::size_t N>
    static xt::xtensor<float, N> load_weights(const std::string& path) {
        return detail::load_weights<N>(path, "nn::multi_head_attention::load_npy");
    }

    /// softmax(q k^T / sqrt(hd) + bias) of every head, 0 where the neighborhood drops a pair,
    /// from the log-sum-exp of the attention's own pass: each weight is exp(logit - lse), one
    /// more pass over the scores (q k^T by the projections' GEMM, the scale applied as it
    /// stores; the exponentials a row at a time in vectors, written where they belong).
    /// [B, L, S] averaged over the heads or [B, h, L, S]; without B for unbatched inputs.
    template <class Arch, class QH, class KH, class S, class Nb>
    static xt::xarray<float> attention_weights(const QH& q, const KH& k, const xt::xtensor<float, 3>& lse,
                                               const S& similarity, const Nb& nb, bool average, bool batched) {
        const std::size_t B = q.shape(0), h = q.shape(1), L = q.shape(2), S_ = k.shape(2), hd = q.shape(3);
        constexpr float minus_inf = -std::numeric_limits<float>::infinity();
        std::vector<std::size_t> shape;
        if (batched) shape.push_back(B);
        if (!average) shape.push_back(h);
        shape.insert(shape.end(), {L, S_});
        xt::xarray<float> weights = xt::zeros<float>(shape);
        const float scale = static_cast<float>(scaled_dot_product{}.scale(hd));
        buffer<float> logits(L * S_);
        std::vector<float> row(average ? S_ : 0);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t head = 0; head < h; ++head) {
                const slice_index at{b, head, B, h};
                simd::linear_rows<Arch>(row_matrix<const float>{&q(b, head, 0, 0), L, hd},
                                        simd::packed_weight<float>(row_matrix<const float>{&k(b, head, 0, 0), S_, hd}),
                                        [&](std::size_t i, std::size_t j, const auto& v, std::size_t lanes) {
                                            simd::store_lanes(v * std::decay_t<decltype(v)>(scale), lanes,
                                                              logits.data() + i * S_ + j);
                                        });
                float* out = weights.data() + (b * (average ? 1 : h) + (average ? 0 : head)) * L * S_;
                detail::with_head<4>(similarity, at, [&](const auto& s) {
                    constexpr bool biased = detail::pair_biased_dot_product<std::decay_t<decltype(s)>>;
                    detail::with_neighborhood(nb, at, [&](const auto& n) {
                        for (std::size_t i = 0; i < L; ++i) {
                            const float top = lse(b, head, i);
                            if (std::isinf(top)) continue;   // no key admitted: the row stays 0
                            // The admitted pairs' logits, -inf elsewhere, then exp(logit - lse).
                            float* target = average ? row.data() : out + i * S_;
                            const float* l = logits.data() + i * S_;
                            std::fill(target, target + S_, minus_inf);
                            n.for_each_range(i, extents{L, S_}, [&](key_range r) {
                                if (!biased && r.stride == 1) return void(std::copy_n(l + r.first, r.count, target + r.first));
                                for (std::size_t t = 0; t < r.count; ++t) {
                                    const std::size_t j = r.first + t * r.stride;
                                    target[j] = l[j];
                                    if constexpr (biased) target[j] += static_cast<float>(s.bias(i, j));
                                }
                            });
                            simd::exp_shifted_sum<Arch>(target, top, S_);
                            if (average) simd::axpy<Arch>(1.0f / float(h), target, out + i * S_, S_);
                        }
                    });
                });
            }
        return weights;
    }
};

}  // namespace nonlocal::nn
