#pragma once
/// @file nn/layer_norm.hpp
/// Layer normalisation with the weights of PyTorch's `nn.LayerNorm(E)`: each token
/// [E] becomes (x - mean) / sqrt(var + eps) * weight + bias, var the biased variance
/// of its E features.

#include <cmath>
#include <cstddef>
#include <string>

#include <xsimd/xsimd.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/config.hpp"

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"

namespace nonlocal::nn {

/// y = LayerNorm(x) over the last dimension of tokens [B, L, E], [L, E] or [E] of T (float or
/// double).
template <class T = float>
struct basic_layer_norm {
    xt::xtensor<T, 1> weight;   ///< [E], PyTorch's `weight` (gamma)
    xt::xtensor<T, 1> bias;     ///< [E], PyTorch's `bias` (beta)
    double eps = 1e-5;              ///< PyTorch's `eps`

    /// Throws `std::invalid_argument` unless weight and bias are [E] with E > 0 and eps is finite and > 0
    /// (a constant token then normalises to 0, not to 0 / 0).
    basic_layer_norm(xt::xtensor<T, 1> weight_, xt::xtensor<T, 1> bias_, double eps_ = 1e-5)
        : weight(std::move(weight_)), bias(std::move(bias_)), eps(eps_) {
        detail::require(weight.size() > 0 && weight.size() == bias.size() && std::isfinite(eps) && eps > 0,
                        "nn::layer_norm", [&] {
                            return "needs weight [E] and bias [E] with E > 0 and a finite eps > 0, got weight " +
                                   detail::shape_string(weight.shape()) + ", bias " + detail::shape_string(bias.shape()) +
                                   " and eps = " + std::to_string(eps);
                        });
    }

    std::size_t features() const noexcept { return weight.size(); }

    /// The normalised tokens, the shape of x. The mean and the variance (a second pass) are
    /// those of x - x[0], accumulated in vectors of T: features far from 0 lose no
    /// digits to their offset.
    /// Throws `std::invalid_argument` unless x's last dimension is E.
    template <class Arch = default_arch, class X>
    auto operator()(const xt::xexpression<X>& x) const {
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R >= 1 && R <= 3, "nonlocal::nn::layer_norm: tokens are [B, L, E], [L, E] or [E]");
        const detail::contiguous<T, R> xc(x);
        const std::size_t E = features();
        detail::require(xc.shape(R - 1) == E, "nn::layer_norm", [&] {
            return "x " + detail::shape_string(xc.shape()) + " does not end in the weight's " + std::to_string(E) +
                   " features";
        });
        xt::xtensor<T, R> y = xt::empty<T>(xc.shape());
        normalize<Arch>(xc.data(), y.data(), y.size() / E);
        return y;
    }

    /// `tokens` tokens of E features, contiguous: x [tokens, E] to y [tokens, E] (they may be the same).
    template <class Arch = default_arch>
    void normalize(const T* x, T* y, std::size_t tokens) const {
        using batch = xsimd::batch<T, Arch>;
        constexpr std::size_t W = batch::size;
        const std::size_t E = features();
        const T* w = weight.data();
        const T* b = bias.data();
        for (std::size_t t = 0; t < tokens; ++t, x += E, y += E) {
            // Everything relative to x[0]: x - x[0] is exact for features within a factor 2
            // of each other, so features far from 0 lose no digits to their offset (their
            // mean, rounded to a number near the offset, would).
            const T shift = x[0];
            const T mean = sum<Arch>(x, E, [shift](auto v) { return v - decltype(v)(shift); }) / T(E);
            const auto centered = [shift, mean](auto v) { return (v - decltype(v)(shift)) - decltype(v)(mean); };
            const T squares = sum<Arch>(x, E, [&](auto v) { return centered(v) * centered(v); });
            const T inverse_deviation = T(1 / std::sqrt(double(squares) / double(E) + eps));
            std::size_t c = 0;
            for (; c + W <= E; c += W)
                (centered(batch::load_unaligned(x + c)) * batch(inverse_deviation) * batch::load_unaligned(w + c) +
                 batch::load_unaligned(b + c))
                    .store_unaligned(y + c);
            for (; c < E; ++c) y[c] = centered(x[c]) * inverse_deviation * w[c] + b[c];
        }
    }
    /// The name before 0.1.0, kept for one release.
    template <class Arch = default_arch>
    [[deprecated("use normalize")]] void normalise(const T* x, T* y, std::size_t tokens) const {
        normalize<Arch>(x, y, tokens);
    }

private:
    /// The sum of f(x[c]) in 4 vectors of running sums: independent additions, 4 x W of
    /// them a step, so that none waits on the one before.
    template <class Arch, class F>
    static T sum(const T* x, std::size_t n, F f) noexcept {
        using batch = xsimd::batch<T, Arch>;
        constexpr std::size_t W = batch::size;
        batch acc[4] = {batch(T(0)), batch(T(0)), batch(T(0)), batch(T(0))};
        std::size_t c = 0;
        for (; c + 4 * W <= n; c += 4 * W)
            for (std::size_t k = 0; k < 4; ++k) acc[k] += f(batch::load_unaligned(x + c + k * W));
        for (; c + W <= n; c += W) acc[0] += f(batch::load_unaligned(x + c));
        T total = xsimd::hadd((acc[0] + acc[1]) + (acc[2] + acc[3]));
        for (; c < n; ++c) total += f(x[c]);
        return total;
    }
};

/// The float layer norm.
using layer_norm = basic_layer_norm<float>;

}  // namespace nonlocal::nn
