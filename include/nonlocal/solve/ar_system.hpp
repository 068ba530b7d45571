#pragma once
/// @file solve/ar_system.hpp
/// The linear autoregressive (AR) model of colour-guided depth refinement:
///
///     min_x  sum_i sum_{j in N(i)} w_ij (x_i - x_j)^2 + sum_i alpha_i (x_i - xhat_i)^2
///
/// on a height x width grid whose neighbourhood is a `grid_stencil` (4 or 8
/// neighbours, or a window of any radius).
/// Its normal equations are A x = b with A the graph Laplacian of the
/// symmetrised weights W_ij = w_ij + w_ji plus diag(alpha), and b = alpha xhat.
/// The weights are computed once, by any similarity on the guide's pixels (in
/// double from pixel rows; from image planes in their precision, a channel at a
/// time across a row of pixels, for similarities that are sums over channels),
/// and stored per stencil direction in precision T so that `apply` and the Jacobi
/// step are loops over whole rows of pixels, vectorised across them.
///
/// Row i of A x = b is one normalised weighted aggregate: x_i = (sum_j W_ij x_j +
/// alpha_i xhat_i) / (sum_j W_ij + alpha_i). `jacobi_step` computes exactly that,
/// and the tests check it against `weighted_aggregate` with `grid_stencil` and
/// `sum_with_data`.

#include <algorithm>
#include <array>
#include <type_traits>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/image/pixels.hpp"
#include "nonlocal/kernel/stencil.hpp"
#include "nonlocal/kernel/stencil_weights.hpp"
#include "nonlocal/neighborhood/grid_stencil.hpp"
#include "nonlocal/similarity/edge_weights.hpp"
#include "nonlocal/similarity/patch_distance.hpp"
#include "nonlocal/simd/exp.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal {

/// The AR system A x = b on a grid, its weights, data term and the vectors its
/// passes read and write in precision T (double by default; float halves the
/// memory traffic of the solvers, which are bound by it).
template <class T = double, class Arch = default_arch>
class ar_system {
public:
    using value_type = T;

    std::size_t height = 0, width = 0;
    std::vector<stencil_offset> offsets;      ///< forward stencil directions
    buffer<T> rhs;                            ///< b = alpha * xhat
    int threads = 1;                          ///< threads of each pass over the pixels (apply, relax, residual, Jacobi)

    ar_system() = default;

    /// The system from edge weights already computed (used for coarse grids): a plane of
    /// h x w weights per forward direction, whose entries for edges leaving the grid are
    /// set to 0.
    ar_system(std::size_t h, std::size_t w, std::vector<stencil_offset> dirs, std::vector<buffer<T>> wts,
              buffer<T> a, buffer<T> b)
        : height(h), width(w), offsets(std::move(dirs)), rhs(std::move(b)), weights_(std::move(wts)),
          alpha_(std::move(a)) {
        clear_edges_outside();
        update_diagonal();
    }

    /// The system of an operator given by its weights and its diagonal, which may differ
    /// from their sum by anything (the Galerkin coarse systems of `multigrid`, whose
    /// weights may also be negative): alpha is the diagonal minus the weights of each
    /// pixel's edges, b is 0.
    static ar_system from_operator(std::size_t h, std::size_t w, std::vector<stencil_offset> dirs,
                                   std::vector<buffer<T>> wts, buffer<T> diag) {
        ar_system A;
        A.height = h, A.width = w, A.offsets = std::move(dirs), A.weights_ = std::move(wts);
        A.diagonal_ = std::move(diag);
        A.alpha_.resize(A.size());
        A.rhs.assign(A.size(), T(0));
        A.edge_sums([](auto w) { return w; },
                    [&](std::size_t i, auto sum) {
                        kernel::lane_store(A.alpha_.data(), i, kernel::lane_load(A.diagonal_, i, sum) - sum);
                    });
        return A;
    }

