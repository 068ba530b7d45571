#pragma once
/// @file solve/coarsening/operator_dependent.hpp
/// Operator-dependent interpolation (black-box multigrid, Dendy 1982), the grid
/// transfer for stencils that reach one pixel (4 or 8 neighbours): the coarse
/// points are the fine pixels of even row and column; a fine pixel between two
/// coarse points takes their values in proportion to its edge weights towards
/// each side, a pixel between four takes its neighbours' interpolated values
/// through its own edges. Interpolation therefore follows the colour edges of the
/// guide: a pixel strongly tied to its left neighbour and cut from its right one
/// copies the left value. The coarse system is the Galerkin product P^T A P,
/// again a 9-point stencil, and restriction is P^T.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <type_traits>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/neighborhood/grid_stencil.hpp"
#include "nonlocal/simd/vector_ops.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/solve/coarsening/grid_transfer.hpp"
#include "nonlocal/solve/coarsening/parity_planes.hpp"

namespace nonlocal::detail {


/// Black-box multigrid's interpolation P from the coarse grid (the fine pixels of
/// even row and column) to the fine grid of a system with a one-pixel stencil, with
/// restriction P^T and the Galerkin coarse system P^T A P.
///
/// Fine pixels come in four classes by the parity of (row, column); their weights
/// towards the coarse points:
/// - (even, even): a coarse point, weight 1;
/// - (even, odd): `west`, `east` towards the coarse points left and right: the
///   pixel's edge weights to the column on each side, summed, over the sum of its
///   edges except the vertical ones plus its data term (the stencil collapsed onto the row);
/// - (odd, even): `north`, `south`, the same along the column;
/// - (odd, odd): `north_west`, ... towards the four corners: each corner's own edge
///   weight plus the weights to the two edge neighbours next to it times their
///   interpolation weights towards it, over the pixel's diagonal.
/// Edges of negative weight (positive off-diagonal entries, which Galerkin products can
/// create on coarse levels) are lumped into the diagonal, as classical algebraic
/// multigrid does, and every pixel's weights sum to at most 1.
///
/// Each class's weights are an array of coarse_height + 2 rows of coarse_width + 3 + a
/// batch, with a zero border (one row above and below, two columns left and a column and
/// a batch right): a fine pixel (2I + a, 2K + b), a and b in {0, 1}, at element (I, K)
/// (`at`). Every batch of coarse points, the last one of a row reaching past its end,
/// loads the weights around it without a check; results are stored for the points there are.
template <class T, class Arch = default_arch>
class operator_dependent_interpolation final : public grid_transfer<T, Arch> {
    using base = grid_transfer<T, Arch>;

public:
    using base::coarse, base::coarse_height, base::coarse_width, base::height, base::width;
    buffer<T> west, east, north, south, north_west, north_east, south_west, south_east;

    /// P of a system whose stencil reaches one pixel, and its Galerkin coarse system (see `galerkin`).
    explicit operator_dependent_interpolation(const ar_system<T, Arch>& A) : base(A) {
        const parity_planes<T, Arch> planes(A);
        interpolate(planes);
        coarse = galerkin(planes);
    }

