#pragma once
/// @file solve/ar_passes.hpp
/// The AR system's passes over its pixels, given its stencil kernel and diagonal: what a pass
/// does with each pixel's sum over its neighbours (its `finish`: the product A x = D x - W x,
/// a damped Jacobi sweep, the residual), the product with its dot product, and sweeps
/// pipelined in one pass over memory. The finishes hold what they read by value: a pass's
/// stores (xsimd's, which may alias anything) would otherwise reload every pointer behind
/// them per batch.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <span>
#include <type_traits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "nonlocal/execution.hpp"
#include "nonlocal/kernel/stencil.hpp"
#include "nonlocal/solve/pipelined_passes.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal {

/// A stage of `ar_system::sweeps`: a damped Jacobi sweep with damping `omega`, or the
/// residual; a sweep `from_zero` takes z = 0 instead of its input, so it reads neither z nor
/// the weights and costs no stencil (the first sweep of a V-cycle).
struct sweep_stage {
    double omega = 0;
    bool residual = false;
    bool from_zero = false;
};

}  // namespace nonlocal

namespace nonlocal::detail {

/// (A x)_i = d_i x_i - sum_j W_ij x_j from a pass's `own` (x_i) and `neighbours` (the sum),
/// d the diagonal.
template <class T>
auto ar_product(const T* diagonal) {
    return [diagonal](std::size_t i, auto own, auto neighbors) {
        return own * kernel::lane_load(diagonal, i, own) - neighbors;
    };
}

/// The finish of a damped Jacobi sweep: out_i = z_i + omega (r_i - (A z)_i) / d_i, or
/// z_i + omega (r_i - (A z)_i) t_i with t = `inverse_smoothing` when given (pixels whose d
/// is 0 keep z_i).
template <class T>
auto ar_relaxation(const T* diagonal, const T* r, T* out, double omega, const T* inverse_smoothing = nullptr) {
    return [diagonal, r, out, omega, inverse_smoothing](std::size_t i, auto own, auto neighbors) {
        using V = decltype(own);
        const V d = kernel::lane_load(diagonal, i, own);
        const V residual = kernel::lane_load(r, i, own) - (d * own - neighbors);
        const V step = inverse_smoothing ? residual * kernel::lane_load(inverse_smoothing, i, own) : simd::divide(residual, d);
        kernel::lane_store(out, i, kernel::lane_pick(d > V(T(0)), own + V(T(omega)) * step, own));
    };
}

/// The finish of the residual: out_i = r_i - (A z)_i.
template <class T>
auto ar_residual(const T* diagonal, const T* r, T* out) {
    return [product = ar_product(diagonal), r, out](std::size_t i, auto own, auto neighbors) {
        kernel::lane_store(out, i, kernel::lane_load(r, i, own) - product(i, own, neighbors));
    };
}

/// y = A x by the stencil kernel `e` on `threads` threads; returns <x, A x> from the same
/// pass, accumulated in double per chunk of 65536 pixels and over the chunks in order, so
/// that the sum does not depend on the thread count.
template <class Stencil, class T>
double ar_apply_and_dot(const Stencil& e, const T* diagonal, int threads, const T* x, T* y) {
    const std::size_t chunks = std::max<std::size_t>(1, e.size() / 65536);
    std::vector<double> partial(chunks, 0.0);
    const auto product = ar_product(diagonal);
    parallel_for(chunks, threads, [&](std::size_t t) {
        double sum = 0;
        e.range(x, e.band_edge(t, chunks), e.band_edge(t + 1, chunks), [y, product, &sum](std::size_t i, auto own, auto neighbors) {
            const auto ax = product(i, own, neighbors);
            kernel::lane_store(y, i, ax);
            if constexpr (std::is_arithmetic_v<decltype(ax)>) sum += double(own) * double(ax);
            else sum += double(xsimd::hadd(own * ax));
        });
        partial[t] = sum;
    });
    return std::accumulate(partial.begin(), partial.end(), 0.0);
}

/// The `stages` on A z = r (`ar_system::sweeps`) by the stencil kernel `e`, pipelined.
template <class Stencil, class T>
void ar_sweeps(const Stencil& e, const T* diagonal, int threads, const T* r, T* z, T* work,
               std::span<const sweep_stage> stages, const T* inverse_smoothing) {
    pipelined_passes(e, threads, z, work, stages.size(), [&](std::size_t k) {
        T* out = k % 2 ? z : work;
        const sweep_stage stage = stages[k];
        const auto relax_finish = ar_relaxation(diagonal, r, out, stage.omega, inverse_smoothing);
        const auto residual_finish = ar_residual(diagonal, r, out);
        return [=, &e](const T* input, std::size_t begin, std::size_t end) {
            if (stage.from_zero && !stage.residual) return Stencil::zero_range(begin, end, relax_finish);
            if (stage.residual) e.range(input, begin, end, residual_finish);
            else e.range(input, begin, end, relax_finish);
        };
    });
}

}  // namespace nonlocal::detail