    /// The system of a guide image [H, W] or [H, W, C] (any arithmetic type), a
    /// `stencil` (4 or 8 neighbours or a wider window), a `similarity` on the guide's pixels (its
    /// kernel applied to its logit, which may use the pixels' positions),
    /// observations `xhat` [H, W] and confidences `alpha` [H, W] (0: unobserved).
    /// Throws `std::invalid_argument` when sizes differ, the guide holds NaN or infinity,
    /// alpha is negative or not finite, an observed xhat is not finite, nothing is
    /// observed, min_weight is negative or NaN, or the similarity makes an edge weight
    /// NaN or infinite. Every edge weight is at least `min_weight`: a floor that keeps
    /// pixels whose colours differ from all their neighbours connected (and the system
    /// well conditioned) without tying them to any of them.
    template <class G, class X, class A, similarity S>
    ar_system(const xt::xexpression<G>& guide, const grid_stencil& stencil, const S& sim,
              const xt::xexpression<X>& xhat, const xt::xexpression<A>& confidence, double min_weight = 0.0)
        : ar_system(detail::to_pixel_rows<double>(guide, "ar_system", "guide"), stencil, sim, xhat, confidence,
                    min_weight) {}

    /// The same from a guide already given as pixel rows.
    template <class X, class A, similarity S>
    ar_system(const pixel_rows<double>& g, const grid_stencil& stencil, const S& sim,
              const xt::xexpression<X>& xhat, const xt::xexpression<A>& confidence, double min_weight = 0.0)
        : ar_system(g, stencil, sim, observations(g.height, g.width, xhat, confidence), min_weight) {}

    /// The system of a guide given as pixel rows with its data term given directly, per
    /// pixel in row order: `confidence` (alpha) and `b` = alpha xhat.
    /// Throws `std::invalid_argument` when sizes differ, alpha is negative or not
    /// finite, b is not finite, nothing is observed, min_weight is negative or NaN, or
    /// an edge weight is NaN or infinite.
    template <similarity S>
    ar_system(const pixel_rows<double>& g, const grid_stencil& stencil, const S& sim, buffer<T> confidence,
              buffer<T> b, double min_weight = 0.0)
        : height(g.height), width(g.width), rhs(std::move(b)), alpha_(std::move(confidence)) {
        build(stencil, min_weight, [&] {
            if constexpr (detail::channel_sum_similarity<S>)
                weights_ = kernel::edge_weights_by_channel<Arch, T>(detail::to_planes<double>(g), offsets, sim, min_weight);
            else
                weights_ = kernel::edge_weights_by_pixel<T>(g, offsets, sim, min_weight);
        });
    }

    /// The system of a guide given as planes (one per channel) with a similarity that is a
    /// sum over channels (`channel_logit`: the distances), its data term given directly:
    /// the edge weights of a row of pixels are computed a channel at a time across them,
    /// in the planes' precision. The depth tasks build their systems this way from float
    /// planes. Throws as the constructor from pixel rows does.
    template <class P, similarity S>
        requires detail::channel_sum_similarity<S>
    ar_system(const image_planes<P>& g, const grid_stencil& stencil, const S& sim, buffer<T> confidence,
              buffer<T> b, double min_weight = 0.0)
        : height(g.height), width(g.width), rhs(std::move(b)), alpha_(std::move(confidence)) {
        build(stencil, min_weight, [&] {
            weights_ = kernel::edge_weights_by_channel<Arch, T>(g, offsets, sim, min_weight);
        });
    }

    std::size_t size() const noexcept { return height * width; }

    /// W for each forward direction, per pixel (0 where the neighbour is outside).
    const std::vector<buffer<T>>& weights() const noexcept { return weights_; }
    /// The confidence per pixel, 0 where nothing is observed.
    const buffer<T>& alpha() const noexcept { return alpha_; }
    /// sum_j W_ij + alpha_i (for the operator of `from_operator`, as given).
    const buffer<T>& diagonal() const noexcept { return diagonal_; }

