#pragma once
/// @file simd/selection_network.hpp
/// The median of n values as a selection network: Batcher's odd-even merge sort of the
/// next power of two above n, reduced when it is built to what the median needs. The
/// padding is +inf, so exchanges with padding are resolved then (a relabelling or
/// nothing); exchanges the median does not depend on are dropped, and those only one of
/// whose outputs it needs become a single min or max. Each remaining exchange is a min
/// and a max, on plain values or on batches of independent windows (one per lane): no
/// branch. For n = 9 / 25 / 49 / 121 the network keeps 40 / 202 / 590 / 2154 min and max
/// operations, against 126 / 382 / 1086 / 2942 for the full sort of 16 / 32 / 64 / 128
/// values. The median filter (`filter/median.hpp`) and the depth tasks' median of the
/// observations (`depth/robust.hpp`) run it.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace nonlocal::detail {

/// Compare-exchanges over `slots` values after which slot `output` holds the
/// median of the first n (the value of rank (n - 1) / 2 from 0).
struct selection_network {
    /// Which results of an exchange of slots low < high are kept: both (min to
    /// low, max to high), only the min (to low) or only the max (to high).
    enum class keep : std::uint8_t { both, min, max };
    struct exchange {
        std::uint32_t low, high;
        keep part;
    };
    std::vector<exchange> exchanges;
    std::size_t slots = 0, output = 0;

    /// Min and max operations per window.
    constexpr std::size_t operations() const {
        std::size_t ops = 0;
        for (const auto& e : exchanges) ops += e.part == keep::both ? 2 : 1;
        return ops;
    }
};

/// The median network of n >= 1 values (see the file's comment).
constexpr selection_network median_network(std::size_t n) {
    std::size_t size = 1;
    while (size < n) size *= 2;
    // Batcher's odd-even merge sort on `size` wires (Knuth, TAOCP 5.3.4, exercise 32):
    // wire w holds data for w < n and +inf after; slot_of maps wires to slots.
    // Bytes for flags and filled by push_back: clang before 16 cannot evaluate libstdc++'s
    // vector(size) nor vector<bool> in a constant expression.
    std::vector<std::size_t> slot_of;
    std::vector<std::uint8_t> data;
    for (std::size_t w = 0; w < size; ++w) slot_of.push_back(w), data.push_back(w < n);
    std::vector<selection_network::exchange> kept;
    for (std::size_t p = 1; p < size; p *= 2)
        for (std::size_t k = p; k >= 1; k /= 2)
            for (std::size_t j = k % p; j + k < size; j += 2 * k)
                for (std::size_t i = 0; i < std::min(k, size - j - k); ++i) {
                    const std::size_t a = i + j, b = i + j + k;
                    if ((a / (2 * p)) != (b / (2 * p))) continue;
                    if (data[a] && data[b])
                        kept.push_back({std::uint32_t(slot_of[a]), std::uint32_t(slot_of[b]),
                                        selection_network::keep::both});
                    else if (!data[a] && data[b])  // +inf meets data: they trade places
                        std::swap(slot_of[a], slot_of[b]), data[a] = true, data[b] = false;
                }
    selection_network net;
    net.slots = n;
    net.output = slot_of[(n - 1) / 2];
    // Backwards from the output: keep what it depends on, and only the half it needs.
    std::vector<std::uint8_t> needed;
    for (std::size_t slot = 0; slot < n; ++slot) needed.push_back(slot == net.output);
    for (auto e = kept.rbegin(); e != kept.rend(); ++e) {
        const bool low = needed[e->low], high = needed[e->high];
        if (!low && !high) continue;
        e->part = low && high ? selection_network::keep::both
                              : (low ? selection_network::keep::min : selection_network::keep::max);
        needed[e->low] = needed[e->high] = true;
        net.exchanges.push_back(*e);
    }
    std::reverse(net.exchanges.begin(), net.exchanges.end());
    return net;
}

/// Runs `net` on `count` groups of windows at once: v[s * count + k] holds slot s of group k.
/// Independent groups give each min and max `count` chains to overlap.
template <std::size_t count, class V>
void run_network(const selection_network& net, V* v) {
    using std::max, std::min;  // for plain values; batches find xsimd's by argument-dependent lookup
    for (const auto& e : net.exchanges) {
        V* low = v + e.low * count;
        V* high = v + e.high * count;
        switch (e.part) {
            case selection_network::keep::both:
                for (std::size_t k = 0; k < count; ++k) {
                    const V a = low[k], b = high[k];
                    low[k] = min(a, b), high[k] = max(a, b);
                }
                break;
            case selection_network::keep::min:
                for (std::size_t k = 0; k < count; ++k) low[k] = min(low[k], high[k]);
                break;
            case selection_network::keep::max:
                for (std::size_t k = 0; k < count; ++k) high[k] = max(low[k], high[k]);
                break;
        }
    }
}

/// The median network of a window of radius R as compile-time constants, for
/// windows small enough to live in registers: the exchanges unroll into a
/// straight line of min and max on them, where the run-time network loads and
/// stores every slot it touches.
template <std::size_t R>
struct fixed_median_network {
    static constexpr std::size_t side = 2 * R + 1, slots = side * side;
    static constexpr std::size_t size = median_network(slots).exchanges.size();
    static constexpr auto exchanges = [] {
        const selection_network net = median_network(slots);
        std::array<selection_network::exchange, size> out{};
        for (std::size_t e = 0; e < size; ++e) out[e] = net.exchanges[e];
        return out;
    }();
    static constexpr std::size_t output = median_network(slots).output;

    /// Folds of at most 64 exchanges (clang nests a fold's terms and stops at 256 levels),
    /// each inlined, so the whole network is still one straight line.
    static constexpr std::size_t chunk = 64;

    template <std::size_t count, class V>
    static void run(V* v) {
        [&]<std::size_t... c>(std::index_sequence<c...>) {
            (run_chunk<c * chunk, count>(v, std::make_index_sequence<std::min(chunk, size - c * chunk)>{}), ...);
        }(std::make_index_sequence<(size + chunk - 1) / chunk>{});
    }
    template <std::size_t first, std::size_t count, class V, std::size_t... e>
    [[gnu::always_inline]] static void run_chunk(V* v, std::index_sequence<e...>) {
        (exchange<exchanges[first + e], count>(v), ...);
    }
    template <selection_network::exchange e, std::size_t count, class V>
    [[gnu::always_inline]] static void exchange(V* v) {
        using std::max, std::min;
        for (std::size_t k = 0; k < count; ++k) {
            const V a = v[e.low * count + k], b = v[e.high * count + k];
            if constexpr (e.part != selection_network::keep::max) v[e.low * count + k] = min(a, b);
            if constexpr (e.part != selection_network::keep::min) v[e.high * count + k] = max(a, b);
        }
    }
};

}  // namespace nonlocal::detail
