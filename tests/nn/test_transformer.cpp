// nn/transformer.hpp: the activations against std::erf in double on awkward lengths and
// hand-computed values; the encoder layer against a literal double implementation of
// PyTorch's nn.TransformerEncoderLayer forward pass (both norm orders, both activations,
// dense and causal); MobileViT's unfold -> attention -> fold against patch_group; weights
// through .npy files; bad arguments.
#include <nonlocal/nonlocal.hpp>

#include <filesystem>
#include <functional>
#include <limits>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "support/literal_nn.hpp"
#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_transformer)

namespace {
double literal_activation(nn::activation a, double x) {
    if (a == nn::activation::relu) return x < 0 ? 0 : x;
    if (x == -std::numeric_limits<double>::infinity()) return 0;
    return x * 0.5 * (1 + std::erf(x / std::sqrt(2.0)));
}

/// nn.TransformerEncoderLayer's forward pass over x [B, L, E], literally, in double.
template <class T>
xt::xtensor<double, 3> literal_encoder(const xt::xtensor<T, 3>& x, const nn::basic_transformer_encoder_layer<T>& layer,
                                       const std::function<bool(std::size_t, std::size_t)>& allowed) {
    const std::size_t B = x.shape(0), L = x.shape(1), E = x.shape(2);
    xt::xtensor<double, 3> y = xt::empty<double>({B, L, E});
    const auto mlp = [&](const xt::xtensor<double, 2>& in) {
        xt::xtensor<double, 2> hidden = test::literal_linear(in, layer.mlp.linear1.weight(), layer.mlp.linear1.bias());
        for (double& h : hidden) h = literal_activation(layer.mlp.kind, h);
        return test::literal_linear(hidden, layer.mlp.linear2.weight(), layer.mlp.linear2.bias());
    };
    for (std::size_t b = 0; b < B; ++b) {
        xt::xtensor<double, 2> h = xt::cast<double>(xt::view(x, b));
        if (layer.norm_first) {
            h = h + test::literal_self_attention(test::literal_layer_norm(h, layer.norm1), layer.self_attn, allowed);
            h = h + mlp(test::literal_layer_norm(h, layer.norm2));
        } else {
            h = test::literal_layer_norm<double>(h + test::literal_self_attention(h, layer.self_attn, allowed),
                                                 layer.norm1);
            h = test::literal_layer_norm<double>(h + mlp(h), layer.norm2);
        }
        xt::view(y, b) = h;
    }
    return y;
}

/// A layer of T with random weights of E features, h heads and F hidden features.
template <class T = float>
nn::basic_transformer_encoder_layer<T> random_layer(std::size_t E, std::size_t h, std::size_t F, nn::activation a,
                                                    bool norm_first, unsigned seed) {
    const auto r2 = [&](std::size_t rows, std::size_t cols, unsigned s) {
        return test::random_tensor<T, 2>({rows, cols}, seed + s, -0.4, 0.4);
    };
    const auto r1 = [&](std::size_t n, unsigned s, double lo = -0.2, double hi = 0.2) {
        return test::random_tensor<T, 1>({n}, seed + s, lo, hi);
    };
    return {nn::basic_multi_head_attention<T>(h, r2(3 * E, E, 1), r1(3 * E, 2), r2(E, E, 3), r1(E, 4)),
            nn::basic_feed_forward<T>(r2(F, E, 5), r1(F, 6), r2(E, F, 7), r1(E, 8), a),
            nn::basic_layer_norm<T>(r1(E, 9, 0.5, 1.5), r1(E, 10)), nn::basic_layer_norm<T>(r1(E, 11, 0.5, 1.5), r1(E, 12)),
            norm_first};
}
}  // namespace

BOOST_AUTO_TEST_CASE(activations_hand_computed) {
    // gelu(x) = x Phi(x), Phi(1) = 0.84134475, Phi(-1) = 0.15865525, Phi(2) = 0.97724987,
    // Phi(-3) = 0.0013498980, Phi(0.5) = 0.69146246.
    std::vector<float> x = {1, -1, 2, -3, 0.5f, 0, -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::infinity()};
    const std::vector<double> gelu = {0.84134475, -0.15865525, 1.95449974, -0.00404969, 0.34573123, 0, 0, INFINITY};
    const std::vector<double> relu = {1, 0, 2, 0, 0.5, 0, 0, INFINITY};
    std::vector<float> g = x, r = x;
    nn::activate(nn::activation::gelu, g.data(), g.size());
    nn::activate(nn::activation::relu, r.data(), r.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        BOOST_TEST((g[i] == gelu[i] || std::abs(g[i] - gelu[i]) <= 1e-7 + 1e-6 * std::abs(gelu[i])), "gelu(" << x[i] << ") = " << g[i]);
        BOOST_TEST(r[i] == relu[i], "relu(" << x[i] << ") = " << r[i]);
    }
}