    /// Changes the weights, `change(d, plane)` for each direction d with its plane of
    /// weights (per pixel, row-major), then the diagonal to match; entries for edges leaving
    /// the grid stay 0. Throws `std::invalid_argument` if a weight becomes NaN or infinite.
    template <class Change>
    void reweight(Change&& change) {
        for (std::size_t d = 0; d < weights_.size(); ++d) change(d, std::span<T>(weights_[d]));
        clear_edges_outside();
        update_diagonal();
        check_weights();
    }

    /// The system's edge weights W as a similarity (a view of them): `weighted_aggregate` over
    /// the system's `grid_stencil` with `sum_with_data(alpha, xhat)` is `jacobi_step`.
    edge_weights<T> edges() const { return edge_weights<T>(height, width, offsets, kernel::plane_pointers(weights_)); }

    /// The stencil kernel over this system's weights (a view of them).
    using stencil_kernel = kernel::stencil<Arch, T>;
    stencil_kernel engine() const { return stencil_kernel(height, width, offsets, kernel::plane_pointers(weights_)); }

    /// Throws `std::invalid_argument` (from `where`) unless `x` has an entry per pixel.
    void require_size(std::span<const T> x, std::string_view where, std::string_view name = "x") const {
        detail::require(x.size() == size(), where, [&] {
            return std::string(name) + " has " + std::to_string(x.size()) + " entries for a system of " +
                   std::to_string(size());
        });
    }

    /// The largest |dy| or |dx| of the stencil.
    std::size_t reach() const noexcept {
        std::size_t r = 0;
        for (const auto& o : offsets) r = std::max({r, std::size_t(o.dy), std::size_t(std::abs(o.dx))});
        return r;
    }

    /// Flat index shift of direction o.
    std::ptrdiff_t shift(std::size_t o) const noexcept { return offsets[o].dy * std::ptrdiff_t(width) + offsets[o].dx; }

    /// y = A x.
    void apply(const T* x, T* y) const {
        stencil_pass(x, [y, product = product_of()](std::size_t i, auto own, auto neighbours) {
            kernel::lane_store(y, i, product(i, own, neighbours));
        });
    }
    buffer<T> apply(std::span<const T> x) const {
        require_size(x, "ar_system::apply");
        buffer<T> y(size());
        apply(x.data(), y.data());
        return y;
    }

    /// y = A x; returns <x, A x> (what conjugate gradients needs of it) from the same
    /// pass, accumulated in double per chunk of 65536 pixels and over the chunks in order,
    /// so the sum does not depend on the thread count.
    double apply_and_dot(const T* x, T* y) const {
        const std::size_t chunks = std::max<std::size_t>(1, size() / 65536);
        std::vector<double> partial(chunks, 0.0);
        const stencil_kernel e = engine();
        const auto product = product_of();
        detail::parallel_for(chunks, threads, [&](std::size_t t) {
            double sum = 0;
            e.range(x, e.band_edge(t, chunks), e.band_edge(t + 1, chunks), [y, product, &sum](std::size_t i, auto own, auto neighbours) {
                const auto ax = product(i, own, neighbours);
                kernel::lane_store(y, i, ax);
                if constexpr (std::is_arithmetic_v<decltype(ax)>) sum += double(own) * double(ax);
                else sum += double(xsimd::hadd(own * ax));
            });
            partial[t] = sum;
        });
        return std::accumulate(partial.begin(), partial.end(), 0.0);
    }

