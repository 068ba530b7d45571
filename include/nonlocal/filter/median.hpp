#pragma once
/// @file filter/median.hpp
/// The exact median of each pixel's square window, vectorised across pixels.
///
/// A window of n = (2r + 1)^2 values goes through the median's selection network
/// (`simd/selection_network.hpp`), each exchange a min and a max on a batch of
/// neighbouring pixels, whose window values are plain unaligned loads of the
/// border-replicated image: no branch and no gather. Up to r = 3 the network is a
/// compile-time constant, unrolled into registers.
///
/// The depth tasks use it to sharpen depth edges (`depth_options::median_scale`):
/// a pixel that the linear model blends between two surfaces takes the value of
/// the surface that fills most of its window.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/simd/selection_network.hpp"

namespace nonlocal {
namespace detail {

/// The median filter of a padded image (rows of `stride` values, the border
/// replicated `side / 2` pixels outward and at least one batch more on the right)
/// into the H x W image `out`. For flat > 0, when every window of a batch of neighbouring
/// pixels spans at most `flat` (max - min) its pixels keep their own value, which the
/// median lies within `flat` of. Every other batch (every batch for flat = 0) loads its
/// windows into a column of `v` (slot s of column k at v[s * group + k]) and joins the
/// queue, and each time `group` batches are queued they go through `run` together, so
/// each exchange is `group` independent min / max pairs. The spans come
/// from running extrema, over `side` columns of each padded row and then over `side`
/// of those rows: 4 side loads and min / max per batch instead of 3 side^2, so that
/// only the batches near depth steps pay for loading their windows and for the network.
template <class Arch, std::size_t group, class T, class Slots, class Run>
void median_rows(const T* padded, std::size_t stride, std::size_t H, std::size_t W, std::size_t side,
                 std::size_t output, T flat, T* out, int threads, Slots make_slots, Run run) {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t lanes = batch::size, band = 16;
    const std::size_t width = (W + lanes - 1) / lanes * lanes;
    parallel_for((H + band - 1) / band, threads, [&](std::size_t b) {
        const std::size_t r0 = b * band, r1 = std::min(H, r0 + band), window_rows = flat > T(0) ? r1 - r0 + side - 1 : 0;
        // Extrema over `side` columns of the band's padded rows, then the span over `side` of them.
        buffer<T> row_lo(window_rows * width), row_hi(window_rows * width), span(flat > T(0) ? (r1 - r0) * width : 0);
        for (std::size_t k = 0; k < window_rows; ++k)
            for (std::size_t c = 0; c < width; c += lanes) {
                const T* from = padded + (r0 + k) * stride + c;
                batch lo = batch::load_unaligned(from), hi = lo;
                for (std::size_t dx = 1; dx < side; ++dx) {
                    const batch value = batch::load_unaligned(from + dx);
                    lo = xsimd::min(lo, value), hi = xsimd::max(hi, value);
                }
                lo.store_unaligned(row_lo.data() + k * width + c), hi.store_unaligned(row_hi.data() + k * width + c);
            }
        for (std::size_t k = 0; k < span.size() / width; ++k)
            for (std::size_t c = 0; c < width; c += lanes) {
                batch lo = batch::load_unaligned(row_lo.data() + k * width + c);
                batch hi = batch::load_unaligned(row_hi.data() + k * width + c);
                for (std::size_t dy = 1; dy < side; ++dy) {
                    lo = xsimd::min(lo, batch::load_unaligned(row_lo.data() + (k + dy) * width + c));
                    hi = xsimd::max(hi, batch::load_unaligned(row_hi.data() + (k + dy) * width + c));
                }
                (hi - lo).store_unaligned(span.data() + k * width + c);
            }
        auto v = make_slots();
        T tail[lanes];
        T* target[group];          // where queued column k's medians go
        std::size_t valid[group];  // and how many of its lanes are pixels
        std::size_t queued = 0;
        const auto store = [&](batch value, T* to, std::size_t count) {
            value.store_unaligned(tail);
            std::copy(tail, tail + count, to);
        };
        const auto flush = [&] {   // columns past `queued` hold older windows: run, then ignored
            if (queued == 0) return;
            run(v.data());
            for (std::size_t k = 0; k < queued; ++k) store(v[output * group + k], target[k], valid[k]);
            queued = 0;
        };
        for (std::size_t r = r0; r < r1; ++r)
            for (std::size_t c = 0; c < W; c += lanes) {
                const T* corner = padded + r * stride + c;
                const std::size_t count = std::min(lanes, W - c);
                if (flat > T(0) && !xsimd::any(batch::load_unaligned(span.data() + (r - r0) * width + c) > batch(flat))) {
                    store(batch::load_unaligned(corner + (side / 2) * stride + side / 2), out + r * W + c, count);
                    continue;
                }
                for (std::size_t dy = 0, s = 0; dy < side; ++dy)
                    for (std::size_t dx = 0; dx < side; ++dx, ++s)
                        v[s * group + queued] = batch::load_unaligned(corner + dy * stride + dx);
                target[queued] = out + r * W + c, valid[queued] = count;
                if (++queued == group) flush();
            }
        flush();
    });
}

/// The median filter of an H x W image in row order (`in`) into `out`, on `threads` threads;
/// pixels whose window spans at most `flat` may keep their value (see `median_rows`; 0: the
/// exact median everywhere). `in` is read once, into the padded copy, before `out` is
/// written: `out` may be `in`.
template <class Arch, class T>
void median_filter(const T* in, std::size_t H, std::size_t W, std::size_t radius, T* out, int threads, T flat = T(0)) {
    if (H == 0 || W == 0) return;
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t lanes = batch::size, max_group = 4;
    const std::size_t side = 2 * radius + 1;
    // The image with its border replicated `radius` pixels outward, and a batch more
    // on the right so that every load stays inside.
    const std::size_t stride = W + 2 * radius + lanes, rows = H + 2 * radius;
    buffer<T> padded(rows * stride);
    for (std::size_t r = 0; r < rows; ++r) {
        const T* src = in + std::min(r > radius ? r - radius : 0, H - 1) * W;
        T* dst = padded.data() + r * stride;
        for (std::size_t c = 0; c < stride; ++c) dst[c] = src[std::min(c > radius ? c - radius : 0, W - 1)];
    }
    // Radius 1 to 3 with compile-time networks, in groups of 3, 1 and 1 batches: 27 and 25
    // slots fit the 32 vector registers, 49 spill some. Unrolled, these take half the time
    // of the run-time network; at radius 4 and 5 the spills cost what unrolling saves
    // (docs/performance.md).
    const auto fixed = [&]<std::size_t R, std::size_t group>() {
        using net = fixed_median_network<R>;
        median_rows<Arch, group>(
            padded.data(), stride, H, W, side, net::output, flat, out, threads,
            [] { return std::array<batch, net::slots * group>{}; },
            [](batch* v) { net::template run<group>(v); });
    };
    switch (radius) {
        case 1: return fixed.template operator()<1, 3>();
        case 2: return fixed.template operator()<2, 1>();
        case 3: return fixed.template operator()<3, 1>();
        default: break;
    }
    // Wider windows: 4 batches of 16 floats x 121 slots (r = 5) take 31 KB, inside a
    // 32 KB L1 (groups of 2 or 8 batches were slower: docs/performance.md).
    const selection_network net = median_network(side * side);
    median_rows<Arch, max_group>(
        padded.data(), stride, H, W, side, net.output, flat, out, threads,
        [&] { return std::vector<batch, xsimd::aligned_allocator<batch>>(net.slots * max_group); },
        [&](batch* v) { run_network<max_group>(net, v); });
}

}  // namespace detail

/// The median of each pixel's (2 `radius` + 1)^2 window of `image` [H, W] or, per
/// channel, [H, W, C], the border replicated outward; radius 0 copies the image.
/// Exact and vectorised across pixels (see the file's comment); the threads of
/// `policy` split the rows. Any arithmetic type up to 32 bits: integers of up to 16 bits are
/// filtered in float, wider ones in double, both exact, and the result has the
/// image's type. Throws `std::invalid_argument` when a value is NaN (the median
/// of values without an order is undefined); infinities are ordered values. A window may be
/// larger than the image (the replicated border weighs in), but the cost is that of its
/// size: the padded copy holds (H + 2 radius) x (W + 2 radius) values and the network
/// grows with (2 radius + 1)^2: a radius in the hundreds takes seconds and hundreds of MB
/// even on a small image (docs/performance.md).
template <class Arch = default_arch, execution_policy Ex, class E>
auto median_filter(Ex policy, const xt::xexpression<E>& image, std::size_t radius) {
    using T = detail::value_type_of<E>;
    constexpr std::size_t rank = detail::static_rank<E>;
    static_assert(rank == 2 || rank == 3, "nonlocal: median_filter takes [H, W] or [H, W, C] images");
    static_assert((std::is_arithmetic_v<T> && sizeof(T) <= 4) || std::is_same_v<T, double>,
                  "nonlocal: median_filter takes arithmetic values of up to 32 bits, or double");
    using compute = std::conditional_t<std::is_floating_point_v<T>, T, std::conditional_t<(sizeof(T) <= 2), float, double>>;
    const detail::contiguous<T, rank> in(image);   // borrowed when it is a row-major container
    const std::size_t H = in.shape(0), W = in.shape(1), C = rank == 3 ? in.shape(2) : 1;
    if constexpr (std::is_floating_point_v<T>)
        for (std::size_t i = 0; i < H * W * C; ++i)
            detail::require(!std::isnan(in.data()[i]), "median_filter", [&] {
                return "image " + detail::shape_string(in.shape()) + " holds NaN at flat index " + std::to_string(i);
            });
    const int threads = detail::thread_count(policy);
    xt::xtensor<T, rank> out = xt::empty<T>(in.shape());
    if constexpr (std::is_same_v<T, compute>)
        if (C == 1) {
            detail::median_filter<Arch>(in.data(), H, W, radius, out.data(), threads);
            return out;
        }
    buffer<compute> plane(H * W), filtered(H * W);
    for (std::size_t k = 0; k < C; ++k) {
        for (std::size_t i = 0; i < H * W; ++i) plane[i] = compute(in.data()[i * C + k]);
        detail::median_filter<Arch>(plane.data(), H, W, radius, filtered.data(), threads);
        for (std::size_t i = 0; i < H * W; ++i) out.data()[i * C + k] = T(filtered[i]);
    }
    return out;
}
/// The same on the calling thread.
template <class Arch = default_arch, class E>
auto median_filter(const xt::xexpression<E>& image, std::size_t radius) {
    return median_filter<Arch>(execution::seq, image, radius);
}

}  // namespace nonlocal
