// concepts.hpp: the library's policies satisfy the concepts, and a user can
// write a similarity and a neighborhood in a few lines that run through the
// same kernels as the built-in ones.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_concepts)

// Manhattan distance as a logit, exp kernel: a Laplacian kernel.
struct laplacian_similarity {
    using weight_function = exp_weight;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        T s = 0;
        for (std::size_t c = 0; c < q.size(); ++c) s -= std::abs(q[c] - k[c]);
        return s;
    }
};

// Every other key, starting at the query's parity.
struct same_parity {
    template <class F>
    void for_each_range(std::size_t i, extents e, F&& f) const {
        const std::size_t first = i % 2;
        if (first < e.keys) f(key_range{first, (e.keys - first + 1) / 2, 2});
    }
};

static_assert(similarity<laplacian_similarity>);
// The name of kappa before 0.1.0, `kernel`, is still read, for one release.
struct similarity_of_0_0 {
    using kernel = exp_weight;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return -std::abs(q[0] - k[0]); }
};
static_assert(similarity<similarity_of_0_0>);
static_assert(std::is_same_v<weight_function_t<similarity_of_0_0>, exp_weight>);
static_assert(std::is_same_v<weight_function_t<laplacian_similarity>, exp_weight>);
static_assert(neighborhood<same_parity>);
static_assert(!similarity<int>);
static_assert(!neighborhood<dot_product>);
static_assert(!normalization<dense>);
static_assert(similarity<with_position_bias<scaled_dot_product>>);
static_assert(detail::positional_logit<with_position_bias<scaled_dot_product>>);
static_assert(std::is_same_v<detail::effective_weight_function<dot_product, softmax>, exp_weight>);
static_assert(std::is_same_v<detail::effective_weight_function<dot_product, sum>, identity_weight>);
static_assert(detail::shifts_by_row_max<gaussian, sum>);
static_assert(!detail::shifts_by_row_max<gaussian, count>);

BOOST_AUTO_TEST_CASE(names_before_0_1_0_still_compile) {
    // Deprecated for one release (CHANGELOG): each old name is the new one.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    static_assert(std::is_same_v<exp_kernel, exp_weight> && std::is_same_v<identity_kernel, identity_weight>);
    static_assert(is_kernel_v<exp_weight>);
    static_assert(std::is_same_v<uninitialised_buffer<float>, uninitialized_buffer<float>>);
    static_assert(std::is_same_v<colour_kernel, color_kernel> && std::is_same_v<colour_space, color_space>);
    BOOST_TEST((depth_model::normalised == depth_model::normalized));
    const patch_distance before = colour_weights(4, 5, 3, 10.0, 2.0), now = color_weights(4, 5, 3, 10.0, 2.0);
    BOOST_TEST((before.height == now.height && before.width == now.width && before.patch_radius == now.patch_radius &&
                before.h == now.h && before.sigma == now.sigma && before.spatial_sigma == now.spatial_sigma));
    const nn::layer_norm norm(xt::xtensor<float, 1>{1.f, 2.f, 3.f}, xt::xtensor<float, 1>{0.f, 0.f, 1.f});
    const float x[3] = {1, 5, 9};
    float old_name[3], new_name[3];
    norm.normalise(x, old_name, 1);
    norm.normalize(x, new_name, 1);
    BOOST_TEST(std::equal(old_name, old_name + 3, new_name));
#pragma GCC diagnostic pop
}

BOOST_AUTO_TEST_CASE(user_policies_run_and_match_the_reference) {
    const auto q = test::random_tensor<float, 2>({9, 5}, 1), k = test::random_tensor<float, 2>({11, 5}, 2);
    const auto v = test::random_tensor<float, 2>({11, 3}, 3);
    const auto y = weighted_aggregate(q, k, v, laplacian_similarity{}, same_parity{}, sum{});
    const auto r = reference::weighted_aggregate(q, k, v, laplacian_similarity{}, same_parity{}, sum{});
    test::check_close(y, r, 1e-6, 1e-5);

    // Hand check of row 1: keys 1, 3, 5, 7, 9 with weights exp(-|q_1 - k_j|_1).
    double num[3] = {0, 0, 0}, den = 0;
    for (std::size_t j = 1; j < 11; j += 2) {
        double l1 = 0;
        for (std::size_t c = 0; c < 5; ++c) l1 += std::abs(double(q(1, c)) - k(j, c));
        den += std::exp(-l1);
        for (std::size_t c = 0; c < 3; ++c) num[c] += std::exp(-l1) * v(j, c);
    }
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(std::abs(y(1, c) - num[c] / den) < 1e-5);
}

BOOST_AUTO_TEST_CASE(wrapped_callable) {
    const auto sim = make_similarity<exp_weight>([](auto q, auto k) { return -std::abs(q[0] - k[0]); });
    static_assert(similarity<decltype(sim)>);
    xt::xtensor<double, 2> x = {{0.0}, {1.0}, {3.0}};
    xt::xtensor<double, 2> v = {{10.0}, {20.0}, {40.0}};
    const auto y = weighted_aggregate(x, x, v, sim, dense{}, sum{});
    // Row 0: weights 1, e^-1, e^-3.
    const double w1 = std::exp(-1.0), w3 = std::exp(-3.0);
    BOOST_TEST(std::abs(y(0, 0) - (10 + 20 * w1 + 40 * w3) / (1 + w1 + w3)) < 1e-12);
}

BOOST_AUTO_TEST_SUITE_END()
