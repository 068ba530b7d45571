#pragma once
/// @file simd/linear.hpp
/// y = x W^T (+ b) on row matrices, the projection behind the nn layers and the projected
/// similarities: W^T packed once (`packed_weight`), then a GEMM whose results go through an
/// epilogue (bias, activation, residual, any layout) while they are still in registers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/simd/activation.hpp"
#include "nonlocal/simd/bfloat16.hpp"
#include "nonlocal/simd/gemm.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::simd {

/// The panels `linear_rows` cuts W^T [in, out] into: columns [column, column + columns) of
/// y each, stored [in][width] with width >= columns a multiple of one AVX-512 vector (64
/// bytes) and at most 256 bytes (4 AVX-512 vectors, 8 AVX2 ones), whatever the
/// architecture, so that one packing serves every kernel. Panels gathered on demand, which
/// no other kernel reads, may be wider (`gathered_width`).
template <class T>
struct panel_layout {
    /// Columns of a stored panel at most: 256 bytes.
    static constexpr std::size_t panel_width = 256 / sizeof(T);
    /// A panel's stored width is a multiple of one AVX-512 vector (64 bytes).
    static constexpr std::size_t width_step = 64 / sizeof(T);

    /// Columns [column, column + columns) of y, stored [in][width] from `offset` in a packing
    /// of every panel (width >= columns, the columns past `columns` zero).
    struct panel {
        std::size_t column, columns, width, offset;
    };

    /// Zeros in the columns past a panel's `columns`, over the `rows` rows of [rows][width] at `to`.
    static void zero_past_columns(T* to, std::size_t rows, std::size_t columns, std::size_t width) noexcept {
        if (columns < width)
            for (std::size_t r = 0; r < rows; ++r) std::fill(to + r * width + columns, to + (r + 1) * width, T(0));
    }

    /// The widest panel to gather on demand (`packed_on_demand`) for `out` columns of `in`
    /// values on `threads` threads: rows of up to 2 KiB, so that the gathering reads runs long
    /// enough for the hardware prefetchers (rows of 256 bytes, one from each of `in` planes
    /// far apart, left it waiting on memory), a work array of at most 256 KiB (in L2), and at
    /// least two panels a thread.
    static std::size_t gathered_width(std::size_t in, std::size_t out, int threads) noexcept {
        const std::size_t by_cache = (std::size_t(256) << 10) / sizeof(T) / std::max<std::size_t>(1, in);
        const std::size_t panels_wanted = 2 * std::size_t(std::max(threads, 1));
        const std::size_t by_threads = (out + panels_wanted - 1) / panels_wanted;
        const std::size_t widest = std::min({std::size_t(2048) / sizeof(T), by_cache, by_threads});
        return std::max(panel_width, widest / panel_width * panel_width);
    }

    /// The panels of `out` columns of `in` values each, in order, `widest` columns at most.
    static std::vector<panel> panels(std::size_t in, std::size_t out, std::size_t widest = panel_width) {
        std::vector<panel> all;
        for (std::size_t c = 0, offset = 0; c < out; c += widest) {
            const std::size_t columns = std::min(widest, out - c);
            const std::size_t width = (columns + width_step - 1) / width_step * width_step;
            all.push_back({c, columns, width, offset});
            offset += in * width;
        }
        return all;
    }
};

/// W^T of a linear map, weight [out, in] in PyTorch's layout, packed once for `linear_rows`
/// as `panel_layout` cuts it, each panel [depth][width] contiguous, so that a panel's rows
/// stream in order under the micro-kernel. In `precision::native` a panel row holds one
/// input's weights as T (depth = in); in `precision::bf16` (float weights only) a row holds
/// two inputs' weights rounded to bfloat16 as `bf16_pair`s (depth = in / 2 rounded up, an odd
/// last input paired with 0).
template <class T>
class packed_weight {
public:
    using panel = typename panel_layout<T>::panel;
    static constexpr std::size_t panel_width = panel_layout<T>::panel_width;

    packed_weight() = default;

