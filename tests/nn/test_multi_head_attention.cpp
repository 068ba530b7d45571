// nn/multi_head_attention.hpp: against a plain loop implementation of
// PyTorch's nn.MultiheadAttention forward pass, weights through .npy files.
#include <nonlocal/nonlocal.hpp>

#include <filesystem>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "support/literal_nn.hpp"
#include "support/support.hpp"

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
    const auto on_two_threads = m(execution::parallel_policy{2}, x, x, x, causal{});
    BOOST_TEST(on_two_threads == m(x, x, x, causal{}));
    // [L, E] input equals batch item 0.
    const xt::xtensor<float, 2> x0 = xt::view(x, 0);
    const xt::xtensor<float, 2> y0 = xt::view(m(x, x, x), 0);
    test::check_close(m(x0, x0, x0), y0, 1e-6, 1e-6, "unbatched");
    // Self-attention projects query, key and value in one pass over x; three tensors holding
    // the same values go projection by projection: the same bits.
    const xt::xtensor<float, 3> x_key = x, x_value = x;
    BOOST_TEST(m(x, x_key, x_value) == m(x, x, x));

    const auto dir = test::scratch_dir("nonlocal_test_mha");
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "layer0_").string();
    xt::dump_npy(prefix + "in_proj_weight.npy", test::in_proj_weight(m));
    xt::dump_npy(prefix + "in_proj_bias.npy", test::in_proj_bias(m));
    xt::dump_npy(prefix + "out_proj_weight.npy", m.out_proj.weight());
    xt::dump_npy(prefix + "out_proj_bias.npy", m.out_proj.bias());
    const nn::attention_config config{.embed_dim = E, .num_heads = h};
    const auto loaded = nn::load_npy(prefix, config);
    BOOST_TEST(loaded(x, x, x) == m(x, x, x));
    // numpy.save of float64 weights: the same floats, converted on loading.
    std::filesystem::create_directories(dir / "f64");
    const std::string wide = (dir / "f64" / "layer0_").string();
    xt::dump_npy(wide + "in_proj_weight.npy", xt::xtensor<double, 2>(xt::cast<double>(test::in_proj_weight(m))));
    xt::dump_npy(wide + "in_proj_bias.npy", xt::xtensor<double, 1>(xt::cast<double>(test::in_proj_bias(m))));
    xt::dump_npy(wide + "out_proj_weight.npy", xt::xtensor<double, 2>(xt::cast<double>(m.out_proj.weight())));
    xt::dump_npy(wide + "out_proj_bias.npy", xt::xtensor<double, 1>(xt::cast<double>(m.out_proj.bias())));
    BOOST_TEST(nn::load_npy(wide, config)(x, x, x) == m(x, x, x));
    // Missing files, a bias of rank 2 and an element type that is not a float are named, all at once.
    test::check_invalid([&] { nn::load_npy(prefix + "missing_", config); },
                        "nn::load_npy", "(4 problems)", "missing in_proj_weight [72, 24]",
                        "missing out_proj_bias [24]");
    xt::dump_npy(wide + "in_proj_bias.npy", xt::xtensor<float, 2>(xt::zeros<float>({3 * E, std::size_t(1)})));
    test::check_invalid([&] { nn::load_npy(wide, config); }, "nn::load_npy",
                        wide + "in_proj_bias.npy: entry in_proj_bias holds [72, 1]; expected [72]");
    xt::dump_npy(wide + "in_proj_bias.npy", xt::xtensor<bool, 1>(xt::zeros<bool>({3 * E})));
    test::check_invalid([&] { nn::load_npy(wide, config); },
                        wide + "in_proj_bias.npy: entry in_proj_bias holds elements of type |b1");
    // A layer of other heads or width is another architecture: its shapes are named.
    test::check_invalid([&] { nn::load_npy(prefix, nn::attention_config{.embed_dim = 2 * E, .num_heads = h}); },
                        "in_proj_weight.npy: entry in_proj_weight holds [72, 24]; expected [144, 48]");
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(bad_weights_and_inputs) {
    test::check_invalid([] {
        nn::multi_head_attention(5, xt::zeros<float>({72, 24}), xt::zeros<float>({72}), xt::zeros<float>({24, 24}),
                                 xt::zeros<float>({24}));
    }, "num_heads = 5");
    test::check_invalid([] {
        nn::multi_head_attention(4, xt::zeros<float>({71, 24}), xt::zeros<float>({72}), xt::zeros<float>({24, 24}),
                                 xt::zeros<float>({24}));
    }, "in_proj_weight [E + 2 E_kv, E] ([3E, E] without grouped queries)", "[71, 24]");
    // 70 rows: E_kv = 23, not a whole number of heads of 6 features; 60 rows: E_kv = 18, 3
    // heads of keys and values, which do not divide 4 query heads.
    test::check_invalid([] {
        nn::multi_head_attention(4, xt::zeros<float>({70, 24}), xt::zeros<float>({70}), xt::zeros<float>({24, 24}),
                                 xt::zeros<float>({24}));
    }, "k_proj [E_kv, kdim]", "[23, 24]", "num_heads = 4");
    test::check_invalid([] {
        nn::multi_head_attention(4, xt::zeros<float>({60, 24}), {}, xt::zeros<float>({24, 24}), {});
    }, "its heads dividing num_heads", "[18, 24]");
    // Separate projections: q_proj must be square, v_proj as wide as k_proj.
    using layer = nn::linear_layer<float>;
    test::check_invalid([] {
        nn::multi_head_attention(4, layer(xt::zeros<float>({24, 20})), layer(xt::zeros<float>({24, 10})),
                                 layer(xt::zeros<float>({24, 7})), layer(xt::zeros<float>({24, 24})));
    }, "q_proj [E, E]", "got [24, 20]");
    test::check_invalid([] {
        nn::multi_head_attention(4, layer(xt::zeros<float>({24, 24})), layer(xt::zeros<float>({24, 10})),
                                 layer(xt::zeros<float>({12, 7})), layer(xt::zeros<float>({24, 24})));
    }, "[24, 10], [12, 7]");
    const nn::multi_head_attention m(4, xt::zeros<float>({48, 16}), xt::zeros<float>({48}), xt::zeros<float>({16, 16}),
                                     xt::zeros<float>({16}));
    const xt::xtensor<float, 3> x = xt::zeros<float>({2, 5, 12});
    test::check_invalid([&] { m(x, x, x); }, "query [2, 5, 12]", "E = 16");
    const xt::xtensor<float, 3> q = xt::zeros<float>({2, 5, 16}), k = xt::zeros<float>({2, 6, 16});
    const xt::xtensor<float, 3> v = xt::zeros<float>({2, 7, 16});
    test::check_invalid([&] { m(q, k, v); }, "key [2, 6, 16] and value [2, 7, 16]", "[B, S, kdim]");
}

