// expect: satisfaction of [^ ]*normalization<
// A normalization without its kind.
#include <nonlocal/nonlocal.hpp>

struct not_a_normalization {};

int main() {
    xt::xtensor<float, 2> x = xt::zeros<float>({4, 2});
    auto y = nonlocal::weighted_aggregate(x, x, x, nonlocal::dot_product{}, nonlocal::dense{}, not_a_normalization{});
    (void)y;
}
