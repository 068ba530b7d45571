// nn/vision_transformer.hpp and nn/position_encoding.hpp: the model against its composition
// written out with loops, its loaders for torchvision's and timm's names, and the encodings
// against values worked out by hand. (tests/nn/torch_parity.cpp compares the model with
// torchvision's itself when PyTorch is installed.)
#include <nonlocal/nonlocal.hpp>

#include <array>
#include <cmath>
#include <filesystem>

#include <xtensor/xnpy.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xstrided_view.hpp>
#include <xtensor/xview.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_vision_transformer)

namespace {

constexpr std::size_t E = 8, heads = 2, hidden = 12, patch = 4, grid = 3, classes = 5;

/// One norm-first GELU encoder layer of random weights, and the tensors it was made of.
struct layer_weights {
    xt::xtensor<float, 2> in_w, out_w, w1, w2;
    xt::xtensor<float, 1> in_b, out_b, b1, b2, n1w, n1b, n2w, n2b;
    explicit layer_weights(unsigned seed)
        : in_w(test::random_tensor<float, 2>({3 * E, E}, seed)), out_w(test::random_tensor<float, 2>({E, E}, seed + 1)),
          w1(test::random_tensor<float, 2>({hidden, E}, seed + 2)), w2(test::random_tensor<float, 2>({E, hidden}, seed + 3)),
          in_b(test::random_tensor<float, 1>({3 * E}, seed + 4)), out_b(test::random_tensor<float, 1>({E}, seed + 5)),
          b1(test::random_tensor<float, 1>({hidden}, seed + 6)), b2(test::random_tensor<float, 1>({E}, seed + 7)),
          n1w(test::random_tensor<float, 1>({E}, seed + 8, 0.5, 1.5)), n1b(test::random_tensor<float, 1>({E}, seed + 9)),
          n2w(test::random_tensor<float, 1>({E}, seed + 10, 0.5, 1.5)), n2b(test::random_tensor<float, 1>({E}, seed + 11)) {}
    nn::transformer_encoder_layer layer() const {
        return {nn::multi_head_attention(heads, in_w, in_b, out_w, out_b),
                nn::feed_forward(w1, b1, w2, b2, nn::activation::gelu), nn::layer_norm(n1w, n1b, 1e-6),
                nn::layer_norm(n2w, n2b, 1e-6), true};
    }
};

struct model_weights {
    xt::xtensor<float, 4> conv_w = test::random_tensor<float, 4>({E, 3, patch, patch}, 1);
    xt::xtensor<float, 1> conv_b = test::random_tensor<float, 1>({E}, 2);
    xt::xtensor<float, 1> cls = test::random_tensor<float, 1>({E}, 3);
    xt::xtensor<float, 2> pos = test::random_tensor<float, 2>({1 + grid * grid, E}, 4);
    layer_weights l0{10}, l1{30};
    xt::xtensor<float, 1> norm_w = test::random_tensor<float, 1>({E}, 5, 0.5, 1.5), norm_b = test::random_tensor<float, 1>({E}, 6);
    xt::xtensor<float, 2> head_w = test::random_tensor<float, 2>({classes, E}, 7);
    xt::xtensor<float, 1> head_b = test::random_tensor<float, 1>({classes}, 8);

    nn::vision_transformer model() const {
        return {nn::conv2d<float>(conv_w, conv_b, {.stride = patch}), cls, pos, {l0.layer(), l1.layer()},
                nn::layer_norm(norm_w, norm_b, 1e-6), nn::linear_layer<float>(head_w, head_b)};
    }
};

template <std::size_t N>
void save(const std::string& path, const xt::xtensor<float, N>& t) {
    xt::dump_npy(path, t);
}
xt::xtensor<float, 3> with_batch(const xt::xtensor<float, 2>& t) { return xt::reshape_view(t, {std::size_t(1), t.shape(0), t.shape(1)}); }

}  // namespace

