#pragma once
/// @file solve/coarsening/aggregation.hpp
/// Aggregation, the grid transfer for stencils of any reach: each coarse pixel
/// is a 2 x 2 block, interpolation is piecewise constant, and the coarse system
/// sums the weights of the fine edges between two blocks.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/kernel/stencil_weights.hpp"
#include "nonlocal/neighborhood/grid_stencil.hpp"
#include "nonlocal/solve/ar_system.hpp"
#include "nonlocal/solve/coarsening/grid_transfer.hpp"

namespace nonlocal::detail {

/// Aggregation: each coarse pixel is a 2 x 2 block of fine ones (the last row or column
/// alone when the size is odd); P is piecewise constant, times `scale` (over-correction)
/// when prolonging; the coarse system is P^T A P: the weights of the fine edges that
/// cross between two blocks add up into their coarse edge, the alphas of a block add up.
template <class T, class Arch = default_arch>
class aggregation final : public grid_transfer<T, Arch> {
    using base = grid_transfer<T, Arch>;

public:
    using base::coarse, base::coarse_height, base::coarse_width, base::height, base::width;
    T scale = T(1);   ///< of the prolonged correction

    /// The blocks of a system of any reach, and its coarse system (see `galerkin`).
    aggregation(const ar_system<T, Arch>& A, double correction_scale) : base(A), scale(T(correction_scale)) {
        coarse = galerkin(A);
    }

    /// z = scale P zc, or z += scale P zc when `add`: constant over each block.
    void prolong(const T* zc, T* z, bool add) const override {
        for (std::size_t row = 0; row < height; ++row) {
            T* zr = &z[row * width];
            const T* cr = &zc[(row / 2) * coarse_width];
            const std::size_t pairs = width / 2;
            for (std::size_t col = 0; col < pairs; ++col) {
                const T v = scale * cr[col];
                zr[2 * col] = add ? zr[2 * col] + v : v;
                zr[2 * col + 1] = add ? zr[2 * col + 1] + v : v;
            }
            if (width % 2) zr[width - 1] = add ? zr[width - 1] + scale * cr[pairs] : scale * cr[pairs];
        }
    }

    /// rc = P^T r: the residual summed over each block.
    void restrict_to(const T* r, T* rc) const override {
        for (std::size_t row = 0; row < height; row += 2) {
            const T* top = &r[row * width];
            const T* bottom = row + 1 < height ? top + width : nullptr;
            T* cr = &rc[(row / 2) * coarse_width];
            const std::size_t pairs = width / 2;   // blocks two columns wide; an odd last column alone
            if (bottom)
                for (std::size_t col = 0; col < pairs; ++col)
                    cr[col] = (top[2 * col] + top[2 * col + 1]) + (bottom[2 * col] + bottom[2 * col + 1]);
            else
                for (std::size_t col = 0; col < pairs; ++col) cr[col] = top[2 * col] + top[2 * col + 1];
            if (width % 2) cr[pairs] = top[width - 1] + (bottom ? bottom[width - 1] : T(0));
        }
    }

private:
    /// to[c / 2 + from] += w[c] for c = first, first + 2, ... below last. Its own function:
    /// inlined into the hierarchy's construction, GCC kept the loop's index on the stack.
    [[gnu::noinline]] static void add_columns_of_parity(const T* w, T* to, std::ptrdiff_t from, std::size_t first,
                                                        std::size_t last) {
        for (std::size_t c = first; c < last; c += 2) to[std::ptrdiff_t(c / 2) + from] += w[c];
    }

    /// The aggregated system: a fine edge of reach R joins blocks at most ceil(R / 2)
    /// apart, so the coarse stencil is the square of that radius. A fine edge (dy, dx)
    /// from an even column joins blocks (dy', floor(dx / 2)) apart, from an odd column
    /// (dy', floor((dx + 1) / 2)), dy' fixed by the row: each row of fine weights adds
    /// into two coarse directions, without divisions.
    ar_system<T, Arch> galerkin(const ar_system<T, Arch>& f) const {
        const std::size_t H = coarse_height, W = coarse_width, n = H * W;
        buffer<T> alpha(n, T(0));
        for (std::size_t r = 0; r < f.height(); ++r)
            for (std::size_t c = 0; c < f.width(); ++c) alpha[(r / 2) * W + c / 2] += f.alpha()[r * f.width() + c];
        const grid_stencil stencil{H, W, 8, std::max<std::size_t>(1, (f.reach() + 1) / 2)};
        const auto dirs = stencil.forward_offsets();
        // Direction index of a forward (dy, dx), dy in [0, R], dx in [-R, R].
        const auto R = std::ptrdiff_t(stencil.radius);
        std::vector<std::size_t> index(std::size_t((R + 1) * (2 * R + 1)), dirs.size());
        for (std::size_t d = 0; d < dirs.size(); ++d) index[std::size_t(dirs[d].dy * (2 * R + 1) + dirs[d].dx + R)] = d;
        const auto floor_half = [](std::ptrdiff_t v) { return v >= 0 ? v / 2 : -((1 - v) / 2); };
        std::vector<buffer<T>> weights(dirs.size(), buffer<T>(n, T(0)));
        for (std::size_t o = 0; o < f.offsets().size(); ++o) {
            const auto [dy, dx] = f.offsets()[o];
            const auto [c0, c1] = kernel::columns_inside(dx, f.width());
            for (std::size_t r = 0; r + std::size_t(dy) < f.height(); ++r) {
                const std::ptrdiff_t block_dy = std::ptrdiff_t((r + std::size_t(dy)) / 2 - r / 2);
                const T* w = f.weights()[o].data() + r * f.width();
                for (std::size_t parity = 0; parity < 2; ++parity) {
                    const std::ptrdiff_t block_dx = floor_half(dx + std::ptrdiff_t(parity));
                    if (block_dy == 0 && block_dx == 0) continue;   // inside one block
                    // A backward pair of blocks (same row, dx < 0) is stored from the left block.
                    const bool backward = block_dy == 0 && block_dx < 0;
                    const std::ptrdiff_t from = backward ? block_dx : 0;
                    const std::size_t d = index[std::size_t(block_dy * (2 * R + 1) + (backward ? -block_dx : block_dx) + R)];
                    if (d == dirs.size()) continue;   // no such coarse direction: no fine edge of this parity either
                    add_columns_of_parity(w, weights[d].data() + (r / 2) * W, from, c0 + (c0 % 2 != parity), c1);
                }
            }
        }
        ar_system<T, Arch> coarse(H, W, dirs, std::move(weights), std::move(alpha), buffer<T>(n, T(0)));
        return coarse;
    }
};

}  // namespace nonlocal::detail
