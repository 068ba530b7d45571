#pragma once
/// @file kernel/patch_window.hpp
/// The running-sum kernel of non-local means and bilateral filters:
/// `patch_distance` over a `window2d` (dilation 1, not causal) with `sum`.
///
/// Instead of comparing two patches per pair of pixels, it walks the search
/// offsets o = (dy, dx) and, for each, computes over the image
///   D_o(p) = sum_c (Q_c(p) - K_c(p + o))^2        (padded, reflected planes)
///   d_o(p) = box sum of D_o over the patch around p  (running sums: a vertical
///            running sum updated by one row in and one row out, then a
///            horizontal box over the row),
/// so that the cost per pixel and offset does not depend on the patch size.
/// Each step is a loop over the columns of a row, vectorised across pixels.
///
/// Windows shift inward at borders (the `window2d` rule), so an offset serves
/// a rectangle of pixels: rows whose window spans row r + dy, columns likewise.
/// When queries and keys are the same image, d_o(p) = d_{-o}(p + o): each
/// pair of opposite offsets is computed once and accumulated into both pixels
/// (the symmetry w(i, j) = w(j, i)), halving the work.
///
/// Threads take stripes of 64 rows. A stripe accumulates into its own buffer,
/// which reaches 2 r_s rows below it (the partners of the symmetric step), and
/// the buffers are added in stripe order: results do not depend on the number
/// of threads.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/execution.hpp"
#include "nonlocal/image/features.hpp"
#include "nonlocal/neighborhood/window.hpp"
#include "nonlocal/normalization.hpp"
#include "nonlocal/simd/exp.hpp"
#include "nonlocal/similarity/patch_distance.hpp"

namespace nonlocal::kernel {

/// Whether the running-sum kernel handles this window at run time.
inline bool patch_window_handles(const window2d& w) noexcept { return w.dilation == 1 && !w.causal; }

/// Rows per stripe of the threaded loop.
inline constexpr std::size_t patch_stripe_rows = 64;

}  // namespace nonlocal::kernel

namespace nonlocal::detail {

/// For each offset t in [-2 r, 2 r] on an axis (without dilation), the interval of
/// positions whose window (shifted inward or clipped) contains position + t.
struct offset_intervals {
    std::ptrdiff_t radius2;                 // 2 r
    std::vector<std::ptrdiff_t> lo, hi;     // indexed by t + 2 r; empty when lo > hi

    explicit offset_intervals(const window_axis& axis) : radius2(std::ptrdiff_t(2 * axis.radius)) {
        lo.assign(4 * axis.radius + 1, std::ptrdiff_t(axis.length));
        hi.assign(4 * axis.radius + 1, -1);
        for (std::size_t p = 0; p < axis.length; ++p) {
            const key_range w = axis.window(p);
            for (std::size_t j = w.first; j < w.first + w.count; ++j) {
                const std::ptrdiff_t t = std::ptrdiff_t(j) - std::ptrdiff_t(p) + radius2;
                lo[t] = std::min(lo[t], std::ptrdiff_t(p));
                hi[t] = std::max(hi[t], std::ptrdiff_t(p));
            }
        }
    }
    std::ptrdiff_t first(std::ptrdiff_t t) const { return lo[t + radius2]; }
    std::ptrdiff_t last(std::ptrdiff_t t) const { return hi[t + radius2]; }
};

/// Planes [C][rows][cols] of pixels [n, C], padded by `pad` on every side (and `extra_right`
/// more columns on the right) with reflection.
template <class T>
std::vector<T> padded_planes(row_matrix<const T> x, std::size_t H, std::size_t W, std::size_t pad,
                             std::size_t extra_right) {
    const std::size_t C = x.cols, Hp = H + 2 * pad, Wp = W + 2 * pad + extra_right;
    std::vector<T> planes(C * Hp * Wp);
    for (std::size_t r = 0; r < Hp; ++r) {
        const std::size_t rr = reflect(std::ptrdiff_t(r) - std::ptrdiff_t(pad), H);
        for (std::size_t c = 0; c < Wp; ++c) {
            const std::size_t cc = reflect(std::ptrdiff_t(c) - std::ptrdiff_t(pad), W);
            for (std::size_t ch = 0; ch < C; ++ch) planes[(ch * Hp + r) * Wp + c] = x(rr * W + cc, ch);
        }
    }
    return planes;
}

}  // namespace nonlocal::detail

