// nn/mobilevit.hpp and nn/inverted_residual.hpp: MobileViT's block against its definition with
// the map unfolded into patches, attended and folded back by hand; the inverted residual
// against literal double convolutions; the whole network against its parts; the loaders of
// timm's names.
#include <nonlocal/nonlocal.hpp>

#include <filesystem>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "support/literal_nn.hpp"
#include "support/support.hpp"

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
    nn::mobilevit_block block(bool fuse, nn::size2 patch = 2) const {
        return {kxk, one, layers, norm, proj, fuse ? std::optional(fusion) : std::nullopt, patch};
    }
};

/// The block's output by its definition: the local part, the map (resized bilinearly to
/// the next multiples of the ph x pw patch) unfolded into B ph pw sequences of nh nw
/// patches, sequence (b, i, j) holding the pixels (I ph + i, K pw + j); the layers over
/// each; the norm; folded, resized back, projected and fused.
xt::xtensor<float, 4> by_hand(const block_parts& parts, const xt::xtensor<float, 4>& x, bool fuse, nn::size2 patch = 2) {
    const std::size_t B = x.shape(0), H = x.shape(2), W = x.shape(3), ph = patch.h, pw = patch.w;
    const std::size_t Hd = (H + ph - 1) / ph * ph, Wd = (W + pw - 1) / pw * pw, nh = Hd / ph, nw = Wd / pw;
    xt::xtensor<float, 4> local = parts.one(parts.kxk(x));
    if (Hd != H || Wd != W) local = nn::resize_bilinear(local, {Hd, Wd});
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
    xt::xtensor<float, 4> folded = xt::empty<float>({B, D, Hd, Wd});
    for (std::size_t s = 0; s < B * ph * pw; ++s)
        for (std::size_t n = 0; n < nh * nw; ++n)
            for (std::size_t d = 0; d < D; ++d) {
                const auto [y, xx] = pixel(s, n);
                folded(s / (ph * pw), d, y, xx) = normed(s * nh * nw + n, d);
            }
    if (Hd != H || Wd != W) folded = nn::resize_bilinear(folded, {H, W});
    const xt::xtensor<float, 4> projected = parts.proj(folded);
    if (!fuse) return projected;
    const xt::xtensor<float, 4> both = xt::concatenate(xt::xtuple(x, projected), 1);
    return parts.fusion(both);
}

/// A convolution saved as timm's ConvNormAct names it, its batch norm the identity but for
/// its eps, the convolution's bias carried by the norm's.
void save_conv_norm_act(const std::string& prefix, const nn::conv2d<float>& c) {
    xt::dump_npy(prefix + "conv_weight.npy", c.weight());
    const std::size_t n = c.out_channels();
    xt::dump_npy(prefix + "bn_weight.npy", xt::xtensor<float, 1>(xt::ones<float>({n})));
    xt::dump_npy(prefix + "bn_bias.npy", c.bias().size() ? c.bias() : xt::xtensor<float, 1>(xt::zeros<float>({n})));
    xt::dump_npy(prefix + "bn_running_mean.npy", xt::xtensor<float, 1>(xt::zeros<float>({n})));
    xt::dump_npy(prefix + "bn_running_var.npy", xt::xtensor<float, 1>(xt::ones<float>({n})));
}

/// An encoder layer saved as timm names a block's entries (`transformer.N.` of a MobileVitBlock).
void save_timm_layer(const std::string& at, const nn::transformer_encoder_layer& l) {
    xt::dump_npy(at + "norm1_weight.npy", l.norm1.weight), xt::dump_npy(at + "norm1_bias.npy", l.norm1.bias);
    xt::dump_npy(at + "norm2_weight.npy", l.norm2.weight), xt::dump_npy(at + "norm2_bias.npy", l.norm2.bias);
    xt::dump_npy(at + "attn_qkv_weight.npy", test::in_proj_weight(l.self_attn));
    xt::dump_npy(at + "attn_qkv_bias.npy", test::in_proj_bias(l.self_attn));
    xt::dump_npy(at + "attn_proj_weight.npy", l.self_attn.out_proj.weight());
    xt::dump_npy(at + "attn_proj_bias.npy", l.self_attn.out_proj.bias());
    xt::dump_npy(at + "mlp_fc1_weight.npy", l.mlp.linear1.weight()), xt::dump_npy(at + "mlp_fc1_bias.npy", l.mlp.linear1.bias());
    xt::dump_npy(at + "mlp_fc2_weight.npy", l.mlp.linear2.weight()), xt::dump_npy(at + "mlp_fc2_bias.npy", l.mlp.linear2.bias());
}

