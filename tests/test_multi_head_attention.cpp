// nn/multi_head_attention.hpp: against a plain loop implementation of
// PyTorch's nn.MultiheadAttention forward pass, weights through .npy files.
#include <nonlocal/nonlocal.hpp>

#include <filesystem>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "literal_nn.hpp"
#include "support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_multi_head_attention)

namespace {
/// nn.MultiheadAttention's self-attention over x [B, L, E], literally, in double.
xt::xtensor<double, 3> literal_mha(const xt::xtensor<float, 3>& x, const nn::multi_head_attention& m, bool is_causal) {
    xt::xtensor<double, 3> y = xt::empty<double>(x.shape());
    for (std::size_t b = 0; b < x.shape(0); ++b)
        xt::view(y, b) = test::literal_self_attention(xt::cast<double>(xt::view(x, b)), m, [&](std::size_t i, std::size_t j) {
            return !is_causal || j <= i;
        });
    return y;
}
}  // namespace

BOOST_AUTO_TEST_CASE(matches_a_plain_loop_and_loads_npy) {
    const std::size_t E = 24, h = 4;
    const nn::multi_head_attention m(h, test::random_tensor<float, 2>({3 * E, E}, 1),
                                     test::random_tensor<float, 1>({3 * E}, 2),
                                     test::random_tensor<float, 2>({E, E}, 3), test::random_tensor<float, 1>({E}, 4));
    const auto x = test::random_tensor<float, 3>({2, 37, E}, 5);
    test::check_close(m(x, x, x), literal_mha(x, m, false), 1e-5, 1e-4, "self-attention");
    test::check_close(m(x, x, x, causal{}), literal_mha(x, m, true), 1e-5, 1e-4, "causal");
    const auto on_two_threads = m(x, x, x, causal{}, execution::parallel_policy{2});
    BOOST_TEST(on_two_threads == m(x, x, x, causal{}));
    // [L, E] input equals batch item 0.
    const xt::xtensor<float, 2> x0 = xt::view(x, 0);
    const xt::xtensor<float, 2> y0 = xt::view(m(x, x, x), 0);
    test::check_close(m(x0, x0, x0), y0, 1e-6, 1e-6, "unbatched");

    const auto dir = std::filesystem::temp_directory_path() / "nonlocal_test_mha";
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "layer0_").string();
    xt::dump_npy(prefix + "in_proj_weight.npy", m.in_proj_weight);
    xt::dump_npy(prefix + "in_proj_bias.npy", m.in_proj_bias);
    xt::dump_npy(prefix + "out_proj_weight.npy", m.out_proj_weight);
    xt::dump_npy(prefix + "out_proj_bias.npy", m.out_proj_bias);
    const auto loaded = nn::multi_head_attention::load_npy(prefix, h);
    BOOST_TEST(loaded(x, x, x) == m(x, x, x));
    // numpy.save of float64 weights: the same floats, converted on loading.
    const std::string wide = (dir / "layer0_f64_").string();
    xt::dump_npy(wide + "in_proj_weight.npy", xt::xtensor<double, 2>(xt::cast<double>(m.in_proj_weight)));
    xt::dump_npy(wide + "in_proj_bias.npy", xt::xtensor<double, 1>(xt::cast<double>(m.in_proj_bias)));
    xt::dump_npy(wide + "out_proj_weight.npy", xt::xtensor<double, 2>(xt::cast<double>(m.out_proj_weight)));
    xt::dump_npy(wide + "out_proj_bias.npy", xt::xtensor<double, 1>(xt::cast<double>(m.out_proj_bias)));
    BOOST_TEST(nn::multi_head_attention::load_npy(wide, h)(x, x, x) == m(x, x, x));
    // A missing file, a bias of rank 2 and an element type that is not a number are named.
    BOOST_CHECK_EXCEPTION(nn::multi_head_attention::load_npy(prefix + "missing_", h), std::runtime_error,
                          [&](const std::runtime_error& e) {
                              return std::string(e.what()) == "cannot open " + prefix + "missing_in_proj_weight.npy";
                          });
    xt::dump_npy(wide + "in_proj_bias.npy", xt::xtensor<float, 2>(xt::zeros<float>({3 * E, std::size_t(1)})));
    test::check_invalid([&] { nn::multi_head_attention::load_npy(wide, h); }, "nn::multi_head_attention::load_npy",
                        wide + "in_proj_bias.npy holds a [72, 1] array; expected 1 dimension");
    xt::dump_npy(wide + "in_proj_bias.npy", xt::xtensor<bool, 1>(xt::zeros<bool>({3 * E})));
    test::check_invalid([&] { nn::multi_head_attention::load_npy(wide, h); },
                        wide + "in_proj_bias.npy holds elements of type |b1");
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(bad_weights_and_inputs) {
    test::check_invalid([] {
        nn::multi_head_attention(5, xt::zeros<float>({72, 24}), xt::zeros<float>({72}), xt::zeros<float>({24, 24}),
                                 xt::zeros<float>({24}));
    }, "num_heads = 5");
    test::check_invalid([] {
        nn::multi_head_attention(4, xt::zeros<float>({70, 24}), xt::zeros<float>({72}), xt::zeros<float>({24, 24}),
                                 xt::zeros<float>({24}));
    }, "in_proj_weight [3E, E]", "[70, 24]");
    const nn::multi_head_attention m(4, xt::zeros<float>({48, 16}), xt::zeros<float>({48}), xt::zeros<float>({16, 16}),
                                     xt::zeros<float>({16}));
    const xt::xtensor<float, 3> x = xt::zeros<float>({2, 5, 12});
    test::check_invalid([&] { m(x, x, x); }, "query [2, 5, 12]", "E = 16");
}

BOOST_AUTO_TEST_SUITE_END()