    /// The row stride of the class arrays.
    std::size_t stride() const noexcept { return coarse_width + 3 + xsimd::batch<T, Arch>::size; }
    /// Element (I, K) of a class array, I in [-1, coarse_height], K in [-2, coarse_width]
    /// (unsigned arithmetic: -1 wraps and comes back).
    T& at(buffer<T>& b, std::size_t I, std::size_t K) const { return b[(I + 1) * stride() + K + 2]; }
    const T& at(const buffer<T>& b, std::size_t I, std::size_t K) const { return b[(I + 1) * stride() + K + 2]; }

private:
    void interpolate(const parity_planes<T, Arch>& planes) {
        for (buffer<T>* b : {&west, &east, &north, &south, &north_west, &north_east, &south_west, &south_east})
            b->assign((coarse_height + 2) * stride(), T(0));
        const std::size_t odd_rows = height / 2, odd_columns = width / 2;
        // (even, odd): offset (0, 1) from coarse point (I, k); collapse the columns.
        for_each_point(coarse_height, odd_columns, [&](std::size_t I, std::size_t k, std::size_t count) {
            const stencil_at<0, 1> w(planes, I, k);
            const V left = w.positive(-1, -1) + w.positive(0, -1) + w.positive(1, -1);
            const V right = w.positive(-1, 1) + w.positive(0, 1) + w.positive(1, 1);
            split(left, right, w.lumped_diagonal() - w.positive(-1, 0) - w.positive(1, 0), &at(west, I, k), &at(east, I, k),
                  count);
        });
        // (odd, even): offset (1, 0); collapse the rows.
        for_each_point(odd_rows, coarse_width, [&](std::size_t I, std::size_t k, std::size_t count) {
            const stencil_at<1, 0> w(planes, I, k);
            const V up = w.positive(-1, -1) + w.positive(-1, 0) + w.positive(-1, 1);
            const V down = w.positive(1, -1) + w.positive(1, 0) + w.positive(1, 1);
            split(up, down, w.lumped_diagonal() - w.positive(0, -1) - w.positive(0, 1), &at(north, I, k), &at(south, I, k),
                  count);
        });
        // (odd, odd): offset (1, 1); through the edge neighbours (rows I and I + 1 of the
        // (even, odd) class, columns k and k + 1 of the (odd, even) class; 0 off the grid).
        for_each_point(odd_rows, odd_columns, [&](std::size_t I, std::size_t k, std::size_t count) {
            const stencil_at<1, 1> w(planes, I, k);
            const auto get = [&](const buffer<T>& b, std::size_t i, std::size_t j) { return load_as<V>(&at(b, i, j)); };
            const V nw = w.positive(-1, -1) + w.positive(-1, 0) * get(west, I, k) + w.positive(0, -1) * get(north, I, k);
            const V ne = w.positive(-1, 1) + w.positive(-1, 0) * get(east, I, k) + w.positive(0, 1) * get(north, I, k + 1);
            const V sw = w.positive(1, -1) + w.positive(1, 0) * get(west, I + 1, k) + w.positive(0, -1) * get(south, I, k);
            const V se = w.positive(1, 1) + w.positive(1, 0) * get(east, I + 1, k) + w.positive(0, 1) * get(south, I, k + 1);
            const V scale = simd::inverse_or_zero(xsimd::max(w.lumped_diagonal(), nw + ne + sw + se));
            store_lanes(&at(north_west, I, k), nw * scale, count), store_lanes(&at(north_east, I, k), ne * scale, count);
            store_lanes(&at(south_west, I, k), sw * scale, count), store_lanes(&at(south_east, I, k), se * scale, count);
        });
    }

public:
    /// P(fine pixel (r, c), coarse point (I, K)).
    T weight(std::ptrdiff_t r, std::ptrdiff_t c, std::ptrdiff_t I, std::ptrdiff_t K) const {
        const auto H = std::ptrdiff_t(height), W = std::ptrdiff_t(width);
        if (r < 0 || c < 0 || r >= H || c >= W) return T(0);
        const std::ptrdiff_t dy = r - 2 * I, dx = c - 2 * K;
        if (std::abs(dy) > 1 || std::abs(dx) > 1) return T(0);
        if (dy == 0 && dx == 0) return T(1);
        const auto get = [&](const buffer<T>& b) { return at(b, std::size_t(r / 2), std::size_t(c / 2)); };
        if (dy == 0) return get(dx > 0 ? west : east);
        if (dx == 0) return get(dy > 0 ? north : south);
        return get(dy > 0 ? (dx > 0 ? north_west : north_east) : (dx > 0 ? south_west : south_east));
    }