/// The convolution as loaded back: each weight scaled by the norm's 1 / sqrt(1 + 1e-5).
nn::conv2d<float> scaled_by_norm(const nn::conv2d<float>& c) {
    const float s = 1.0f / std::sqrt(1.0f + 1e-5f);
    return nn::conv2d<float>(xt::xtensor<float, 4>(c.weight() * s), c.bias(), c.options(), c.activation());
}

/// An inverted residual C -> 2 C -> out of the given depthwise stride, from a seed.
struct mv2_parts {
    std::size_t in, mid, out, stride;
    nn::conv2d<float> expand, depthwise, project;
    mv2_parts(std::size_t in_, std::size_t out_, std::size_t stride_, unsigned seed, std::size_t mid_ = 0)
        : in(in_), mid(mid_ ? mid_ : 2 * in_), out(out_), stride(stride_),
          expand(test::random_tensor<float, 4>({mid, in, 1, 1}, seed), test::random_tensor<float, 1>({mid}, seed + 1), {},
                 simd::activation::silu),
          depthwise(test::random_tensor<float, 4>({mid, 1, 3, 3}, seed + 2), test::random_tensor<float, 1>({mid}, seed + 3),
                    {.stride = stride, .padding = 1, .groups = mid}, simd::activation::silu),
          project(test::random_tensor<float, 4>({out, mid, 1, 1}, seed + 4), test::random_tensor<float, 1>({out}, seed + 5)) {}
    nn::inverted_residual block() const { return {expand, depthwise, project}; }
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_block_unfolds_attends_and_folds) {
    const block_parts parts;
    const auto x = test::random_tensor<float, 4>({2, C, 6, 8}, 20);
    const auto block = parts.block(true);
    BOOST_TEST(block.out_channels() == O);
    const auto y = block(x);
    test::check_close(y, by_hand(parts, x, true), 1e-5, 1e-5, "mobilevit block");
    BOOST_TEST(block(execution::parallel_policy{2}, x) == y);
    test::check_close(parts.block(false)(x), by_hand(parts, x, false), 1e-5, 1e-5, "without fusion");
    // Maps the patch does not divide, one pixel among them.
    for (const auto& [H, W] : {std::pair{5, 8}, std::pair{7, 3}, std::pair{1, 1}}) {
        const auto odd = test::random_tensor<float, 4>({1, C, std::size_t(H), std::size_t(W)}, 21 + H);
        test::check_close(block(odd), by_hand(parts, odd, true), 1e-5, 1e-5, "resized for the patches");
    }
    // Patches of 3 x 2 and 1 x 4 pixels, dividing the map or not; two threads.
    for (const nn::size2 patch : {nn::size2{3, 2}, nn::size2{1, 4}})
        for (const auto& [H, W] : {std::pair{6, 8}, std::pair{7, 5}}) {
            const auto map = test::random_tensor<float, 4>({2, C, std::size_t(H), std::size_t(W)}, 30 + H);
            const auto by_patch = parts.block(true, patch);
            test::check_close(by_patch(map), by_hand(parts, map, true, patch), 1e-5, 1e-5, "patches of other shapes");
            BOOST_TEST(by_patch(execution::parallel_policy{2}, map) == by_patch(map));
        }

    test::check_invalid([&] { block(xt::xtensor<float, 4>(xt::zeros<float>({std::size_t(1), C + 1, std::size_t(4), std::size_t(4)}))); },
                        "nn::mobilevit_block", "x [1, 7, 4, 4]", "6 channels");
    test::check_invalid([&] {
        nn::mobilevit_block(parts.kxk, parts.one, {}, parts.norm, parts.proj, parts.kxk);
    }, "nn::mobilevit_block", "conv_fusion [6, 6, 3, 3]");
    // Each convolution keeps the map's size, or the concatenation would not line up.
    const nn::conv2d<float> unpadded(parts.kxk.weight(), parts.kxk.bias());
    test::check_invalid([&] { nn::mobilevit_block(unpadded, parts.one, {}, parts.norm, parts.proj, parts.fusion); },
                        "nn::mobilevit_block", "keeping the map's size", "conv_kxk [6, 6, 3, 3]");
    const nn::conv2d<float> fusion_unpadded(parts.fusion.weight(), parts.fusion.bias());
    test::check_invalid([&] { nn::mobilevit_block(parts.kxk, parts.one, {}, parts.norm, parts.proj, fusion_unpadded); },
                        "nn::mobilevit_block", "conv_fusion [6, 12, 3, 3]");
    const nn::conv2d<float> padded_one(parts.one.weight(), {}, {.padding = 1});
    test::check_invalid([&] { nn::mobilevit_block(parts.kxk, padded_one, {}, parts.norm, parts.proj, parts.fusion); },
                        "nn::mobilevit_block", "conv_1x1 [8, 6, 1, 1]");
    const nn::conv2d<float> strided_proj(parts.proj.weight(), parts.proj.bias(), {.stride = 2});
    test::check_invalid([&] { nn::mobilevit_block(parts.kxk, parts.one, {}, parts.norm, strided_proj, parts.fusion); },
                        "nn::mobilevit_block", "conv_proj [6, 8, 1, 1]");
}

