#pragma once
/// @file kernel/tiled.hpp
/// The flash-style tiled kernel for dot-product similarities over neighborhoods
/// that classify tiles (dense, causal, block masks): softmax(scale q k^T) v, or
/// an identity-kernel aggregate, without ever storing an n x m matrix.
///
/// For each tile of Br queries, the queries are packed once, transposed and
/// scaled: Qt [d, Br]. Then for each tile of Bc keys:
///   1. S^T [Bc, Br] = K_tile Qt: keys are read in place (broadcast), queries
///      are the vector lanes, so the packing is paid once per query tile;
///   2. the online softmax runs down the columns of S^T, vectorised across
///      queries: running maximum, exp(s - max), running sum, and a rescale of
///      the output rows whose maximum grew;
///   3. O [Br, dv] += P V_tile, with P read from S^T (broadcast) and V rows in place.
/// Tiles the neighborhood marks empty are skipped; only partial ones are masked.
///
/// Tile sizes: Br = Bc = 64. With d = dv = 64 floats the working set of one
/// step is Qt 16 KiB + the K tile 16 KiB + S^T 16 KiB + V tile 16 KiB + O 16 KiB:
/// the operands of each micro-kernel (K tile with Qt, then S^T with the V tile)
/// stay within a 32 KiB L1 and all of it within L2. Packing Qt costs d Br moves
/// per Br m d multiply-adds (1/m); the per-tile softmax costs one exp per
/// 2 (d + dv) = 256 flops. Extra memory per thread: about 5 tiles, independent of n and m.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/simd/exp.hpp"
#include "nonlocal/simd/gemm.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::kernel {

/// Whether the tiled kernel computes a composition: a dot-product logit, a
/// neighborhood that classifies tiles, and exponential weights with a ratio
/// normalization or identity weights, without a data term.
template <class S, class Nb, class Nm>
inline constexpr bool tiled_applies =
    detail::is_dot_product_similarity<S> && tiled_neighborhood<Nb> && !detail::has_data_term<Nm> &&
    (detail::shifts_by_row_max<S, Nm> || std::is_same_v<detail::effective_kernel<S, Nm>, identity_kernel>);

/// Queries and keys per tile.
inline constexpr std::size_t tile_rows = 64;
inline constexpr std::size_t tile_cols = 64;

/// Bytes of working memory one thread uses for features of dimension d and dv.
template <class T>
constexpr std::size_t tiled_workspace_bytes(std::size_t d, std::size_t dv, std::size_t lanes) {
    const std::size_t dvp = (dv + lanes - 1) / lanes * lanes;
    return sizeof(T) * (d * tile_rows + tile_cols * tile_rows + tile_rows * dvp + tile_cols * d +
                        tile_cols * dvp + 4 * tile_rows);
}

/// One [n, d] slice; `run(t)` computes query tile t.
template <class Arch, class T, class S, class Nb, class Nm>
class tiled_slice {
    using batch = xsimd::batch<T, Arch>;
    static constexpr std::size_t W = batch::size;
    static constexpr std::size_t Br = tile_rows, Bc = tile_cols;
    // S^T = K Qt: MR keys x NV vectors of queries. AVX-512 (32 registers): 8 x 2 = 16
    // accumulators, 2 loads of Qt and 8 broadcasts of K per 16 FMAs; 16 registers: 4 x 2.
    static constexpr std::size_t score_mr = simd::vector_registers<Arch> >= 32 ? 8 : 4, score_nv = 2;
    // O += P V: 4 queries x NV vectors of dv. AVX-512: 4 x 4 = 16 accumulators, a 64-float
    // row of V in 4 loads and 4 broadcasts of P per 16 FMAs; 16 registers: 4 x 2.
    static constexpr std::size_t value_mr = 4, value_nv = simd::vector_registers<Arch> >= 32 ? 4 : 2;
    static_assert(Br % (score_nv * W) == 0 && Br % value_mr == 0 && Bc % score_mr == 0);
    static constexpr bool shift = detail::shifts_by_row_max<S, Nm>;

public:
    tiled_slice(row_matrix<const T> q, row_matrix<const T> k, row_matrix<const T> v, const S& s, const Nb& nb,
                row_matrix<T> out, T* lse)
        : q_(q), k_(k), v_(v), nb_(nb), out_(out), lse_(lse), scale_(static_cast<T>(s.scale(q.cols))) {}

    std::size_t tiles() const noexcept { return (q_.rows + Br - 1) / Br; }

    void run(std::size_t tile) const {
        constexpr T minus_inf = -std::numeric_limits<T>::infinity();
        const std::size_t d = q_.cols, dv = v_.cols, m = k_.rows, dvp = (dv + W - 1) / W * W;
        const std::size_t i0 = tile * Br, rows = std::min(Br, q_.rows - i0);
        std::vector<T> qt(d * Br, T(0)), st(Bc * Br), o(Br * dvp, T(0)), kpad, vpad;
        std::vector<T> row_max(Br, minus_inf), row_sum(Br, T(0)), alpha(Br), admitted(Br, T(0));
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t p = 0; p < d; ++p) qt[p * Br + r] = scale_ * q_(i0 + r, p);