BOOST_AUTO_TEST_CASE(activations_match_erf_on_awkward_lengths) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        for (const nn::activation a : {nn::activation::relu, nn::activation::gelu})
            for (const std::size_t n : test::awkward_lengths) {
                auto x = test::random_tensor<float, 1>({n}, unsigned(n) + 7, -9, 9);
                if (n > 2) x(n / 2) = NAN, x(n - 1) = -0.f;
                xt::xtensor<double, 1> expected = xt::empty<double>({n});
                for (std::size_t i = 0; i < n; ++i) expected(i) = literal_activation(a, x(i));
                nn::activate<Arch>(a, x.data(), n);
                const std::string what = std::string(Arch::name()) + (a == nn::activation::gelu ? " gelu" : " relu") +
                                         ", n = " + std::to_string(n);
                if (n > 2) {   // NaN stays NaN; compared, it is set to 0 on both sides
                    BOOST_TEST(std::isnan(x(n / 2)), what);
                    x(n / 2) = 0, expected(n / 2) = 0;
                }
                test::check_close(x, expected, 1e-7, 2e-6, what);
            }
        // A value's result does not depend on whether it falls in a batch (8 to 10 of 67, in
        // the first batch of up to 16 lanes) or in the tail (a call on those 3 values alone).
        const auto values = test::random_tensor<float, 1>({std::size_t(67)}, 3, -5, 5);
        xt::xtensor<float, 1> whole = values, three = xt::view(values, xt::range(8, 11));
        nn::activate<Arch>(nn::activation::gelu, whole.data(), whole.size());
        nn::activate<Arch>(nn::activation::gelu, three.data(), three.size());
        const xt::xtensor<float, 1> in_batch = xt::view(whole, xt::range(8, 11));
        BOOST_TEST(three == in_batch);
    });
}

BOOST_AUTO_TEST_CASE(encoder_layer_matches_a_literal_implementation) {
    const std::size_t E = 12, h = 3, F = 20, B = 2, L = 13;
    const auto x = test::random_tensor<float, 3>({B, L, E}, 21);
    const auto everything = [](std::size_t, std::size_t) { return true; };
    const auto past = [](std::size_t i, std::size_t j) { return j <= i; };
    for (const nn::activation a : {nn::activation::relu, nn::activation::gelu})
        for (const bool norm_first : {false, true}) {
            const auto layer = random_layer(E, h, F, a, norm_first, 30);
            const std::string what = std::string(a == nn::activation::gelu ? "gelu" : "relu") +
                                     (norm_first ? ", norm first" : ", post-norm");
            test::check_close(layer(x), literal_encoder(x, layer, everything), 2e-5, 2e-4, what);
            test::check_close(layer(x, causal{}), literal_encoder(x, layer, past), 2e-5, 2e-4, what + ", causal");
            // [L, E] equals batch item 1; two threads equal one.
            const xt::xtensor<float, 2> x1 = xt::view(x, 1);
            const xt::xtensor<float, 2> item = xt::view(layer(x), 1);
            BOOST_TEST(layer(x1) == item);
            const auto threaded = layer(execution::parallel_policy{2}, x, dense{});
            BOOST_TEST(threaded == layer(x));
            // In place: the same values, with a neighborhood too.
            xt::xtensor<float, 3> tokens = x;
            layer.apply_in_place(execution::seq, tokens.data(), B, L);
            BOOST_TEST(tokens == layer(x));
            tokens = x;
            layer.apply_in_place(execution::parallel_policy{2}, tokens.data(), B, L, causal{});
            BOOST_TEST(tokens == layer(x, causal{}));
        }
}

