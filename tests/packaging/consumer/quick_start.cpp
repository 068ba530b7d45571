// The README's quick start, built by the packaging tests.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <cstdio>
#include <xtensor/xrandom.hpp>

int main() {
    xt::random::seed(7);
    xt::xtensor<float, 2> q = xt::random::randn<float>({128, 64});
    xt::xtensor<float, 2> k = xt::random::randn<float>({256, 64});
    xt::xtensor<float, 2> v = xt::random::randn<float>({256, 32});

    // softmax(q k^T / sqrt(64)) v, and the same with a causal mask
    xt::xtensor<float, 2> y = nonlocal::attention(q, k, v);
    xt::xtensor<float, 2> c = nonlocal::attention(q, k, v, nonlocal::causal{});

    // the same computation spelled as one weighted aggregate with its three policies
    auto z = nonlocal::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{}, nonlocal::dense{},
                                          nonlocal::softmax{});
    // a 128 x 256 matrix of squared distances
    auto d = nonlocal::pairwise(q, k, nonlocal::squared_euclidean{});

    std::printf("y %zux%zu, causal row 0 = v row 0: %s, pairwise %zux%zu\n", y.shape(0), y.shape(1),
                std::abs(c(0, 0) - v(0, 0)) < 1e-6f ? "yes" : "no", d.shape(0), d.shape(1));
    return (y == z && std::abs(c(0, 0) - v(0, 0)) < 1e-6f) ? 0 : 1;
}
