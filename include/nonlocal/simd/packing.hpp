#pragma once
/// @file simd/packing.hpp
/// The operands of the projections' GEMM (`linear_rows`) as it reads them: W^T packed once
/// into column panels (`packed_weight`, in T or in bfloat16 pairs), packed a panel at a time
/// as the product reaches it (`packed_on_demand`) or read where it lies (`rows_in_place`),
/// and x packed once into micro-panels of rows (`packed_rows`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/simd/bfloat16.hpp"

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
    /// values shared among `threads` threads: rows of up to 2 KiB, so that the gathering reads runs long
    /// enough for the hardware prefetchers (rows of 256 bytes, one from each of `in` planes
    /// far apart, left it waiting on memory), a work array of at most 256 KiB (in L2), and at
    /// least two panels a thread.
    static std::size_t gathered_width(std::size_t in, std::size_t out, std::size_t threads) noexcept {
        const std::size_t by_cache = (std::size_t(256) << 10) / sizeof(T) / std::max<std::size_t>(1, in);
        const std::size_t panels_wanted = 2 * std::max<std::size_t>(threads, 1);
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

    /// Packs weight [out, in] in precision `p`, the panels shared out among the threads of
    /// `policy`. Throws `std::invalid_argument` for `precision::bf16` unless T is float.
    template <execution_policy Ex>
    packed_weight(Ex policy, row_matrix<const T> weight, nonlocal::precision p = nonlocal::precision::native)
        : in_(weight.cols), out_(weight.rows), precision_(p), panels_(panel_layout<T>::panels(depth(), out_)) {
        detail::require(p == nonlocal::precision::native || std::is_same_v<T, float>, "simd::packed_weight",
                        [] { return std::string("bfloat16 weights need float values"); });
        const std::size_t size = panels_.empty() ? 0 : panels_.back().offset + depth() * panels_.back().width;
        if (p == nonlocal::precision::bf16) pairs_.resize(size);
        else values_.resize(size);
        detail::parallel_for(panels_.size(), detail::thread_count(policy), [&](std::size_t j) {
            const panel& pn = panels_[j];
            if constexpr (std::is_same_v<T, float>)
                if (p == nonlocal::precision::bf16)
                    return pack_panel(pn, weight, pairs_.data() + pn.offset,
                                      [&](const T* from, std::size_t d) { return bf16_pair_of(from, d, in_); });
            pack_panel(pn, weight, values_.data() + pn.offset, [](const T* from, std::size_t d) { return from[d]; });
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
    uninitialized_buffer<T> values_;
    uninitialized_buffer<std::uint32_t> pairs_;
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

}  // namespace nonlocal::simd