namespace {
/// A layer of random weights: E = 24, 4 heads of 6 features.
nn::multi_head_attention random_layer() {
    const std::size_t E = 24;
    return {4, test::random_tensor<float, 2>({3 * E, E}, 11), test::random_tensor<float, 1>({3 * E}, 12),
            test::random_tensor<float, 2>({E, E}, 13), test::random_tensor<float, 1>({E}, 14)};
}

/// Entries set with probability `p`.
template <std::size_t N>
xt::xtensor<bool, N> random_mask(const std::array<std::size_t, N>& shape, unsigned seed, double p) {
    const auto u = test::random_tensor<double, N>(shape, seed, 0, 1);
    xt::xtensor<bool, N> mask = u < p;
    return mask;
}
}  // namespace

BOOST_AUTO_TEST_CASE(masks_and_weights_as_pytorch_defines_them) {
    // Cross-attention, L = 37 queries over S = 70 keys (more than a tile), B = 3, H = 4.
    const auto m = random_layer();
    const std::size_t B = 3, H = 4, L = 37, S = 70;
    const auto x = test::random_tensor<float, 3>({B, L, 24}, 1), memory = test::random_tensor<float, 3>({B, S, 24}, 2);
    xt::xtensor<bool, 2> padding = random_mask<2>({B, S}, 3, 0.25);
    xt::view(padding, 2, xt::range(S - 20, S)) = true;   // item 2: its last 20 keys are padding
    const auto pairs = random_mask<2>({L, S}, 4, 0.5);
    const auto pairs_per_slice = random_mask<3>({B * H, L, S}, 5, 0.5);
    const auto bias = test::random_tensor<float, 3>({B * H, L, S}, 6, -2, 2);
    const double minus_inf = -INFINITY;

    nn::attention_options o;
    o.key_padding_mask = padding;
    o.attn_mask = pairs;
    o.need_weights = true;
    o.average_attn_weights = false;
    auto expected = test::literal_masked_attention(x, memory, m, [&](std::size_t b, std::size_t, std::size_t i,
                                                                     std::size_t j) {
        return padding(b, j) || pairs(i, j) ? minus_inf : 0.0;
    });
    auto r = m.forward(x, memory, memory, o);
    test::check_close(r.output, expected.output, 1e-5, 1e-4, "key_padding_mask and a boolean attn_mask [L, S]");
    test::check_close(*r.weights, expected.weights, 1e-6, 1e-4, "their weights per head");

    // A boolean mask per slice with a float one: PyTorch takes one or the other; here both.
    o.attn_mask = pairs_per_slice;
    o.attn_bias = bias;
    o.average_attn_weights = true;
    expected = test::literal_masked_attention(x, memory, m, [&](std::size_t b, std::size_t head, std::size_t i,
                                                                std::size_t j) {
        return padding(b, j) || pairs_per_slice(b * H + head, i, j) ? minus_inf : double(bias(b * H + head, i, j));
    });
    r = m.forward(execution::parallel_policy{2}, x, memory, memory, o, dense{});
    test::check_close(r.output, expected.output, 1e-5, 1e-4, "masks per slice and an additive mask");
    const xt::xtensor<double, 3> averaged = xt::mean(expected.weights, {1});
    test::check_close(*r.weights, averaged, 1e-6, 1e-4, "weights averaged over the heads");

    // An additive mask [L, S] with -inf entries and causal, without the weights.
    xt::xtensor<float, 2> additive = xt::view(bias, 0, xt::all(), xt::range(0, L));
    xt::view(additive, xt::all(), xt::range(0, 5)) = -INFINITY;
    nn::attention_options a;
    a.attn_bias = additive;
    expected = test::literal_masked_attention(x, x, m, [&](std::size_t, std::size_t, std::size_t i, std::size_t j) {
        return j > i || std::isinf(additive(i, j)) ? minus_inf : double(additive(i, j));
    });
    const auto causal_result = m.forward(x, x, x, a, causal{});
    BOOST_TEST(!causal_result.weights);
    test::check_close(causal_result.output, expected.output, 1e-5, 1e-4, "additive mask with -inf, causal");
}

