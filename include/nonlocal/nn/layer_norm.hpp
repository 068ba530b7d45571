#pragma once
/// @file nn/layer_norm.hpp
/// Layer normalisation with the weights of PyTorch's `nn.LayerNorm(E)`: each token
/// [E] becomes (x - mean) / sqrt(var + eps) * weight + bias, var the biased variance
/// of its E features.

#include <cmath>
#include <cstddef>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"

namespace nonlocal::nn {

/// y = LayerNorm(x) over the last dimension of float tokens [B, L, E], [L, E] or [E].
struct layer_norm {
    xt::xtensor<float, 1> weight;   ///< [E], PyTorch's `weight` (gamma)
    xt::xtensor<float, 1> bias;     ///< [E], PyTorch's `bias` (beta)
    double eps = 1e-5;              ///< PyTorch's `eps`

    /// Throws `std::invalid_argument` unless weight and bias are [E] with E > 0 and eps is finite and > 0
    /// (a constant token then normalises to 0, not to 0 / 0).
    layer_norm(xt::xtensor<float, 1> weight_, xt::xtensor<float, 1> bias_, double eps_ = 1e-5)
        : weight(std::move(weight_)), bias(std::move(bias_)), eps(eps_) {
        detail::require(weight.size() > 0 && weight.size() == bias.size() && std::isfinite(eps) && eps > 0,
                        "nn::layer_norm", [&] {
                            return "needs weight [E] and bias [E] with E > 0 and a finite eps > 0, got weight " +
                                   detail::shape_string(weight.shape()) + ", bias " + detail::shape_string(bias.shape()) +
                                   " and eps = " + std::to_string(eps);
                        });
    }

    std::size_t features() const noexcept { return weight.size(); }

    /// The normalised tokens, the shape of x. The mean and the variance (of x - mean, two
    /// passes: no cancellation for features far from 0) accumulate in double.
    /// Throws `std::invalid_argument` unless x's last dimension is E.
    template <class X>
    auto operator()(const xt::xexpression<X>& x) const {
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R >= 1 && R <= 3, "nonlocal::nn::layer_norm: tokens are [B, L, E], [L, E] or [E]");
        const detail::contiguous<float, R> xc(x);
        const std::size_t E = features();
        detail::require(xc.shape(R - 1) == E, "nn::layer_norm", [&] {
            return "x " + detail::shape_string(xc.shape()) + " does not end in the weight's " + std::to_string(E) +
                   " features";
        });
        xt::xtensor<float, R> y = xt::empty<float>(xc.shape());
        normalise(xc.data(), y.data(), y.size() / E);
        return y;
    }

    /// `tokens` tokens of E features, contiguous: x [tokens, E] to y [tokens, E] (they may be the same).
    void normalise(const float* x, float* y, std::size_t tokens) const {
        const std::size_t E = features();
        for (std::size_t t = 0; t < tokens; ++t, x += E, y += E) {
            double sum = 0;
            for (std::size_t c = 0; c < E; ++c) sum += x[c];
            const double mean = sum / double(E);
            double squares = 0;
            for (std::size_t c = 0; c < E; ++c) squares += (x[c] - mean) * (x[c] - mean);
            const double inverse_deviation = 1 / std::sqrt(squares / double(E) + eps);
            for (std::size_t c = 0; c < E; ++c)
                y[c] = float((x[c] - mean) * inverse_deviation * double(weight(c)) + double(bias(c)));
        }
    }
};

}  // namespace nonlocal::nn