BOOST_AUTO_TEST_CASE(double_layers_match_the_literal_implementation) {
    // The layer in double, on every architecture and awkward lengths: within 1e-12 of the
    // literal double loops (the float layer is within 2e-5).
    const std::size_t E = 12, h = 3, F = 20;
    const auto everything = [](std::size_t, std::size_t) { return true; };
    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        for (const nn::activation a : {nn::activation::relu, nn::activation::gelu})
            for (const bool norm_first : {false, true}) {
                const auto layer = random_layer<double>(E, h, F, a, norm_first, 40);
                for (const std::size_t L : {std::size_t(1), std::size_t(7), std::size_t(17), std::size_t(33)}) {
                    const auto x = test::random_tensor<double, 3>({2, L, E}, 22 + unsigned(L));
                    const std::string what = std::string(Arch::name()) + (norm_first ? " norm first" : " post-norm") +
                                             ", L = " + std::to_string(L);
                    test::check_close(layer.template operator()<Arch>(x), literal_encoder(x, layer, everything), 1e-12,
                                      1e-11, what);
                }
            }
        // The norm alone, features around the SIMD width.
        for (const std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(8), std::size_t(9), std::size_t(33)}) {
            const nn::basic_layer_norm<double> norm(test::random_tensor<double, 1>({n}, 5, 0.5, 1.5),
                                                    test::random_tensor<double, 1>({n}, 6));
            const auto x = test::random_tensor<double, 2>({5, n}, 7, 90, 110);   // far from 0
            test::check_close(norm.template operator()<Arch>(x), test::literal_layer_norm(x, norm), 1e-12, 1e-11,
                              "double layer norm");
        }
    });
}

BOOST_AUTO_TEST_CASE(empty_and_single_token_inputs) {
    // No tokens, or no batch items: an output of the same empty shape. One token attends
    // to itself alone: softmax weight 1, so the attention passes its value through.
    const auto layer = random_layer(8, 2, 16, nn::activation::gelu, true, 70);
    for (const auto& shape : {std::array<std::size_t, 3>{2, 0, 8}, {0, 5, 8}}) {
        const xt::xtensor<float, 3> x = xt::zeros<float>(shape);
        BOOST_TEST(layer(x).shape() == shape);
    }
    const auto x = test::random_tensor<float, 3>({1, 1, 8}, 71);
    test::check_close(layer(x), literal_encoder(x, layer, [](std::size_t, std::size_t) { return true; }), 2e-5, 2e-4,
                      "one token");
}

BOOST_AUTO_TEST_CASE(mobilevit_unfold_attend_fold_is_patch_group) {
    // A 6 x 8 feature map of E = 12 in 2 x 2 patches: MobileViT unfolds it into P = 4
    // sequences (one per offset in the patch) of N = 12 patches, runs the transformer on
    // each, and folds the result back.
    const std::size_t H = 6, W = 8, ph = 2, pw = 2, E = 12, P = ph * pw, N = (H / ph) * (W / pw);
    const auto layer = random_layer(E, 3, 24, nn::activation::gelu, true, 40);
    const auto x = test::random_tensor<float, 3>({2, H * W, E}, 41);
    const auto pixel = [&](std::size_t p, std::size_t n) {
        return ((n / (W / pw)) * ph + p / pw) * W + (n % (W / pw)) * pw + p % pw;
    };
    xt::xtensor<float, 3> folded = xt::empty<float>({std::size_t(2), H * W, E});
    for (std::size_t b = 0; b < 2; ++b) {
        xt::xtensor<float, 3> unfolded = xt::empty<float>({P, N, E});
        for (std::size_t p = 0; p < P; ++p)
            for (std::size_t n = 0; n < N; ++n) xt::view(unfolded, p, n) = xt::view(x, b, pixel(p, n));
        const xt::xtensor<float, 3> attended = layer(unfolded);
        for (std::size_t p = 0; p < P; ++p)
            for (std::size_t n = 0; n < N; ++n) xt::view(folded, b, pixel(p, n)) = xt::view(attended, p, n);
    }
    test::check_close(layer(x, patch_group{H, W, ph, pw}), folded, 1e-5, 1e-5, "patch_group");
    test::check_invalid([&] { layer(x, patch_group{H, W, 4, 3}); }, "patch_group", "must divide");
}