BOOST_AUTO_TEST_CASE(fully_masked_queries_and_unbatched_inputs) {
    // Query 0 may attend to nothing: its attention is 0, where PyTorch gives NaN, so its
    // output is the output projection's bias and its weights are 0.
    const auto m = random_layer();
    const std::size_t L = 9, S = 12;
    const auto x = test::random_tensor<float, 2>({L, 24}, 1), memory = test::random_tensor<float, 2>({S, 24}, 2);
    xt::xtensor<bool, 2> mask = random_mask<2>({L, S}, 3, 0.3);
    xt::view(mask, 0, xt::all()) = true;
    nn::attention_options o;
    o.attn_mask = mask;
    o.key_padding_mask = xt::xtensor<bool, 1>{false, false, false, false, false, false,
                                              false, false, false, false, true, true};
    o.need_weights = true;
    const auto r = m.forward(x, memory, memory, o);
    for (std::size_t c = 0; c < 24; ++c) BOOST_TEST(r.output(0, c) == m.out_proj.bias()(c));
    BOOST_TEST(xt::all(xt::equal(xt::view(*r.weights, 0), 0.0f)));
    const xt::xtensor<float, 3> xb = xt::reshape_view(x, {std::size_t(1), L, std::size_t(24)});
    const xt::xtensor<float, 3> mb = xt::reshape_view(memory, {std::size_t(1), S, std::size_t(24)});
    const auto expected = test::literal_masked_attention(xb, mb, m, [&](std::size_t, std::size_t, std::size_t i,
                                                                        std::size_t j) {
        return mask(i, j) || j >= 10 ? -INFINITY : 0.0;
    });
    test::check_close(r.output, xt::xtensor<double, 2>(xt::view(expected.output, 0)), 1e-5, 1e-4, "unbatched");
    test::check_close(*r.weights, xt::xtensor<double, 2>(xt::mean(xt::view(expected.weights, 0), {0})), 1e-6, 1e-4,
                      "unbatched weights, averaged");
    // Each row of weights sums to 1 but the fully masked one.
    for (std::size_t i = 1; i < L; ++i) BOOST_TEST(xt::sum(xt::view(*r.weights, i))() == 1.0f, boost::test_tools::tolerance(1e-5f));
}

