#pragma once
/// @file solve/pipelined_passes.hpp
/// Several stencil passes over a grid's pixels in one pass over memory, each following the
/// one before it while what it reads is still in cache, the bands of the image shared out
/// among threads.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "nonlocal/execution.hpp"

namespace nonlocal::detail {

/// `count` passes of the stencil kernel `e` over its pixels: pass k runs over x for even k
/// and y for odd k, as `pass_of(k)(input, begin, end)` does for the pixels of [begin, end),
/// writing what pass k + 1 reads. Each pass follows the one before far enough behind (`lag`
/// pixels) to read only finished pixels and close enough that they are still in cache; a
/// pass may overwrite the buffer the pass before it reads where that one no longer reads.
/// On `threads` threads each takes a band of the image; pass k leaves k lag pixels at each
/// seam between bands, done pass by pass once every band is. The result is that of the
/// passes run one after another, on any number of threads.
template <class Stencil, class T, class PassOf>
void pipelined_passes(const Stencil& e, int threads, const T* x, const T* y, std::size_t count, PassOf&& pass_of) {
    if (count == 0) return;
    const std::size_t n = e.size();
    const std::size_t lag = e.reach_in_pixels() + 2 * Stencil::lanes + 1;
    std::size_t chunks = std::size_t(std::max(threads, 1));
    if (n < chunks * 2 * (count + 1) * lag) chunks = 1;   // bands far longer than their seams, or one band
    const auto edge = [&](std::size_t t) { return e.band_edge(t, chunks); };
    // Band t's pass k covers [inner(k, t).first, inner(k, t).second); the seams lie between.
    const auto inner = [&](std::size_t k, std::size_t t) {
        return std::pair{t == 0 ? std::size_t(0) : edge(t) + k * lag, t + 1 == chunks ? n : edge(t + 1) - k * lag};
    };
    const T* input[2] = {x, y};
    const auto run = [&](std::size_t k, std::size_t begin, std::size_t end) {
        if (begin < end) pass_of(k)(input[k % 2], begin, end);
    };
    parallel_for(chunks, threads, [&](std::size_t t) {
        const std::size_t step = std::max<std::size_t>(4096, lag);
        std::vector<std::size_t> done(count);   // pass k has done [inner(k, t).first, done[k])
        for (std::size_t k = 0; k < count; ++k) done[k] = inner(k, t).first;
        for (std::size_t begin = edge(t); begin < edge(t + 1); begin += step) {
            const std::size_t end = std::min(edge(t + 1), begin + step);
            for (std::size_t k = 0; k < count; ++k) {
                const std::size_t behind = k * lag;
                const std::size_t ready = std::min(inner(k, t).second, end == n ? n : (end > behind ? end - behind : 0));
                if (ready > done[k]) run(k, done[k], ready), done[k] = ready;
            }
        }
    });
    for (std::size_t k = 1; k < count; ++k)
        parallel_for(chunks - 1, threads, [&](std::size_t t) { run(k, inner(k, t).second, inner(k, t + 1).first); });
}

}  // namespace nonlocal::detail