BOOST_AUTO_TEST_CASE(loads_pytorch_state_dict_files) {
    const std::size_t E = 16, h = 4, F = 32;
    const auto layer = random_layer(E, h, F, nn::activation::gelu, true, 50);
    const auto dir = test::scratch_dir("nonlocal_test_transformer");
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "blocks_0_").string();
    xt::dump_npy(prefix + "self_attn_in_proj_weight.npy", test::in_proj_weight(layer.self_attn));
    xt::dump_npy(prefix + "self_attn_in_proj_bias.npy", test::in_proj_bias(layer.self_attn));
    xt::dump_npy(prefix + "self_attn_out_proj_weight.npy", layer.self_attn.out_proj.weight());
    xt::dump_npy(prefix + "self_attn_out_proj_bias.npy", layer.self_attn.out_proj.bias());
    xt::dump_npy(prefix + "linear1_weight.npy", layer.mlp.linear1.weight());
    xt::dump_npy(prefix + "linear1_bias.npy", layer.mlp.linear1.bias());
    // float64, as numpy.save writes a double array.
    xt::dump_npy(prefix + "linear2_weight.npy", xt::xtensor<double, 2>(xt::cast<double>(layer.mlp.linear2.weight())));
    xt::dump_npy(prefix + "linear2_bias.npy", layer.mlp.linear2.bias());
    xt::dump_npy(prefix + "norm1_weight.npy", layer.norm1.weight);
    xt::dump_npy(prefix + "norm1_bias.npy", layer.norm1.bias);
    xt::dump_npy(prefix + "norm2_weight.npy", layer.norm2.weight);
    xt::dump_npy(prefix + "norm2_bias.npy", layer.norm2.bias);
    const auto x = test::random_tensor<float, 3>({1, 9, E}, 51);
    const nn::encoder_layer_config config{.embed_dim = E, .num_heads = h, .feedforward = F,
                                          .kind = nn::activation::gelu, .norm_first = true};
    const auto loaded = nn::load_npy(prefix, config);
    BOOST_TEST(loaded(x) == layer(x));
    // PyTorch's defaults: relu, post-norm, eps 1e-5.
    const auto post_norm = nn::load_npy(prefix, nn::encoder_layer_config{.embed_dim = E, .num_heads = h, .feedforward = F});
    BOOST_TEST(!post_norm.norm_first);
    BOOST_TEST((post_norm.mlp.kind == nn::activation::relu));
    BOOST_TEST(post_norm.norm1.eps == 1e-5);
    // A missing file and one of the wrong rank are named, with every other problem.
    std::filesystem::remove(prefix + "norm2_bias.npy");
    test::check_invalid([&] { nn::load_npy(prefix, config); },
                        "nn::load_npy", "(1 problem)", "missing norm2_bias [16]");
    xt::dump_npy(prefix + "norm2_bias.npy", xt::xtensor<float, 2>(xt::zeros<float>({E, std::size_t(1)})));
    xt::dump_npy(prefix + "norm3_bias.npy", xt::xtensor<float, 1>(xt::zeros<float>({E})));
    test::check_invalid([&] { nn::load_npy(prefix, config); },
                        "nn::load_npy", "(2 problems)",
                        prefix + "norm2_bias.npy: entry norm2_bias holds [16, 1]; expected [16]", "unexpected norm3_bias");
    // The default feed-forward width (2048) is another architecture.
    test::check_invalid([&] { nn::load_npy(prefix, nn::encoder_layer_config{.embed_dim = E, .num_heads = h}); },
                        "entry linear1_weight holds [32, 16]; expected [2048, 16]");
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(bad_weights_and_inputs) {
    test::check_invalid([] { nn::feed_forward(xt::zeros<float>({8, 4}), xt::zeros<float>({8}), xt::zeros<float>({4, 7}),
                                              xt::zeros<float>({4})); },
                        "nn::feed_forward", "[8, 4], [8], [4, 7] and [4]");
    test::check_invalid([] { nn::feed_forward(xt::zeros<float>({0, 4}), xt::zeros<float>({0}), xt::zeros<float>({4, 0}),
                                              xt::zeros<float>({4})); },
                        "E, F > 0");
    const auto layer = random_layer(8, 2, 16, nn::activation::relu, false, 60);
    test::check_invalid([&] { nn::transformer_encoder_layer(layer.self_attn, layer.mlp, nn::layer_norm(xt::ones<float>({6}),
                                                            xt::zeros<float>({6})), layer.norm2); },
                        "nn::transformer_encoder_layer", "E = 8", "(6 and 8)");
    const xt::xtensor<float, 3> x = xt::zeros<float>({2, 5, 7});
    test::check_invalid([&] { layer(x); }, "nn::transformer_encoder_layer", "x [2, 5, 7]", "E = 8");
}

BOOST_AUTO_TEST_SUITE_END()