    /// z = P zc, or z += P zc when `add`, a fine row at a time. The weights towards coarse
    /// points off the grid are 0: the last row of an even height reads its own coarse row
    /// again in their place, the last column of an even width is done on its own.
    void prolong(const T* zc, T* z, bool add) const override {
        const std::size_t W = width, Wc = coarse_width, pairs = (W - 1) / 2;   // odd columns with both neighbours
        for (std::size_t r = 0; r < height; ++r) {
            T* out = z + r * W;
            const std::size_t I = r / 2;
            const T* above = zc + I * Wc;
            const auto put = [&](std::size_t c, T v) { out[c] = add ? out[c] + v : v; };
            if (r % 2 == 0) {   // the coarse row itself, and the pixels between its points
                const T* pw = &at(west, I, 0);
                const T* pe = &at(east, I, 0);
                for (std::size_t k = 0; k < pairs; ++k) {
                    put(2 * k, above[k]);
                    put(2 * k + 1, pw[k] * above[k] + pe[k] * above[k + 1]);
                }
                put(2 * pairs, above[pairs]);
                if (W % 2 == 0) put(W - 1, pw[pairs] * above[pairs]);
                continue;
            }
            const T* below = r + 1 < height ? above + Wc : above;
            const T* pn = &at(north, I, 0);
            const T* ps = &at(south, I, 0);
            const T* nw = &at(north_west, I, 0);
            const T* ne = &at(north_east, I, 0);
            const T* sw = &at(south_west, I, 0);
            const T* se = &at(south_east, I, 0);
            for (std::size_t k = 0; k < pairs; ++k) {
                put(2 * k, pn[k] * above[k] + ps[k] * below[k]);
                put(2 * k + 1, nw[k] * above[k] + ne[k] * above[k + 1] + sw[k] * below[k] + se[k] * below[k + 1]);
            }
            put(2 * pairs, pn[pairs] * above[pairs] + ps[pairs] * below[pairs]);
            if (W % 2 == 0) put(W - 1, nw[pairs] * above[pairs] + sw[pairs] * below[pairs]);
        }
    }

    /// rc = P^T r: each coarse point gathers the residuals of the fine pixels around it,
    /// weighted by their interpolation weights towards it, a coarse row at a time.
    void restrict_to(const T* r, T* rc) const override {
        const std::size_t W = width, Wc = coarse_width, right_inside = std::min(Wc, width / 2);
        for (std::size_t I = 0; I < coarse_height; ++I) {
            T* out = rc + I * Wc;
            // Fine row v's share: coarse point K takes v[2K - 1] to_left[K - 1] + v[2K] centre[K]
            // (1 when null) + v[2K + 1] to_right[K], from the columns that exist; the first
            // share is stored, the others added (separate loops, so that each vectorises).
            const auto gather = [&]<bool first>(const T* v, const T* to_left, const T* center, const T* to_right) {
                const auto own = [&](std::size_t K) { return (center ? center[K] : T(1)) * v[2 * K]; };
                const auto put = [&](std::size_t K, T sum) { out[K] = first ? sum : out[K] + sum; };
                put(0, own(0) + (right_inside > 0 ? to_right[0] * v[1] : T(0)));
                if (center)
                    for (std::size_t K = 1; K < right_inside; ++K)
                        put(K, center[K] * v[2 * K] + to_left[K - 1] * v[2 * K - 1] + to_right[K] * v[2 * K + 1]);
                else
                    for (std::size_t K = 1; K < right_inside; ++K)
                        put(K, v[2 * K] + to_left[K - 1] * v[2 * K - 1] + to_right[K] * v[2 * K + 1]);
                for (std::size_t K = std::max<std::size_t>(1, right_inside); K < Wc; ++K)
                    put(K, own(K) + to_left[K - 1] * v[2 * K - 1]);
            };
            const T* mid = r + 2 * I * W;   // the coarse row's own fine row
            gather.template operator()<true>(mid, &at(east, I, 0), nullptr, &at(west, I, 0));
            if (2 * I + 1 < height)   // the odd row below, whose north this point is
                gather.template operator()<false>(mid + W, &at(north_east, I, 0), &at(north, I, 0), &at(north_west, I, 0));
            if (I > 0)   // the odd row above, whose south this point is
                gather.template operator()<false>(mid - W, &at(south_east, I - 1, 0), &at(south, I - 1, 0),
                                                  &at(south_west, I - 1, 0));
        }
    }

private:
    /// The Galerkin coarse system P^T A P on the coarse grid's 8-neighbour stencil:
    /// entry (J, J') = phi_J^T A phi_J', phi_J the column of P of coarse point J (its
    /// 3 x 3 footprint on the fine grid), from A phi_J on the 5 x 5 fine pixels around J,
    /// vectorised across the coarse points of a row. The data term of the result is what
    /// its diagonal holds beyond its weights; its right-hand side is 0.
    ar_system<T, Arch> galerkin(const parity_planes<T, Arch>& planes) const {
        const std::size_t Hc = coarse_height, Wc = coarse_width, n = Hc * Wc;
        const auto dirs = grid_stencil{Hc, Wc, 8, 1}.forward_offsets();
        std::vector<buffer<T>> weights(dirs.size(), buffer<T>(n, T(0)));
        buffer<T> diagonal(n, T(0));
        // Every entry of the 8-neighbour stencil, stored where the grid has the direction.
        std::array<T*, 4> out{};
        for (std::size_t o = 0; o < dirs.size(); ++o)
            out[dirs[o].dy == 0 ? 0 : std::size_t(dirs[o].dx + 2)] = weights[o].data();
        buffer<T> unused(dirs.size() < 4 ? n : 0);   // a direction the grid cannot hold (one row or column)
        for (T*& p : out) if (!p) p = unused.data();
        for_each_point(Hc, Wc, [&](std::size_t I, std::size_t K, std::size_t count) {
            const coarse_products products(*this, planes, I, K);
            const std::size_t J = I * Wc + K;
            store_lanes(&diagonal[J], products.template entry<0, 0>(), count);
            store_lanes(&out[0][J], V(-products.template entry<0, 1>()), count);   // east
            store_lanes(&out[1][J], V(-products.template entry<1, -1>()), count);  // south-west
            store_lanes(&out[2][J], V(-products.template entry<1, 0>()), count);   // south
            store_lanes(&out[3][J], V(-products.template entry<1, 1>()), count);   // south-east
        });
        return ar_system<T, Arch>::from_operator(Hc, Wc, dirs, std::move(weights), std::move(diagonal));
    }