BOOST_AUTO_TEST_CASE(a_float_causal_mask_skips_tiles_as_a_boolean_one) {
    // PyTorch's generate_square_subsequent_mask: 0 on and below the diagonal, -inf above. Its
    // -inf pairs leave the neighborhood, so the tiles above the diagonal are skipped whole,
    // and the layer gives what causal{} gives.
    const std::size_t L = 130;
    xt::xtensor<float, 2> square = xt::zeros<float>({L, L});
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = i + 1; j < L; ++j) square(i, j) = -INFINITY;
    nn::attention_options o;
    o.attn_bias = square;
    const auto policies = o.masks(true, 1, 4, L, L);
    BOOST_TEST((policies.pairs.coverage(0, 64, 64, 128) == tile_coverage::none));
    BOOST_TEST((policies.pairs.coverage(64, 128, 0, 64) == tile_coverage::full));
    BOOST_TEST((policies.pairs.coverage(0, 64, 0, 64) == tile_coverage::partial));
    const auto m = random_layer();
    const auto x = test::random_tensor<float, 3>({2, L, 24}, 31);
    test::check_close(m.forward(x, x, x, o).output, m(x, x, x, causal{}), 1e-6, 1e-5, "float causal mask");
}

BOOST_AUTO_TEST_CASE(a_layer_without_biases) {
    // bias=False in PyTorch: no in_proj_bias nor out_proj.bias. Empty biases are none, and
    // load_npy reads a layer saved without the files; the result is the layer with zero biases.
    const std::size_t E = 24;
    const auto w_in = test::random_tensor<float, 2>({3 * E, E}, 21), w_out = test::random_tensor<float, 2>({E, E}, 22);
    const nn::multi_head_attention none(4, w_in, {}, w_out, {});
    const nn::multi_head_attention zeros(4, w_in, xt::zeros<float>({3 * E}), w_out, xt::zeros<float>({E}));
    const auto x = test::random_tensor<float, 3>({2, 9, E}, 23);
    test::check_close(none(x, x, x), zeros(x, x, x), 0, 0, "no biases are zero biases");
    const auto dir = test::scratch_dir("nonlocal_test_mha_no_bias");
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "layer_").string();
    xt::dump_npy(prefix + "in_proj_weight.npy", w_in);
    xt::dump_npy(prefix + "out_proj_weight.npy", w_out);
    test::check_close(nn::load_npy(prefix, nn::attention_config{.embed_dim = E, .num_heads = 4, .bias = false})(x, x, x),
                      zeros(x, x, x), 0, 0, "loaded");
    // A biased layer needs its biases.
    test::check_invalid([&] { nn::load_npy(prefix, nn::attention_config{.embed_dim = E, .num_heads = 4}); },
                        "missing in_proj_bias [72]", "missing out_proj_bias [24]");
    std::filesystem::remove_all(dir);
    test::check_invalid([&] { nn::multi_head_attention(4, w_in, xt::zeros<float>({E}), w_out, {}); },
                        "in_proj_bias [E + 2 E_kv] or [0]", "[24]");
}

