// weighted_aggregate and pairwise on shapes, policies and parameters drawn from the input,
// tested against the double-precision reference (the oracle of the unit tests) and literal
// loops: the fast path must refuse exactly the inputs the reference refuses (with
// std::invalid_argument), and agree with it on the others. Inputs are [B, H, n, d] with
// B <= 2, at most 3 heads (keys and values may have fewer: grouped-query), n, m <= 40 and
// d <= 17 (around the SIMD widths); values are multiples of 1/32 in [-4, 4). Neighborhoods:
// dense, causal, windows, padding and masks per pair (one, per item or per slice, and
// intersections), key ranges drawn query by query (the ranges kernel, blocks and rows);
// similarities: dot products, with a bias per pair, distances (lowered and from differences),
// cosines and a user's sum over channels.
#include <nonlocal/nonlocal.hpp>

#include "fuzz_support.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdio>
#include <type_traits>
#include <vector>

namespace {

using tensor4 = xt::xtensor<float, 4>;

tensor4 drawn_tensor(FuzzedDataProvider& in, std::size_t b, std::size_t h, std::size_t n, std::size_t d) {
    tensor4 t = xt::empty<float>({b, h, n, d});
    for (float& x : t) x = float(in.ConsumeIntegral<std::int8_t>()) / 32.0f;
    return t;
}

/// The fast result is the reference's up to float rounding: each element within
/// 1e-4 (1 + the largest |reference| of the result), the scale of the rounding of its sums.
template <class F, class R>
void require_close(const F& fast, const R& ref, const char* what) {
    nonlocal::fuzz::require(fast.shape() == ref.shape(), what);
    double scale = 1;
    for (double r : ref) scale = std::max(scale, 1 + std::abs(r));
    auto r = ref.begin();
    for (auto f = fast.begin(); f != fast.end(); ++f, ++r)
        if (!(std::abs(double(*f) - *r) <= 1e-4 * scale)) {
            std::fprintf(stderr, "fast %.9g, reference %.9g (scale %g)\n", double(*f), *r, scale);
            nonlocal::fuzz::require(false, what);
        }
}

template <class S, class Nb, class Nm>
void compare(const tensor4& q, const tensor4& k, const tensor4& v, const S& s, const Nb& nb, const Nm& nm, int threads) {
    tensor4 fast;
    const bool ran = nonlocal::fuzz::completed<std::invalid_argument>([&] {
        fast = nonlocal::weighted_aggregate(nonlocal::execution::parallel_policy{threads}, q, k, v, s, nb, nm);
    });
    xt::xtensor<double, 4> ref;
    const bool ref_ran = nonlocal::fuzz::completed<std::invalid_argument>(
        [&] { ref = nonlocal::reference::weighted_aggregate(q, k, v, s, nb, nm); });
    nonlocal::fuzz::require(ran == ref_ran, "the fast path refuses what the reference refuses");
    if (ran) require_close(fast, ref, "weighted_aggregate agrees with the reference");
}

template <class S, class Nb>
void with_normalization(FuzzedDataProvider& in, const tensor4& q, const tensor4& k, const tensor4& v, const S& s,
                        const Nb& nb, int threads) {
    switch (in.ConsumeIntegralInRange(0, 3)) {
        case 0: return compare(q, k, v, s, nb, nonlocal::softmax{}, threads);
        case 1: return compare(q, k, v, s, nb, nonlocal::count{}, threads);
        case 2: return compare(q, k, v, s, nb, nonlocal::none{}, threads);
        default:
            // C_i = sum_j s_ij is ill-conditioned for kernels of either sign: positive ones only.
            if constexpr (std::is_same_v<nonlocal::weight_function_t<S>, nonlocal::exp_weight>)
                return compare(q, k, v, s, nb, nonlocal::sum{}, threads);
    }
}

/// How many masks or biases a policy holds for B items of H heads: mostly 1, B or B x H,
/// sometimes another number (which both paths must refuse).
std::size_t drawn_count(FuzzedDataProvider& in, std::size_t b, std::size_t h) {
    switch (in.ConsumeIntegralInRange(0, 3)) {
        case 0: return 1;
        case 1: return b;
        case 2: return b * h;
        default: return in.ConsumeIntegralInRange(0, 7);
    }
}

/// `count` entries drawn for each of `size` positions, set with probability about 3/4, or
/// (for a float bias) values in [-4, 4) and -inf.
template <class T>
xt::xarray<T> drawn_entries(FuzzedDataProvider& in, std::vector<std::size_t> shape) {
    xt::xarray<T> t = xt::empty<T>(shape);
    for (T& x : t) {
        const auto byte = in.ConsumeIntegral<std::int8_t>();
        if constexpr (std::is_same_v<T, bool>) x = (byte & 3) != 0;
        else x = byte == -128 ? -INFINITY : T(byte) / T(32);
    }
    return t;
}

/// A user's sum over channels, not symmetric in the sign of the difference.
struct skewed_channels {
    using weight_function = nonlocal::exp_weight;
    using traits = nonlocal::similarity_traits<nonlocal::channel_sum_form>;
    template <class V>
    V channel_logit(V d) const { return d * V(0.25) - d * d * V(0.125); }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return nonlocal::channel_sum_logit(*this, q, k); }
};

