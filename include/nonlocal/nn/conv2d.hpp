#pragma once
/// @file nn/conv2d.hpp
/// 2-D convolution with the weights and layout of PyTorch's `nn.Conv2d` (NCHW), in float or
/// double: stride, zero padding, dilation, groups (depthwise included), optional bias and
/// an activation applied as the results are stored.
///
/// Two algorithms:
/// - `gemm`: for each batch item and group, y [Cout / g, Ho Wo] = W [Cout / g, K] times
///   the image's columns [K, Ho Wo] (K = Cin / g kh kw): W packed once, when the layer is
///   built (`simd::packed_rows`); the panels of output pixels shared out among the threads.
///   Kernels of more than one tap read the columns in place (an implicit GEMM,
///   `simd::rows_in_place`) from one zero-padded copy of the image, dealt into phases for a
///   stride, along whose rows the outputs go (the padding columns computed and not stored);
///   1 x 1 kernels gather their pixels into each panel as the product reaches it
///   (`simd::packed_on_demand`, a panel in L2 at a time);
/// - `direct`: one input channel per group (depthwise), vectors of outputs accumulated in
///   registers over the kh kw taps from a zero-padded copy of the input plane (a stride-2
///   plane's columns dealt into two phases). Kernels of 3 x 3 and 5 x 5 whose rows are
///   not dilated sweep blocks of rows: each padded row is loaded once per tap column and
///   serves every output row of the block it is a tap of. The channels are shared out among
///   the threads in blocks, each block padding its planes in one work array.
/// `automatic` takes `direct` for one input channel per group, `gemm` otherwise.

#include <algorithm>
#include <array>
#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/buffer.hpp"
#include "nonlocal/config.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/tensor.hpp"
#include "nonlocal/execution.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/simd/activation.hpp"
#include "nonlocal/simd/linear.hpp"
#include "nonlocal/simd/vector_ops.hpp"

namespace nonlocal::detail {
/// Output length of a window of `kernel` taps `dilation` apart, `stride` apart over `size`
/// values padded by `padding` on each side; 0 when the window does not fit.
constexpr std::size_t window_count(std::size_t size, std::size_t kernel, std::size_t stride, std::size_t padding,
                                   std::size_t dilation) noexcept {
    const std::size_t span = dilation * (kernel - 1) + 1, padded = size + 2 * padding;
    return padded < span ? 0 : (padded - span) / stride + 1;
}
/// The outputs o in [first, last) whose tap o stride + offset - padding lies in [0, size).
inline std::pair<std::size_t, std::size_t> outputs_inside(std::size_t outputs, std::size_t size, std::size_t stride,
                                                          std::size_t offset, std::size_t padding) noexcept {
    // o stride + offset >= padding, and o stride + offset <= padding + size - 1.
    const std::size_t first = offset >= padding ? 0 : (padding - offset + stride - 1) / stride;
    const std::size_t last = padding + size <= offset ? 0 : std::min(outputs, (padding + size - 1 - offset) / stride + 1);
    return {std::min(first, last), last};
}
}  // namespace nonlocal::detail

namespace nonlocal::nn {

/// A pair of sizes along (height, width); one number stands for both, as in PyTorch.
struct size2 {
    std::size_t h = 0, w = 0;
    constexpr size2() = default;
    constexpr size2(std::size_t both) noexcept : h(both), w(both) {}   // NOLINT: 3 means (3, 3)
    constexpr size2(std::size_t h_, std::size_t w_) noexcept : h(h_), w(w_) {}
    friend constexpr bool operator==(size2, size2) = default;
    /// Written as "(h, w)".
    friend std::ostream& operator<<(std::ostream& out, size2 s) { return out << '(' << s.h << ", " << s.w << ')'; }
};

/// How `conv2d` computes (see the file's comment).
enum class conv_algorithm { automatic, gemm, direct };

/// `nn.Conv2d`'s arguments that its weight does not tell.
struct conv2d_options {
    size2 stride = 1;
    size2 padding = 0;    ///< zeros on each side
    size2 dilation = 1;
    std::size_t groups = 1;
    conv_algorithm algorithm = conv_algorithm::automatic;
};

template <class T>
class conv2d;

/// y [B, Cout, Ho, Wo] = `c`'s convolution of x [B, Cin, H, W] on `threads` threads, by the
/// algorithm `c`'s options and shapes choose at run time (`conv2d::apply`). Not inline: a
/// program that compiles it once (nonlocal/nn/instances.hpp) declares it `extern` elsewhere.
template <class Arch, class T>
void convolve(const conv2d<T>& c, const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, int threads);

/// y = a(conv2d(x, W) + b) with `nn.Conv2d`'s weight [Cout, Cin / groups, kh, kw] and bias
/// [Cout] or none.
template <class T = float>
class conv2d {
public:
    conv2d() = default;