BOOST_AUTO_TEST_CASE(bad_masks_name_their_shapes) {
    const auto m = random_layer();
    const auto x = test::random_tensor<float, 3>({2, 5, 24}, 1);
    nn::attention_options o;
    o.key_padding_mask = xt::xtensor<bool, 2>(xt::zeros<bool>({2, 4}));
    test::check_invalid([&] { m.forward(x, x, x, o); }, "nn::multi_head_attention", "key_padding_mask [2, 4]",
                        "must be [2, 5]");
    o = {};
    o.attn_mask = xt::xtensor<bool, 3>(xt::zeros<bool>({2, 5, 5}));
    test::check_invalid([&] { m.forward(x, x, x, o); }, "attn_mask [2, 5, 5]", "must be [5, 5] or [8, 5, 5]");
    o = {};
    o.attn_bias = xt::xtensor<float, 2>(xt::zeros<float>({5, 6}));
    test::check_invalid([&] { m.forward(x, x, x, o); }, "attn_bias [5, 6]", "must be [5, 5] or [8, 5, 5]");
}

BOOST_AUTO_TEST_CASE(keys_and_values_of_their_own_widths) {
    // nn.MultiheadAttention(24, 4, kdim=10, vdim=7): q_proj_weight [24, 24], k_proj_weight
    // [24, 10], v_proj_weight [24, 7], in_proj_bias [72]; keys [B, S, 10], values [B, S, 7].
    const std::size_t E = 24, B = 2, L = 11, S = 19;
    const auto wq = test::random_tensor<float, 2>({E, E}, 41), wk = test::random_tensor<float, 2>({E, 10}, 42);
    const auto wv = test::random_tensor<float, 2>({E, 7}, 43), w_out = test::random_tensor<float, 2>({E, E}, 44);
    const auto b_in = test::random_tensor<float, 1>({3 * E}, 45), b_out = test::random_tensor<float, 1>({E}, 46);
    const auto part = [&](std::size_t p) { return xt::xtensor<float, 1>(xt::view(b_in, xt::range(p * E, (p + 1) * E))); };
    using layer = nn::linear_layer<float>;
    const nn::multi_head_attention m(4, layer(wq, part(0)), layer(wk, part(1)), layer(wv, part(2)), layer(w_out, b_out));
    BOOST_TEST(m.kdim() == 10u);
    BOOST_TEST(m.vdim() == 7u);
    BOOST_TEST(m.kv_heads() == 4u);
    const auto x = test::random_tensor<float, 3>({B, L, E}, 47), keys = test::random_tensor<float, 3>({B, S, 10}, 48);
    const auto values = test::random_tensor<float, 3>({B, S, 7}, 49);
    xt::xtensor<bool, 2> padding = xt::zeros<bool>({B, S});
    xt::view(padding, 1, xt::range(S - 6, S)) = true;
    nn::attention_options o;
    o.key_padding_mask = padding;
    o.need_weights = true;
    o.average_attn_weights = false;
    const auto expected = test::literal_masked_attention<float>(x, keys, values, m, [&](std::size_t b, std::size_t,
                                                                                        std::size_t, std::size_t j) {
        return padding(b, j) ? -INFINITY : 0.0;
    });
    const auto r = m.forward(x, keys, values, o);
    test::check_close(r.output, expected.output, 1e-5, 1e-4, "kdim 10, vdim 7");
    test::check_close(*r.weights, expected.weights, 1e-6, 1e-4, "their weights");

    // load_npy reads PyTorch's names for such a layer: q_proj_weight, k_proj_weight, v_proj_weight.
    const auto dir = test::scratch_dir("nonlocal_test_mha_kdim");
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "layer_").string();
    xt::dump_npy(prefix + "q_proj_weight.npy", wq);
    xt::dump_npy(prefix + "k_proj_weight.npy", wk);
    xt::dump_npy(prefix + "v_proj_weight.npy", wv);
    xt::dump_npy(prefix + "in_proj_bias.npy", b_in);
    xt::dump_npy(prefix + "out_proj_weight.npy", w_out);
    xt::dump_npy(prefix + "out_proj_bias.npy", b_out);
    const nn::attention_config config{.embed_dim = 24, .num_heads = 4, .kdim = 10, .vdim = 7};
    BOOST_TEST(nn::load_npy(prefix, config).forward(x, keys, values, o).output == r.output);
    xt::dump_npy(prefix + "in_proj_bias.npy", part(0));
    test::check_invalid([&] { nn::load_npy(prefix, config); }, "nn::load_npy",
                        prefix + "in_proj_bias.npy: entry in_proj_bias holds [24]; expected [72]");
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(grouped_query_attention) {
    // 6 query heads of 4 features over 2 key and value heads: in_proj_weight [24 + 2 x 8, 24];
    // query heads 0-2 read key and value head 0, heads 3-5 head 1.
    const std::size_t E = 24, B = 2, L = 37;
    const nn::multi_head_attention m(6, test::random_tensor<float, 2>({E + 16, E}, 51),
                                     test::random_tensor<float, 1>({E + 16}, 52),
                                     test::random_tensor<float, 2>({E, E}, 53), test::random_tensor<float, 1>({E}, 54));
    BOOST_TEST(m.kv_heads() == 2u);
    BOOST_TEST(m.k_proj.out_features() == 8u);
    const auto x = test::random_tensor<float, 3>({B, L, E}, 55);
    const auto pairs = random_mask<2>({L, L}, 56, 0.4);
    for (const bool is_causal : {false, true}) {
        nn::attention_options o;
        o.attn_mask = pairs;
        o.need_weights = true;
        o.average_attn_weights = false;
        const auto expected = test::literal_masked_attention<float>(x, x, m, [&](std::size_t, std::size_t,
                                                                                 std::size_t i, std::size_t j) {
            return pairs(i, j) || (is_causal && j > i) ? -INFINITY : 0.0;
        });
        const auto r = is_causal ? m.forward(x, x, x, o, causal{}) : m.forward(x, x, x, o);
        const std::string what = is_causal ? "grouped-query, causal" : "grouped-query";
        test::check_close(r.output, expected.output, 1e-5, 1e-4, what);
        test::check_close(*r.weights, expected.weights, 1e-6, 1e-4, what + " weights");
        const auto two = is_causal ? m.forward(execution::parallel_policy{2}, x, x, x, o, causal{})
                                   : m.forward(execution::parallel_policy{2}, x, x, x, o, dense{});
        BOOST_TEST(two.output == r.output, what + " on two threads");
    }
}