    /// Packs weight [out, in] in precision `p`, the panels shared out among `threads`
    /// threads. Throws `std::invalid_argument` for `precision::bf16` unless T is float.
    explicit packed_weight(row_matrix<const T> weight, int threads = 1, nonlocal::precision p = nonlocal::precision::native)
        : in_(weight.cols), out_(weight.rows), precision_(p), panels_(panel_layout<T>::panels(depth(), out_)) {
        detail::require(p == nonlocal::precision::native || std::is_same_v<T, float>, "simd::packed_weight",
                        [] { return std::string("bfloat16 weights need float values"); });
        const std::size_t size = panels_.empty() ? 0 : panels_.back().offset + depth() * panels_.back().width;
        if (p == nonlocal::precision::bf16) pairs_.resize(size);
        else values_.resize(size);
        detail::parallel_for(panels_.size(), threads, [&](std::size_t j) {
            const panel& pn = panels_[j];
            if (p == nonlocal::precision::bf16) pack_panel(pn, weight, pairs_.data() + pn.offset, [&](const T* from, std::size_t d) {
                return bf16_pair(float(from[2 * d]), 2 * d + 1 < in_ ? float(from[2 * d + 1]) : 0.f);
            });
            else pack_panel(pn, weight, values_.data() + pn.offset, [](const T* from, std::size_t d) { return from[d]; });
        }, detail::task_costs::even);
    }

    /// The weight [out, in] back from the panels, into `weight` (in bfloat16, the rounded values).
    void unpack(row_matrix<T> weight) const noexcept {
        for (const panel& pn : panels_)
            for (std::size_t o = 0; o < pn.columns; ++o)
                for (std::size_t c = 0; c < in_; ++c) {
                    const std::size_t at = pn.offset + c / per_element() * pn.width + o;
                    weight(pn.column + o, c) =
                        precision_ == nonlocal::precision::bf16 ? T(float(bfloat16::from_bits(std::uint16_t(pairs_[at] >> (16 * (c % 2))))))
                                                      : values_[at];
                }
    }

    std::size_t in() const noexcept { return in_; }     ///< features of x
    std::size_t out() const noexcept { return out_; }   ///< features of y
    /// The precision the weights are held in.
    nonlocal::precision precision() const noexcept { return precision_; }
    /// Rows of a panel: `in`, or in bfloat16 `in` / 2 rounded up.
    std::size_t depth() const noexcept { return (in_ + per_element() - 1) / per_element(); }

    std::span<const panel> panels() const noexcept { return panels_; }
    /// A panel's values in `precision::native`.
    const T* data(const panel& p) const noexcept { return values_.data() + p.offset; }
    /// A panel's `bf16_pair`s in `precision::bf16`.
    const std::uint32_t* pairs(const panel& p) const noexcept { return pairs_.data() + p.offset; }

private:
    std::size_t per_element() const noexcept { return precision_ == nonlocal::precision::bf16 ? 2 : 1; }

    /// Panel `pn` of W^T from `weight` into `to`: to[d width + o] = element(row of column o, d).
    template <class S, class Element>
    void pack_panel(const panel& pn, row_matrix<const T> weight, S* to, Element element) const noexcept {
        for (std::size_t o = 0; o < pn.columns; ++o) {
            const T* from = weight.data + (pn.column + o) * weight.cols;
            for (std::size_t d = 0; d < depth(); ++d) to[d * pn.width + o] = element(from, d);
        }
        panel_layout<S>::zero_past_columns(to, depth(), pn.columns, pn.width);
    }

    std::size_t in_ = 0, out_ = 0;
    nonlocal::precision precision_ = nonlocal::precision::native;
    std::vector<panel> panels_;
    uninitialised_buffer<T> values_;
    uninitialised_buffer<std::uint32_t> pairs_;
};

/// W^T [in, out] that is not stored but packed a panel at a time as `linear_rows` reaches
/// it, into a work array that stays in L2 while every row of x passes over the panel: a
/// convolution's image columns (im2col), gathered straight from the image, in panels
/// `panel_layout::gathered_width` wide.
/// `fill(column, columns, first, depth, width, to)` writes W^T[first + p][column + o] to
/// to[p width + o] for p < depth and o < columns; the product zeroes the columns past
/// `columns` itself.
template <class T, class Fill>
struct packed_on_demand {
    std::size_t in, out;   ///< features of x and y
    Fill fill;
};
/// The `packed_on_demand` of `fill`, its type deduced: `pack_on_demand<T>(in, out, fill)`.
template <class T, class Fill>
packed_on_demand<T, std::decay_t<Fill>> pack_on_demand(std::size_t in, std::size_t out, Fill&& fill) {
    return {in, out, std::forward<Fill>(fill)};
}

/// W^T [in, out] that is not packed but read where it lies, row p at rows[p]: the rows of
/// a zero-padded image that a convolution's taps read in place (an implicit GEMM). Each row
/// must be readable up to `out` rounded up to a multiple of 64 bytes; the values past `out`
/// are read and not used.
template <class T>
struct rows_in_place {
    std::size_t in, out;   ///< features of x and y
    const T* const* rows;  ///< [in]
};

/// Rows of x a micro-tile of `linear_rows` holds: 6 (AVX-512: 6 x 4 accumulators; 16
/// registers: 6 x 2).
inline constexpr std::size_t micro_rows = 6;

