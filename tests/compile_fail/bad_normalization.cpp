// expect: satisfaction of [^ ]*normalization<
// A normalization without its kind.
// The headers of what it composes, not the umbrella: a compile-fail test is compiled on every run.
#include <nonlocal/neighborhood/dense.hpp>
#include <nonlocal/normalization.hpp>
#include <nonlocal/weighted_aggregate.hpp>

struct not_a_normalization {};

int main() {
    xt::xtensor<float, 2> x = xt::zeros<float>({4, 2});
    auto y = nonlocal::weighted_aggregate(x, x, x, nonlocal::dot_product{}, nonlocal::dense{}, not_a_normalization{});
    (void)y;
}
