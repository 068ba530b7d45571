// expect: undeclared_legacy_traits
// A dot product that declares itself with the former member name instead of
// `using traits = nonlocal::similarity_traits<nonlocal::dot_product_form>`: refused, rather
// than run on the gather kernel unnoticed.
// The headers of what it composes, not the umbrella: a compile-fail test is compiled on every run.
#include <nonlocal/neighborhood/dense.hpp>
#include <nonlocal/normalization.hpp>
#include <nonlocal/weighted_aggregate.hpp>

struct old_style_dot {
    using weight_function = nonlocal::identity_weight;
    static constexpr bool is_dot_product = true;
    double scale(std::size_t) const { return 1.0; }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        T s = 0;
        for (std::size_t c = 0; c < q.size(); ++c) s += q[c] * k[c];
        return s;
    }
};

int main() {
    xt::xtensor<float, 2> x = xt::zeros<float>({4, 2});
    auto y = nonlocal::weighted_aggregate(x, x, x, old_style_dot{}, nonlocal::dense{}, nonlocal::softmax{});
    (void)y;
}
