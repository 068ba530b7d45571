#pragma once
/// @file simd/linear.hpp
/// y = x W^T (+ b) on row matrices, the projection behind the nn layers and the projected
/// similarities: W^T packed once (`packed_weight`, simd/packing.hpp), then a GEMM
/// (simd/linear_product.hpp) whose results go through an epilogue (bias, activation,
/// residual, any layout; simd/epilogue.hpp) while they are still in registers.

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/simd/bfloat16.hpp"
#include "nonlocal/simd/epilogue.hpp"
#include "nonlocal/simd/linear_product.hpp"
#include "nonlocal/simd/packing.hpp"

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
/// On the threads of `policy` the panels are shared out, and a panel's rows too when the panels are
/// fewer than two a thread; each (row, column) is computed by one thread in the same order, so
/// the result is the same, bit for bit, on any number of threads.
///
/// Weights packed in `precision::bf16` take x's rows rounded to bfloat16 as they are packed,
/// two steps of the depth per element (`dot_bf16_pairs`): 32 products an instruction where
/// the build has AVX512-BF16, twice an FMA's 16. Throws `std::invalid_argument` unless every
/// weight has the same precision.
template <class Arch = default_arch, execution_policy Ex, class T, class Store>
void linear_rows(Ex policy, row_matrix<const T> x, std::span<const packed_weight<T>* const> weights, Store&& store) {
    const int threads = detail::thread_count(policy);
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
template <class Arch = default_arch, execution_policy Ex, class T, class Columns, class Store>
void linear_rows(Ex policy, const packed_rows<T>& x, const Columns& w, Store&& store) {
    const int threads = detail::thread_count(policy);
    detail::require(x.cols() == w.in, "simd::linear_rows", [&] {
        return "x [" + std::to_string(x.rows()) + ", " + std::to_string(x.cols()) + "] does not fit a weight of " +
               std::to_string(w.in) + " inputs";
    });
    std::vector<detail::product_panel<T>> panels;
    const std::size_t widest = panel_layout<T>::gathered_width(w.in, w.out, std::size_t(threads));
    for (const auto& pn : panel_layout<T>::panels(w.in, w.out, widest))
        panels.push_back({nullptr, pn.column, pn.columns, pn.width});
    const row_matrix<const T> unpacked{nullptr, x.rows(), x.cols()};
    if constexpr (std::is_same_v<Columns, rows_in_place<T>>)
        detail::linear_product<Arch, detail::native_operands<T>>(unpacked, &x, panels, w, store, threads);
    else
        detail::linear_product<Arch, detail::native_operands<T>>(unpacked, &x, panels, w.fill, store, threads);
}

/// The same with one weight.
template <class Arch = default_arch, execution_policy Ex, class T, class Store>
void linear_rows(Ex policy, row_matrix<const T> x, const packed_weight<T>& w, Store&& store) {
    const packed_weight<T>* one[] = {&w};
    linear_rows<Arch>(policy, x, std::span<const packed_weight<T>* const>(one), store);
}

/// x [n, in] W^T + bias as a new [n, out] tensor, W^T packed (`bias` [out], or none).
template <class Arch = default_arch, execution_policy Ex, class T>
xt::xtensor<T, 2> linear_rows(Ex policy, row_matrix<const T> x, const packed_weight<T>& w, const T* bias) {
    xt::xtensor<T, 2> y = xt::empty<T>({x.rows, w.out()});
    linear_rows<Arch>(policy, x, w, store_rows<T, no_activation>{y.data(), w.out(), {bias}});
    return y;
}

/// x [n, in] times weight^T, weight [out, in] (PyTorch's layout), plus bias [out] when given:
/// the weight packed for this one product. A layer that applies its weight again keeps it
/// packed (`packed_weight`) instead.
template <class Arch = default_arch, execution_policy Ex, class T>
xt::xtensor<T, 2> linear_rows(Ex policy, row_matrix<const T> x, row_matrix<const T> weight, const T* bias = nullptr) {
    return linear_rows<Arch>(policy, x, packed_weight<T>(policy, weight), bias);
}

}  // namespace nonlocal::simd
