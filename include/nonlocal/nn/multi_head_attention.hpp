#pragma once
/// @file nn/multi_head_attention.hpp
/// Multi-head attention with the weights of PyTorch's `nn.MultiheadAttention`,
/// so that trained weights load from .npy files.
///
/// Weight layout (E = embed_dim, h = num_heads, E divisible by h):
/// - `in_proj_weight` [3E, E]: rows [0, E) project queries, [E, 2E) keys, [2E, 3E) values
///   (each y = x W^T + b, as `nn.Linear`);
/// - `in_proj_bias` [3E];
/// - `out_proj.weight` [E, E] and `out_proj.bias` [E].
/// Head i uses features [i E / h, (i + 1) E / h) of the projections, and the
/// scale is 1 / sqrt(E / h). Export from PyTorch with, for each name,
/// `numpy.save(name + ".npy", module.state_dict()[name].numpy())`, writing
/// `out_proj.weight` as `out_proj_weight.npy` and `out_proj.bias` as `out_proj_bias.npy`.

#include <cstddef>
#include <string>

#include <xtensor/xnpy.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/attention.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/detail/npy.hpp"
#include "nonlocal/execution.hpp"

namespace nonlocal::nn {

/// y = MultiheadAttention(query, key, value) over float tokens [B, L, E] or [L, E].
struct multi_head_attention {
    std::size_t embed_dim = 0;
    std::size_t num_heads = 0;
    xt::xtensor<float, 2> in_proj_weight;
    xt::xtensor<float, 1> in_proj_bias;
    xt::xtensor<float, 2> out_proj_weight;
    xt::xtensor<float, 1> out_proj_bias;

    /// Throws `std::invalid_argument` unless the weights have the shapes above and h divides E.
    multi_head_attention(std::size_t num_heads_, xt::xtensor<float, 2> in_weight, xt::xtensor<float, 1> in_bias,
                         xt::xtensor<float, 2> out_weight, xt::xtensor<float, 1> out_bias)
        : embed_dim(out_weight.shape(0)), num_heads(num_heads_), in_proj_weight(std::move(in_weight)),
          in_proj_bias(std::move(in_bias)), out_proj_weight(std::move(out_weight)),
          out_proj_bias(std::move(out_bias)) {
        const std::size_t E = embed_dim;
        detail::require(E > 0 && num_heads > 0 && E % num_heads == 0 &&
                            in_proj_weight.shape() == std::array<std::size_t, 2>{3 * E, E} &&
                            in_proj_bias.size() == 3 * E &&
                            out_proj_weight.shape() == std::array<std::size_t, 2>{E, E} && out_proj_bias.size() == E,
                        "nn::multi_head_attention", [&] {
                            return "expected in_proj_weight [3E, E], in_proj_bias [3E], out_proj_weight [E, E], "
                                   "out_proj_bias [E] with num_heads dividing E; got " +
                                   detail::shape_string(in_proj_weight.shape()) + ", " +
                                   detail::shape_string(in_proj_bias.shape()) + ", " +
                                   detail::shape_string(out_proj_weight.shape()) + ", " +
                                   detail::shape_string(out_proj_bias.shape()) + " and num_heads = " +
                                   std::to_string(num_heads);
                        });
    }

    /// Loads `<prefix>in_proj_weight.npy`, `<prefix>in_proj_bias.npy`,
    /// `<prefix>out_proj_weight.npy` and `<prefix>out_proj_bias.npy` (float32, or float64 or
    /// integers converted to float). Throws `std::runtime_error` naming a file that cannot be
    /// read, and `std::invalid_argument` naming one of another element type or rank.
    static multi_head_attention load_npy(const std::string& prefix, std::size_t num_heads) {
        return {num_heads, load_weights<2>(prefix + "in_proj_weight.npy"), load_weights<1>(prefix + "in_proj_bias.npy"),
                load_weights<2>(prefix + "out_proj_weight.npy"), load_weights<1>(prefix + "out_proj_bias.npy")};
    }

    /// Attention of `query` [B, L, E] over `key` and `value` [B, S, E] (or [L, E] and
    /// [S, E]), keys restricted to `neighborhood` (e.g. `causal{}` for a decoder), on the
    /// threads of `policy` (projections and attention; the result does not depend on their number).
    template <class Arch = default_arch, class Q, class K, class V, neighborhood Nb = dense,
              execution_policy Ex = execution::sequenced_policy>
    auto operator()(const xt::xexpression<Q>& query, const xt::xexpression<K>& key, const xt::xexpression<V>& value,
                    const Nb& neighborhood = {}, Ex policy = {}) const {
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
        const int threads = detail::thread_count(policy);
        // Projections, then [B * L, E] -> [B, h, L, hd].
        const auto project = [&](const detail::contiguous<float, R>& x, std::size_t rows, std::size_t part) {
            const row_matrix<const float> w{in_proj_weight.data() + part * E * E, E, E};
            const auto y = simd::linear_rows<Arch>(row_matrix<const float>{x.data(), B * rows, E}, w,
                                                     in_proj_bias.data() + part * E, threads);
            xt::xtensor<float, 4> heads = xt::empty<float>({B, h, rows, hd});
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t t = 0; t < rows; ++t)
                    for (std::size_t head = 0; head < h; ++head)
                        std::copy_n(&y(b * rows + t, head * hd), hd, &heads(b, head, t, 0));
            return heads;
        };
        const auto o = attention<Arch>(policy, project(q, L, 0), project(k, S, 1), project(v, S, 2), neighborhood);
        xt::xtensor<float, 2> merged = xt::empty<float>({B * L, E});
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t head = 0; head < h; ++head)
                for (std::size_t t = 0; t < L; ++t) std::copy_n(&o(b, head, t, 0), hd, &merged(b * L + t, head * hd));
        auto y = simd::linear_rows<Arch>(as_rows(merged), as_rows(out_proj_weight), out_proj_bias.data(), threads);
        xt::xtensor<float, R> result = xt::empty<float>(q.shape());
        std::copy(y.begin(), y.end(), result.begin());
        return result;
    }

private:
    template <std::size_t N>
    static xt::xtensor<float, N> load_weights(const std::string& path) {
        return detail::load_weights<N>(path, "nn::multi_head_attention::load_npy");
    }
};

}  // namespace nonlocal::nn