    using V = xsimd::batch<T, Arch>;

    /// Calls f(I, k, count) for the points (I, k), ..., (I, k + count - 1) of a rows x columns
    /// class in batches of V: count is the batch's width but for the last of a row, which
    /// holds what is left.
    template <class F>
    static void for_each_point(std::size_t rows, std::size_t columns, F&& f) {
        for (std::size_t I = 0; I < rows; ++I)
            for (std::size_t k = 0; k < columns; k += V::size) f(I, k, std::min(V::size, columns - k));
    }

    /// A pixel's interpolation weights a / den and b / den, at most 1 together.
    static void split(V a, V b, V den, T* wa, T* wb, std::size_t count) {
        const V scale = simd::inverse_or_zero(xsimd::max(den, a + b));
        store_lanes(wa, a * scale, count), store_lanes(wb, b * scale, count);
    }

    /// The stencil of the fine pixels at offset (a, b) from the batch of coarse points (I, k),
    /// (I, k + 1), ...: W towards (dy, dx) and the diagonal.
    template <int a, int b>
    struct stencil_at {
        const parity_planes<T, Arch>& planes;
        std::ptrdiff_t r;
        std::size_t k;
        stencil_at(const parity_planes<T, Arch>& p, std::size_t I, std::size_t k0) : planes(p), r(2 * std::ptrdiff_t(I) + a), k(k0) {}
        /// Quantity q of the pixel at (dy, dx) from this one.
        V get(int q, int dy, int dx) const {
            const int column = b + dx, parity = ((column % 2) + 2) % 2, half = (column - parity) / 2;
            return load_as<V>(planes.row(q, r + dy, parity) + std::ptrdiff_t(k) + half);
        }
        /// W towards (dy, dx): a forward weight of this pixel or a backward one's, of the neighbour.
        V weight(int dy, int dx) const {
            using P = parity_planes<T, Arch>;
            if (dy == 0) return dx > 0 ? get(P::east, 0, 0) : get(P::east, 0, -1);
            if (dy > 0) return get(dx < 0 ? P::south_west : dx == 0 ? P::south : P::south_east, 0, 0);
            return get(dx > 0 ? P::south_west : dx == 0 ? P::south : P::south_east, -1, dx);
        }
        V positive(int dy, int dx) const { return xsimd::max(weight(dy, dx), V(T(0))); }
        V diagonal() const { return get(parity_planes<T, Arch>::diagonal, 0, 0); }
        V lumped_diagonal() const {
            V d = diagonal();
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx)
                    if (dy != 0 || dx != 0) d += xsimd::max(-weight(dy, dx), V(T(0)));
            return d;
        }
    };