    /// One Jacobi sweep: x_i <- (sum_j W_ij x_j + alpha_i xhat_i) / (sum_j W_ij + alpha_i), 0 where
    /// the denominator is 0: the weighted aggregate of the neighbours with `sum_with_data`
    /// (`edges()` over the `grid_stencil`), computed by the same kernel.
    buffer<T> jacobi_step(std::span<const T> x) const {
        require_size(x, "ar_system::jacobi_step");
        buffer<T> y(size());
        jacobi_step(rhs.data(), x.data(), y.data());
        return y;
    }
    /// The same sweep on A x = b for another right-hand side b: y_i = (sum_j W_ij x_j + b_i) / (sum_j W_ij + alpha_i).
    void jacobi_step(const T* b, const T* x, T* y) const {
        const auto of = [](const T* a) { return [a](std::size_t i, auto like) { return kernel::lane_load(a, i, like); }; };
        engine().template pass<true>(x, threads, kernel::data_term_finish(y, of(alpha_.data()), of(b)));
    }

    /// z_out = z + omega D^-1 (r - A z): one damped Jacobi sweep on A z = r, in one pass.
    void relax(const T* r, const T* z, T* z_out, double omega) const { stencil_pass(z, relaxation(r, z_out, omega)); }

    /// out = r - A z, in one pass.
    void residual(const T* r, const T* z, T* out) const { stencil_pass(z, residual_of(r, out)); }

    /// Calls finish(i, x_i, sum_j W_ij x_j) for every pixel i, the last two as SIMD
    /// batches of the pixels i, i + 1, ... in the interior (where every neighbour
    /// index lies inside the image's flat range) and as scalars at the ends. One
    /// pass: each pixel reads its neighbours' x and the weights of its edges (W_d[i]
    /// to i + s_d, W_d[i - s_d] from i - s_d), so the weights, x and the outputs
    /// stream through memory once.
    template <class Finish>
    void stencil_pass(const T* x, Finish&& finish) const {
        engine().pass(x, threads, finish);
    }

    /// A stage of `sweeps`: a damped Jacobi sweep with damping `omega`, or the residual; a
    /// sweep `from_zero` takes z = 0 instead of its input, so it reads neither z nor the
    /// weights and costs no stencil (the first sweep of a V-cycle).
    struct sweep_stage {
        double omega = 0;
        bool residual = false;
        bool from_zero = false;
    };

    /// Stencil passes on A z = r, one per stage, in one pass over memory (see `pipelined`):
    /// stage k reads what stage k - 1 wrote (the first reads z) and writes `work` for even
    /// k, z for odd k; a sweep writes z + omega D^-1 (r - A z), or z + omega t (r - A z) with t
    /// = `inverse_smoothing` when given, the residual r - A z. Equal, bit for bit, to the
    /// separate passes (a sweep from zero: to `relax` from a z of zeros).
    void sweeps(const T* r, T* z, T* work, std::span<const sweep_stage> stages,
                const T* inverse_smoothing = nullptr) const {
        const stencil_kernel e = engine();
        pipelined(e, z, work, stages.size(), [&](std::size_t k) {
            T* out = k % 2 ? z : work;
            const sweep_stage stage = stages[k];
            const auto relax_finish = relaxation(r, out, stage.omega, inverse_smoothing);
            const auto residual_finish = residual_of(r, out);
            return [=, &e](const T* input, std::size_t begin, std::size_t end) {
                if (stage.from_zero && !stage.residual) return stencil_kernel::zero_range(begin, end, relax_finish);
                if (stage.residual) e.range(input, begin, end, residual_finish);
                else e.range(input, begin, end, relax_finish);
            };
        });
    }

