#pragma once
/// @file solve/line_solves.hpp
/// Direct solves along the lines of one stencil direction of an AR system, and the
/// separable smoothing built from them: the scheme of the fast global smoother (FGS,
/// Min et al. 2014) on any `ar_system`.
///
/// Along direction d the pixels fall into lines (i, i + s_d, i + 2 s_d, ...), and the
/// system keeping only d's edges, diag(alpha) + scale L_d, is tridiagonal on each line:
/// the 1-D AR model with x as its observations. The Thomas algorithm solves it in one
/// forward and one backward pass. Pixel i's predecessor is i - s_d exactly when
/// W_d[i - s_d] is not 0 (a weight is 0 where the neighbour lies outside the image, and
/// the flat index of an edge leaving the image on one side lands on the other), so
/// the passes need no test of rows and columns. Lines of a direction that moves down
/// (dy >= 1) lie across the lanes: pixels i .. i + lanes - 1 depend on i - s_d ..
/// i - s_d + lanes - 1, finished when s_d >= lanes. The horizontal lines of (0, dx) are
/// first interleaved a strip of `lanes` rows at a time, so that they too run across lanes.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/simd/vector_ops.hpp"
#include "nonlocal/solve/ar_system.hpp"

namespace nonlocal {

namespace detail {

/// The Thomas algorithm on the lines of flat arrays of n entries whose pixel i has its
/// predecessor at i - s where w[i - s] != 0: x_k <- (diag(alpha) + scale L)^-1 diag(alpha) x_k
/// for the K vectors x_k, which share the elimination. gain: n entries of scratch.
///
/// Forward, with p = i - s, wp = w[p] (0 for i < s) and wn = w[i]:
///   m_i = alpha_i + scale (wp + wn) - scale wp g_p,  g_i = scale wn / m_i,
///   x_i <- (alpha_i x_i + scale wp x_p) / m_i;
/// backward, x_i <- x_i + g_i x_{i + s}. With alpha > 0 and weights >= 0, 0 <= g < 1 and
/// m_i >= alpha_i, so no pivot vanishes, and non-negative x stay non-negative.
template <class Arch, class T, std::size_t K>
void thomas_lines(const T* alpha, const T* w, const std::array<T*, K>& x, T* gain, std::size_t n, std::size_t s,
                  T scale) {
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t lanes = batch::size;
    const bool vectorised = s >= lanes;
    const std::size_t head = std::min(s, n);
    // Pixels without a predecessor: m = alpha + scale wn.
    for (std::size_t i = 0; i < head; ++i) {
        const T inverse = T(1) / (alpha[i] + scale * w[i]);
        gain[i] = scale * w[i] * inverse;
        for (T* v : x) v[i] *= alpha[i] * inverse;
    }
    const auto forward = [&](std::size_t i, auto one) {
        using V = decltype(one);
        const auto load = [](const T* p) {
            if constexpr (std::is_same_v<V, T>) return *p;
            else return V::load_unaligned(p);
        };
        const auto store = [](T* p, V v) {
            if constexpr (std::is_same_v<V, T>) *p = v;
            else v.store_unaligned(p);
        };
        const V a = load(alpha + i), previous = V(scale) * load(w + i - s), next = V(scale) * load(w + i);
        const V inverse = simd::divide(one, a + previous + next - previous * load(gain + i - s));
        store(gain + i, next * inverse);
        for (T* v : x) store(v + i, (a * load(v + i) + previous * load(v + i - s)) * inverse);
    };
    std::size_t i = head;
    if (vectorised)
        for (; i + lanes <= n; i += lanes) forward(i, batch(T(1)));
    for (; i < n; ++i) forward(i, T(1));
    // Backward over [0, n - s), from the end: the batch of i .. i + lanes - 1 reads
    // i + s .. i + s + lanes - 1, already final when s >= lanes.
    if (n <= s) return;
    std::size_t end = n - s;
    if (vectorised)
        for (; end >= lanes; end -= lanes) {
            const std::size_t j = end - lanes;
            const batch g = batch::load_unaligned(gain + j);
            for (T* v : x) {
                const batch after = batch::load_unaligned(v + j + s);
                xsimd::fma(g, after, batch::load_unaligned(v + j)).store_unaligned(v + j);
            }
        }
    while (end-- > 0)
        for (T* v : x) v[end] += gain[end] * v[end + s];
}

/// The first index of `values` that fails `ok`, or values.size(): the test or-ed over all
/// of them first, a loop without an early exit that vectorises.
template <class T, class Ok>
std::size_t first_failing(std::span<const T> values, Ok&& ok) {
    int failed = 0;
    for (const T v : values) failed |= int(!ok(v));
    if (!failed) return values.size();
    return std::size_t(std::find_if_not(values.begin(), values.end(), ok) - values.begin());
}

/// Throws `std::invalid_argument` (from `where`) unless `scale` is finite and >= 0, every
/// alpha is > 0 and every weight of the directions `directions` is >= 0 (the conditions
/// under which the line solves are stable).
template <class T, class Arch>
void require_line_system(const ar_system<T, Arch>& A, std::span<const std::size_t> directions, double scale,
                         std::string_view where) {
    require(std::isfinite(scale) && scale >= 0, where,
            [&] { return "the scale must be finite and >= 0, got " + std::to_string(scale); });
    const std::size_t i = first_failing(std::span<const T>(A.alpha()), [](T a) { return a > T(0); });
    require(i == A.size(), where, [&] {
        return "line solves need alpha > 0 on every pixel (each line's 1-D system its own data term), got " +
               std::to_string(double(A.alpha()[i])) + " at pixel (" + std::to_string(i / A.width()) + ", " +
               std::to_string(i % A.width()) + ")";
    });
    for (const std::size_t d : directions) {
        require(d < A.offsets().size(), where, [&] {
            return "direction " + std::to_string(d) + " of a stencil of " + std::to_string(A.offsets().size());
        });
        const std::size_t j = first_failing(std::span<const T>(A.weights()[d]), [](T w) { return w >= T(0); });
        require(j == A.size(), where, [&] {
            return "line solves need weights >= 0, got " + std::to_string(double(A.weights()[d][j])) + " in direction " +
                   std::to_string(d) + " at pixel " + std::to_string(j);
        });
    }
}

/// solve(v) for the vectors of x two at a time (an std::array of 2 pointers, and of 1 for
/// an odd last): the Thomas passes' vectors share the elimination.
template <class T, class Solve>
void two_at_a_time(std::span<T* const> x, Solve&& solve) {
    for (std::size_t k = 0; k < x.size(); k += 2) {
        if (k + 1 < x.size()) solve(std::array<T*, 2>{x[k], x[k + 1]});
        else solve(std::array<T*, 1>{x[k]});
    }
}

/// A's data term and the weights of a horizontal direction in strips of `lanes` rows, each
/// interleaved (entry (row k, column c) of a strip at c lanes + k, so that the predecessor
/// (k, c - dx) lies dx lanes before) and the last padded with lines of alpha 1 and weight 0.
template <class T, class Arch>
struct interleaved_strips {
    static constexpr std::size_t lanes = xsimd::batch<T, Arch>::size;
    std::size_t height = 0, width = 0;
    buffer<T> alpha, weights;

