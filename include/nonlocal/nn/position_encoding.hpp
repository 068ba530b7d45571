#pragma once
/// @file nn/position_encoding.hpp
/// Position encodings added to tokens: the sinusoidal encoding of the Transformer (Vaswani
/// et al. 2017), the 2-D sine-cosine encoding of MAE and timm's ViTs, and a learned
/// embedding's resampling to another grid (a ViT run on another image size).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"

namespace nonlocal::nn {

/// [n, d]: PE(t, 2i) = sin(t / 10000^(2i / d)), PE(t, 2i + 1) = cos(t / 10000^(2i / d)) for
/// positions t = 0 .. n - 1 (the original Transformer's, interleaved). Throws
/// `std::invalid_argument` when d is odd.
template <class T = float>
xt::xtensor<T, 2> sinusoidal_encoding(std::size_t n, std::size_t d) {
    detail::require(d % 2 == 0, "nn::sinusoidal_encoding", [&] { return "d = " + std::to_string(d) + " must be even"; });
    xt::xtensor<T, 2> pe = xt::empty<T>({n, d});
    for (std::size_t t = 0; t < n; ++t)
        for (std::size_t i = 0; i < d / 2; ++i) {
            const double angle = double(t) / std::pow(10000.0, double(2 * i) / double(d));
            pe(t, 2 * i) = T(std::sin(angle));
            pe(t, 2 * i + 1) = T(std::cos(angle));
        }
    return pe;
}

/// [h w, d]: the 2-D sine-cosine encoding of MAE (`get_2d_sincos_pos_embed`) and timm, token
/// (y, x) at row y w + x: its first d / 2 features encode x, the last d / 2 encode y, each
/// as [sin(p omega_i) for i < d / 4, then cos(p omega_i)], omega_i = 10000^(-i / (d / 4)).
/// Throws `std::invalid_argument` unless 4 divides d.
template <class T = float>
xt::xtensor<T, 2> sincos_encoding_2d(std::size_t h, std::size_t w, std::size_t d) {
    detail::require(d % 4 == 0, "nn::sincos_encoding_2d", [&] {
        return "d = " + std::to_string(d) + " must be a multiple of 4";
    });
    const std::size_t quarter = d / 4;
    xt::xtensor<T, 2> pe = xt::empty<T>({h * w, d});
    for (std::size_t y = 0; y < h; ++y)
        for (std::size_t x = 0; x < w; ++x)
            for (std::size_t i = 0; i < quarter; ++i) {
                const double omega = 1.0 / std::pow(10000.0, double(i) / double(quarter));
                T* row = &pe(y * w + x, 0);
                row[i] = T(std::sin(double(x) * omega));
                row[quarter + i] = T(std::cos(double(x) * omega));
                row[2 * quarter + i] = T(std::sin(double(y) * omega));
                row[3 * quarter + i] = T(std::cos(double(y) * omega));
            }
    return pe;
}

/// A learned position embedding of a grid of `from` x `from` tokens [from^2, d] resampled to
/// `to` x `to` [to^2, d], bicubic (a = -0.75) as `F.interpolate(mode='bicubic')` computes it:
/// with the corners aligned (torchvision's `interpolate_embeddings`), or with the grids'
/// cell centres aligned, `align_corners = false` (timm's `resample_abs_pos_embed`, which
/// also antialiases when it shrinks a grid; this does not). Throws `std::invalid_argument`
/// unless the embedding has from^2 rows and both grids are non-empty.
template <class T>
xt::xtensor<T, 2> resample_position_embedding(const xt::xtensor<T, 2>& embedding, std::size_t from, std::size_t to,
                                              bool align_corners = true) {
    detail::require(from > 0 && to > 0 && embedding.shape(0) == from * from, "nn::resample_position_embedding", [&] {
        return "embedding " + detail::shape_string(embedding.shape()) + " must hold a " + std::to_string(from) + " x " +
               std::to_string(from) + " grid, to a non-empty grid of " + std::to_string(to);
    });
    const std::size_t d = embedding.shape(1);
    // The four taps around a source coordinate and their weights.
    struct taps {
        std::size_t at[4];
        double weight[4];
    };
    const auto taps_of = [&](std::size_t o) {
        const double a = -0.75;
        const double src = !align_corners ? (double(o) + 0.5) * double(from) / double(to) - 0.5
                           : to > 1       ? double(o) * double(from - 1) / double(to - 1)
                                          : 0.0;
        const double base = std::floor(src), t = src - base;
        const auto far = [a](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };   // 1 < x < 2
        const auto near = [a](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };         // x <= 1
        taps r{};
        const double weights[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
        for (int i = 0; i < 4; ++i) {
            const double at = std::clamp(base - 1 + i, 0.0, double(from - 1));
            r.at[i] = std::size_t(at);
            r.weight[i] = weights[i];
        }
        return r;
    };
    xt::xtensor<T, 2> out = xt::empty<T>({to * to, d});
    for (std::size_t oy = 0; oy < to; ++oy) {
        const taps ty = taps_of(oy);
        for (std::size_t ox = 0; ox < to; ++ox) {
            const taps tx = taps_of(ox);
            for (std::size_t c = 0; c < d; ++c) {
                double sum = 0;
                for (int i = 0; i < 4; ++i) {
                    double row = 0;
                    for (int j = 0; j < 4; ++j) row += tx.weight[j] * double(embedding(ty.at[i] * from + tx.at[j], c));
                    sum += ty.weight[i] * row;
                }
                out(oy * to + ox, c) = T(sum);
            }
        }
    }
    return out;
}

}  // namespace nonlocal::nn
