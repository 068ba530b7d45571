// expect: declared_form_fits
// A distance form without the scale(d) it needs fails the similarity concept.
// The headers of what it composes, not the umbrella: a compile-fail test is compiled on every run.
#include <nonlocal/neighborhood/dense.hpp>
#include <nonlocal/normalization.hpp>
#include <nonlocal/weighted_aggregate.hpp>

struct distance_without_scale {
    using weight_function = nonlocal::exp_weight;
    using traits = nonlocal::similarity_traits<nonlocal::distance_form>;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return -(q[0] - k[0]) * (q[0] - k[0]); }
};

int main() {
    xt::xtensor<float, 2> x = xt::zeros<float>({4, 2});
    auto y = nonlocal::weighted_aggregate(x, x, x, distance_without_scale{}, nonlocal::dense{}, nonlocal::sum{});
    (void)y;
}