/// Key ranges drawn for each query: runs of keys (stride 1) or strided keys, increasing and
/// without repeats, or none.
struct drawn_ranges {
    std::vector<std::vector<nonlocal::key_range>> ranges;

    drawn_ranges(FuzzedDataProvider& in, std::size_t n, std::size_t m) : ranges(n) {
        for (auto& row : ranges)
            for (std::size_t j = in.ConsumeIntegralInRange<std::size_t>(0, 3); j < m;) {
                const std::size_t count = in.ConsumeIntegralInRange<std::size_t>(1, 9);
                const std::size_t stride = in.ConsumeIntegralInRange<std::size_t>(1, 3);
                const std::size_t fit = std::min(count, (m - 1 - j) / stride + 1);
                row.push_back({j, fit, stride});
                j += (fit - 1) * stride + 1 + in.ConsumeIntegralInRange<std::size_t>(0, 12);
            }
    }
    void check(nonlocal::extents e) const {
        nonlocal::detail::require(e.queries == ranges.size(), "drawn_ranges", [] { return std::string("queries"); });
    }
    template <class F>
    void for_each_range(std::size_t i, nonlocal::extents, F&& f) const {
        for (const nonlocal::key_range& r : ranges[i]) f(r);
    }
};

template <class Nb>
void with_similarity(FuzzedDataProvider& in, const tensor4& q, const tensor4& k, const tensor4& v, const Nb& nb,
                     int threads) {
    const double h = 0.25 + in.ConsumeIntegralInRange(0, 64) / 8.0;
    if (in.ConsumeIntegralInRange(0, 5) == 0) {   // a bias per pair, now and then of another shape
        const std::size_t n = q.shape(2) + (in.ConsumeIntegralInRange(0, 15) == 0), m = k.shape(2);
        const auto bias = drawn_entries<float>(in, {drawn_count(in, q.shape(0), q.shape(1)), n, m});
        // softmax alone: a bias of -inf drops its pair from exponential weights, and is no weight otherwise.
        return compare(q, k, v, nonlocal::with_pair_bias(nonlocal::scaled_dot_product{}, bias), nb, nonlocal::softmax{},
                       threads);
    }
    switch (in.ConsumeIntegralInRange(0, 6)) {
        case 0: return with_normalization(in, q, k, v, nonlocal::scaled_dot_product{}, nb, threads);
        case 5: return with_normalization(in, q, k, v, nonlocal::squared_euclidean{}, nb, threads);
        // The skewed channels' logit is below d (0.25 x - 0.125 x^2 <= 0.125 per channel).
        case 6: return with_normalization(in, q, k, v, skewed_channels{}, nb, threads);
        // exp(<q, k>) overflows float beyond 88: logits kept within +-34 (|q| / 8).
        case 1: return with_normalization(in, tensor4(q / 8.0f), k, v, nonlocal::gaussian{}, nb, threads);
        case 2: return with_normalization(in, q, k, v, nonlocal::gaussian_distance{h}, nb, threads);
        case 3: return with_normalization(in, q, k, v, nonlocal::laplacian_distance{h}, nb, threads);
        default: return with_normalization(in, q, k, v, nonlocal::cosine{}, nb, threads);
    }
}