BOOST_AUTO_TEST_CASE(loads_timm_names) {
    // A block saved as timm names it, its batch norms the identity but for their eps:
    // conv_kxk, conv_proj and conv_fusion scaled by 1 / sqrt(1 + 1e-5) before their SiLU.
    const block_parts parts;
    const auto dir = test::scratch_dir("nonlocal_test_mobilevit");
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "stages_2_1_").string();
    const auto conv_norm_act = [&](const std::string& name, const nn::conv2d<float>& c) {
        save_conv_norm_act(prefix + name + "_", c);
    };
    conv_norm_act("conv_kxk", parts.kxk);
    conv_norm_act("conv_proj", parts.proj);
    conv_norm_act("conv_fusion", parts.fusion);
    xt::dump_npy(prefix + "conv_1x1_weight.npy", parts.one.weight());
    for (std::size_t i = 0; i < 2; ++i) save_timm_layer(prefix + "transformer_" + std::to_string(i) + "_", parts.layers[i]);
    xt::dump_npy(prefix + "norm_weight.npy", parts.norm.weight);
    xt::dump_npy(prefix + "norm_bias.npy", parts.norm.bias);
    const nn::mobilevit_block_config config{.in_channels = C, .transformer_dim = D, .transformer_depth = 2, .num_heads = heads};
    const auto loaded = nn::load_timm(prefix, config);
    const auto x = test::random_tensor<float, 4>({1, C, 4, 4}, 21);
    // The same block with each norm's 1 / sqrt(1 + eps) in its convolution's weights.
    const nn::mobilevit_block expected(scaled_by_norm(parts.kxk), parts.one, parts.layers, parts.norm,
                                       scaled_by_norm(parts.proj), scaled_by_norm(parts.fusion), 2);
    test::check_close(loaded(x), expected(x), 1e-5, 1e-5, "loaded from timm's names");
    std::filesystem::remove(prefix + "norm_bias.npy");
    test::check_invalid([&] { nn::load_timm(prefix, config); }, "nn::load_timm",
                        "(1 problem)", "missing norm_bias [8]");
    // A block of one more layer, or without fusion, is another architecture.
    auto deeper = config;
    deeper.transformer_depth = 3;
    test::check_invalid([&] { nn::load_timm(prefix, deeper); }, "missing transformer_2_norm1_weight [8]",
                        "missing transformer_2_mlp_fc2_bias [8]");
    auto unfused = config;
    unfused.fusion = false;
    test::check_invalid([&] { nn::load_timm(prefix, unfused); }, "unexpected conv_fusion_conv_weight");
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(inverted_residual_matches_literal_convolutions) {
    // y = project(silu(depthwise(silu(expand(x))))) + x when the channels and the size stay.
    for (const auto& [out, stride] : {std::pair{std::size_t(6), std::size_t(1)}, std::pair{std::size_t(10), std::size_t(1)},
                                      std::pair{std::size_t(6), std::size_t(2)}}) {
        const mv2_parts p(6, out, stride, 40);
        const auto block = p.block();
        BOOST_TEST(block.residual() == (out == 6 && stride == 1));
        for (const auto& [H, W] : {std::pair{7, 9}, std::pair{1, 1}, std::pair{16, 17}}) {
            const auto x = test::random_tensor<float, 4>({2, 6, std::size_t(H), std::size_t(W)}, 50 + H);
            const auto middle = test::literal_silu(test::literal_conv2d(
                xt::xtensor<float, 4>(test::literal_silu(test::literal_conv2d(x, p.expand.weight(), p.expand.bias(), {}))),
                p.depthwise.weight(), p.depthwise.bias(), p.depthwise.options()));
            xt::xtensor<double, 4> expected =
                test::literal_conv2d(xt::xtensor<float, 4>(middle), p.project.weight(), p.project.bias(), {});
            if (block.residual()) expected += x;
            test::check_close(block(x), expected, 1e-4, 1e-4, "inverted residual");
            BOOST_TEST(block(execution::parallel_policy{2}, x) == block(x));
        }
    }
    // Without expansion (MobileNetV2's first block): the depthwise convolution reads x.
    const mv2_parts p(6, 6, 1, 60);
    const nn::conv2d<float> depthwise6(test::random_tensor<float, 4>({6, 1, 3, 3}, 61), {}, {.padding = 1, .groups = 6},
                                       simd::activation::relu6);
    const nn::conv2d<float> project6(test::random_tensor<float, 4>({4, 6, 1, 1}, 62));
    const nn::inverted_residual plain(std::nullopt, depthwise6, project6);
    const auto x = test::random_tensor<float, 4>({1, 6, 5, 5}, 63);
    BOOST_TEST(plain.in_channels() == 6u);
    test::check_close(plain(x), project6(depthwise6(x)), 1e-6, 1e-6, "without expansion");

    test::check_invalid([&] { nn::inverted_residual(p.expand, p.expand, p.project); }, "nn::inverted_residual",
                        "depthwise [12, 6, 1, 1] with 1 groups");
    test::check_invalid([&] { nn::inverted_residual(p.expand, p.depthwise, p.depthwise); }, "nn::inverted_residual",
                        "project [12, 1, 3, 3]");
    test::check_invalid([&] { p.block()(xt::xtensor<float, 4>(xt::zeros<float>({1, 5, 4, 4}))); }, "nn::inverted_residual",
                        "x [1, 5, 4, 4] must have 6 channels");
    // 1 x 1 convolutions of stride 1 without padding around the depthwise one.
    const nn::conv2d<float> padded_expand(p.expand.weight(), p.expand.bias(), {.padding = 1});
    test::check_invalid([&] { nn::inverted_residual(padded_expand, p.depthwise, p.project); }, "nn::inverted_residual",
                        "without padding", "expand [12, 6, 1, 1]");
    const nn::conv2d<float> strided_project(p.project.weight(), p.project.bias(), {.stride = 2});
    test::check_invalid([&] { nn::inverted_residual(p.expand, p.depthwise, strided_project); }, "nn::inverted_residual",
                        "project [6, 12, 1, 1]");
    // A depthwise kernel without padding shrinks the map: no residual, the map smaller by
    // 2, and an input too small for the kernel refused.
    const nn::conv2d<float> shrinking(p.depthwise.weight(), p.depthwise.bias(), {.groups = 12}, simd::activation::silu);
    const nn::inverted_residual narrow(p.expand, shrinking, p.project);
    BOOST_TEST(!narrow.residual());
    BOOST_TEST((narrow.output_size(7, 9) == nn::size2{5, 7}));
    const auto x7 = test::random_tensor<float, 4>({1, 6, 7, 9}, 64);
    const auto middle = test::literal_silu(test::literal_conv2d(
        xt::xtensor<float, 4>(test::literal_silu(test::literal_conv2d(x7, p.expand.weight(), p.expand.bias(), {}))),
        shrinking.weight(), shrinking.bias(), shrinking.options()));
    test::check_close(narrow(x7), test::literal_conv2d(xt::xtensor<float, 4>(middle), p.project.weight(), p.project.bias(), {}),
                      1e-4, 1e-4, "shrinking depthwise");
    test::check_invalid([&] { narrow(xt::xtensor<float, 4>(xt::zeros<float>({1, 6, 2, 5}))); }, "nn::inverted_residual",
                        "x [1, 6, 2, 5]", "room for the depthwise kernel [12, 1, 3, 3]");
}

