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
#include <cmath>
#include <cstddef>
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
#include "nonlocal/solve/ar_inputs.hpp"
#include "nonlocal/solve/ar_passes.hpp"
#include "nonlocal/solve/pipelined_passes.hpp"
#include "nonlocal/similarity/edge_weights.hpp"
#include "nonlocal/similarity/patch_distance.hpp"

namespace nonlocal {

/// The AR system A x = b on a grid, its weights, data term and the vectors its
/// passes read and write in precision T (double by default; float halves the
/// memory traffic of the solvers, which are bound by it).
template <class T = double, class Arch = default_arch>
class ar_system {
public:
    using value_type = T;

    ar_system() = default;

    /// The system from edge weights already computed (used for coarse grids): a plane of
    /// h x w weights per forward direction, whose entries for edges leaving the grid are
    /// set to 0.
    ar_system(std::size_t h, std::size_t w, std::vector<stencil_offset> dirs, std::vector<buffer<T>> wts,
              buffer<T> a, buffer<T> b)
        : height_(h), width_(w), offsets_(std::move(dirs)), rhs_(std::move(b)), weights_(std::move(wts)),
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
        A.height_ = h, A.width_ = w, A.offsets_ = std::move(dirs), A.weights_ = std::move(wts);
        A.diagonal_ = std::move(diag);
        A.alpha_.resize(A.size());
        A.rhs_.assign(A.size(), T(0));
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
        : ar_system(g, stencil, sim, detail::ar_observations<T>(g.height, g.width, xhat, confidence), min_weight) {}