        for (std::size_t j0 = 0; j0 < m; j0 += Bc) {
            const std::size_t cols = std::min(Bc, m - j0);
            const tile_coverage coverage = nb_.coverage(i0, i0 + rows, j0, j0 + cols);
            if (coverage == tile_coverage::none) continue;

            // 1. S^T = K_tile Qt. Rows are computed in blocks of score_mr; a last block
            // reaching past the keys reads a zero-padded copy.
            const std::size_t key_rows = (cols + score_mr - 1) / score_mr * score_mr;
            const T* keys = k_.data + j0 * d;
            if (j0 + key_rows > m) {
                kpad.assign(key_rows * d, T(0));
                std::copy(keys, keys + cols * d, kpad.begin());
                keys = kpad.data();
            }
            simd::gemm<Arch, score_mr, score_nv, false>(key_rows, Br, d, keys, d, 1, qt.data(), Br, st.data(), Br);

            // Mask: partial tiles pair by pair, full tiles not at all.
            constexpr T masked = shift ? minus_inf : T(0);
            if (coverage == tile_coverage::partial) {
                for (std::size_t c = 0; c < cols; ++c)
                    for (std::size_t r = 0; r < rows; ++r) {
                        if (nb_.admits(i0 + r, j0 + c)) admitted[r] += T(1);
                        else st[c * Br + r] = masked;
                    }
            } else {
                for (std::size_t r = 0; r < rows; ++r) admitted[r] += static_cast<T>(cols);
            }

            // 2. Weights down the columns of S^T, W queries at a time.
            for (std::size_t r = 0; r < Br; r += W) {
                batch total(T(0));
                if constexpr (shift) {
                    batch tile_max = batch::load_unaligned(&st[r]);
                    for (std::size_t c = 1; c < cols; ++c) tile_max = xsimd::max(tile_max, batch::load_unaligned(&st[c * Br + r]));
                    const batch old_max = batch::load_unaligned(&row_max[r]);
                    const batch new_max = xsimd::max(old_max, tile_max);
                    // Rows with nothing admitted yet keep -inf; shift them by 0 so that exp(-inf) = 0.
                    const batch shift_by = xsimd::select(new_max == batch(minus_inf), batch(T(0)), new_max);
                    simd::exp_nonpositive(old_max - shift_by).store_unaligned(&alpha[r]);
                    for (std::size_t c = 0; c < cols; ++c) {
                        const batch p = simd::exp_nonpositive(batch::load_unaligned(&st[c * Br + r]) - shift_by);
                        p.store_unaligned(&st[c * Br + r]);
                        total += p;
                    }
                    new_max.store_unaligned(&row_max[r]);
                    (batch::load_unaligned(&row_sum[r]) * batch::load_unaligned(&alpha[r]) + total)
                        .store_unaligned(&row_sum[r]);
                } else {
                    for (std::size_t c = 0; c < cols; ++c) total += batch::load_unaligned(&st[c * Br + r]);
                    (batch::load_unaligned(&row_sum[r]) + total).store_unaligned(&row_sum[r]);
                }
            }
            if constexpr (shift)
                for (std::size_t r = 0; r < rows; ++r)
                    if (alpha[r] != T(1)) simd::scale<Arch>(alpha[r], o.data() + r * dvp, dvp);

            // 3. O += P V_tile, V rows in place when they are whole vectors.
            const T* values = v_.data + j0 * dv;
            std::size_t ldv = dv;
            if (dv != dvp) {
                vpad.assign(cols * dvp, T(0));
                for (std::size_t c = 0; c < cols; ++c) std::copy(values + c * dv, values + (c + 1) * dv, &vpad[c * dvp]);
                values = vpad.data();
                ldv = dvp;
            }
            simd::gemm<Arch, value_mr, value_nv, true>(Br, dvp, cols, st.data(), 1, Br, values, ldv, o.data(), dvp);
        }

        for (std::size_t r = 0; r < rows; ++r) {
            T normalizer = row_sum[r];
            if constexpr (Nm::kind == normalizer::count) normalizer = admitted[r];
            if constexpr (Nm::kind == normalizer::none) normalizer = T(1);
            T* y = out_.row(i0 + r).data();
            if (normalizer == T(0)) std::fill(y, y + dv, T(0));
            else for (std::size_t c = 0; c < dv; ++c) y[c] = o[r * dvp + c] / normalizer;
            if (lse_) lse_[i0 + r] = shift ? (row_sum[r] == T(0) ? minus_inf : row_max[r] + std::log(row_sum[r]))
                                           : std::log(normalizer);
        }
    }

private:
    row_matrix<const T> q_, k_, v_;
    const Nb& nb_;
    row_matrix<T> out_;
    T* lse_;
    T scale_;
};

}  // namespace nonlocal::kernel