    /// `count` passes over the pixels in one pass over memory: pass k runs over x for even k
    /// and y for odd k, as `pass_of(k)(input, begin, end)` does for the pixels of [begin, end),
    /// writing what pass k + 1 reads. Each pass follows the one before far enough behind (`lag` pixels) to read only
    /// finished pixels and close enough that they are still in cache; a pass may overwrite
    /// the buffer the pass before it reads where that one no longer reads. On `threads`
    /// threads each takes a band of the image; pass k leaves k lag pixels at each seam
    /// between bands, done pass by pass once every band is.
    template <class PassOf>
    void pipelined(const stencil_kernel& e, const T* x, const T* y, std::size_t count, PassOf&& pass_of) const {
        if (count == 0) return;
        const std::size_t n = size(), lag = e.reach_in_pixels() + 2 * lanes + 1;
        std::size_t chunks = std::size_t(std::max(threads, 1));
        if (n < chunks * 2 * (count + 1) * lag) chunks = 1;   // bands far longer than their seams, or one band
        const auto edge = [&](std::size_t t) { return e.band_edge(t, chunks); };
        // Band t's pass k covers [inner(k, t).first, inner(k, t).second); the seams lie between.
        const auto inner = [&](std::size_t k, std::size_t t) {
            return std::pair{t == 0 ? std::size_t(0) : edge(t) + k * lag, t + 1 == chunks ? n : edge(t + 1) - k * lag};
        };
        const T* input[2] = {x, y};
        const auto run = [&](std::size_t k, std::size_t begin, std::size_t end) {
            if (begin < end) pass_of(k)(input[k % 2], begin, end);
        };
        detail::parallel_for(chunks, threads, [&](std::size_t t) {
            const std::size_t step = std::max<std::size_t>(4096, lag);
            std::vector<std::size_t> done(count);   // pass k has done [inner(k, t).first, done[k])
            for (std::size_t k = 0; k < count; ++k) done[k] = inner(k, t).first;
            for (std::size_t begin = edge(t); begin < edge(t + 1); begin += step) {
                const std::size_t end = std::min(edge(t + 1), begin + step);
                for (std::size_t k = 0; k < count; ++k) {
                    const std::size_t behind = k * lag;
                    const std::size_t ready = std::min(inner(k, t).second, end == n ? n : (end > behind ? end - behind : 0));
                    if (ready > done[k]) run(k, done[k], ready), done[k] = ready;
                }
            }
        });
        for (std::size_t k = 1; k < count; ++k)
            detail::parallel_for(chunks - 1, threads, [&](std::size_t t) { run(k, inner(k, t).second, inner(k, t + 1).first); });
    }

    /// The `finish` of a damped Jacobi sweep: out_i = z_i + omega (r_i - (A z)_i) / d_i, or
    /// z_i + omega (r_i - (A z)_i) t_i with t = `inverse_smoothing` when given (pixels whose
    /// d is 0 keep z_i).
    auto relaxation(const T* r, T* out, double omega, const T* inverse_smoothing = nullptr) const {
        return [diagonal = diagonal_.data(), r, out, omega, inverse_smoothing](std::size_t i, auto own, auto neighbours) {
            using V = decltype(own);
            const V d = kernel::lane_load(diagonal, i, own);
            const V residual = kernel::lane_load(r, i, own) - (d * own - neighbours);
            const V step = inverse_smoothing ? residual * kernel::lane_load(inverse_smoothing, i, own) : simd::divide(residual, d);
            kernel::lane_store(out, i, kernel::lane_pick(d > V(T(0)), own + V(T(omega)) * step, own));
        };
    }

    static constexpr std::size_t lanes = stencil_kernel::lanes;

    /// (A x)_i = d_i x_i - sum_j W_ij x_j, from a stencil pass's `own` and `neighbours`. The
    /// finishes hold what they read by value, not through `this`: a pass's stores (xsimd's,
    /// which may alias anything) would otherwise reload every pointer behind it per batch.
    auto product_of() const {
        return [diagonal = diagonal_.data()](std::size_t i, auto own, auto neighbours) {
            return own * kernel::lane_load(diagonal, i, own) - neighbours;
        };
    }

    /// The `finish` of the residual: out_i = r_i - (A z)_i.
    auto residual_of(const T* r, T* out) const {
        return [product = product_of(), r, out](std::size_t i, auto own, auto neighbours) {
            kernel::lane_store(out, i, kernel::lane_load(r, i, own) - product(i, own, neighbours));
        };
    }