    /// Throws `std::invalid_argument` unless groups divide Cout, the kernel is not empty,
    /// stride and dilation are positive, and bias is [Cout] or [0].
    explicit conv2d(xt::xtensor<T, 4> weight, xt::xtensor<T, 1> bias = {}, const conv2d_options& options = {},
                    simd::activation act = simd::activation::identity)
        : weight_(std::move(weight)), bias_(std::move(bias)), options_(options), act_(act) {
        const auto& s = weight_.shape();
        const std::size_t g = options_.groups;
        detail::require(s[0] > 0 && s[1] > 0 && s[2] > 0 && s[3] > 0 && (bias_.size() == 0 || bias_.size() == s[0]),
                        "nn::conv2d", [&] {
                            return "weight " + detail::shape_string(s) + " [Cout, Cin / groups, kh, kw] not empty and bias " +
                                   detail::shape_string(bias_.shape()) + " [Cout] or [0]";
                        });
        detail::field_checks("conv2d_options")
            .need(g > 0 && s[0] % g == 0, "groups", "positive and dividing Cout of weight " + detail::shape_string(s), g)
            .need(options_.stride.h > 0 && options_.stride.w > 0, "stride", "positive", options_.stride)
            .need(options_.dilation.h > 0 && options_.dilation.w > 0, "dilation", "positive", options_.dilation)
            .need(options_.algorithm != conv_algorithm::direct || s[1] == 1, "algorithm",
                  "automatic or gemm unless each group has one input channel (weight " + detail::shape_string(s) + ")",
                  "direct")
            .check("nn::conv2d");
        // Each group's weights [Cout / g, K] packed once as the GEMM reads them.
        if (!direct()) {
            const std::size_t rows = s[0] / g, K = s[1] * s[2] * s[3];
            for (std::size_t group = 0; group < g; ++group)
                packed_.emplace_back(row_matrix<const T>{weight_.data() + group * rows * K, rows, K});
        }
    }

    const xt::xtensor<T, 4>& weight() const noexcept { return weight_; }   ///< [Cout, Cin / groups, kh, kw]
    const xt::xtensor<T, 1>& bias() const noexcept { return bias_; }       ///< [Cout], or [0]
    const conv2d_options& options() const noexcept { return options_; }
    simd::activation activation() const noexcept { return act_; }
    std::size_t in_channels() const noexcept { return weight_.shape(1) * options_.groups; }
    std::size_t out_channels() const noexcept { return weight_.shape(0); }
    size2 kernel() const noexcept { return {weight_.shape(2), weight_.shape(3)}; }

    /// The output's height and width for an input of `height` x `width`.
    size2 output_size(std::size_t height, std::size_t width) const noexcept {
        const conv2d_options& o = options_;
        return {detail::window_count(height, kernel().h, o.stride.h, o.padding.h, o.dilation.h),
                detail::window_count(width, kernel().w, o.stride.w, o.padding.w, o.dilation.w)};
    }

    /// Whether every output is as large as its input: stride 1 and the padding on each side
    /// half the dilated kernel's reach, 2 p = d (k - 1).
    bool keeps_size() const noexcept {
        const conv2d_options& o = options_;
        return o.stride == size2(1) && 2 * o.padding.h == o.dilation.h * (kernel().h - 1) &&
               2 * o.padding.w == o.dilation.w * (kernel().w - 1);
    }

