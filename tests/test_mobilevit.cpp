// nn/mobilevit.hpp: MobileViT's block against its definition with the map unfolded into
// patches, attended and folded back by hand, and its loader for timm's names.
#include <nonlocal/nonlocal.hpp>

#include <filesystem>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_mobilevit)

namespace {

constexpr std::size_t C = 6, D = 8, O = 6, heads = 2;

/// A norm-first SiLU layer of D features, from a seed.
nn::transformer_encoder_layer random_layer(unsigned seed) {
    return {nn::multi_head_attention(heads, test::random_tensor<float, 2>({3 * D, D}, seed),
                                     test::random_tensor<float, 1>({3 * D}, seed + 1),
                                     test::random_tensor<float, 2>({D, D}, seed + 2),
                                     test::random_tensor<float, 1>({D}, seed + 3)),
            nn::feed_forward(test::random_tensor<float, 2>({2 * D, D}, seed + 4), test::random_tensor<float, 1>({2 * D}, seed + 5),
                             test::random_tensor<float, 2>({D, 2 * D}, seed + 6), test::random_tensor<float, 1>({D}, seed + 7),
                             nn::activation::silu),
            nn::layer_norm(test::random_tensor<float, 1>({D}, seed + 8, 0.5, 1.5), test::random_tensor<float, 1>({D}, seed + 9)),
            nn::layer_norm(test::random_tensor<float, 1>({D}, seed + 10, 0.5, 1.5), test::random_tensor<float, 1>({D}, seed + 11)),
            true};
}

struct block_parts {
    nn::conv2d<float> kxk{test::random_tensor<float, 4>({C, C, 3, 3}, 1), test::random_tensor<float, 1>({C}, 2),
                          {.padding = 1}, simd::activation::silu};
    nn::conv2d<float> one{test::random_tensor<float, 4>({D, C, 1, 1}, 3)};
    std::vector<nn::transformer_encoder_layer> layers{random_layer(10), random_layer(30)};
    nn::layer_norm norm{test::random_tensor<float, 1>({D}, 4, 0.5, 1.5), test::random_tensor<float, 1>({D}, 5)};
    nn::conv2d<float> proj{test::random_tensor<float, 4>({O, D, 1, 1}, 6), test::random_tensor<float, 1>({O}, 7), {},
                           simd::activation::silu};
    nn::conv2d<float> fusion{test::random_tensor<float, 4>({O, C + O, 3, 3}, 8), test::random_tensor<float, 1>({O}, 9),
                             {.padding = 1}, simd::activation::silu};
    nn::mobilevit_block block(bool fuse) const {
        return {kxk, one, layers, norm, proj, fuse ? std::optional(fusion) : std::nullopt, 2};
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_block_unfolds_attends_and_folds) {
    const block_parts parts;
    const std::size_t B = 2, H = 6, W = 8, ph = 2, pw = 2, nh = H / ph, nw = W / pw;
    const auto x = test::random_tensor<float, 4>({B, C, H, W}, 20);
    // By hand: [B, D, H, W] unfolded into B ph pw sequences of nh nw patches, sequence
    // (b, i, j) holding the pixels (I ph + i, K pw + j); the layers over each; the norm; folded.
    const auto local = parts.one(parts.kxk(x));
    xt::xtensor<float, 3> sequences = xt::empty<float>({B * ph * pw, nh * nw, D});
    const auto pixel = [&](std::size_t s, std::size_t n) {
        return std::pair{(n / nw) * ph + (s % (ph * pw)) / pw, (n % nw) * pw + s % pw};
    };
    for (std::size_t s = 0; s < B * ph * pw; ++s)
        for (std::size_t n = 0; n < nh * nw; ++n)
            for (std::size_t d = 0; d < D; ++d) {
                const auto [y, xx] = pixel(s, n);
                sequences(s, n, d) = local(s / (ph * pw), d, y, xx);
            }
    for (const auto& layer : parts.layers) sequences = layer(sequences);
    const xt::xtensor<float, 2> flat = xt::reshape_view(sequences, {B * ph * pw * nh * nw, D});
    const xt::xtensor<float, 2> normed = parts.norm(flat);
    xt::xtensor<float, 4> folded = xt::empty<float>({B, D, H, W});
    for (std::size_t s = 0; s < B * ph * pw; ++s)
        for (std::size_t n = 0; n < nh * nw; ++n)
            for (std::size_t d = 0; d < D; ++d) {
                const auto [y, xx] = pixel(s, n);
                folded(s / (ph * pw), d, y, xx) = normed(s * nh * nw + n, d);
            }
    const auto projected = parts.proj(folded);
    const xt::xtensor<float, 4> both = xt::concatenate(xt::xtuple(x, projected), 1);
    const auto expected = parts.fusion(both);

    const auto block = parts.block(true);
    BOOST_TEST(block.out_channels() == O);
    const auto y = block(x);
    test::check_close(y, expected, 1e-5, 1e-5, "mobilevit block");
    BOOST_TEST(block(x, execution::parallel_policy{2}) == y);
    test::check_close(parts.block(false)(x), projected, 1e-5, 1e-5, "without fusion");

    test::check_invalid([&] { block(xt::xtensor<float, 4>(xt::zeros<float>({std::size_t(1), C, std::size_t(5), std::size_t(8)}))); }, "nn::mobilevit_block",
                        "x [1, 6, 5, 8]", "2 x 2 patch divides");
    test::check_invalid([&] {
        nn::mobilevit_block(parts.kxk, parts.one, {}, parts.norm, parts.proj, parts.kxk);
    }, "nn::mobilevit_block", "conv_fusion [6, 6, 3, 3]");
}

BOOST_AUTO_TEST_CASE(loads_timm_names) {
    // A block saved as timm names it, its batch norms the identity but for their eps:
    // conv_kxk, conv_proj and conv_fusion scaled by 1 / sqrt(1 + 1e-5) before their SiLU.
    const block_parts parts;
    const auto dir = std::filesystem::temp_directory_path() / "nonlocal_test_mobilevit";
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "stages_2_1_").string();
    const auto conv_norm_act = [&](const std::string& name, const nn::conv2d<float>& c) {
        xt::dump_npy(prefix + name + "_conv_weight.npy", c.weight());
        const std::size_t n = c.out_channels();
        xt::dump_npy(prefix + name + "_bn_weight.npy", xt::xtensor<float, 1>(xt::ones<float>({n})));
        xt::dump_npy(prefix + name + "_bn_bias.npy", c.bias());   // the convolution's bias, carried by the norm
        xt::dump_npy(prefix + name + "_bn_running_mean.npy", xt::xtensor<float, 1>(xt::zeros<float>({n})));
        xt::dump_npy(prefix + name + "_bn_running_var.npy", xt::xtensor<float, 1>(xt::ones<float>({n})));
    };
    conv_norm_act("conv_kxk", parts.kxk);
    conv_norm_act("conv_proj", parts.proj);
    conv_norm_act("conv_fusion", parts.fusion);
    xt::dump_npy(prefix + "conv_1x1_weight.npy", parts.one.weight());
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& l = parts.layers[i];
        const std::string at = prefix + "transformer_" + std::to_string(i) + "_";
        xt::dump_npy(at + "norm1_weight.npy", l.norm1.weight), xt::dump_npy(at + "norm1_bias.npy", l.norm1.bias);
        xt::dump_npy(at + "norm2_weight.npy", l.norm2.weight), xt::dump_npy(at + "norm2_bias.npy", l.norm2.bias);
        xt::dump_npy(at + "attn_qkv_weight.npy", xt::xtensor<float, 2>(xt::concatenate(xt::xtuple(
                                                      l.self_attn.q_proj.weight(), l.self_attn.k_proj.weight(),
                                                      l.self_attn.v_proj.weight()))));
        xt::dump_npy(at + "attn_qkv_bias.npy", xt::xtensor<float, 1>(xt::concatenate(xt::xtuple(
                                                    l.self_attn.q_proj.bias(), l.self_attn.k_proj.bias(),
                                                    l.self_attn.v_proj.bias()))));
        xt::dump_npy(at + "attn_proj_weight.npy", l.self_attn.out_proj.weight());
        xt::dump_npy(at + "attn_proj_bias.npy", l.self_attn.out_proj.bias());
        xt::dump_npy(at + "mlp_fc1_weight.npy", l.mlp.linear1.weight()), xt::dump_npy(at + "mlp_fc1_bias.npy", l.mlp.linear1.bias());
        xt::dump_npy(at + "mlp_fc2_weight.npy", l.mlp.linear2.weight()), xt::dump_npy(at + "mlp_fc2_bias.npy", l.mlp.linear2.bias());
    }
    xt::dump_npy(prefix + "norm_weight.npy", parts.norm.weight);
    xt::dump_npy(prefix + "norm_bias.npy", parts.norm.bias);
    const auto loaded = nn::mobilevit_block::load_timm(prefix, heads);
    const auto x = test::random_tensor<float, 4>({1, C, 4, 4}, 21);
    // The same block with each norm's 1 / sqrt(1 + eps) in its convolution's weights.
    const float s = 1.0f / std::sqrt(1.0f + 1e-5f);
    const auto scaled = [&](const nn::conv2d<float>& c) {
        return nn::conv2d<float>(xt::xtensor<float, 4>(c.weight() * s), c.bias(), c.options(), c.activation());
    };
    const nn::mobilevit_block expected(scaled(parts.kxk), parts.one, parts.layers, parts.norm, scaled(parts.proj),
                                       scaled(parts.fusion), 2);
    test::check_close(loaded(x), expected(x), 1e-5, 1e-5, "loaded from timm's names");
    std::filesystem::remove(prefix + "norm_bias.npy");
    BOOST_CHECK_EXCEPTION(nn::mobilevit_block::load_timm(prefix, heads), std::runtime_error,
                          [&](const std::runtime_error& e) { return std::string(e.what()) == "cannot open " + prefix + "norm_bias.npy"; });
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