namespace nonlocal::kernel {

/// out = the window aggregate of v weighted by `s`'s patch distances over `win` (the
/// file's comment says how), the image's rows shared among the threads of `policy`.
template <class Arch, execution_policy Ex, class T>
void patch_window(Ex policy, row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v,
                  const patch_distance& s, const window2d& win, row_matrix<T> out) {
    const int threads = detail::thread_count(policy);
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W_ = batch::size;
    const std::size_t H = win.height, W = win.width, C = q.cols, Cv = v.cols, n = H * W;
    const std::size_t pr = s.patch_radius, sr = win.radius();
    const std::ptrdiff_t s2 = std::ptrdiff_t(2 * sr);
    // Planes padded by pad on every side, plus 2 W_ columns on the right for whole vectors.
    const std::size_t pad = pr + 2 * sr, Hp = H + 2 * pad, Wp = W + 2 * pad + 2 * W_;
    const bool symmetric = q.data == k.data;

    const std::vector<T> qp = detail::padded_planes(q, H, W, pad, 2 * W_);
    const std::vector<T> kp_storage = symmetric ? std::vector<T>{} : detail::padded_planes(k, H, W, pad, 2 * W_);
    const T* kp = symmetric ? qp.data() : kp_storage.data();
    std::vector<T> values(Cv * n);   // planar values
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t ch = 0; ch < Cv; ++ch) values[ch * n + i] = v(i, ch);

    const window_grid grid = win.grid(extents{});
    const detail::offset_intervals rows_of(grid.rows), cols_of(grid.cols);
    const std::size_t side = 2 * pr + 1;
    const T scale_a = T(1 / (double(side * side * C) * s.h * s.h)), shift_b = T(2 * s.sigma * s.sigma / (s.h * s.h));
    const double spatial = std::isfinite(s.spatial_sigma) ? 1 / (2 * s.spatial_sigma * s.spatial_sigma) : 0.0;

    const std::size_t halo = symmetric ? 2 * sr : 0;
    const std::size_t stripes = (H + patch_stripe_rows - 1) / patch_stripe_rows;
    std::vector<std::vector<T>> acc(stripes), wsum(stripes);

