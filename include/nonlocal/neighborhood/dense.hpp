#pragma once
/// @file neighborhood/dense.hpp
/// Every key (`dense`), or every key up to the query's own position (`causal`).

#include <algorithm>
#include <cstddef>

#include "nonlocal/concepts.hpp"

namespace nonlocal {

/// N(i) = all keys.
struct dense {
    template <class F>
    void for_each_range(std::size_t, extents e, F&& f) const {
        f(key_range{0, e.keys, 1});
    }
};

/// N(i) = keys j <= i (the decoder's mask; top-left aligned when n != m).
struct causal {
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        f(key_range{0, std::min(i + 1, e.keys), 1});
    }
};

static_assert(neighborhood<dense>);
static_assert(neighborhood<causal>);

}  // namespace nonlocal