    /// The convolution of x [B, Cin, H, W] (or [Cin, H, W]): [B, Cout, Ho, Wo] (or [Cout, Ho,
    /// Wo]), on the threads of `policy` (the result does not depend on their number).
    /// Throws `std::invalid_argument` naming the shapes unless x has Cin channels and the
    /// padded image holds the dilated kernel.
    template <class Arch = default_arch, class X, execution_policy Ex = execution::sequenced_policy>
    auto operator()(const xt::xexpression<X>& x, Ex policy = {}) const {
        constexpr std::size_t R = detail::static_rank<X>;
        static_assert(R == 3 || R == 4, "nonlocal::nn::conv2d: x is [B, C, H, W] or [C, H, W]");
        return operator()<Arch>(detail::contiguous<T, R>(x), policy);
    }

    /// The same, of an input already borrowed or copied as one row-major array (a block
    /// that reads its input again, for a residual or a concatenation, borrows it once).
    template <class Arch = default_arch, std::size_t R, execution_policy Ex = execution::sequenced_policy>
    xt::xtensor<T, R> operator()(const detail::contiguous<T, R>& xc, Ex policy = {}) const {
        const std::size_t B = R == 4 ? xc.shape(0) : 1, H = xc.shape(R - 2), W = xc.shape(R - 1);
        const size2 out = output_size(H, W);
        detail::require(xc.shape(R - 3) == in_channels() && out.h > 0 && out.w > 0, "nn::conv2d", [&] {
            return "x " + detail::shape_string(xc.shape()) + " must have " + std::to_string(in_channels()) +
                   " channels and room for the kernel " + detail::shape_string(weight_.shape()) +
                   " (dilation " + std::to_string(options_.dilation.h) + ", " + std::to_string(options_.dilation.w) +
                   ", padding " + std::to_string(options_.padding.h) + ", " + std::to_string(options_.padding.w) + ")";
        });
        std::array<std::size_t, R> shape;
        if constexpr (R == 4) shape = {B, out_channels(), out.h, out.w};
        else shape = {out_channels(), out.h, out.w};
        xt::xtensor<T, R> y = xt::empty<T>(shape);
        apply<Arch>(xc.data(), B, H, W, y.data(), detail::thread_count(policy));
        return y;
    }

    /// y [B, Cout, Ho, Wo] = the convolution of x [B, Cin, H, W], raw arrays of the shapes
    /// `output_size` gives, on `threads` threads.
    template <class Arch = default_arch>
    void apply(const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, int threads = 1) const {
        convolve<Arch>(*this, x, B, H, W, y, threads);
    }

private:
    template <class Arch, class U>
    friend void convolve(const conv2d<U>&, const U*, std::size_t, std::size_t, std::size_t, U*, int);

    xt::xtensor<T, 4> weight_;
    xt::xtensor<T, 1> bias_;
    conv2d_options options_;
    simd::activation act_ = simd::activation::identity;
    std::vector<simd::packed_rows<T>> packed_;   // the gemm algorithm's weights, a group each

    bool direct() const noexcept {
        return options_.algorithm == conv_algorithm::direct ||
               (options_.algorithm == conv_algorithm::automatic && weight_.shape(1) == 1);
    }

    template <class Arch>
    void convolve_gemm(const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, int threads) const {
        if (kernel() == size2(1)) convolve_pointwise<Arch>(x, B, H, W, y, threads);
        else convolve_implicit<Arch>(x, B, H, W, y, threads);
    }