    /// The largest flat shift of the stencil.
    std::size_t reach_in_pixels() const { return engine().reach_in_pixels(); }
    /// The pixels the passes compute in whole batches (`kernel::stencil::vector_zone`).
    std::pair<std::size_t, std::size_t> vector_zone() const { return engine().vector_zone(); }

    /// finish(i, sum_j f(W_ij)) for every pixel i (`kernel::stencil::edge_sums`).
    template <class F, class Finish>
    void edge_sums(F&& f, Finish&& finish) const {
        engine().edge_sums(f, finish);
    }

private:
    /// What the constructors from a guide share, around `compute_weights()` (which fills
    /// `weights`): the checks of the stencil, the floor and the data term, the stencil's
    /// directions; then the diagonal and the check of the weights.
    template <class ComputeWeights>
    void build(const grid_stencil& stencil, double min_weight, ComputeWeights&& compute_weights) {
        stencil.check(extents{height * width, height * width});
        detail::require(std::isfinite(min_weight) && min_weight >= 0, "ar_system",
                        [&] { return "min_weight must be finite and >= 0, got " + std::to_string(min_weight); });
        check_data_term();
        offsets = stencil.forward_offsets();
        compute_weights();
        update_diagonal();
        check_weights();
    }

    /// Throws unless alpha and b have an entry per pixel, alpha is finite and >= 0, b is
    /// finite, and something is observed.
    void check_data_term() const {
        const std::size_t n = height * width;
        detail::require(alpha_.size() == n && rhs.size() == n, "ar_system", [&] {
            return "guide " + std::to_string(height) + " x " + std::to_string(width) + " has " + std::to_string(n) +
                   " pixels, alpha " + std::to_string(alpha_.size()) + " and b " + std::to_string(rhs.size());
        });
        bool observed = false;
        for (std::size_t i = 0; i < n; ++i) {
            detail::require(std::isfinite(alpha_[i]) && alpha_[i] >= 0 && std::isfinite(rhs[i]), "ar_system", [&] {
                return "alpha must be finite and >= 0 and b finite, got alpha = " + std::to_string(alpha_[i]) +
                       ", b = " + std::to_string(rhs[i]) + " at pixel " + std::to_string(i);
            });
            observed = observed || alpha_[i] > 0;
        }
        detail::require(observed, "ar_system", [] {
            return std::string("nothing is observed (alpha is 0 everywhere): the system has no data term");
        });
    }

    /// Throws unless every edge weight is finite and >= 0, as the Laplacian needs: a custom
    /// similarity's kernel may give anything, and the floor min_weight keeps a NaN. Weights
    /// are at least the floor or NaN, and any weight that is NaN or infinite makes its
    /// pixels' diagonal so: the diagonal is checked (which also catches finite weights too
    /// large to add up), the weights only to report.
    void check_weights() const {
        int bad = 0;
        for (const T d : diagonal_) bad |= detail::not_finite(d);
        if (!bad) return;
        for (std::size_t o = 0; o < offsets.size(); ++o) {
            const buffer<T>& w = weights_[o];
            const std::size_t i = std::size_t(
                std::find_if(w.begin(), w.end(), [](T v) { return detail::not_finite(v) || v < T(0); }) - w.begin());
            detail::require(i == w.size(), "ar_system", [&] {
                return "by the similarity, the edge from pixel (" + std::to_string(i / width) + ", " +
                       std::to_string(i % width) + ") to its neighbour at offset (" + std::to_string(offsets[o].dy) +
                       ", " + std::to_string(offsets[o].dx) + ") has the weight " + std::to_string(double(w[i])) +
                       "; edge weights must be finite and >= 0";
            });
        }
        const std::size_t i = std::size_t(
            std::find_if(diagonal_.begin(), diagonal_.end(), [](T d) { return detail::not_finite(d) != 0; }) - diagonal_.begin());
        detail::require(false, "ar_system", [&] {
            return "the edge weights of pixel (" + std::to_string(i / width) + ", " + std::to_string(i % width) +
                   ") and its alpha add up to " + std::to_string(double(diagonal_[i])) + ", which is not finite";
        });
    }