void aggregate(FuzzedDataProvider& in) {
    const std::size_t b = in.ConsumeIntegralInRange(0, 2), h = in.ConsumeIntegralInRange(0, 3);
    const std::size_t h_kv = in.ConsumeBool() ? h : in.ConsumeIntegralInRange(0, 3);
    const std::size_t rows = in.ConsumeIntegralInRange(0, 7), cols = in.ConsumeIntegralInRange(0, 7);
    const bool grid = in.ConsumeBool();
    const std::size_t n = grid ? rows * cols : in.ConsumeIntegralInRange(0, 40);
    const std::size_t m = grid || in.ConsumeBool() ? n : in.ConsumeIntegralInRange(0, 40);
    const std::size_t d = in.ConsumeIntegralInRange(0, 17), dv = in.ConsumeIntegralInRange(0, 17);
    const int threads = in.ConsumeIntegralInRange(1, 2);
    const std::size_t radius = in.ConsumeIntegralInRange(0, 4), kernel = in.ConsumeIntegralInRange(0, 9);
    const std::size_t dilation = in.ConsumeIntegralInRange(0, 3);
    const bool causal = in.ConsumeBool();
    const auto edges = in.ConsumeBool() ? nonlocal::border::shift : nonlocal::border::clip;
    const int kind = in.ConsumeIntegralInRange(0, 6);
    const tensor4 q = drawn_tensor(in, b, h, n, d), k = drawn_tensor(in, b, h_kv, m, d), v = drawn_tensor(in, b, h_kv, m, dv);
    switch (kind) {
        case 0: return with_similarity(in, q, k, v, nonlocal::dense{}, threads);
        case 1: return with_similarity(in, q, k, v, nonlocal::causal{}, threads);
        case 2: return with_similarity(in, q, k, v, nonlocal::window1d{radius, dilation, causal, edges}, threads);
        case 4: {   // padding, under a causal mask or not; now and then of another length
            const std::size_t keys = m + (in.ConsumeIntegralInRange(0, 15) == 0);
            const nonlocal::key_mask padding(drawn_entries<bool>(in, {drawn_count(in, b, h), keys}));
            if (causal) return with_similarity(in, q, k, v, nonlocal::intersect(nonlocal::causal{}, padding), threads);
            return with_similarity(in, q, k, v, padding, threads);
        }
        case 5: {   // a mask per pair, with padding or alone
            const nonlocal::element_mask pairs(drawn_entries<bool>(in, {drawn_count(in, b, h), n, m}));
            if (causal) {
                const nonlocal::key_mask padding(drawn_entries<bool>(in, {b, m}));
                return with_similarity(in, q, k, v, nonlocal::intersect(padding, pairs), threads);
            }
            return with_similarity(in, q, k, v, pairs, threads);
        }
        case 6: return with_similarity(in, q, k, v, drawn_ranges(in, n, m), threads);
        default:
            return with_similarity(in, q, k, v, nonlocal::window2d{rows, cols, kernel, dilation, causal, edges},
                                   threads);
    }
}

/// pairwise(x, y, s)(i, j) against the formula: |x_i - y_j|^2, <x_i, y_j> and the cosine.
void pairwise(FuzzedDataProvider& in) {
    const std::size_t n = in.ConsumeIntegralInRange(0, 40), m = in.ConsumeIntegralInRange(0, 40);
    const std::size_t d = in.ConsumeIntegralInRange(0, 17), dy = in.ConsumeBool() ? d : in.ConsumeIntegralInRange(0, 17);
    const int kind = in.ConsumeIntegralInRange(0, 2);
    const tensor4 x4 = drawn_tensor(in, 1, 1, n, d), y4 = drawn_tensor(in, 1, 1, m, dy);
    const xt::xtensor<float, 2> x = xt::view(x4, 0, 0), y = xt::view(y4, 0, 0);
    xt::xtensor<float, 2> fast;
    const bool ran = nonlocal::fuzz::completed<std::invalid_argument>([&] {
        if (kind == 0) fast = nonlocal::pairwise(x, y, nonlocal::squared_euclidean{});
        else if (kind == 1) fast = nonlocal::pairwise(x, y, nonlocal::dot_product{});
        else fast = nonlocal::pairwise(x, y, nonlocal::cosine{});
    });
    nonlocal::fuzz::require(ran == (d == dy), "pairwise refuses features of different dimensions, and only them");
    if (!ran) return;
    xt::xtensor<double, 2> literal = xt::zeros<double>({n, m});
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < m; ++j) {
            double dist = 0, dot = 0, xx = 0, yy = 0;
            for (std::size_t c = 0; c < d; ++c) {
                const double a = x(i, c), e = y(j, c);
                dist += (a - e) * (a - e), dot += a * e, xx += a * a, yy += e * e;
            }
            literal(i, j) = kind == 0 ? dist : kind == 1 ? dot : xx == 0 || yy == 0 ? 0 : dot / std::sqrt(xx * yy);
        }
    require_close(fast, literal, "pairwise agrees with the formula");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    if (in.ConsumeBool()) aggregate(in);
    else pairwise(in);
    return 0;
}
