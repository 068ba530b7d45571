#pragma once
/// @file depth/hold_out.hpp
/// What a depth task takes from the data rather than from a constant: the colour bandwidth
/// (`depth_options::sigma_r` = 0) and the data term's weight (`depth_options::data_weight` = 0),
/// each chosen by holding a quarter of the observations out and predicting them from the rest. A held-out
/// observation's expected squared error is the prediction's error there plus the noise's
/// variance, which no choice changes: the choice of least held-out error is that of least
/// error, as far as three quarters of the observations tell. The colour bandwidth starts from
/// the guide's own contrast (`guide_contrast`), so that guides on any scale and of any texture
/// start near their best.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/depth/observations.hpp"
#include "nonlocal/image/pixels.hpp"

namespace nonlocal::detail {

/// The median L1 difference, over the channels of `g`, of horizontally and vertically
/// neighbouring pixels (of every other row, which tells it as well): how far apart the colours
/// of one surface's neighbouring pixels lie, since depth steps are few. 0 for a flat guide.
template <class T>
double guide_contrast(const image_planes<T>& g) {
    std::vector<float> differences;
    differences.reserve(g.pixels());
    for (std::size_t r = 0; r < g.height; r += 2)
        for (std::size_t c = 0; c < g.width; ++c) {
            const std::size_t i = r * g.width + c;
            float right = 0, down = 0;
            for (std::size_t k = 0; k < g.channels; ++k) {
                const T* p = g.channel(k);
                if (c + 1 < g.width) right += float(std::abs(p[i + 1] - p[i]));
                if (r + 1 < g.height) down += float(std::abs(p[i + g.width] - p[i]));
            }
            if (c + 1 < g.width) differences.push_back(right);
            if (r + 1 < g.height) differences.push_back(down);
        }
    if (differences.empty()) return 0;
    const auto middle = differences.begin() + std::ptrdiff_t(differences.size() / 2);
    std::nth_element(differences.begin(), middle, differences.end());
    return double(*middle);
}

/// The colour bandwidth upsampling's search (`choose_by_hold_out`) starts from, and the one
/// hole filling and denoising take: a quarter of the guide's contrast (`guide_contrast`; 1 for a
/// flat guide). On the Middlebury scene of the performance page it is 1.6; guides of strong
/// texture (fur, foliage, print) start higher, where their colour differences within a surface lie.
template <class T>
double color_bandwidth_start(const image_planes<T>& g) {
    const double contrast = guide_contrast(g);
    return contrast > 0 ? 0.25 * contrast : 1.0;
}

/// A quarter of the observations of `values` (0 or not finite where missing) held out: those of
/// odd rows and odd columns, with their values, `kept` the others.
struct held_out_observations {
    struct observation {
        std::size_t row = 0, column = 0;
        double value = 0;
    };
    xt::xtensor<double, 2> kept;
    std::vector<observation> held;
    bool usable = false;   ///< at least 16 held out and some kept

    explicit held_out_observations(const xt::xtensor<double, 2>& values) : kept(values) {
        std::size_t observed = 0;
        for (std::size_t r = 0; r < values.shape(0); ++r)
            for (std::size_t c = 0; c < values.shape(1); ++c) {
                observed += valid_depth(values(r, c));
                if (r % 2 == 1 && c % 2 == 1 && valid_depth(values(r, c))) held.push_back({r, c, values(r, c)}), kept(r, c) = 0;
            }
        usable = held.size() >= 16 && held.size() < observed;
    }

    /// The squared error of the prediction `x` at the held-out observations, observation (r, c)
    /// lying at `at(r, c)` of x.
    template <class X, class At>
    double error(const X& x, At&& at) const {
        double sum = 0;
        for (const auto& [r, c, value] : held) {
            const double e = double(x.data()[at(r, c)]) - value;
            sum += e * e;
        }
        return sum;
    }
};

/// The value in [lowest, highest] of least error at the held-out observations `h`: from `start`,
/// doubled while the error falls (halved, when the first doubling does not lower it), then the
/// best's neighbours by a factor of sqrt 2 tried. `predict(kept, v)` refines the observations
/// kept with value v; observation (r, c) lies at `at(r, c)` of its result. `start` when too few
/// are held out.
template <class Predict, class At>
double choose_by_hold_out(const held_out_observations& h, double start, double lowest, double highest,
                          Predict&& predict, At&& at) {
    if (!h.usable) return start;
    const auto error = [&](double v) { return h.error(predict(h.kept, v), at); };
    double best = start, least = error(start);
    const auto ladder = [&](double factor) {
        bool lowered = false;
        for (double v = start * factor; v >= lowest * (1 - 1e-9) && v <= highest * (1 + 1e-9); v *= factor) {
            const double e = error(v);
            if (!(e < least)) break;
            best = v, least = e, lowered = true;
        }
        return lowered;
    };
    if (!ladder(2.0)) ladder(0.5);
    for (const double v : {best * std::sqrt(2.0), best / std::sqrt(2.0)})
        if (v >= lowest && v <= highest)
            if (const double e = error(v); e < least) best = v, least = e;
    return best;
}

}  // namespace nonlocal::detail