    nonlocal::detail::parallel_for(stripes, threads, [&](std::size_t stripe) {
        const std::ptrdiff_t s0 = std::ptrdiff_t(stripe * patch_stripe_rows);
        const std::ptrdiff_t s1 = std::min<std::ptrdiff_t>(s0 + patch_stripe_rows, std::ptrdiff_t(H));
        const std::size_t buffer_rows = std::size_t(s1 - s0) + halo;
        std::vector<T>& a = acc[stripe];
        std::vector<T>& ws = wsum[stripe];
        a.assign(Cv * buffer_rows * W, T(0));
        ws.assign(buffer_rows * W, T(0));
        const auto acc_at = [&](std::size_t ch, std::ptrdiff_t r, std::ptrdiff_t c) {
            return &a[(ch * buffer_rows + std::size_t(r - s0)) * W + std::size_t(c)];
        };
        std::vector<T> ring(side * (W + 2 * pr + 2 * W_)), vert(W + 2 * pr + 2 * W_), weight(W + W_);
        std::vector<const T*> q_rows(C), k_rows(C);

        if (symmetric)   // the pixel itself: distance 0, weight 1
            for (std::ptrdiff_t r = s0; r < s1; ++r)
                for (std::size_t c = 0; c < W; ++c) {
                    for (std::size_t ch = 0; ch < Cv; ++ch) *acc_at(ch, r, std::ptrdiff_t(c)) += values[ch * n + r * W + c];
                    ws[std::size_t(r - s0) * W + c] += T(1);
                }

        for (std::ptrdiff_t dy = symmetric ? 0 : -s2; dy <= s2; ++dy)
            for (std::ptrdiff_t dx = -s2; dx <= s2; ++dx) {
                if (symmetric && (dy == 0 && dx <= 0)) continue;   // the other half, and the pixel itself
                // A: pixels p whose window holds p + o. B: pixels p whose partner p + o holds p.
                std::ptrdiff_t ar0 = rows_of.first(dy), ar1 = rows_of.last(dy);
                std::ptrdiff_t ac0 = cols_of.first(dx), ac1 = cols_of.last(dx);
                std::ptrdiff_t br0 = 1, br1 = 0, bc0 = 1, bc1 = 0;
                if (symmetric) {
                    br0 = rows_of.first(-dy) - dy, br1 = rows_of.last(-dy) - dy;
                    bc0 = cols_of.first(-dx) - dx, bc1 = cols_of.last(-dx) - dx;
                }
                const bool has_a = ar0 <= ar1 && ac0 <= ac1, has_b = br0 <= br1 && bc0 <= bc1;
                const T offset_term = T(spatial * double(dy * dy + dx * dx));

                // The distance field over rows [r0, r1] x columns [c0, c1] of this stripe,
                // accumulated into the pixels of A and / or B it covers.
                const auto sweep = [&](std::ptrdiff_t r0, std::ptrdiff_t r1, std::ptrdiff_t c0, std::ptrdiff_t c1,
                                       bool into_a, bool into_b) {
                    r0 = std::max(r0, s0), r1 = std::min(r1, s1 - 1);
                    if (r0 > r1 || c0 > c1) return;
                    // Whole vectors: the columns are rounded up (the planes are padded for it on the
                    // right), so narrow rectangles near the left and right borders stay vectorised.
                    const std::size_t cols = (std::size_t(c1 - c0 + 1) + W_ - 1) / W_ * W_;
                    const std::size_t vcols = (cols + 2 * pr + W_ - 1) / W_ * W_;
                    // D_o(row, c) for columns c0 - pr + c of padded row `row` (image coordinates),
                    // W_ columns at a time, from the channel rows set by `point_at(row)`.
                    const auto point_at = [&](std::ptrdiff_t row) {
                        for (std::size_t ch = 0; ch < C; ++ch) {
                            q_rows[ch] = &qp[(ch * Hp + std::size_t(row + std::ptrdiff_t(pad))) * Wp +
                                             std::size_t(c0 - std::ptrdiff_t(pr) + std::ptrdiff_t(pad))];
                            k_rows[ch] = kp + (ch * Hp + std::size_t(row + dy + std::ptrdiff_t(pad))) * Wp +
                                         std::size_t(c0 + dx - std::ptrdiff_t(pr) + std::ptrdiff_t(pad));
                        }
                    };
                    const auto difference = [&](std::size_t c) {
                        batch d2(T(0));
                        for (std::size_t ch = 0; ch < C; ++ch) {
                            const batch d = batch::load_unaligned(q_rows[ch] + c) - batch::load_unaligned(k_rows[ch] + c);
                            d2 = xsimd::fma(d, d, d2);
                        }
                        return d2;
                    };
                    // The ring holds D_o of the 2 pr + 1 rows of the current patch; `vert` their sum.
                    std::fill(vert.begin(), vert.begin() + vcols, T(0));
                    for (std::size_t t = 0; t < side; ++t) {
                        T* slot = &ring[t * vcols];
                        point_at(r0 - std::ptrdiff_t(pr) + std::ptrdiff_t(t));
                        for (std::size_t c = 0; c < vcols; c += W_) {
                            const batch d = difference(c);
                            d.store_unaligned(slot + c);
                            (batch::load_unaligned(&vert[c]) + d).store_unaligned(&vert[c]);
                        }
                    }
                    for (std::ptrdiff_t r = r0; r <= r1; ++r) {
                        if (r > r0) {   // slide in one pass: row r + pr replaces row r - pr - 1 in its ring slot
                            T* slot = &ring[std::size_t((r - r0 - 1) % std::ptrdiff_t(side)) * vcols];
                            point_at(r + std::ptrdiff_t(pr));
                            for (std::size_t c = 0; c < vcols; c += W_) {
                                const batch d = difference(c);
                                (batch::load_unaligned(&vert[c]) + d - batch::load_unaligned(slot + c)).store_unaligned(&vert[c]);
                                d.store_unaligned(slot + c);
                            }
                        }
                        // Horizontal box, then w = exp(-(max(box a - b, 0) + spatial)) with
                        // a = 1 / (count h^2) and b = 2 sigma^2 / h^2.
                        for (std::size_t c = 0; c < cols; c += W_) {
                            batch box = batch::load_unaligned(&vert[c]);
                            for (std::size_t t = 1; t < side; ++t) box += batch::load_unaligned(&vert[c + t]);
                            const batch excess = xsimd::max(xsimd::fms(box, batch(scale_a), batch(shift_b)), batch(T(0)));
                            simd::exp_nonpositive(batch(-offset_term) - excess).store_unaligned(&weight[c]);
                        }
                        // Accumulate: into p (rect A) with partner p + o, into p + o (rect B) with partner p.
                        const auto accumulate = [&](std::ptrdiff_t into_r, std::ptrdiff_t into_c, std::ptrdiff_t from_r,
                                                    std::ptrdiff_t from_c, std::size_t w0, std::size_t count) {
                            const T* w = &weight[w0];
                            T* wsum_row = &ws[std::size_t(into_r - s0) * W + std::size_t(into_c)];
                            std::size_t t = 0;
                            for (; t + W_ <= count; t += W_)
                                (batch::load_unaligned(wsum_row + t) + batch::load_unaligned(w + t)).store_unaligned(wsum_row + t);
                            for (; t < count; ++t) wsum_row[t] += w[t];
                            for (std::size_t ch = 0; ch < Cv; ++ch) {
                                T* dst = acc_at(ch, into_r, into_c);
                                const T* src = &values[ch * n + std::size_t(from_r) * W + std::size_t(from_c)];
                                t = 0;
                                for (; t + W_ <= count; t += W_)
                                    xsimd::fma(batch::load_unaligned(w + t), batch::load_unaligned(src + t), batch::load_unaligned(dst + t))
                                        .store_unaligned(dst + t);
                                for (; t < count; ++t) dst[t] += w[t] * src[t];
                            }
                        };
                        if (into_a && r >= ar0 && r <= ar1)
                            accumulate(r, ac0, r + dy, ac0 + dx, std::size_t(ac0 - c0), std::size_t(ac1 - ac0 + 1));
                        if (into_b && r >= br0 && r <= br1)
                            accumulate(r + dy, bc0 + dx, r, bc0, std::size_t(bc0 - c0), std::size_t(bc1 - bc0 + 1));
                    }
                };
                // Overlapping rectangles (offsets inside the plain window) share one sweep over
                // their bounding box; disjoint ones (offsets reached only near borders) get their own.
                const auto area = [](std::ptrdiff_t a0, std::ptrdiff_t a1, std::ptrdiff_t b0, std::ptrdiff_t b1) {
                    return (a1 - a0 + 1) * (b1 - b0 + 1);
                };
                if (has_a && has_b) {
                    const std::ptrdiff_t u0 = std::min(ar0, br0), u1 = std::max(ar1, br1);
                    const std::ptrdiff_t v0 = std::min(ac0, bc0), v1 = std::max(ac1, bc1);
                    if (area(u0, u1, v0, v1) <= area(ar0, ar1, ac0, ac1) + area(br0, br1, bc0, bc1)) {
                        sweep(u0, u1, v0, v1, true, true);
                        continue;
                    }
                }
                if (has_a) sweep(ar0, ar1, ac0, ac1, true, false);
                if (has_b) sweep(br0, br1, bc0, bc1, false, true);
            }
    });

    // Add the stripes' buffers in stripe order and normalise.
    std::vector<T> num(Cv * W), den(W);
    for (std::size_t r = 0; r < H; ++r) {
        std::fill(num.begin(), num.end(), T(0));
        std::fill(den.begin(), den.end(), T(0));
        for (std::size_t stripe = 0; stripe < stripes; ++stripe) {
            const std::size_t s0 = stripe * patch_stripe_rows;
            const std::size_t rows = std::min(patch_stripe_rows, H - s0) + halo;
            if (r < s0 || r >= s0 + rows) continue;
            const std::size_t local = r - s0;
            for (std::size_t c = 0; c < W; ++c) {
                den[c] += wsum[stripe][local * W + c];
                for (std::size_t ch = 0; ch < Cv; ++ch) num[ch * W + c] += acc[stripe][(ch * rows + local) * W + c];
            }
        }
        for (std::size_t c = 0; c < W; ++c)
            for (std::size_t ch = 0; ch < Cv; ++ch)
                out(r * W + c, ch) = den[c] > T(0) ? num[ch * W + c] / den[c] : T(0);
    }
}

}  // namespace nonlocal::kernel
