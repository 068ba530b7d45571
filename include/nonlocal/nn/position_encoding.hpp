#pragma once
/// @file nn/position_encoding.hpp
/// Position encodings added to tokens: the sinusoidal encoding of the Transformer (Vaswani
/// et al. 2017), the 2-D sine-cosine encoding of MAE and timm's ViTs, and a learned
/// embedding's resampling to another grid (a ViT run on another image size).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/nn/resize.hpp"

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

/// How torchvision's `interpolate_embeddings` resamples a ViT's position embedding:
/// bicubic, the grids' corners aligned.
inline constexpr resize_options torchvision_position_resampling{interpolation::bicubic, false, true};
/// How timm's `resample_abs_pos_embed` resamples it: bicubic with antialias, the grids' cell
/// centres aligned.
inline constexpr resize_options timm_position_resampling{interpolation::bicubic, true, false};

/// A learned position embedding of a grid of `from` x `from` tokens [from^2, d] resampled to
/// `to` x `to` [to^2, d] as `resize` resamples a map (`F.interpolate`), each of the d
/// features a plane; sums in double. Throws `std::invalid_argument` unless the embedding has
/// from^2 rows and both grids are non-empty.
template <class T>
xt::xtensor<T, 2> resample_position_embedding(const xt::xtensor<T, 2>& embedding, std::size_t from, std::size_t to,
                                              resize_options options = torchvision_position_resampling) {
    detail::require(from > 0 && to > 0 && embedding.shape(0) == from * from, "nn::resample_position_embedding", [&] {
        return "embedding " + detail::shape_string(embedding.shape()) + " must hold a " + std::to_string(from) + " x " +
               std::to_string(from) + " grid, to a non-empty grid of " + std::to_string(to);
    });
    const std::size_t d = embedding.shape(1);
    const detail::resize_taps taps(from, to, options);
    xt::xtensor<T, 2> out = xt::empty<T>({to * to, d});
    std::vector<double> sum(d);
    for (std::size_t oy = 0; oy < to; ++oy)
        for (std::size_t ox = 0; ox < to; ++ox) {
            std::fill(sum.begin(), sum.end(), 0.0);
            for (std::size_t i = oy * taps.span; i < (oy + 1) * taps.span; ++i)
                for (std::size_t j = ox * taps.span; j < (ox + 1) * taps.span; ++j) {
                    const double w = taps.weights[i] * taps.weights[j];
                    const T* row = &embedding(taps.index[i] * from + taps.index[j], 0);
                    for (std::size_t c = 0; c < d; ++c) sum[c] += w * double(row[c]);
                }
            for (std::size_t c = 0; c < d; ++c) out(oy * to + ox, c) = T(sum[c]);
        }
    return out;
}

}  // namespace nonlocal::nn
