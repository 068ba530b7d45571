// expect: satisfaction of [^ ]*neighborhood<
// A neighborhood whose enumeration is not const.
// The headers of what it composes, not the umbrella: a compile-fail test is compiled on every run.
#include <nonlocal/neighborhood/dense.hpp>
#include <nonlocal/normalization.hpp>
#include <nonlocal/weighted_aggregate.hpp>

struct not_a_neighborhood {
    template <class F>
    void for_each_range(std::size_t, nonlocal::extents e, F&& f) { f(nonlocal::key_range{0, e.keys, 1}); }
};

int main() {
    xt::xtensor<float, 2> x = xt::zeros<float>({4, 2});
    auto y = nonlocal::weighted_aggregate(x, x, x, nonlocal::dot_product{}, not_a_neighborhood{}, nonlocal::sum{});
    (void)y;
}
