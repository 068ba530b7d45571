#pragma once
/// @file simd/linear_product.hpp
/// The loops of the projections' GEMM around its micro-kernel (`detail::linear_product`,
/// which `linear_rows` calls): blocks of the depth and of the rows, x's rows packed into
/// micro-panels as they come, the panels of W^T shared out among the threads, and the
/// operands in T or in bfloat16 pairs.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/simd/bfloat16.hpp"
#include "nonlocal/simd/arch/traits.hpp"
#include "nonlocal/simd/gemm.hpp"
#include "nonlocal/simd/packing.hpp"

namespace nonlocal::detail {
/// The operands of a product of T: elements of x and W^T as they are, one per step of the
/// depth, multiplied and added by an FMA.
template <class T>
struct native_operands {
    using element = T;
    static constexpr std::size_t per_element = 1;   ///< steps of the depth an element holds
    using step = simd::fused_multiply_add;
    /// The element of x's row `from` for depth `d` (of `depth`).
    static T pack(const T* from, std::size_t d, std::size_t) noexcept { return from[d]; }
};
/// The operands of a float product in bfloat16: two steps of the depth an element
/// (`bf16_pair`), multiplied into float accumulators by `dot_bf16_pairs`.
struct bf16_operands {
    using element = std::uint32_t;
    static constexpr std::size_t per_element = 2;
    using step = simd::dot_bf16_pairs;
    static std::uint32_t pack(const float* from, std::size_t d, std::size_t depth) noexcept {
        return simd::bf16_pair_of(from, d, depth);
    }
};

/// C [MR][nv W] (ldc apart) (+)= a micro-panel of x ([depth][MR]) times the columns of W^T
/// from b_col on, its rows read through `b`: a function of its own, so that the
/// micro-kernel is compiled alone: inlined into the loops and the stores around it, GCC may
/// keep its accumulators on the stack.
template <class Arch, std::size_t MR, std::size_t nv, bool Accumulate, class Step, class E, class T, class B>
[[gnu::noinline]] void packed_tile(std::size_t depth, const E* a, B b, std::size_t b_col, T* c,
                                   std::size_t ldc) noexcept {
    simd::micro_gemm<Arch, MR, nv, Accumulate>(depth, simd::strided_rows<E>{a, 1}, MR, b, b_col, c, ldc, Step{});
}
/// A panel of W^T in a product: columns [column, column + columns) of y, `width` wide,
/// stored at `data` (elements E) or, where `data` is null, packed when the product reaches
/// it or read in place.
template <class E>
struct product_panel {
    const E* data;
    std::size_t column, columns, width;
};
/// The fill of a product whose panels are all stored.
struct stored_panels {};

/// `linear_rows` over `panels`, those without data filled by `fill` (see `packed_on_demand`)
/// or, when `fill` is a `rows_in_place`, read where its rows lie; x and W^T as `Operands`
/// hold them (`native_operands`, `bf16_operands`: panels filled or read in place are native).
template <class Arch, class Operands, class T, class Fill, class Store>
void linear_product(row_matrix<const T> x, const simd::packed_rows<T>* packed_x,
                    const std::vector<product_panel<typename Operands::element>>& panels, const Fill& fill,
                    Store&& store, int threads) {
    using E = typename Operands::element;
    using step = typename Operands::step;
    constexpr std::size_t per_element = Operands::per_element;
    using batch = xsimd::batch<T, Arch>;
    constexpr std::size_t W = batch::size;
    constexpr std::size_t MR = simd::micro_rows;
    constexpr std::size_t NV =
        std::min<std::size_t>(simd::arch_traits<Arch>::gemm_column_vectors, simd::panel_layout<T>::panel_width / W);
    constexpr std::size_t max_depth = 4096, block_bytes = std::size_t(2) << 20;
    const std::size_t n = x.rows, in = x.cols;
    if (n == 0 || panels.empty()) return;
    const std::size_t depth_blocks = std::max<std::size_t>(1, (in + max_depth - 1) / max_depth);
    // Blocks of whole elements: in bfloat16, of an even depth.
    const std::size_t kc =
        (std::max<std::size_t>(1, (in + depth_blocks - 1) / depth_blocks) + per_element - 1) / per_element * per_element;
    const std::size_t padded_rows = (n + MR - 1) / MR * MR;
    // Row blocks of equal size, so that the last is not a sliver that each panel is read for.
    const std::size_t row_blocks = (padded_rows * kc * sizeof(T) + block_bytes - 1) / block_bytes;
    const std::size_t mc = ((padded_rows + row_blocks - 1) / row_blocks + MR - 1) / MR * MR;
    // The partial sums of the depth blocks before the last, the panels side by side; rows one
    // vector longer than the panels, so that the MR rows of a tile do not share an L1 set.
    std::vector<std::size_t> partial_column(panels.size() + 1, 0);
    for (std::size_t q = 0; q < panels.size(); ++q) partial_column[q + 1] = partial_column[q] + panels[q].width;
    const std::size_t ldp = partial_column.back() + W;
    buffer<T> partial(depth_blocks > 1 ? padded_rows * ldp : 0);
    // Every value of the block is written before it is read: no zeros first. None for x packed
    // already.
    const auto block = std::make_unique_for_overwrite<E[]>(packed_x ? 0 : std::min(mc, padded_rows) * kc / per_element);
    for (std::size_t r0 = 0; r0 < padded_rows; r0 += mc) {
        const std::size_t rows = std::min(mc, padded_rows - r0);
        for (std::size_t kb = 0; kb < depth_blocks; ++kb) {
            const std::size_t k0 = kb * kc, depth = std::min(kc, in - std::min(in, k0));
            // The elements of the block's depth, and the first of its panel rows.
            const std::size_t elements = (depth + per_element - 1) / per_element, e0 = k0 / per_element;
            const bool first = kb == 0, last = kb + 1 == depth_blocks;
            // Element (r, p) of micro-panel m at m MR elements + p MR + r.
            if (!packed_x) detail::parallel_for(rows / MR, threads, [&](std::size_t m) {
                for (std::size_t r = 0; r < MR; ++r) {
                    const std::size_t row = r0 + m * MR + r;
                    E* to = block.get() + m * MR * elements + r;
                    if (row >= n) {
                        for (std::size_t p = 0; p < elements; ++p) to[p * MR] = E(0);
                        continue;
                    }
                    const T* from = x.data + row * in + k0;
                    for (std::size_t p = 0; p < elements; ++p) to[p * MR] = Operands::pack(from, p, depth);
                }
            }, detail::task_costs::even);
            // Tasks of a panel and a run of the block's micro-panels: with fewer than two panels a
            // thread (MobileViT-S's last stages have 1 to 9), a panel's rows are shared out too,
            // each task packing the panel it needs when it is packed on demand.
            const std::size_t micro_panels = rows / MR, tasks_wanted = 2 * std::size_t(std::max(threads, 1));
            const std::size_t runs =
                threads > 1 ? std::min(micro_panels, (tasks_wanted + panels.size() - 1) / panels.size()) : 1;
            detail::parallel_for(panels.size() * runs, threads, [&](std::size_t task) {
                const std::size_t q = task / runs, run = task % runs;
                const std::size_t m_first = run * micro_panels / runs, m_last = (run + 1) * micro_panels / runs;
                const auto& pn = panels[q];
                // A panel packed on demand: rows [k0, k0 + depth), in a work array of this panel's.
                uninitialized_buffer<E> packed;
                constexpr bool in_place = std::is_same_v<Fill, simd::rows_in_place<T>>;
                if constexpr (!std::is_same_v<Fill, stored_panels> && !in_place)
                    if (!pn.data) {
                        packed.resize(depth * pn.width);
                        fill(pn.column, pn.columns, k0, depth, pn.width, packed.data());
                        simd::panel_layout<T>::zero_past_columns(packed.data(), depth, pn.columns, pn.width);
                    }
                // B(p, c) for the tile's columns from c = v0.
                const auto b_rows = [&] {
                    if constexpr (in_place) return simd::indirect_rows<T>{fill.rows + k0};
                    else return simd::strided_rows<E>{pn.data ? pn.data + e0 * pn.width : packed.data(), pn.width};
                }();
                const std::size_t b_col = in_place ? pn.column : 0;
                // The stored panel this thread takes next (the tasks are dealt in runs of
                // consecutive ones, `task_costs::even`), fetched into L2 a slice per tile: a
                // layer's weights come from memory (a model's do not fit the caches), and the
                // hardware prefetchers stop at every 4 KiB page of a panel.
                const std::size_t ahead = (task + 1) / runs;
                const char* next = ahead != q && ahead < panels.size() && panels[ahead].data
                                       ? reinterpret_cast<const char*>(panels[ahead].data + e0 * panels[ahead].width)
                                       : nullptr;
                const std::size_t next_bytes = next ? elements * panels[ahead].width * sizeof(E) : 0;
                const std::size_t slice = (next_bytes / (m_last - m_first) + 63) / 64 * 64;
                for (std::size_t m = m_first; m < m_last; ++m) {
                    const std::size_t from = (m - m_first) * slice;   // this tile's slice of the next panel
                    for (std::size_t at = from; at < std::min(next_bytes, from + slice); at += 64)
                        __builtin_prefetch(next + at, 0, 2);
                    const std::size_t row0 = r0 + m * MR;
                    const E* a = block.get() + m * MR * elements;
                    if constexpr (std::is_same_v<E, T>)
                        if (packed_x) a = packed_x->micro_panel(row0 / MR) + k0 * MR;
                    const auto tile = [&]<std::size_t nv>(std::integral_constant<std::size_t, nv>, std::size_t v0) {
                        // This tile's partial sums, when the depth comes in more than one block.
                        const auto sums = [&] { return partial.data() + row0 * ldp + partial_column[q] + v0; };
                        if (!last) {   // a partial sum, kept for the next depth block
                            if (first) packed_tile<Arch, MR, nv, false, step>(elements, a, b_rows, b_col + v0, sums(), ldp);
                            else packed_tile<Arch, MR, nv, true, step>(elements, a, b_rows, b_col + v0, sums(), ldp);
                            return;
                        }
                        alignas(64) T out[MR * nv * W];
                        if (first) {
                            packed_tile<Arch, MR, nv, false, step>(elements, a, b_rows, b_col + v0, out, nv * W);
                        } else {
                            for (std::size_t r = 0; r < MR; ++r) std::copy_n(sums() + r * ldp, nv * W, out + r * nv * W);
                            packed_tile<Arch, MR, nv, true, step>(elements, a, b_rows, b_col + v0, out, nv * W);
                        }
                        for (std::size_t r = 0; r < MR && row0 + r < n; ++r)
                            for (std::size_t v = 0; v < nv && v0 + v * W < pn.columns; ++v) {
                                const std::size_t column = v0 + v * W;
                                store(row0 + r, pn.column + column, batch::load_aligned(out + r * nv * W + v * W),
                                      std::min(W, pn.columns - column));
                            }
                    };
                    // Whole tiles of NV vectors, then one of the vectors left (a narrow last panel).
                    std::size_t v0 = 0;
                    for (; v0 + NV * W <= pn.width; v0 += NV * W) tile(std::integral_constant<std::size_t, NV>{}, v0);
                    const std::size_t rest = (pn.width - v0) / W;
                    [&]<std::size_t... I>(std::index_sequence<I...>) {
                        ((rest == I + 1 ? tile(std::integral_constant<std::size_t, I + 1>{}, v0) : void()), ...);
                    }(std::make_index_sequence<NV - 1>{});
                }
            }, detail::task_costs::even);
        }
    }
}

}  // namespace nonlocal::detail