    /// phi_J'(fine offset (a, b) from J') for the batch of coarse points J' = (I, K), (I, K + 1), ...
    V phi(int a, int b, std::size_t I, std::size_t K) const {
        if (a == 0 && b == 0) return V(T(1));
        // The class array and the (I, K) of the pixel's own class element.
        const std::size_t row = a < 0 ? I - 1 : I, column = b < 0 ? K - 1 : K;
        const buffer<T>& b_ = a == 0 ? (b > 0 ? west : east)
                              : b == 0 ? (a > 0 ? north : south)
                                       : (a > 0 ? (b > 0 ? north_west : north_east) : (b > 0 ? south_west : south_east));
        return load_as<V>(&at(b_, row, column));
    }

    /// The products phi_{J + (dI, dK)}^T A phi_J for the batch of coarse points J = (I, K), ...:
    /// A phi_J on the 5 x 5 fine pixels around J (0 where not needed), then `entry`.
    struct coarse_products {
        const operator_dependent_interpolation& P;
        std::size_t I, K;
        std::array<V, 9> phi_J;   // phi_J at offsets (-1..1, -1..1)
        std::array<V, 25> a_phi;  // A phi_J at offsets (-2..2, -2..2)
        coarse_products(const operator_dependent_interpolation& p, const parity_planes<T, Arch>& planes, std::size_t i,
                        std::size_t k)
            : P(p), I(i), K(k) {
            for (int a = -1; a <= 1; ++a)
                for (int b = -1; b <= 1; ++b) phi_J[std::size_t((a + 1) * 3 + b + 1)] = P.phi(a, b, I, K);
            static_for<-2, 3>([&](auto a) {
                static_for<-2, 3>([&](auto b) {
                    const stencil_at<a.value, b.value> w(planes, I, K);
                    V v(T(0));
                    if constexpr (a.value >= -1 && a.value <= 1 && b.value >= -1 && b.value <= 1)
                        v = w.diagonal() * phi_J[std::size_t((a.value + 1) * 3 + b.value + 1)];
                    for (int dy = -1; dy <= 1; ++dy)
                        for (int dx = -1; dx <= 1; ++dx) {
                            const int qa = a.value + dy, qb = b.value + dx;
                            if ((dy != 0 || dx != 0) && qa >= -1 && qa <= 1 && qb >= -1 && qb <= 1)
                                v -= w.weight(dy, dx) * phi_J[std::size_t((qa + 1) * 3 + qb + 1)];
                        }
                    a_phi[std::size_t((a.value + 2) * 5 + b.value + 2)] = v;
                });
            });
        }
        /// phi_{J + (dI, dK)}^T (A phi_J): the footprint of J + (dI, dK) lies at offsets
        /// (2 dI - 1 .. 2 dI + 1, 2 dK - 1 .. 2 dK + 1) from J, inside the 5 x 5.
        template <int dI, int dK>
        V entry() const {
            V sum(T(0));
            for (int a = std::max(-2, 2 * dI - 1); a <= std::min(2, 2 * dI + 1); ++a)
                for (int b = std::max(-2, 2 * dK - 1); b <= std::min(2, 2 * dK + 1); ++b)
                    sum += P.phi(a - 2 * dI, b - 2 * dK, I + std::size_t(dI), K + std::size_t(dK)) *
                           a_phi[std::size_t((a + 2) * 5 + b + 2)];
            return sum;
        }
    };
};

}  // namespace nonlocal::detail
