// Writing your own policies: a similarity and a neighborhood in a few lines
// each, run through the same kernels as the built-in ones.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <cstdio>

#include <xtensor/xrandom.hpp>

// Similarity: s = exp(-|q - k|_1 / 2), a Laplacian kernel on the L1 distance.
struct laplacian {
    using kernel = nonlocal::exp_kernel;   // kappa
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

static_assert(nonlocal::similarity<laplacian>);
static_assert(nonlocal::neighborhood<log_sparse>);

int main() {
    xt::random::seed(1);
    const xt::xtensor<float, 2> x = xt::random::randn<float>({100, 16});
    const auto y = nonlocal::weighted_aggregate(x, x, x, laplacian{}, log_sparse{}, nonlocal::sum{});
    const auto r = nonlocal::reference::weighted_aggregate(x, x, x, laplacian{}, log_sparse{}, nonlocal::sum{});
    double worst = 0;
    for (std::size_t t = 0; t < y.size(); ++t) worst = std::max(worst, std::abs(y.data()[t] - r.data()[t]));
    std::printf("custom similarity x custom neighborhood: y is %zux%zu, max |y - reference| = %.1e\n", y.shape(0),
                y.shape(1), worst);
    return worst < 1e-4 ? 0 : 1;
}