/// x [n, in] packed once as `linear_rows` reads it: micro-panels of `micro_rows` rows, each
/// [in][micro_rows] (the rows past n zero), so that the micro-kernel's broadcasts read one
/// sequential stream. A convolution's weights, the x of its products, which every call
/// would otherwise pack again.
template <class T>
class packed_rows {
public:
    packed_rows() = default;

    /// Packs x [n, in].
    explicit packed_rows(row_matrix<const T> x)
        : rows_(x.rows), cols_(x.cols), values_((x.rows + micro_rows - 1) / micro_rows * micro_rows * x.cols, T(0)) {
        for (std::size_t row = 0; row < rows_; ++row)
            for (std::size_t p = 0; p < cols_; ++p)
                values_[(row / micro_rows * cols_ + p) * micro_rows + row % micro_rows] = x(row, p);
    }

    std::size_t rows() const noexcept { return rows_; }   ///< n
    std::size_t cols() const noexcept { return cols_; }   ///< in
    /// Micro-panel m, rows [m micro_rows, (m + 1) micro_rows): element (r, p) at [p micro_rows + r].
    const T* micro_panel(std::size_t m) const noexcept { return values_.data() + m * micro_rows * cols_; }

private:
    std::size_t rows_ = 0, cols_ = 0;
    std::vector<T> values_;
};

/// The elementwise work a layer does on x W^T before storing it: a(x W^T + bias). `Act` an
/// `activation` or, for code compiled for one (`with_activation`), its
/// std::integral_constant.
template <class T, class Act = activation>
struct epilogue {
    const T* bias = nullptr;   ///< [out], or none
    Act act = {};

    template <class Batch>
    Batch operator()(Batch v, std::size_t column, std::size_t lanes) const noexcept {
        if (bias) v += load_lanes<Batch>(bias + column, lanes);
        return activate(act, v);
    }
};

/// A store of `linear_rows` into rows `ld` apart: y[row, column] = epilogue(x W^T), or, when
/// `add`, y[row, column] += epilogue(x W^T) (a residual connection).
template <class T, class Act = activation>
struct store_rows {
    T* y;
    std::size_t ld;
    epilogue<T, Act> then{};
    bool add = false;

    template <class Batch>
    void operator()(std::size_t row, std::size_t column, const Batch& v, std::size_t lanes) const noexcept {
        T* to = y + row * ld + column;
        const Batch result = then(v, column, lanes);
        store_lanes(add ? load_lanes<Batch>(to, lanes) + result : result, lanes, to);
    }
};

}  // namespace nonlocal::simd

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
        return simd::bf16_pair(from[2 * d], 2 * d + 1 < depth ? from[2 * d + 1] : 0.f);
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
        std::min<std::size_t>(simd::vector_registers<Arch> >= 32 ? 4 : 2, simd::panel_layout<T>::panel_width / W);
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
                uninitialised_buffer<E> packed;
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

