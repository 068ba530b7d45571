// nonlocal::depth_instances as a user links it from the installed package: the depth tasks'
// solves compiled in the source the target adds, this one leaving them to it.
#include <nonlocal/depth.hpp>

#include <cmath>
#include <cstdio>

int main() {
    // A flat depth of 5 with one hole, on a flat guide: the hole is filled with 5.
    xt::xtensor<float, 2> depth = xt::full_like(xt::xtensor<float, 2>::from_shape({8, 8}), 5.f);
    depth(3, 4) = 0;
    const xt::xtensor<float, 2> guide = xt::zeros<float>({8, 8});
    const nonlocal::depth_result filled = nonlocal::fill_depth(depth, guide);
    std::printf("filled hole: %g\n", double(filled.depth(3, 4)));
    return std::abs(filled.depth(3, 4) - 5.f) < 1e-3f ? 0 : 1;
}