    /// y's planes of `group` = a(W_group columns + bias) through the micro-kernel, each
    /// finished vector handed to `put(v, channel, column, lanes)` (channel within the group,
    /// lanes [0, lanes) of v its columns [column, column + lanes)).
    template <class Arch, class Columns, class Put>
    void multiply(std::size_t group, const Columns& columns, int threads, const Put& put) const {
        const T* bias = bias_.size() ? bias_.data() + group * (out_channels() / options_.groups) : nullptr;
        simd::with_activation(act_, [&](auto act) {
            simd::linear_rows<Arch>(
                packed_[group], columns,
                [&](std::size_t channel, std::size_t column, const auto& v, std::size_t lanes) {
                    using batch = std::decay_t<decltype(v)>;
                    put(simd::activate(act(), bias ? v + batch(bias[channel]) : v), channel, column, lanes);
                },
                threads);
        });
    }

    /// The gemm algorithm for kernels of more than one tap, an implicit GEMM: each group's
    /// channels copied once into a zero-padded work array, where row (c, ky, kx) of the
    /// columns is read in place, from tap (ky, kx) of channel c on. The padded plane is dealt
    /// into s.h x s.w phases, phase (r, t) holding the padded rows r, r + s.h, ... and of
    /// each their columns t, t + s.w, ... (one phase for stride 1): tap (ky, kx) of output
    /// (oy, ox) is then row oy + ky d.h / s.h and column ox + kx d.w / s.w of phase
    /// (ky d.h mod s.h, kx d.w mod s.w). The outputs go along a phase's rows, q = oy Wq + ox;
    /// the Wq - Wo past each row's end are computed and not stored. Where gathering copied
    /// each input value up to kh kw times, this copies it once.
    template <class Arch>
    void convolve_implicit(const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, int threads) const {
        const std::size_t g = options_.groups, cin = weight_.shape(1), cout = out_channels() / g;
        const std::size_t kh = kernel().h, kw = kernel().w, K = cin * kh * kw;
        const size2 out = output_size(H, W), s = options_.stride, p = options_.padding, d = options_.dilation;
        const std::size_t P = out.h * out.w;
        if (P == 0) return;
        // Rows and columns of a phase, and the values of one and of a channel's s.h s.w.
        const std::size_t Hq = (H + 2 * p.h + s.h - 1) / s.h, Wq = (W + 2 * p.w + s.w - 1) / s.w;
        const std::size_t phase = Hq * Wq, plane = s.h * s.w * phase;
        const std::size_t Q = (out.h - 1) * Wq + out.w;
        // The last tap of the last phase is read up to Q rounded up to a stored panel's width:
        // less than 64 bytes past the last plane.
        uninitialised_buffer<T> padded(cin * plane + simd::panel_layout<T>::width_step);
        simd::fill<Arch>(padded.data() + cin * plane, simd::panel_layout<T>::width_step, T(0));
        const auto phase_of = [&](std::size_t c, std::size_t py, std::size_t px) {   // padded row and column
            return padded.data() + c * plane + ((py % s.h) * s.w + px % s.w) * phase + py / s.h * Wq + px / s.w;
        };
        // Zeros where channel c's phases hold no pixel of the image: the padding, and the
        // rows and columns a phase has past the padded plane. Phase (r, t)'s row i is padded
        // row i s.h + r and its column j padded column j s.w + t; the image's are [top,
        // bottom) and [first, last).
        const auto zero_padding = [&](std::size_t c) {
            for (std::size_t r = 0; r < s.h; ++r)
                for (std::size_t t = 0; t < s.w; ++t) {
                    const auto [top, bottom] = detail::outputs_inside(Hq, H, s.h, r, p.h);
                    const auto [first, last] = detail::outputs_inside(Wq, W, s.w, t, p.w);
                    for (std::size_t i = 0; i < Hq; ++i) {
                        T* row = padded.data() + c * plane + (r * s.w + t) * phase + i * Wq;
                        if (i < top || i >= bottom) {
                            simd::fill<Arch>(row, Wq, T(0));
                            continue;
                        }
                        simd::fill<Arch>(row, first, T(0));
                        simd::fill<Arch>(row + last, Wq - last, T(0));
                    }
                }
        };
        std::vector<const T*> rows(K);
        for (std::size_t c = 0; c < cin; ++c)
            for (std::size_t ky = 0; ky < kh; ++ky)
                for (std::size_t kx = 0; kx < kw; ++kx) rows[(c * kh + ky) * kw + kx] = phase_of(c, ky * d.h, kx * d.w);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t group = 0; group < g; ++group) {
                const T* image = x + (b * in_channels() + group * cin) * H * W;
                detail::parallel_for(cin, threads, [&](std::size_t c) {
                    if (b == 0 && group == 0) zero_padding(c);   // the same places for every image
                    for (std::size_t iy = 0; iy < H; ++iy)
                        simd::deal<Arch>(image + (c * H + iy) * W, W, s.w,
                                         [&](std::size_t ix) { return phase_of(c, iy + p.h, ix + p.w); });
                }, detail::task_costs::even);
                T* planes = y + (b * out_channels() + group * cout) * P;
                multiply<Arch>(group, simd::rows_in_place<T>{K, Q, rows.data()}, threads,
                               [&](const auto& v, std::size_t channel, std::size_t q, std::size_t lanes) {
                                   // Lanes [l, end) of one output row each, past the columns not stored.
                                   T* to = planes + channel * P;
                                   for (std::size_t l = 0; l < lanes;) {
                                       const std::size_t oy = (q + l) / Wq, ox = (q + l) % Wq;
                                       if (ox >= out.w) {
                                           l += Wq - ox;
                                           continue;
                                       }
                                       const std::size_t end = std::min(lanes, l + out.w - ox);
                                       simd::store_lanes(v, l, end, to + oy * out.w + ox);
                                       l = end;
                                   }
                               });
            }
    }