namespace nonlocal::simd {

/// x [n, in] times the packed W^T of several weights side by side, y = x [W_0^T W_1^T ...]
/// (the query, key and value projections of self-attention: one pass over x for all three);
/// each finished vector of y goes to `store(row, column, v, lanes)`: lane l of v is
/// y[row, column + l] for l < lanes (lanes is short only at a weight's last column, its
/// further lanes 0), the columns of W_i following those of W_{i-1}. Each (row, column) of
/// y is stored once. Throws `std::invalid_argument` unless x has each weight's `in` columns.
///
/// The loops of a Goto / BLIS matrix product:
/// - The micro-kernel keeps MR x NV vectors of y in registers: AVX-512 (32 registers):
///   6 rows x 4 vectors = 24 accumulators + 4 panel loads + 1 broadcast = 29; 16 registers:
///   6 x 2 = 12 + 2 + 1 = 15. 24 or 12 independent FMAs a step cover the FMA latency
///   (2 ports x 4 cycles: at least 8), and each panel load serves 6 FMAs.
/// - It runs over the whole depth (up to 4096: a panel of 1 MiB of floats streams from L2),
///   so y is written once, through `store`, never re-read. Deeper products are cut into
///   equal blocks of at most 4096 whose partial sums wait in a work array.
/// - Rows of x come in blocks of at most 2 MiB, packed as micro-panels of MR rows, [depth][MR]
///   each, so the micro-kernel's broadcasts read one sequential stream (rows past n are 0);
///   every panel passes over a block while it is in cache.
/// On `threads` threads the panels are shared out, and a panel's rows too when the panels are
/// fewer than two a thread; each (row, column) is computed by one thread in the same order, so
/// the result is the same, bit for bit, on any number of threads.
///
/// Weights packed in `precision::bf16` take x's rows rounded to bfloat16 as they are packed,
/// two steps of the depth per element (`dot_bf16_pairs`): 32 products an instruction where
/// the build has AVX512-BF16, twice an FMA's 16. Throws `std::invalid_argument` unless every
/// weight has the same precision.
template <class Arch = default_arch, class T, class Store>
void linear_rows(row_matrix<const T> x, std::span<const packed_weight<T>* const> weights, Store&& store,
                 int threads = 1) {
    const precision p = weights.empty() ? precision::native : weights.front()->precision();
    // Every weight's panels, their columns numbered from the weight's first column in y.
    const auto product = [&]<class Operands>(Operands, auto data) {
        std::vector<detail::product_panel<typename Operands::element>> panels;
        std::size_t first_column = 0;
        for (const packed_weight<T>* w : weights) {
            detail::require(x.cols == w->in() && w->precision() == p, "simd::linear_rows", [&] {
                return "x [" + std::to_string(x.rows) + ", " + std::to_string(x.cols) + "] does not fit a weight of " +
                       std::to_string(w->in()) + " inputs" +
                       (w->precision() == p ? "" : ", or the weights' precisions differ");
            });
            for (const auto& pn : w->panels())
                panels.push_back({data(*w, pn), first_column + pn.column, pn.columns, pn.width});
            first_column += w->out();
        }
        detail::linear_product<Arch, Operands>(x, static_cast<const packed_rows<T>*>(nullptr), panels,
                                               detail::stored_panels{}, store, threads);
    };
    if constexpr (std::is_same_v<T, float>)
        if (p == precision::bf16)
            return product(detail::bf16_operands{}, [](const auto& w, const auto& pn) { return w.pairs(pn); });
    product(detail::native_operands<T>{}, [](const auto& w, const auto& pn) { return w.data(pn); });
}

/// The same with x packed already and W^T not stored: a convolution, its weights the x,
/// its image's columns the W^T, which are packed a panel at a time as the product reaches
/// them (`packed_on_demand`) or read in place (`rows_in_place`). Throws
/// `std::invalid_argument` unless x has `w.in` columns.
template <class Arch = default_arch, class T, class Columns, class Store>
void linear_rows(const packed_rows<T>& x, const Columns& w, Store&& store, int threads = 1) {
    detail::require(x.cols() == w.in, "simd::linear_rows", [&] {
        return "x [" + std::to_string(x.rows()) + ", " + std::to_string(x.cols()) + "] does not fit a weight of " +
               std::to_string(w.in) + " inputs";
    });
    std::vector<detail::product_panel<T>> panels;
    const std::size_t widest = panel_layout<T>::gathered_width(w.in, w.out, threads);
    for (const auto& pn : panel_layout<T>::panels(w.in, w.out, widest))
        panels.push_back({nullptr, pn.column, pn.columns, pn.width});
    const row_matrix<const T> unpacked{nullptr, x.rows(), x.cols()};
    if constexpr (std::is_same_v<Columns, rows_in_place<T>>)
        detail::linear_product<Arch, detail::native_operands<T>>(unpacked, &x, panels, w, store, threads);
    else
        detail::linear_product<Arch, detail::native_operands<T>>(unpacked, &x, panels, w.fill, store, threads);
}

/// The same with one weight.
template <class Arch = default_arch, class T, class Store>
void linear_rows(row_matrix<const T> x, const packed_weight<T>& w, Store&& store, int threads = 1) {
    const packed_weight<T>* one[] = {&w};
    linear_rows<Arch>(x, std::span<const packed_weight<T>* const>(one), store, threads);
}

/// x [n, in] W^T + bias as a new [n, out] tensor, W^T packed (`bias` [out], or none).
template <class Arch = default_arch, class T>
xt::xtensor<T, 2> linear_rows(row_matrix<const T> x, const packed_weight<T>& w, const T* bias, int threads = 1) {
    xt::xtensor<T, 2> y = xt::empty<T>({x.rows, w.out()});
    linear_rows<Arch>(x, w, store_rows<T, no_activation>{y.data(), w.out(), {bias}}, threads);
    return y;
}

/// x [n, in] times weight^T, weight [out, in] (PyTorch's layout), plus bias [out] when given:
/// the weight packed for this one product. A layer that applies its weight again keeps it
/// packed (`packed_weight`) instead.
template <class Arch = default_arch, class T>
xt::xtensor<T, 2> linear_rows(row_matrix<const T> x, row_matrix<const T> weight, const T* bias = nullptr,
                              int threads = 1) {
    return linear_rows<Arch>(x, packed_weight<T>(weight, threads), bias, threads);
}

}  // namespace nonlocal::simd