    /// The system of a guide given as pixel rows with its data term given directly, per
    /// pixel in row order: `confidence` (alpha) and `b` = alpha xhat.
    /// Throws `std::invalid_argument` when sizes differ, alpha is negative or not
    /// finite, b is not finite, nothing is observed, min_weight is negative or NaN, or
    /// an edge weight is NaN or infinite.
    template <similarity S>
    ar_system(const pixel_rows<double>& g, const grid_stencil& stencil, const S& sim, buffer<T> confidence,
              buffer<T> b, double min_weight = 0.0)
        : height_(g.height), width_(g.width), rhs_(std::move(b)), alpha_(std::move(confidence)) {
        build(stencil, min_weight, [&] {
            if constexpr (detail::channel_sum_similarity<S>)
                weights_ = kernel::edge_weights_by_channel<Arch, T>(detail::to_planes<double>(g), offsets_, sim, min_weight);
            else
                weights_ = kernel::edge_weights_by_pixel<T>(g, offsets_, sim, min_weight);
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
        : height_(g.height), width_(g.width), rhs_(std::move(b)), alpha_(std::move(confidence)) {
        build(stencil, min_weight, [&] {
            weights_ = kernel::edge_weights_by_channel<Arch, T>(g, offsets_, sim, min_weight);
        });
    }

    std::size_t height() const noexcept { return height_; }
    std::size_t width() const noexcept { return width_; }
    std::size_t size() const noexcept { return height_ * width_; }
    /// The stencil's forward directions; each has a plane of `weights()`.
    const std::vector<stencil_offset>& offsets() const noexcept { return offsets_; }
    /// b = alpha xhat, per pixel.
    const buffer<T>& rhs() const noexcept { return rhs_; }
    /// Sets b to another right-hand side. Throws `std::invalid_argument` unless b has an
    /// entry per pixel, each finite.
    void set_rhs(buffer<T> b) {
        require_size(b, "ar_system::set_rhs", "b");
        detail::check_rhs_finite(b);
        rhs_ = std::move(b);
    }

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
        detail::check_ar_weights(diagonal_, weights_, offsets_, width_);
    }

    /// The system's edge weights W as a similarity (a view of them): `weighted_aggregate` over
    /// the system's `grid_stencil` with `sum_with_data(alpha, xhat)` is `jacobi_step`.
    edge_weights<T> edges() const { return edge_weights<T>(height_, width_, offsets_, kernel::plane_pointers(weights_)); }

    /// The stencil kernel over this system's weights (a view of them).
    using stencil_kernel = kernel::stencil<Arch, T>;
    stencil_kernel engine() const { return stencil_kernel(height_, width_, offsets_, kernel::plane_pointers(weights_)); }

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
        for (const auto& o : offsets_) r = std::max({r, std::size_t(o.dy), std::size_t(std::abs(o.dx))});
        return r;
    }

    /// Flat index shift of direction o.
    std::ptrdiff_t shift(std::size_t o) const noexcept { return offsets_[o].dy * std::ptrdiff_t(width_) + offsets_[o].dx; }

    // Each pass below runs on the threads of its `policy`, every pixel computed the same way
    // whatever their number: the results do not depend on it.

    /// y = A x.
    template <execution_policy Ex>
    void apply(Ex policy, const T* x, T* y) const {
        stencil_pass(policy, x,
                     [y, product = detail::ar_product(diagonal_.data())](std::size_t i, auto own, auto neighbors) {
                         kernel::lane_store(y, i, product(i, own, neighbors));
                     });
    }
    /// A x as a new vector.
    template <execution_policy Ex>
    buffer<T> apply(Ex policy, std::span<const T> x) const {
        require_size(x, "ar_system::apply");
        buffer<T> y(size());
        apply(policy, x.data(), y.data());
        return y;
    }
    /// The same on the calling thread.
    buffer<T> apply(std::span<const T> x) const { return apply(execution::seq, x); }

    /// y = A x; returns <x, A x> (what conjugate gradients needs of it) from the same
    /// pass, accumulated in double per chunk of 65536 pixels and over the chunks in order,
    /// so the sum does not depend on the thread count.
    template <execution_policy Ex>
    double apply_and_dot(Ex policy, const T* x, T* y) const {
        return detail::ar_apply_and_dot(engine(), diagonal_.data(), detail::thread_count(policy), x, y);
    }

    /// One Jacobi sweep: x_i <- (sum_j W_ij x_j + alpha_i xhat_i) / (sum_j W_ij + alpha_i), 0 where
    /// the denominator is 0: the weighted aggregate of the neighbours with `sum_with_data`
    /// (`edges()` over the `grid_stencil`), computed by the same kernel.
    template <execution_policy Ex>
    buffer<T> jacobi_step(Ex policy, std::span<const T> x) const {
        require_size(x, "ar_system::jacobi_step");
        buffer<T> y(size());
        jacobi_step(policy, rhs_.data(), x.data(), y.data());
        return y;
    }
    /// The same on the calling thread.
    buffer<T> jacobi_step(std::span<const T> x) const { return jacobi_step(execution::seq, x); }
    /// The same sweep on A x = b for another right-hand side b: y_i = (sum_j W_ij x_j + b_i) / (sum_j W_ij + alpha_i).
    template <execution_policy Ex>
    void jacobi_step(Ex policy, const T* b, const T* x, T* y) const {
        const auto of = [](const T* a) { return [a](std::size_t i, auto like) { return kernel::lane_load(a, i, like); }; };
        engine().template pass<true>(policy, x, kernel::data_term_finish(y, of(alpha_.data()), of(b)));
    }

    /// z_out = z + omega D^-1 (r - A z): one damped Jacobi sweep on A z = r, in one pass.
    template <execution_policy Ex>
    void relax(Ex policy, const T* r, const T* z, T* z_out, double omega) const {
        stencil_pass(policy, z, detail::ar_relaxation(diagonal_.data(), r, z_out, omega));
    }

    /// out = r - A z, in one pass.
    template <execution_policy Ex>
    void residual(Ex policy, const T* r, const T* z, T* out) const {
        stencil_pass(policy, z, detail::ar_residual(diagonal_.data(), r, out));
    }

    /// Calls finish(i, x_i, sum_j W_ij x_j) for every pixel i, the last two as SIMD
    /// batches of the pixels i, i + 1, ... in the interior (where every neighbour
    /// index lies inside the image's flat range) and as scalars at the ends. One
    /// pass: each pixel reads its neighbours' x and the weights of its edges (W_d[i]
    /// to i + s_d, W_d[i - s_d] from i - s_d), so the weights, x and the outputs
    /// stream through memory once.
    template <execution_policy Ex, class Finish>
    void stencil_pass(Ex policy, const T* x, Finish&& finish) const {
        engine().pass(policy, x, finish);
    }

    /// A stage of `sweeps` (`nonlocal::sweep_stage`).
    using sweep_stage = nonlocal::sweep_stage;

    /// Stencil passes on A z = r, one per stage, in one pass over memory
    /// (`detail::pipelined_passes`):
    /// stage k reads what stage k - 1 wrote (the first reads z) and writes `work` for even
    /// k, z for odd k; a sweep writes z + omega D^-1 (r - A z), or z + omega t (r - A z) with t
    /// = `inverse_smoothing` when given, the residual r - A z. Equal, bit for bit, to the
    /// separate passes (a sweep from zero: to `relax` from a z of zeros).
    template <execution_policy Ex>
    void sweeps(Ex policy, const T* r, T* z, T* work, std::span<const sweep_stage> stages,
                const T* inverse_smoothing = nullptr) const {
        detail::ar_sweeps(engine(), diagonal_.data(), detail::thread_count(policy), r, z, work, stages,
                          inverse_smoothing);
    }

    static constexpr std::size_t lanes = stencil_kernel::lanes;

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
        stencil.check(extents{size(), size()});
        detail::require(std::isfinite(min_weight) && min_weight >= 0, "ar_system",
                        [&] { return "min_weight must be finite and >= 0, got " + std::to_string(min_weight); });
        detail::check_ar_data_term(height_, width_, alpha_, rhs_);
        offsets_ = stencil.forward_offsets();
        compute_weights();
        update_diagonal();
        detail::check_ar_weights(diagonal_, weights_, offsets_, width_);
    }

    template <similarity S>
    ar_system(const pixel_rows<double>& g, const grid_stencil& stencil, const S& sim, detail::ar_data_term<T> d,
              double min_weight)
        : ar_system(g, stencil, sim, std::move(d.alpha), std::move(d.b), min_weight) {}

    /// Sets to 0 the weight of every edge whose neighbour lies outside the grid.
    void clear_edges_outside() {
        for (std::size_t d = 0; d < offsets_.size(); ++d) {
            const auto [c0, c1] = kernel::columns_inside(offsets_[d].dx, width_);
            T* w = weights_[d].data();
            for (std::size_t r = 0; r < height_; ++r) {
                if (r + std::size_t(offsets_[d].dy) >= height_) std::fill(w + r * width_, w + (r + 1) * width_, T(0));
                std::fill(w + r * width_, w + r * width_ + c0, T(0));
                std::fill(w + r * width_ + std::max(c0, c1), w + (r + 1) * width_, T(0));
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

    std::size_t height_ = 0, width_ = 0;
    std::vector<stencil_offset> offsets_;   // forward stencil directions
    buffer<T> rhs_;                         // b = alpha xhat
    std::vector<buffer<T>> weights_;        // a plane per direction, agreeing with offsets_
    buffer<T> alpha_;
    buffer<T> diagonal_;
};

}  // namespace nonlocal
