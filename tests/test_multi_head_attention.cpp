// nn/multi_head_attention.hpp: against a plain loop implementation of
// PyTorch's nn.MultiheadAttention forward pass, weights through .npy files.
#include <nonlocal/nonlocal.hpp>

#include <filesystem>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_multi_head_attention)

namespace {
/// A plain loop implementation of nn.MultiheadAttention's forward pass.
xt::xtensor<double, 3> literal_mha(const xt::xtensor<float, 3>& x, const nn::multi_head_attention& m, bool is_causal) {
    const std::size_t B = x.shape(0), L = x.shape(1), E = m.embed_dim, h = m.num_heads, hd = E / h;
    xt::xtensor<double, 3> proj = xt::zeros<double>({std::size_t(3), B * L, E});
    for (std::size_t part = 0; part < 3; ++part)
        for (std::size_t t = 0; t < B * L; ++t)
            for (std::size_t o = 0; o < E; ++o) {
                double s = m.in_proj_bias(part * E + o);
                for (std::size_t c = 0; c < E; ++c) s += double(m.in_proj_weight(part * E + o, c)) * x.data()[t * E + c];
                proj(part, t, o) = s;
            }
    xt::xtensor<double, 2> merged = xt::zeros<double>({B * L, E});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t head = 0; head < h; ++head)
            for (std::size_t i = 0; i < L; ++i) {
                std::vector<double> w;
                double mx = -INFINITY;
                for (std::size_t j = 0; j < L; ++j) {
                    double l = 0;
                    for (std::size_t c = 0; c < hd; ++c) l += proj(0, b * L + i, head * hd + c) * proj(1, b * L + j, head * hd + c);
                    w.push_back(is_causal && j > i ? -INFINITY : l / std::sqrt(double(hd)));
                    mx = std::max(mx, w.back());
                }
                double total = 0;
                for (auto& e : w) total += (e = std::exp(e - mx));
                for (std::size_t c = 0; c < hd; ++c) {
                    double s = 0;
                    for (std::size_t j = 0; j < L; ++j) s += w[j] * proj(2, b * L + j, head * hd + c);
                    merged(b * L + i, head * hd + c) = s / total;
                }
            }
    xt::xtensor<double, 3> y = xt::zeros<double>({B, L, E});
    for (std::size_t t = 0; t < B * L; ++t)
        for (std::size_t o = 0; o < E; ++o) {
            double s = m.out_proj_bias(o);
            for (std::size_t c = 0; c < E; ++c) s += double(m.out_proj_weight(o, c)) * merged(t, c);
            y.data()[t * E + o] = s;
        }
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