BOOST_AUTO_TEST_CASE(the_network_chains_its_parts) {
    // stem 3 -> 6 of stride 2; an inverted residual 6 -> 6; one 6 -> 6 of stride 2 and the
    // MobileViT block; final_conv 6 -> 12; the head 12 -> 5.
    const block_parts parts;
    const nn::conv2d<float> stem(test::random_tensor<float, 4>({C, 3, 3, 3}, 70), test::random_tensor<float, 1>({C}, 71),
                                 {.stride = 2, .padding = 1}, simd::activation::silu);
    const mv2_parts first(C, C, 1, 72, 16), second(C, C, 2, 80, 16);   // timm's mid channels: multiples of 8
    const nn::conv2d<float> final_conv(test::random_tensor<float, 4>({12, C, 1, 1}, 90), test::random_tensor<float, 1>({12}, 91),
                                       {}, simd::activation::silu);
    const nn::linear_layer<float> head(test::random_tensor<float, 2>({5, 12}, 92), test::random_tensor<float, 1>({5}, 93));
    const nn::mobilevit net(stem, {first.block(), second.block(), parts.block(true)}, final_conv, head);
    const auto images = test::random_tensor<float, 4>({2, 3, 19, 16}, 94);   // 10 x 8, then 5 x 4 at the block
    const xt::xtensor<float, 4> maps = final_conv(parts.block(true)(second.block()(first.block()(stem(images)))));
    BOOST_TEST(net.features(images) == maps);
    const xt::xtensor<double, 2> pooled = xt::mean(xt::xtensor<double, 4>(maps), {2, 3});
    const auto expected = test::literal_linear(pooled, head.weight(), head.bias());
    test::check_close(net(images), expected, 1e-5, 1e-5, "logits");
    BOOST_TEST(net(execution::parallel_policy{2}, images) == net(images));
    // A batch of at least as many images as threads is shared out image by image (3 on 2
    // threads: 2 and 1; on 3: one each), a smaller one layer by layer (on 4): the same, bit for bit.
    const auto three = test::random_tensor<float, 4>({3, 3, 19, 16}, 98);
    const xt::xtensor<float, 2> on_one = net(three);
    for (int threads : {2, 3, 4}) BOOST_TEST(net(execution::parallel_policy{threads}, three) == on_one);
    const nn::mobilevit headless(stem, {first.block()}, final_conv);
    test::check_close(headless(images), xt::mean(xt::xtensor<double, 4>(final_conv(first.block()(stem(images)))), {2, 3}),
                      1e-5, 1e-5, "pooled features");

    // Images the stem does not take, or too small for the strides: 3 x 3 is 2 x 2 after the
    // stem, 1 x 1 after the stride-2 block; a block of stride 2 with no padding leaves none.
    test::check_invalid([&] { net(test::random_tensor<float, 4>({1, 4, 8, 8}, 95)); }, "nn::mobilevit",
                        "images [1, 4, 8, 8] must be [B, 3, H, W]");
    BOOST_TEST(net(test::random_tensor<float, 4>({1, 3, 3, 3}, 96)).shape(1) == 5u);
    const nn::conv2d<float> unpadded(second.depthwise.weight(), second.depthwise.bias(), {.stride = 2, .groups = second.mid});
    const nn::mobilevit strided(stem, {nn::inverted_residual(second.expand, unpadded, second.project)}, final_conv);
    test::check_invalid([&] { strided(test::random_tensor<float, 4>({1, 3, 4, 4}, 97)); }, "nn::mobilevit",
                        "images [1, 3, 4, 4] are too small for the network's strides");
    test::check_invalid([&] { nn::mobilevit(stem, {mv2_parts(4, 4, 1, 1).block()}, final_conv); }, "nn::mobilevit",
                        "block 0 takes 4 channels; the part before it gives 6");
    test::check_invalid([&] { nn::mobilevit(stem, {}, final_conv, nn::linear_layer<float>(test::random_tensor<float, 2>({5, 7}, 1))); },
                        "nn::mobilevit", "final_conv [12, 6, 1, 1]");
}