BOOST_AUTO_TEST_CASE(double_precision) {
    // The same layer in double, against the literal loops to 1e-12, with masks and weights,
    // on awkward lengths: one query, keys around the tile and vector widths.
    const std::size_t E = 24;
    const nn::basic_multi_head_attention<double> m(
        4, test::random_tensor<double, 2>({3 * E, E}, 61), test::random_tensor<double, 1>({3 * E}, 62),
        test::random_tensor<double, 2>({E, E}, 63), test::random_tensor<double, 1>({E}, 64));
    for (const auto& [L, S] : {std::array<std::size_t, 2>{1, 1}, {1, 9}, {7, 65}, {33, 8}}) {
        const auto x = test::random_tensor<double, 3>({2, L, E}, 65), memory = test::random_tensor<double, 3>({2, S, E}, 66);
        const auto padding = random_mask<2>({2, S}, 67, 0.3);
        nn::attention_options o;
        o.key_padding_mask = padding;
        o.need_weights = true;
        const auto expected = test::literal_masked_attention<double>(x, memory, m, [&](std::size_t b, std::size_t,
                                                                                       std::size_t, std::size_t j) {
            return padding(b, j) ? -INFINITY : 0.0;
        });
        const auto r = m.forward(x, memory, memory, o);
        static_assert(std::is_same_v<decltype(r.output), xt::xtensor<double, 3>>);
        const std::string what = "double, L " + std::to_string(L) + ", S " + std::to_string(S);
        test::check_close(r.output, expected.output, 1e-12, 1e-11, what);
        test::check_close(*r.weights, xt::xtensor<double, 3>(xt::mean(expected.weights, {1})), 1e-13, 1e-12,
                          what + " weights");
    }
}

BOOST_AUTO_TEST_SUITE_END()