    /// alpha and b = alpha xhat of observations `xhat` with confidences `confidence`, both h x w.
    struct data_term {
        buffer<T> alpha, b;
    };
    template <class X, class A>
    static data_term observations(std::size_t h, std::size_t w, const xt::xexpression<X>& xhat,
                                  const xt::xexpression<A>& confidence) {
        const xt::xtensor<double, 2> x = xt::cast<double>(xhat.derived_cast());
        const xt::xtensor<double, 2> a = xt::cast<double>(confidence.derived_cast());
        detail::require(x.shape(0) == h && x.shape(1) == w && a.shape() == x.shape(), "ar_system", [&] {
            return "guide " + std::to_string(h) + " x " + std::to_string(w) + ", xhat " +
                   detail::shape_string(x.shape()) + " and alpha " + detail::shape_string(a.shape()) +
                   " must have the same size";
        });
        // alpha itself is checked by the constructor this feeds; xhat only where it is observed.
        data_term d{buffer<T>(h * w), buffer<T>(h * w, T(0))};
        for (std::size_t i = 0; i < h * w; ++i) {
            const double ai = a.data()[i];
            d.alpha[i] = T(ai);
            if (ai > 0) {
                detail::require(std::isfinite(x.data()[i]), "ar_system", [&] {
                    return "xhat is not finite at observed pixel " + std::to_string(i);
                });
                d.b[i] = T(ai * x.data()[i]);
            }
        }
        return d;
    }
    template <similarity S>
    ar_system(const pixel_rows<double>& g, const grid_stencil& stencil, const S& sim, data_term d,
              double min_weight)
        : ar_system(g, stencil, sim, std::move(d.alpha), std::move(d.b), min_weight) {}

    /// Sets to 0 the weight of every edge whose neighbour lies outside the grid.
    void clear_edges_outside() {
        for (std::size_t d = 0; d < offsets.size(); ++d) {
            const auto [c0, c1] = kernel::columns_inside(offsets[d].dx, width);
            T* w = weights_[d].data();
            for (std::size_t r = 0; r < height; ++r) {
                if (r + std::size_t(offsets[d].dy) >= height) std::fill(w + r * width, w + (r + 1) * width, T(0));
                std::fill(w + r * width, w + r * width + c0, T(0));
                std::fill(w + r * width + std::max(c0, c1), w + (r + 1) * width, T(0));
            }
        }
    }

    /// diagonal = alpha + the weights of each pixel's edges.
    void update_diagonal() {
        diagonal_.resize(size());
        edge_sums([](auto w) { return w; }, [&](std::size_t i, auto sum) {
            kernel::lane_store(diagonal_.data(), i, kernel::lane_load(alpha_, i, sum) + sum);
        });
    }

    std::vector<buffer<T>> weights_;
    buffer<T> alpha_;
    buffer<T> diagonal_;
};

/// The colour Gaussian weight of the AR model, w_ij = exp(-|g_i - g_j|^2 / (2 sigma_r^2)
/// - |p_i - p_j|^2 / (2 sigma_s^2)) (sigma_s infinite: no spatial term), as a
/// `patch_distance` of radius 0 for a guide of `channels` channels.
inline patch_distance colour_weights(std::size_t height, std::size_t width, std::size_t channels, double sigma_r,
                                     double sigma_s = std::numeric_limits<double>::infinity()) {
    return patch_distance(height, width, 0, sigma_r * std::sqrt(2.0 / double(channels)), 0.0, sigma_s);
}

}  // namespace nonlocal