BOOST_AUTO_TEST_CASE(the_model_is_its_composition) {
    const model_weights w;
    const auto vit = w.model();
    BOOST_TEST(vit.image_size() == grid * patch);
    BOOST_TEST(vit.depth() == 2u);
    const auto images = test::random_tensor<float, 4>({2, 3, grid * patch, grid * patch}, 20);
    // The composition written out: patches by the convolution, token 1 + y g + x the patch
    // (y, x) plus its position, token 0 the class token plus position 0; the layers; the
    // class token's norm; the head.
    const auto patches = nn::conv2d<float>(w.conv_w, w.conv_b, {.stride = patch})(images);   // [2, E, 3, 3]
    xt::xtensor<float, 3> tokens = xt::empty<float>({std::size_t(2), 1 + grid * grid, E});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t e = 0; e < E; ++e) {
            tokens(b, 0, e) = w.cls(e) + w.pos(0, e);
            for (std::size_t y = 0; y < grid; ++y)
                for (std::size_t x = 0; x < grid; ++x)
                    tokens(b, 1 + y * grid + x, e) = patches(b, e, y, x) + w.pos(1 + y * grid + x, e);
        }
    tokens = w.l1.layer()(w.l0.layer()(tokens));
    BOOST_TEST(vit.encode(images) == tokens);
    const xt::xtensor<float, 2> first = xt::view(tokens, xt::all(), 0, xt::all());
    const auto normed = nn::layer_norm(w.norm_w, w.norm_b, 1e-6)(first);
    const auto logits = nn::linear_layer<float>(w.head_w, w.head_b)(normed);
    BOOST_TEST(vit.class_features(images) == normed);
    BOOST_TEST(vit(images) == logits);
    BOOST_TEST(vit(execution::parallel_policy{2}, images) == logits);

    // An image of 4 x 4 patches: the position embedding's grid resampled from 3 x 3.
    const auto larger = test::random_tensor<float, 4>({1, 3, 4 * patch, 4 * patch}, 21);
    const xt::xtensor<float, 2> grid_rows = xt::view(w.pos, xt::range(1, 1 + grid * grid), xt::all());
    const auto resampled = nn::resample_position_embedding(grid_rows, grid, 4);
    const nn::vision_transformer at_16(nn::conv2d<float>(w.conv_w, w.conv_b, {.stride = patch}), w.cls,
                                       xt::concatenate(xt::xtuple(xt::view(w.pos, xt::range(0, 1), xt::all()), resampled)),
                                       {w.l0.layer(), w.l1.layer()}, nn::layer_norm(w.norm_w, w.norm_b, 1e-6),
                                       nn::linear_layer<float>(w.head_w, w.head_b));
    BOOST_TEST(vit(larger) == at_16(larger));

    test::check_invalid([&] { vit(xt::xtensor<float, 4>(xt::zeros<float>({1, 3, 13, 13}))); },
                        "nn::vision_transformer", "images [1, 3, 13, 13]", "patch size 4");
    test::check_invalid([&] { vit(xt::xtensor<float, 4>(xt::zeros<float>({1, 1, 12, 12}))); }, "[B, 3, H, W]");
    test::check_invalid([&] {
        nn::vision_transformer(nn::conv2d<float>(w.conv_w, w.conv_b, {.stride = 2}), w.cls, w.pos, {},
                               nn::layer_norm(w.norm_w, w.norm_b));
    }, "nn::vision_transformer", "stride p");
    test::check_invalid([&] {
        nn::vision_transformer(nn::conv2d<float>(w.conv_w, w.conv_b, {.stride = patch}), w.cls,
                               xt::xtensor<float, 2>(xt::zeros<float>({std::size_t(8), E})), {}, nn::layer_norm(w.norm_w, w.norm_b));
    }, "position_embedding [8, 8]");
}

