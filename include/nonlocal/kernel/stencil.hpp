#pragma once
/// @file kernel/stencil.hpp
/// The pixel-vectorised stencil kernel: for every pixel i of a grid,
///
///     finish(i, x_i, sum_j W_ij x_j [, sum_j W_ij])
///
/// over the edges of a `grid_stencil`, W given as one plane per forward direction d
/// (W_d[i] the weight of the edge from i to i + s_d, s_d = dy width + dx, 0 where that
/// neighbour lies outside the grid). Each pixel reads its neighbours' x and the weights
/// of its edges (W_d[i] forward, W_d[i - s_d] backward), so weights, x and the outputs
/// stream through memory once, vectorised across the pixels of a row. The AR system's
/// product, Jacobi sweeps, relaxation and residual are finishes of this pass, and so is
/// `weighted_aggregate` over a `grid_stencil` with `edge_weights`.

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/neighborhood/grid_stencil.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::kernel {

/// Element i of an array as a scalar, or as a batch of the elements from i, matching `like`.
template <class V, class A>
V lane_load(const A& a, std::size_t i, V like) {
    (void)like;
    const auto* p = &a[i];
    if constexpr (std::is_arithmetic_v<V>) return *p;
    else return V::load_unaligned(p);
}
/// cond ? a : b, lane by lane for batches.
template <class C, class V>
V lane_pick(C cond, V a, V b) {
    if constexpr (std::is_arithmetic_v<V>) return cond ? a : b;
    else return xsimd::select(cond, a, b);
}
/// Stores a scalar or a batch at p + i.
template <class T, class V>
void lane_store(T* p, std::size_t i, V v) {
    if constexpr (std::is_arithmetic_v<V>) p[i] = v;
    else v.store_unaligned(p + i);
}

/// The finish of a normalised stencil aggregate with a data term, a Jacobi sweep of the AR
/// system: y_i = (sum_j W_ij x_j + b_i) / (sum_j W_ij + alpha_i), 0 where the denominator
/// is 0, with alpha_i = `alpha(i, like)` and b_i = `b(i, like)` (a scalar or a batch like
/// `like`). `ar_system::jacobi_step` and `weighted_aggregate` over `edge_weights` (b_i =
/// alpha_i t_i) both run it, so the two are one computation.
template <class T, class Alpha, class B>
auto data_term_finish(T* y, Alpha alpha, B b) {
    return [=](std::size_t i, auto, auto neighbors, auto weight_sum) {
        using V = decltype(neighbors);
        const V denominator = weight_sum + alpha(i, neighbors);
        lane_store(y, i, lane_pick(denominator > V(T(0)), simd::divide(neighbors + b(i, neighbors), denominator), V(T(0))));
    };
}

/// The stencil pass over a height x width grid with the weights `weights[d]` of forward
/// directions `offsets[d]`, on architecture Arch. A view: the weights stay the caller's.
template <class Arch, class T>
class stencil {
public:
    using batch = xsimd::batch<T, Arch>;
    static constexpr std::size_t lanes = batch::size;

    stencil(std::size_t height, std::size_t width, const std::vector<stencil_offset>& offsets,
            std::vector<const T*> weights)
        : height_(height), width_(width), weights_(std::move(weights)) {
        for (const auto& o : offsets) shifts_.push_back(std::size_t(o.dy * std::ptrdiff_t(width) + o.dx));
    }

    std::size_t size() const noexcept { return height_ * width_; }
    std::size_t directions() const noexcept { return shifts_.size(); }

    /// The largest flat shift of the stencil.
    std::size_t reach_in_pixels() const noexcept {
        std::size_t reach = 0;
        for (std::size_t s : shifts_) reach = std::max(reach, s);
        return reach;
    }

    /// [first, stop): the pixels computed in whole batches (every neighbour index inside
    /// the flat range); the others are computed as scalars. The batches start at multiples
    /// of the batch width, so that with `buffer`'s 64-byte alignment every load and store
    /// of a pixel's own entries is aligned and only the neighbours' loads split cache
    /// lines (a split load costs two on Zen 4's load ports).
    std::pair<std::size_t, std::size_t> vector_zone() const noexcept {
        const std::size_t n = size(), reach = reach_in_pixels();
        const std::size_t first = std::min((reach + lanes - 1) / lanes * lanes, n);
        const std::size_t last = std::max(first, n > reach ? n - reach : 0);
        return {first, first + (last - first) / lanes * lanes};
    }

    /// Where band t of `bands` starts (t = bands: the end), on the batch grid of the vector
    /// zone, so that a band's pixels are computed as they are in one pass over the image.
    std::size_t band_edge(std::size_t t, std::size_t bands) const noexcept {
        const auto [first, stop] = vector_zone();
        return t == 0 ? 0 : t == bands ? size() : first + (stop - first) / lanes * t / bands * lanes;
    }

    /// Calls finish(i, x_i, sum_j W_ij x_j) (and sum_j W_ij last when `Sums`) for the pixels
    /// of [begin, end): the batches that start there in the vector zone, each pixel outside
    /// it as a scalar.
    template <bool Sums = false, class Finish>
    void range(const T* x, std::size_t begin, std::size_t end, Finish&& finish) const {
        const std::size_t n = size();
        const auto [first, stop] = vector_zone();
        const auto scalar = [&](std::size_t i) {
            T acc = 0, sum = 0;
            for (std::size_t o = 0; o < shifts_.size(); ++o) {
                const std::size_t s = shifts_[o];
                if (i + s < n) acc += weights_[o][i] * x[i + s], sum += weights_[o][i];
                if (i >= s) acc += weights_[o][i - s] * x[i - s], sum += weights_[o][i - s];
            }
            if constexpr (Sums) finish(i, x[i], acc, sum);
            else finish(i, x[i], acc);
        };
        for (std::size_t i = begin; i < std::min(end, first); ++i) scalar(i);
        const std::size_t from = std::max(begin, first);
        const std::size_t batch_begin = first + (from - first + lanes - 1) / lanes * lanes;
        switch (shifts_.size()) {
            case 2: batches<2, Sums>(x, batch_begin, std::min(end, stop), finish); break;   // 4 neighbours
            case 4: batches<4, Sums>(x, batch_begin, std::min(end, stop), finish); break;   // 8 neighbours
            default: batches<0, Sums>(x, batch_begin, std::min(end, stop), finish);
        }
        for (std::size_t i = std::max(begin, stop); i < end; ++i) scalar(i);
    }

    /// `range` over every pixel, in a band of whole batches for each thread of `policy`: every
    /// pixel is computed the same way whatever the thread count, so the results are too.
    template <bool Sums = false, execution_policy Ex, class Finish>
    void pass(Ex policy, const T* x, Finish&& finish) const {
        const int threads = detail::thread_count(policy);
        const std::size_t bands = std::size_t(std::max(threads, 1));
        detail::parallel_for(bands, threads, [&](std::size_t t) {
            range<Sums>(x, band_edge(t, bands), band_edge(t + 1, bands), finish);
        });
    }

    /// Calls `finish(i, 0, 0)` for the pixels of [begin, end), as a pass over x = 0 would,
    /// without reading x or the weights: batches, then the last pixels as scalars.
    template <class Finish>
    static void zero_range(std::size_t begin, std::size_t end, const Finish& finish) {
        std::size_t i = begin;
        for (; i + lanes <= end; i += lanes) finish(i, batch(T(0)), batch(T(0)));
        for (; i < end; ++i) finish(i, T(0), T(0));
    }

    /// finish(i, sum_j f(W_ij)) for every pixel i, the sum as a batch of the pixels i, i + 1,
    /// ... away from the ends of the image and as a scalar there: one pass over the weights,
    /// each read at the pixel (its forward edges) and one shift back (its backward ones).
    template <class F, class Finish>
    void edge_sums(F&& f, Finish&& finish) const {
        const std::size_t n = size(), reach = std::min(n, reach_in_pixels());
        const auto scalar = [&](std::size_t i) {
            T sum = 0;
            for (std::size_t o = 0; o < shifts_.size(); ++o) {
                const std::size_t s = shifts_[o];
                sum += f(weights_[o][i]);
                if (i >= s) sum += f(weights_[o][i - s]);
            }
            finish(i, sum);
        };
        std::size_t i = 0;
        for (; i < reach; ++i) scalar(i);
        for (; i + lanes <= n; i += lanes) {
            batch sum(T(0));
            for (std::size_t o = 0; o < shifts_.size(); ++o) {
                const T* w = weights_[o] + i;
                sum += f(batch::load_unaligned(w)) + f(batch::load_unaligned(w - shifts_[o]));
            }
            finish(i, sum);
        }
        for (; i < n; ++i) scalar(i);
    }

private:
    /// `range`'s batches from `begin` (on the batch grid) to `end`, with `count` stencil
    /// directions fixed at compile time, or any number for count = 0. A fixed count unrolls
    /// the loop over directions with their weight arrays and shifts in registers, instead of
    /// reloading them for every batch.
    template <std::size_t count, bool Sums, class Finish>
    void batches(const T* x, std::size_t begin, std::size_t end, const Finish& caller_finish) const {
        // A copy of the finish that no pointer reaches: the caller's may sit behind an address
        // handed to the threads, and every store of a batch (xsimd's, which may alias
        // anything) would make the compiler load each of its pointers again.
        auto finish = caller_finish;
        // The edges ahead (W_d[i] x[i + s_d]) and behind (W_d[i - s_d] x[i - s_d]) of the batch
        // at i summed in two accumulators: two chains of dependent FMAs, each half as long (with
        // 8 neighbours 4 FMAs of 4 cycles' latency instead of 8), so consecutive batches overlap.
        const auto edges = [x](batch& ahead, batch& behind, batch& sum, const T* w, std::size_t s, std::size_t i) {
            const batch forward = batch::load_unaligned(w + i), backward = batch::load_unaligned(w + i - s);
            ahead = xsimd::fma(forward, batch::load_unaligned(x + i + s), ahead);
            behind = xsimd::fma(backward, batch::load_unaligned(x + i - s), behind);
            if constexpr (Sums) sum += forward + backward;
        };
        const auto done = [&](std::size_t i, batch ahead, batch behind, batch sum) {
            if constexpr (Sums) finish(i, batch::load_unaligned(x + i), ahead + behind, sum);
            else (void)sum, finish(i, batch::load_unaligned(x + i), ahead + behind);
        };
        if constexpr (count > 0) {
            std::array<const T*, count> w;
            std::array<std::size_t, count> s;
            for (std::size_t o = 0; o < count; ++o) w[o] = weights_[o], s[o] = shifts_[o];
            for (std::size_t i = begin; i < end; i += lanes) {
                batch ahead(T(0)), behind(T(0)), sum(T(0));
                for (std::size_t o = 0; o < count; ++o) edges(ahead, behind, sum, w[o], s[o], i);
                done(i, ahead, behind, sum);
            }
        } else {
            for (std::size_t i = begin; i < end; i += lanes) {
                batch ahead(T(0)), behind(T(0)), sum(T(0));
                for (std::size_t o = 0; o < shifts_.size(); ++o) edges(ahead, behind, sum, weights_[o], shifts_[o], i);
                done(i, ahead, behind, sum);
            }
        }
    }

    std::size_t height_, width_;
    std::vector<const T*> weights_;
    std::vector<std::size_t> shifts_;
};

}  // namespace nonlocal::kernel
