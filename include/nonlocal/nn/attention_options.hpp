#pragma once
/// @file nn/attention_options.hpp
/// What `nn::multi_head_attention` takes besides its inputs and gives besides its output, as
/// `nn.MultiheadAttention` does: its architecture, the masks (as neighborhoods of
/// `weighted_aggregate`) and whether to return the weights.

#include <cstddef>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/neighborhood/mask.hpp"

namespace nonlocal::nn {

/// The architecture of one `nn.MultiheadAttention`, as its constructor takes it.
struct attention_config {
    std::size_t embed_dim = 0;   ///< E
    std::size_t num_heads = 1;   ///< h, dividing E
    std::size_t kdim = 0;        ///< features of key (0: E)
    std::size_t vdim = 0;        ///< features of value (0: E)
    bool bias = true;            ///< the projections have biases
};

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
template <std::size_t R, class T = float>
struct attention_result {
    xt::xtensor<T, R> output;
    std::optional<xt::xarray<T>> weights;
};

}  // namespace nonlocal::nn