    /// The gemm algorithm for 1 x 1 kernels: each panel of output pixels gathers its channels'
    /// pixels as the product reaches it, which packs them into the micro-kernel's panels.
    template <class Arch>
    void convolve_pointwise(const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, int threads) const {
        const std::size_t g = options_.groups, cin = weight_.shape(1), cout = out_channels() / g;
        size2 out = output_size(H, W);
        const size2 s = options_.stride, p = options_.padding;
        const std::size_t P = out.h * out.w, plane_size = H * W;
        // Stride 1 without padding maps each channel's H x W pixels in order to as many
        // outputs: the map as one row of H W, so that a panel of outputs is one contiguous run
        // of every channel.
        if (s == size2(1) && p == size2(0)) W = plane_size, H = 1, out = {1, P};
        // The outputs [inside.first, inside.second) of a row that fall inside the image.
        const std::pair<std::size_t, std::size_t> inside = detail::outputs_inside(out.w, W, s.w, 0, p.w);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t group = 0; group < g; ++group) {
                const T* image = x + (b * in_channels() + group * cin) * plane_size;
                // Channels [c0, c0 + depth) at the pixels of outputs [first, first + count),
                // written as [depth][width], zeros where an output falls in the padding. Along a
                // row of outputs the pixels are s.w apart: consecutive for s.w = 1, one copy.
                const auto columns = simd::pack_on_demand<T>(
                    cin, P, [&](std::size_t first, std::size_t count, std::size_t c0, std::size_t depth, std::size_t width, T* to) {
                        for (std::size_t j = 0; j < count;) {
                            const std::size_t oy = (first + j) / out.w, ox0 = (first + j) % out.w;
                            const std::size_t end = ox0 + std::min(count - j, out.w - ox0);   // outputs [ox0, end)
                            const std::size_t iy = oy * s.h;   // in padded rows
                            const bool in_image = iy >= p.h && iy < p.h + H;
                            const std::size_t from = in_image ? std::clamp(inside.first, ox0, end) : end;
                            const std::size_t to_ = in_image ? std::clamp(inside.second, from, end) : end;
                            for (std::size_t k = 0; k < depth; ++k) {
                                const T* row = image + (c0 + k) * plane_size + (in_image ? iy - p.h : 0) * W;
                                T* target = to + k * width + j - ox0;
                                simd::fill<Arch>(target + ox0, from - ox0, T(0));   // short: no call to memset
                                if (s.w == 1) simd::copy<Arch>(row + from - p.w, to_ - from, target + from);
                                else
                                    for (std::size_t ox = from; ox < to_; ++ox) target[ox] = row[ox * s.w - p.w];
                                simd::fill<Arch>(target + to_, end - to_, T(0));
                            }
                            j += end - ox0;
                        }
                    });
                T* planes = y + (b * out_channels() + group * cout) * P;
                multiply<Arch>(group, columns, threads, [&](const auto& v, std::size_t channel, std::size_t pixel, std::size_t lanes) {
                    simd::store_lanes(v, lanes, planes + channel * P + pixel);
                });
            }
    }

    /// The direct algorithm compiled for the kernel's size (3 x 3, 5 x 5 or any) and for each
    /// activation (`simd::with_activation`): chosen vector by vector, the activation's switch
    /// and constants stayed in the loop, which spilled the accumulators.
    template <class Arch>
    void convolve_direct(const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, int threads) const {
        const std::size_t kh = kernel().h, kw = kernel().w;
        simd::with_activation(act_, [&](auto act) {
            if (kh == 3 && kw == 3) convolve_direct<Arch, 3, 3>(x, B, H, W, y, threads, act);
            else if (kh == 5 && kw == 5) convolve_direct<Arch, 5, 5>(x, B, H, W, y, threads, act);
            else convolve_direct<Arch, 0, 0>(x, B, H, W, y, threads, act);
        });
    }

    // 16 lanes x 2 FMA ports x 4 cycles of latency: 8 independent accumulators (4 with 16
    // registers, which also hold the 9 taps of a 3 x 3 kernel).
    template <class Arch>
    static constexpr std::size_t accumulators_of = simd::vector_registers<Arch> >= 32 ? 8 : 4;
    // `sweep_rows` holds rows of row_block outputs, 2 vectors each, in its accumulators.
    template <class Arch>
    static constexpr std::size_t row_block = accumulators_of<Arch> / 2;

    /// One padded plane of the direct algorithm and the output plane it gives.
    template <class U>
    struct sweep {
        const U* padded;
        std::size_t row_stride;         // between padded rows (their s.w phases)
        const std::size_t* column_of;   // where tap (0, kx) starts in a padded row
        const U* taps;                  // [KH KW]
        U* plane;                       // [Ho, Wo]
        size2 out;
        std::size_t vectors;            // of a row of outputs
    };

    /// The direct algorithm's plane for a KH x KW kernel with rows SH apart and no dilation
    /// along them, by blocks of row_block rows x 2 vectors of outputs: each padded row a
    /// block reads is loaded once, at each tap kx, and serves every output row it is a tap
    /// of: (row_block - 1) SH + KH loads a column of taps for row_block outputs, where
    /// output by output took KH.
    template <class Arch, std::size_t KH, std::size_t KW, std::size_t SH, class Act>
    void sweep_rows(const sweep<T>& sw, xsimd::batch<T, Arch> bias, Act act) const {
        using batch = xsimd::batch<T, Arch>;
        constexpr std::size_t lanes = batch::size, R = row_block<Arch>, V = 2, reach = (R - 1) * SH + KH;
        batch taps[KH * KW];
        for (std::size_t t = 0; t < KH * KW; ++t) taps[t] = batch(sw.taps[t]);
        for (std::size_t oy0 = 0; oy0 < sw.out.h; oy0 += R)
            for (std::size_t v0 = 0; v0 < sw.vectors; v0 += V) {
                batch acc[R][V];
                std::size_t column[V];   // a block past the last vector repeats it, unstored
#pragma GCC unroll 2
                for (std::size_t c = 0; c < V; ++c) column[c] = std::min(v0 + c, sw.vectors - 1) * lanes;
#pragma GCC unroll 4
                for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 2
                    for (std::size_t c = 0; c < V; ++c) acc[r][c] = bias;
                const T* top = sw.padded + oy0 * SH * sw.row_stride;
#pragma GCC unroll 16
                for (std::size_t i = 0; i < reach; ++i)
#pragma GCC unroll 5
                    for (std::size_t kx = 0; kx < KW; ++kx)
#pragma GCC unroll 2
                        for (std::size_t c = 0; c < V; ++c) {
                            const batch x = batch::load_unaligned(top + i * sw.row_stride + sw.column_of[kx] + column[c]);
#pragma GCC unroll 4
                            for (std::size_t r = 0; r < R; ++r)
                                if (i >= r * SH && i - r * SH < KH) acc[r][c] = xsimd::fma(taps[(i - r * SH) * KW + kx], x, acc[r][c]);
                        }
                for (std::size_t r = 0; r < R && oy0 + r < sw.out.h; ++r)
                    for (std::size_t c = 0; c < V && v0 + c < sw.vectors; ++c) {
                        const std::size_t ox = (v0 + c) * lanes;
                        simd::store_lanes(simd::activate(act(), acc[r][c]), std::min(lanes, sw.out.w - ox),
                                          sw.plane + (oy0 + r) * sw.out.w + ox);
                    }
            }
    }

    /// The direct algorithm for a kernel of KH x KW taps (0 x 0: any size, known at run time)
    /// and the activation `Act` (a std::integral_constant).
    template <class Arch, std::size_t KH, std::size_t KW, class Act>
    void convolve_direct(const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, int threads, Act act) const {
        using batch = xsimd::batch<T, Arch>;
        constexpr std::size_t lanes = batch::size;
        const std::size_t C = out_channels(), per_input = C / options_.groups;
        const std::size_t kh = KH ? KH : kernel().h, kw = KW ? KW : kernel().w;
        const size2 out = output_size(H, W), s = options_.stride, p = options_.padding, d = options_.dilation;
        // The input plane padded with zeros and its columns dealt into s.w phases, phase r
        // holding padded columns r, r + s.w, ...: the tap (ky, kx) of outputs ox .. ox + lanes
        // is then one contiguous load, at row oy s.h + ky d.h, phase kx d.w mod s.w, from
        // ox + kx d.w / s.w. A phase is long enough for the last vector's lanes past Wo.
        const std::size_t rows = H + 2 * p.h, vectors = (out.w + lanes - 1) / lanes;
        const std::size_t phase = vectors * lanes + (kw - 1) * d.w / s.w + 1;
        std::vector<std::size_t> column_of(kw);   // where tap (0, kx) starts in a padded row
        for (std::size_t kx = 0; kx < kw; ++kx) column_of[kx] = (kx * d.w % s.w) * phase + kx * d.w / s.w;
        // Known kernels with rows neither dilated nor more than 2 apart sweep blocks of rows
        // (`sweep_rows`); the others go output vector by output vector, with the tables below.
        const bool sweeps = KH != 0 && d.h == 1 && (s.h == 1 || s.h == 2);
        constexpr std::size_t accumulators = accumulators_of<Arch>;
        const std::size_t count = out.h * vectors;
        // Where tap (ky, kx) starts from its output's, and where output vector k (row oy,
        // vector v, in order) reads the padded plane; it is stored at plane + oy Wo + v lanes.
        std::vector<std::size_t> offset_of, read_at;
        if (!sweeps) {
            offset_of.resize(kh * kw);
            for (std::size_t ky = 0; ky < kh; ++ky)
                for (std::size_t kx = 0; kx < kw; ++kx) offset_of[ky * kw + kx] = ky * d.h * s.w * phase + column_of[kx];
            read_at.resize(count);
            for (std::size_t k = 0; k < count; ++k) read_at[k] = k / vectors * s.h * s.w * phase + k % vectors * lanes;
        }
        // The channels in as many blocks as threads can share; each block pads its planes in
        // one work array, whose zeros (the padding) stay as the planes are copied in.
        const std::size_t planes = B * C, blocks = std::min(planes, std::size_t(std::max(threads, 1)) * 4);
        // Rows of `row_block` outputs read up to (row_block - 1) s.h rows past the last output's.
        const std::size_t spare_rows = (row_block<Arch> - 1) * s.h;
        detail::parallel_for(blocks, threads, [&](std::size_t part) {
            std::vector<T> padded((rows + spare_rows) * s.w * phase, T(0));
            for (std::size_t bc = part * planes / blocks; bc < (part + 1) * planes / blocks; ++bc) {
                const std::size_t b = bc / C, c = bc % C;
                const T* image = x + (b * in_channels() + c / per_input) * H * W;
                // Input column ix is padded column ix + p.w: phase (ix + p.w) mod s.w, at (ix + p.w) / s.w.
                for (std::size_t iy = 0; iy < H; ++iy)
                    simd::deal<Arch>(image + iy * W, W, s.w, [&](std::size_t ix) {
                        return padded.data() + ((iy + p.h) * s.w + (ix + p.w) % s.w) * phase + (ix + p.w) / s.w;
                    });
                const T* tap = weight_.data() + c * kh * kw;
                const batch bias(bias_.size() ? bias_(c) : T(0));
                T* plane = y + bc * out.h * out.w;
                if constexpr (KH != 0)
                    if (sweeps) {
                        const sweep<T> sw{padded.data(), s.w * phase, column_of.data(), tap, plane, out, vectors};
                        if (s.h == 1) sweep_rows<Arch, KH, KW, 1>(sw, bias, act);
                        else sweep_rows<Arch, KH, KW, 2>(sw, bias, act);
                        continue;
                    }
                batch taps[KH ? KH * KW : 1];   // held in registers when the size is known
                if constexpr (KH != 0)
                    for (std::size_t t = 0; t < KH * KW; ++t) taps[t] = batch(tap[t]);
                // The output vectors (row oy, vector v) in order, `accumulators` at a time, each
                // in a register of its own, so that their FMAs are independent.
                for (std::size_t k0 = 0, oy = 0, v = 0; k0 < count; k0 += accumulators) {
                    const std::size_t n = std::min(accumulators, count - k0);
                    const T* from[accumulators];
                    batch acc[accumulators];
#pragma GCC unroll 8
                    for (std::size_t j = 0; j < accumulators; ++j) {
                        from[j] = padded.data() + read_at[k0 + std::min(j, n - 1)];
                        acc[j] = bias;
                    }
#pragma GCC unroll 25
                    for (std::size_t t = 0; t < kh * kw; ++t) {
                        batch weight;
                        if constexpr (KH != 0) weight = taps[t];
                        else weight = batch(tap[t]);
#pragma GCC unroll 8
                        for (std::size_t j = 0; j < accumulators; ++j)
                            acc[j] = xsimd::fma(weight, batch::load_unaligned(from[j] + offset_of[t]), acc[j]);
                    }
                    for (std::size_t j = 0; j < n; ++j) {
                        const std::size_t ox = v * lanes;
                        simd::store_lanes(simd::activate(act(), acc[j]), std::min(lanes, out.w - ox),
                                          plane + oy * out.w + ox);
                        if (++v == vectors) v = 0, ++oy;
                    }
                }
            }
        }, detail::task_costs::even);
    }
};

template <class Arch, class T>
void convolve(const conv2d<T>& c, const T* x, std::size_t B, std::size_t H, std::size_t W, T* y, int threads) {
    if (c.direct()) c.template convolve_direct<Arch>(x, B, H, W, y, threads);
    else c.template convolve_gemm<Arch>(x, B, H, W, y, threads);
}

/// `convolve` of T on the default architecture (float, as the networks use it): declared
/// (`extern`) here when NONLOCAL_NN_EXTERN_INSTANCES is defined, defined by
/// nonlocal/nn/instances.hpp.
#define NONLOCAL_NN_CONVOLVE(prefix, T)                                                                        \
    prefix template void convolve<default_arch, T>(const conv2d<T>&, const T*, std::size_t, std::size_t, std::size_t, \
                                                   T*, int);
#ifdef NONLOCAL_NN_EXTERN_INSTANCES
NONLOCAL_NN_CONVOLVE(extern, float)
#endif

}  // namespace nonlocal::nn
