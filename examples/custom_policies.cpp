// Writing your own policies: a similarity and a neighborhood in a few lines
// each, run through the same kernels as the built-in ones.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <cstdio>

#include <xtensor/xrandom.hpp>

// Similarity: s = exp(-|q - k|_1 / 2), a Laplacian kernel on the L1 distance.
struct laplacian {
    using weight_function = nonlocal::exp_weight;   // kappa
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        T distance = 0;
        for (std::size_t c = 0; c < q.size(); ++c) distance += std::abs(q[c] - k[c]);
        return -distance / 2;
    }
};

// Neighborhood: each token sees itself and the tokens 1, 2, 4, 8, ... steps back
// (a logarithmic "sparse transformer" pattern).
struct log_sparse {
    template <class F>
    void for_each_range(std::size_t i, nonlocal::extents, F&& f) const {
        std::size_t step = 1;
        while (step <= i) step *= 2;
        for (step /= 2; step >= 1; step /= 2) f(nonlocal::key_range{i - step, 1, 1});   // increasing keys
        f(nonlocal::key_range{i, 1, 1});
    }
};

// The same Laplacian declared as a sum over channels: the tiled kernels score it a channel at a
// time for a block of queries, instead of calling `logit` pair by pair.
struct fast_laplacian {
    using weight_function = nonlocal::exp_weight;
    using traits = nonlocal::similarity_traits<nonlocal::channel_sum_form, nonlocal::symmetric>;
    template <class V>
    V channel_logit(V difference) const { return xsimd::abs(difference) * V(-0.5); }   // V: a value or a batch
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return nonlocal::channel_sum_logit(*this, q, k); }
};

// A dot product of one's own: declaring its form puts it on the dot-product micro-kernels.
struct halved_dot {
    using weight_function = nonlocal::identity_weight;
    using traits = nonlocal::similarity_traits<nonlocal::dot_product_form>;
    double scale(std::size_t) const { return 0.5; }   // logit = scale(d) <q, k>
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        T dot = 0;
        for (std::size_t c = 0; c < q.size(); ++c) dot += q[c] * k[c];
        return dot / 2;
    }
};

static_assert(nonlocal::similarity<laplacian>);
static_assert(nonlocal::neighborhood<log_sparse>);
static_assert(nonlocal::kernel_for<fast_laplacian, nonlocal::window2d, nonlocal::sum> == nonlocal::kernel_kind::tiled_window);
static_assert(nonlocal::kernel_for<halved_dot, nonlocal::dense, nonlocal::count> == nonlocal::kernel_kind::tiled);
static_assert(nonlocal::kernel_for<laplacian, nonlocal::dense, nonlocal::sum> == nonlocal::kernel_kind::gather);

int main() {
    xt::random::seed(1);
    const xt::xtensor<float, 2> x = xt::random::randn<float>({100, 16});
    const auto y = nonlocal::weighted_aggregate(x, x, x, laplacian{}, log_sparse{}, nonlocal::sum{});
    const auto r = nonlocal::reference::weighted_aggregate(x, x, x, laplacian{}, log_sparse{}, nonlocal::sum{});
    double worst = 0;
    for (std::size_t t = 0; t < y.size(); ++t) worst = std::max(worst, std::abs(y.data()[t] - r.data()[t]));
    std::printf("custom similarity x custom neighborhood: y is %zux%zu, max |y - reference| = %.1e\n", y.shape(0),
                y.shape(1), worst);

    // Which kernel a call runs, and why:
    const nonlocal::aggregate_plan slow = nonlocal::plan(x, x, x, laplacian{}, nonlocal::window2d{10, 10, 5}, nonlocal::sum{});
    const nonlocal::aggregate_plan fast = nonlocal::plan(x, x, x, fast_laplacian{}, nonlocal::window2d{10, 10, 5}, nonlocal::sum{});
    std::printf("laplacian: %s\nfast_laplacian: %s\n", slow.describe().c_str(), fast.describe().c_str());
    const auto z = nonlocal::weighted_aggregate(x, x, x, fast_laplacian{}, nonlocal::window2d{10, 10, 5}, nonlocal::sum{});
    const auto zr = nonlocal::reference::weighted_aggregate(x, x, x, laplacian{}, nonlocal::window2d{10, 10, 5}, nonlocal::sum{});
    for (std::size_t t = 0; t < z.size(); ++t) worst = std::max(worst, std::abs(z.data()[t] - zr.data()[t]));
    return worst < 1e-4 && fast.kernel() == nonlocal::kernel_kind::tiled_window ? 0 : 1;
}