BOOST_AUTO_TEST_CASE(loads_torchvision_and_timm_names) {
    const model_weights w;
    const auto images = test::random_tensor<float, 4>({1, 3, grid * patch, grid * patch}, 22);
    const auto expected = w.model()(images);
    const auto dir = test::scratch_dir("nonlocal_test_vit");
    std::filesystem::create_directories(dir);
    const std::string tv = (dir / "tv_").string(), timm = (dir / "timm_").string();
    save(tv + "conv_proj_weight.npy", w.conv_w);
    save(tv + "conv_proj_bias.npy", w.conv_b);
    save(tv + "class_token.npy", xt::xtensor<float, 3>(xt::reshape_view(w.cls, {std::size_t(1), std::size_t(1), E})));
    save(tv + "encoder_pos_embedding.npy", with_batch(w.pos));
    save(timm + "patch_embed_proj_weight.npy", w.conv_w);
    save(timm + "patch_embed_proj_bias.npy", w.conv_b);
    save(timm + "cls_token.npy", xt::xtensor<float, 3>(xt::reshape_view(w.cls, {std::size_t(1), std::size_t(1), E})));
    save(timm + "pos_embed.npy", with_batch(w.pos));
    for (std::size_t i = 0; i < 2; ++i) {
        const layer_weights& l = i ? w.l1 : w.l0;
        const std::string a = tv + "encoder_layers_encoder_layer_" + std::to_string(i) + "_";
        save(a + "ln_1_weight.npy", l.n1w), save(a + "ln_1_bias.npy", l.n1b);
        save(a + "ln_2_weight.npy", l.n2w), save(a + "ln_2_bias.npy", l.n2b);
        save(a + "self_attention_in_proj_weight.npy", l.in_w), save(a + "self_attention_in_proj_bias.npy", l.in_b);
        save(a + "self_attention_out_proj_weight.npy", l.out_w), save(a + "self_attention_out_proj_bias.npy", l.out_b);
        save(a + "mlp_0_weight.npy", l.w1), save(a + "mlp_0_bias.npy", l.b1);
        save(a + "mlp_3_weight.npy", l.w2), save(a + "mlp_3_bias.npy", l.b2);
        const std::string t = timm + "blocks_" + std::to_string(i) + "_";
        save(t + "norm1_weight.npy", l.n1w), save(t + "norm1_bias.npy", l.n1b);
        save(t + "norm2_weight.npy", l.n2w), save(t + "norm2_bias.npy", l.n2b);
        save(t + "attn_qkv_weight.npy", l.in_w), save(t + "attn_qkv_bias.npy", l.in_b);
        save(t + "attn_proj_weight.npy", l.out_w), save(t + "attn_proj_bias.npy", l.out_b);
        save(t + "mlp_fc1_weight.npy", l.w1), save(t + "mlp_fc1_bias.npy", l.b1);
        save(t + "mlp_fc2_weight.npy", l.w2), save(t + "mlp_fc2_bias.npy", l.b2);
    }
    save(tv + "encoder_ln_weight.npy", w.norm_w), save(tv + "encoder_ln_bias.npy", w.norm_b);
    save(tv + "heads_head_weight.npy", w.head_w), save(tv + "heads_head_bias.npy", w.head_b);
    save(timm + "norm_weight.npy", w.norm_w), save(timm + "norm_bias.npy", w.norm_b);
    save(timm + "head_weight.npy", w.head_w), save(timm + "head_bias.npy", w.head_b);

    const nn::vit_config config{.image_size = grid * patch, .patch = patch, .hidden = E, .layers = 2, .heads = heads,
                                .mlp = hidden, .classes = classes};
    BOOST_TEST(nn::load_torchvision(tv, config)(images) == expected);
    BOOST_TEST(nn::load_timm(timm, config)(images) == expected);
    // Without a head (timm's num_classes=0): the features.
    std::filesystem::remove(timm + "head_weight.npy");
    std::filesystem::remove(timm + "head_bias.npy");
    auto headless = config;
    headless.classes = 0;
    BOOST_TEST(nn::load_timm(timm, headless)(images) == w.model().class_features(images));
    // ... which the architecture with a head refuses, rather than giving features for logits.
    test::check_invalid([&] { nn::load_timm(timm, config); }, "nn::load_timm",
                        "(2 problems)", "missing head_weight [5, 8]", "missing head_bias [5]");
    // What the architecture has no place for is unexpected (layer scale here), and a missing
    // file is named with the other problems.
    save(timm + "blocks_0_ls1_gamma.npy", w.norm_w);
    test::check_invalid([&] { nn::load_timm(timm, headless); },
                        "nn::load_timm", "(1 problem)", "unexpected blocks_0_ls1_gamma");
    std::filesystem::remove(tv + "encoder_ln_bias.npy");
    test::check_invalid([&] { nn::load_torchvision(tv, config); },
                        "nn::load_torchvision", "missing encoder_ln_bias [8]");
    // One layer fewer leaves a layer's entries unused; another image size, other positions.
    auto shallow = config;
    shallow.layers = 1;
    test::check_invalid([&] { nn::load_timm(timm, shallow); }, "unexpected blocks_1_attn_proj_bias");
    auto larger_images = headless;
    larger_images.image_size = 4 * patch;
    test::check_invalid([&] { nn::load_timm(timm, larger_images); },
                        "pos_embed.npy: entry pos_embed holds [1, 10, 8]; expected [1, 17, 8]");
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(encodings_by_hand) {
    // Sinusoidal, d = 4: position 0 is [0, 1, 0, 1]; position 1 is [sin 1, cos 1, sin 0.01, cos 0.01].
    const auto pe = nn::sinusoidal_encoding<double>(2, 4);
    BOOST_TEST(pe(0, 0) == 0.0);
    BOOST_TEST(pe(0, 1) == 1.0);
    BOOST_TEST(pe(1, 0) == std::sin(1.0));
    BOOST_TEST(pe(1, 2) == std::sin(0.01), boost::test_tools::tolerance(1e-15));
    BOOST_TEST(pe(1, 3) == std::cos(0.01), boost::test_tools::tolerance(1e-15));
    // 2-D, d = 8, a 2 x 3 grid: token (y, x) = (1, 2) at row 5 is [sin 2, sin 0.02, cos 2,
    // cos 0.02, sin 1, sin 0.01, cos 1, cos 0.01] (omega = 1, 1 / 100).
    const auto pe2 = nn::sincos_encoding_2d<double>(2, 3, 8);
    const double expected[] = {std::sin(2.0), std::sin(0.02), std::cos(2.0), std::cos(0.02),
                               std::sin(1.0), std::sin(0.01), std::cos(1.0), std::cos(0.01)};
    for (std::size_t i = 0; i < 8; ++i) BOOST_TEST(pe2(5, i) == expected[i], boost::test_tools::tolerance(1e-15));
    test::check_invalid([] { nn::sinusoidal_encoding(3, 5); }, "nn::sinusoidal_encoding", "d = 5");
    test::check_invalid([] { nn::sincos_encoding_2d(3, 3, 6); }, "nn::sincos_encoding_2d", "d = 6");

    // Resampling 2 x 2 to 3 x 3 with the corners aligned keeps the corners; the middle of an
    // edge is the mean of its two ends (the cubic's weights at t = 1/2 are -3/32, 19/32,
    // 19/32, -3/32 on a, a, b, b), the centre the mean of the four.
    const xt::xtensor<double, 2> corners{{1.0}, {2.0}, {4.0}, {8.0}};
    const auto nine = nn::resample_position_embedding(corners, 2, 3);
    const double grid3[] = {1, 1.5, 2, 2.5, 3.75, 5, 4, 6, 8};
    for (std::size_t i = 0; i < 9; ++i) BOOST_TEST(nine(i, 0) == grid3[i], boost::test_tools::tolerance(1e-14));
    BOOST_TEST(nn::resample_position_embedding(corners, 2, 2) == corners);
    // With the cells' centres aligned, 2 x 2 stays as it is, and its one cell at 1 x 1 sits at
    // source 0.5 in both axes: the mean of the four, 3.75. timm's antialiased resampling
    // centres a cubic stretched by 2 there, weighing the four alike: the same mean.
    const nn::resize_options centers{nn::interpolation::bicubic};
    for (const nn::resize_options options : {centers, nn::timm_position_resampling}) {
        BOOST_TEST(nn::resample_position_embedding(corners, 2, 2, options) == corners);
        BOOST_TEST(nn::resample_position_embedding(corners, 2, 1, options)(0, 0) == 3.75,
                   boost::test_tools::tolerance(1e-14));
    }
    // Each feature is resampled as `resize` resamples a plane.
    const auto features = test::random_tensor<double, 2>({25, 3}, 22);
    for (const nn::resize_options options : {nn::torchvision_position_resampling, nn::timm_position_resampling}) {
        const auto planes = xt::eval(xt::reshape_view(xt::transpose(features), {3, 5, 5}));
        for (const std::size_t to : {std::size_t(3), std::size_t(8)}) {
            const xt::xtensor<double, 3> expected = nn::resize(planes, {to, to}, options);
            test::check_close(nn::resample_position_embedding(features, 5, to, options),
                              xt::xtensor<double, 2>(xt::transpose(xt::reshape_view(expected, std::array<std::size_t, 2>{3, to * to}))), 1e-14,
                              1e-14, "as resize");
        }
    }
    test::check_invalid([&] { nn::resample_position_embedding(corners, 3, 4); }, "embedding [4, 1]", "3 x 3");
}

BOOST_AUTO_TEST_SUITE_END()