    interleaved_strips(const ar_system<T, Arch>& A, std::size_t d)
        : height(A.height()), width(A.width()), alpha(strips() * strip_size(), T(1)), weights(alpha.size(), T(0)) {
        for (std::size_t strip = 0; strip < strips(); ++strip) {
            interleave(A.alpha().data(), alpha.data() + strip * strip_size(), strip);
            interleave(A.weights()[d].data(), weights.data() + strip * strip_size(), strip);
        }
    }
    std::size_t strips() const noexcept { return (height + lanes - 1) / lanes; }
    std::size_t strip_size() const noexcept { return width * lanes; }
    std::size_t rows(std::size_t strip) const noexcept { return std::min(lanes, height - strip * lanes); }

    /// The strip's rows of an image in row order into `to`, whose padding rows are left as they are.
    void interleave(const T* from, T* to, std::size_t strip) const {
        for_each_entry(strip, [&](std::size_t pixel, std::size_t entry) { to[entry] = from[pixel]; });
    }
    /// The inverse of `interleave`, for the strip's rows.
    void scatter(const T* from, T* to, std::size_t strip) const {
        for_each_entry(strip, [&](std::size_t pixel, std::size_t entry) { to[pixel] = from[entry]; });
    }

private:
    /// f(pixel, entry) for each pixel of the strip's rows (its index in row order) and its
    /// entry in the interleaved layout, in tiles of 64 columns: a tile's entries span 4 KiB
    /// of floats, where a whole row at a time strode through the strip's lanes x width
    /// entries once per row (docs/performance.md has what the tiles saved).
    template <class F>
    void for_each_entry(std::size_t strip, F&& f) const {
        constexpr std::size_t tile = 64;
        const std::size_t first = strip * lanes * width;
        for (std::size_t c0 = 0; c0 < width; c0 += tile) {
            const std::size_t c1 = std::min(width, c0 + tile);
            for (std::size_t k = 0; k < rows(strip); ++k)
                for (std::size_t c = c0; c < c1; ++c) f(first + k * width + c, c * lanes + k);
        }
    }
};

/// One direction's line solves on vectors already checked, on `threads` threads for a
/// horizontal direction (its strips are independent; `strips`: that direction's layout).
template <class T, class Arch>
void solve_lines(const ar_system<T, Arch>& A, std::size_t d, T scale, std::span<T* const> x, int threads,
                 const interleaved_strips<T, Arch>* strips = nullptr) {
    const std::ptrdiff_t dy = A.offsets()[d].dy, dx = A.offsets()[d].dx;   // not bound: clang before 16 cannot capture a structured binding
    if (dy > 0) {   // down: the lines lie across the lanes as they are
        buffer<T> gain(A.size());
        two_at_a_time(x, [&](const auto& v) {
            thomas_lines<Arch>(A.alpha().data(), A.weights()[d].data(), v, gain.data(), A.size(), std::size_t(A.shift(d)), scale);
        });
        return;
    }
    if (!strips) {
        const interleaved_strips<T, Arch> layout(A, d);
        return solve_lines(A, d, scale, x, threads, &layout);
    }
    // Each thread takes a contiguous share of the strips (they cost alike) and its scratch
    // once: the interleaved vectors and the gains. The padding rows of a last strip hold 0 or
    // an earlier strip's values: lines of their own (alpha 1, weight 0), never scattered.
    const std::size_t m = strips->strip_size(), count = strips->strips();
    const std::size_t shares = std::min(count, std::size_t(std::max(threads, 1)));
    detail::parallel_for(shares, threads, [&](std::size_t share) {
        buffer<T> gain(m), values(m * x.size(), T(0));
        std::vector<T*> strip_x(x.size());
        for (std::size_t k = 0; k < x.size(); ++k) strip_x[k] = values.data() + k * m;
        for (std::size_t strip = count * share / shares; strip < count * (share + 1) / shares; ++strip) {
            for (std::size_t k = 0; k < x.size(); ++k) strips->interleave(x[k], strip_x[k], strip);
            two_at_a_time(std::span<T* const>(strip_x), [&](const auto& v) {
                thomas_lines<Arch>(strips->alpha.data() + strip * m, strips->weights.data() + strip * m, v, gain.data(), m,
                             std::size_t(dx) * strips->lanes, scale);
            });
            for (std::size_t k = 0; k < x.size(); ++k) strips->scatter(strip_x[k], x[k], strip);
        }
    });
}

/// The vectors' data pointers; `std::invalid_argument` (from `where`) unless each has an entry per pixel.
template <class T, class Arch>
std::vector<T*> vector_pointers(const ar_system<T, Arch>& A, std::span<const std::span<T>> xs, std::string_view where) {
    std::vector<T*> pointers;
    for (const auto& x : xs) A.require_size(x, where), pointers.push_back(x.data());
    return pointers;
}

}  // namespace detail

/// Solves (diag(alpha) + scale L_d) y = diag(alpha) x along every line of stencil direction
/// `direction` of A and overwrites each vector x of `xs` with its y: the 1-D AR model of
/// d's edges alone with x as its observations, solved directly (the Thomas algorithm; a
/// constant x stays constant). The vectors share the elimination. A horizontal direction's
/// strips of rows run on the threads of `policy` (results do not depend on their number), the
/// others on one. Throws `std::invalid_argument` unless `direction` is one of A's, `scale` is
/// finite and >= 0, alpha > 0 on every pixel, d's weights are >= 0 and every vector has an
/// entry per pixel.
template <execution_policy Ex, class T, class Arch>
void line_solve(Ex policy, const ar_system<T, Arch>& A, std::size_t direction, double scale,
                std::span<const std::span<T>> xs) {
    const std::array<std::size_t, 1> d{direction};
    detail::require_line_system(A, std::span<const std::size_t>(d), scale, "line_solve");
    const std::vector<T*> x = detail::vector_pointers(A, xs, "line_solve");
    detail::solve_lines(A, direction, T(scale), std::span<T* const>(x), detail::thread_count(policy));
}
/// The same for one vector.
template <execution_policy Ex, class T, class Arch>
void line_solve(Ex policy, const ar_system<T, Arch>& A, std::size_t direction, double scale, std::span<T> x) {
    const std::array<std::span<T>, 1> xs{x};
    line_solve(policy, A, direction, scale, std::span<const std::span<T>>(xs));
}
/// The same on the calling thread.
template <class T, class Arch>
void line_solve(const ar_system<T, Arch>& A, std::size_t direction, double scale, std::span<const std::span<T>> xs) {
    line_solve(execution::seq, A, direction, scale, xs);
}
template <class T, class Arch>
void line_solve(const ar_system<T, Arch>& A, std::size_t direction, double scale, std::span<T> x) {
    line_solve(execution::seq, A, direction, scale, x);
}

/// The passes of `separable_smooth`.
struct separable_options {
    std::size_t passes = 2;   ///< each a line solve per stencil direction
    double strength = 1;      ///< FGS's lambda: the passes' scales sum to strength / 2
};

/// The scale of pass t (0-based) of `passes`: FGS's schedule, 1.5 strength 4^(passes-1-t) /
/// (4^passes - 1), strong first and a quarter as strong each pass after (its sum: strength / 2).
inline double separable_scale(const separable_options& o, std::size_t t) {
    const double passes = double(o.passes);
    return 1.5 * o.strength * std::pow(4.0, passes - 1 - double(t)) / (std::pow(4.0, passes) - 1);
}

/// The fast global smoother's separable approximation of A's smoothing, on each vector
/// of `xs` in place: `o.passes` passes, each a `line_solve` along every stencil direction
/// in turn with the pass's `separable_scale`. It costs a few passes over memory per
/// direction and pass, where an iterative solve of A takes tens; its result is another
/// smoothing than A^-1 diag(alpha), with its own bandwidth (`o.strength`) and the streaks
/// of separable filters along strong edges. Throws `std::invalid_argument` unless
/// o.passes >= 1, o.strength is finite and > 0, alpha > 0 on every pixel, every weight is
/// >= 0 and every vector has an entry per pixel.
template <execution_policy Ex, class T, class Arch>
void separable_smooth(Ex policy, const ar_system<T, Arch>& A, std::span<const std::span<T>> xs,
                      const separable_options& o = {}) {
    detail::field_checks("separable_options")
        .need(o.passes >= 1, "passes", "at least 1", o.passes)
        .need(std::isfinite(o.strength) && o.strength > 0, "strength", "finite and positive", o.strength)
        .check("separable_smooth");
    std::vector<std::size_t> directions(A.offsets().size());
    for (std::size_t d = 0; d < directions.size(); ++d) directions[d] = d;
    detail::require_line_system(A, std::span<const std::size_t>(directions), o.strength, "separable_smooth");
    const std::vector<T*> x = detail::vector_pointers(A, xs, "separable_smooth");
    std::vector<std::unique_ptr<detail::interleaved_strips<T, Arch>>> strips(directions.size());   // interleaved once
    for (const std::size_t d : directions)
        if (A.offsets()[d].dy == 0) strips[d] = std::make_unique<detail::interleaved_strips<T, Arch>>(A, d);
    for (std::size_t t = 0; t < o.passes; ++t)
        for (const std::size_t d : directions)
            detail::solve_lines(A, d, T(separable_scale(o, t)), std::span<T* const>(x), detail::thread_count(policy),
                                strips[d].get());
}
/// The same for one vector.
template <execution_policy Ex, class T, class Arch>
void separable_smooth(Ex policy, const ar_system<T, Arch>& A, std::span<T> x, const separable_options& o = {}) {
    const std::array<std::span<T>, 1> xs{x};
    separable_smooth(policy, A, std::span<const std::span<T>>(xs), o);
}
/// The same on the calling thread.
template <class T, class Arch>
void separable_smooth(const ar_system<T, Arch>& A, std::span<const std::span<T>> xs, const separable_options& o = {}) {
    separable_smooth(execution::seq, A, xs, o);
}
template <class T, class Arch>
void separable_smooth(const ar_system<T, Arch>& A, std::span<T> x, const separable_options& o = {}) {
    separable_smooth(execution::seq, A, x, o);
}

}  // namespace nonlocal