BOOST_AUTO_TEST_CASE(loads_a_timm_network) {
    // The network of the_network_chains_its_parts saved under timm's names: stem,
    // stages.0.0 (inverted residual), stages.1.0 (inverted residual, stride 2),
    // stages.1.1 (MobileViT block), final_conv, head.fc.
    const block_parts parts;
    const nn::conv2d<float> stem(test::random_tensor<float, 4>({C, 3, 3, 3}, 70), {}, {.stride = 2, .padding = 1},
                                 simd::activation::silu);
    const mv2_parts first(C, C, 1, 72, 16), second(C, C, 2, 80, 16);   // timm's mid channels: multiples of 8
    const nn::conv2d<float> final_conv(test::random_tensor<float, 4>({12, C, 1, 1}, 90), {}, {}, simd::activation::silu);
    const nn::linear_layer<float> head(test::random_tensor<float, 2>({5, 12}, 92), test::random_tensor<float, 1>({5}, 93));
    const auto dir = test::scratch_dir("nonlocal_test_mobilevit_net");
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "m_").string();
    save_conv_norm_act(prefix + "stem_", stem);
    const auto save_mv2 = [&](const std::string& at, const mv2_parts& p) {
        save_conv_norm_act(at + "conv1_1x1_", p.expand);
        save_conv_norm_act(at + "conv2_kxk_", p.depthwise);
        save_conv_norm_act(at + "conv3_1x1_", p.project);
    };
    save_mv2(prefix + "stages_0_0_", first);
    save_mv2(prefix + "stages_1_0_", second);
    const std::string block = prefix + "stages_1_1_";
    save_conv_norm_act(block + "conv_kxk_", parts.kxk);
    save_conv_norm_act(block + "conv_proj_", parts.proj);
    save_conv_norm_act(block + "conv_fusion_", parts.fusion);
    xt::dump_npy(block + "conv_1x1_weight.npy", parts.one.weight());
    for (std::size_t i = 0; i < 2; ++i) save_timm_layer(block + "transformer_" + std::to_string(i) + "_", parts.layers[i]);
    xt::dump_npy(block + "norm_weight.npy", parts.norm.weight);
    xt::dump_npy(block + "norm_bias.npy", parts.norm.bias);
    save_conv_norm_act(prefix + "final_conv_", final_conv);
    xt::dump_npy(prefix + "head_fc_weight.npy", head.weight());
    xt::dump_npy(prefix + "head_fc_bias.npy", head.bias());

    const auto scaled_mv2 = [](const mv2_parts& p) {
        return nn::inverted_residual(scaled_by_norm(p.expand), scaled_by_norm(p.depthwise), scaled_by_norm(p.project));
    };
    const nn::mobilevit expected(
        scaled_by_norm(stem),
        {scaled_mv2(first), scaled_mv2(second),
         nn::mobilevit_block(scaled_by_norm(parts.kxk), parts.one, parts.layers, parts.norm, scaled_by_norm(parts.proj),
                             scaled_by_norm(parts.fusion), 2)},
        scaled_by_norm(final_conv), head);
    // stem 6, stage 0: one inverted residual (6 x 2.5 = 15 channels in the middle, 16 as timm
    // rounds them), stage 1: one of stride 2, then a MobileViT block of width 8 and depth 2.
    const nn::mobilevit_config config{.stem = C,
                                      .stages = {{.blocks = 1, .channels = C, .stride = 1, .expansion = 2.5},
                                                 {.blocks = 1, .channels = C, .stride = 2, .expansion = 2.5,
                                                  .transformer_dim = D, .transformer_depth = 2}},
                                      .features = 12, .classes = 5, .num_heads = heads};
    const auto loaded = nn::load_timm(prefix, config);
    BOOST_TEST(loaded.blocks().size() == 3u);
    BOOST_TEST(std::get<nn::inverted_residual>(loaded.blocks()[1]).stride() == 2u);
    const auto images = test::random_tensor<float, 4>({1, 3, 16, 16}, 95);
    test::check_close(loaded(images), expected(images), 1e-5, 1e-5, "loaded from timm's names");
    // Without its head, or one stage short, it is another network: refused, every problem named.
    auto headless = config;
    headless.classes = 0;
    test::check_invalid([&] { nn::load_timm(prefix, headless); }, "nn::load_timm", "(2 problems)",
                        "unexpected head_fc_bias", "unexpected head_fc_weight");
    auto shorter = config;
    shorter.stages.pop_back();
    test::check_invalid([&] { nn::load_timm(prefix, shorter); }, "unexpected stages_1_0_conv1_1x1_conv_weight",
                        "unexpected stages_1_1_transformer_1_mlp_fc2_bias");
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
