// expect: dot_produkt_form
// A misspelt logit form does not compile: no similarity silently loses its fast kernel.
// The headers of what it composes, not the umbrella: a compile-fail test is compiled on every run.
#include <nonlocal/neighborhood/dense.hpp>
#include <nonlocal/normalization.hpp>
#include <nonlocal/weighted_aggregate.hpp>

struct misspelt {
    using weight_function = nonlocal::identity_weight;
    using traits = nonlocal::similarity_traits<nonlocal::dot_produkt_form>;
    double scale(std::size_t) const { return 1.0; }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return q[0] * k[0]; }
};

int main() {
    xt::xtensor<float, 2> x = xt::zeros<float>({4, 2});
    auto y = nonlocal::weighted_aggregate(x, x, x, misspelt{}, nonlocal::dense{}, nonlocal::softmax{});
    (void)y;
}
