// expect: satisfaction of [^ ]*similarity<
// A similarity without a kernel type and with a logit of the wrong signature.
// The headers of what it composes, not the umbrella: a compile-fail test is compiled on every run.
#include <nonlocal/neighborhood/dense.hpp>
#include <nonlocal/normalization.hpp>
#include <nonlocal/weighted_aggregate.hpp>

struct not_a_similarity {
    double logit(double a, double b) const { return a * b; }
};

int main() {
    xt::xtensor<float, 2> x = xt::zeros<float>({4, 2});
    auto y = nonlocal::weighted_aggregate(x, x, x, not_a_similarity{}, nonlocal::dense{}, nonlocal::sum{});
    (void)y;
}
