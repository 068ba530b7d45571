// nonlocal's nn layers against PyTorch's themselves: runs tests/nn/torch/parity.py, which writes
// weights, inputs and PyTorch's outputs as .npy files (nn.MultiheadAttention with masks of
// every kind and its attention weights, nn.Conv2d, nn.BatchNorm2d, pooling, activations, the
// non-local block, MobileViT's blocks and a small MobileViT in their usual module layouts,
// bilinear resizing, torchvision's VisionTransformer), loads them and compares.
//   torch_parity PYTHON SCRIPT FOLDER
// Exit status: 0 when every case matches within 1e-5 (1e-12 in double), 1 when one does not, 77 (a skipped test) when the script finds no torch. The ViT
// cases are skipped with a message when torchvision is not installed.
#include <nonlocal/nn.hpp>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <xtensor/xnorm.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

namespace {

template <class T>
double max_difference(const xt::xarray<T>& a, const xt::xarray<T>& b) {
    if (a.shape() != b.shape()) return INFINITY;
    return xt::amax(xt::abs(a - b))();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: torch_parity PYTHON SCRIPT FOLDER\n");
        return 2;
    }
    const std::string folder = std::string(argv[3]) + "/";
    const int status = std::system((std::string(argv[1]) + " " + argv[2] + " " + argv[3]).c_str());
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) return 77;
    if (status != 0) {
        std::fprintf(stderr, "torch_parity: %s %s failed\n", argv[1], argv[2]);
        return 1;
    }
    const auto load = [&](const std::string& name) { return xt::load_npy<float>(folder + name + ".npy"); };
    namespace nn = nonlocal::nn;
    // Each model's state_dict in a folder of its own, loaded strictly.
    const auto weights = [&](const std::string& model) { return folder + "weights/" + model + "/"; };
    const nn::attention_config attention{.embed_dim = 24, .num_heads = 4};
    const auto mha = nn::load_npy(weights("mha"), attention);
    const xt::xtensor<float, 3> x = load("x"), memory = load("memory");
    const xt::xarray<bool> padding = load("padding") > 0.5f, pairs = load("pairs") > 0.5f,
                           pairs_per_slice = load("pairs_per_slice") > 0.5f, causal = load("causal") > 0.5f;
    const xt::xarray<float> bias = load("bias");

    struct case_options {
        const char* name;
        bool self;
        nonlocal::nn::attention_options options;
    };
    const auto options = [](auto&& set) {
        nonlocal::nn::attention_options o;
        o.need_weights = true;
        set(o);
        return o;
    };
    const case_options cases[] = {
        {"padding", false, options([&](auto& o) { o.key_padding_mask = padding; })},
        {"pairs", false, options([&](auto& o) { o.attn_mask = pairs, o.average_attn_weights = false; })},
        {"pairs_per_slice_and_padding", false,
         options([&](auto& o) { o.attn_mask = pairs_per_slice, o.key_padding_mask = padding; })},
        {"bias", false, options([&](auto& o) { o.attn_bias = bias, o.average_attn_weights = false; })},
        {"causal", true, options([&](auto& o) { o.attn_mask = causal, o.average_attn_weights = false; })},
    };
    int failed = 0;
    const auto compare = [&](const char* name, const auto& r) {
        using T = typename std::decay_t<decltype(r.output)>::value_type;
        const auto expected = [&](const char* what) { return xt::load_npy<T>(folder + name + "_" + what + ".npy"); };
        const double output = max_difference<T>(r.output, expected("output"));
        const double weights = max_difference<T>(*r.weights, expected("weights"));
        const double tolerance = std::is_same_v<T, double> ? 1e-12 : 1e-5;
        const bool ok = output <= tolerance && weights <= tolerance;
        failed += !ok;
        std::printf("%-28s max |nonlocal - torch|: output %.2g, weights %.2g  %s (tolerance %g)\n", name, output,
                    weights, ok ? "ok" : "FAILED", tolerance);
    };
    for (const auto& c : cases) {
        const auto& keys = c.self ? x : memory;
        compare(c.name, mha.forward(x, keys, keys, c.options));
    }
    // A layer built with bias=False: no bias files.
    const auto unbiased = nn::load_npy(weights("unbiased"), nn::attention_config{.embed_dim = 24, .num_heads = 4, .bias = false});
    compare("unbiased", unbiased.forward(x, memory, memory, cases[0].options));
    // kdim = 10 and vdim = 7: q_proj_weight, k_proj_weight and v_proj_weight.
    const auto narrow = nn::load_npy(weights("narrow"), nn::attention_config{.embed_dim = 24, .num_heads = 4, .kdim = 10, .vdim = 7});
    const xt::xtensor<float, 3> keys = load("narrow_keys"), values = load("narrow_values");
    compare("narrow", narrow.forward(x, keys, values, options([&](auto& o) {
        o.key_padding_mask = padding, o.average_attn_weights = false;
    })));
    // The first layer in double, with a padding and an additive mask.
    const auto wide = nn::load_npy<double>(weights("double"), attention);
    const xt::xtensor<double, 3> x64 = xt::cast<double>(x), memory64 = xt::cast<double>(memory);
    compare("double", wide.forward(x64, memory64, memory64, options([&](auto& o) {
        o.key_padding_mask = padding, o.attn_bias = bias;
    })));

    // Convolutions, batch norm (folded into the convolution before it), pooling, activations.
    using nonlocal::simd::activation;
    const auto tensor4 = [&](const std::string& name) { return xt::xtensor<float, 4>(load(name)); };
    const auto tensor1 = [&](const std::string& name) { return xt::xtensor<float, 1>(load(name)); };
    const auto check = [&](const char* name, const xt::xarray<float>& ours) {
        constexpr double tolerance = 1e-5;
        const double difference = max_difference<float>(ours, load(name));
        const bool ok = difference <= tolerance;
        failed += !ok;
        std::printf("%-28s max |nonlocal - torch|: %.2g  %s (tolerance %g)\n", name, difference, ok ? "ok" : "FAILED",
                    tolerance);
    };
    const auto check_double = [&](const char* name, const xt::xarray<double>& ours) {
        constexpr double tolerance = 1e-12;
        const double difference = max_difference<double>(ours, xt::load_npy<double>(folder + name + ".npy"));
        const bool ok = difference <= tolerance;
        failed += !ok;
        std::printf("%-28s max |nonlocal - torch|: %.2g  %s (tolerance %g)\n", name, difference, ok ? "ok" : "FAILED",
                    tolerance);
    };
    // A float model in bfloat16 (`to(precision::bf16)`) against PyTorch's model in double:
    // relative L2 within 2e-2, and not within 1e-4 (the rounding happened).
    const auto check_bf16 = [&](const char* name, const xt::xarray<float>& ours) {
        const xt::xarray<double> theirs = xt::load_npy<double>(folder + name + ".npy");
        const double relative = ours.shape() == theirs.shape()
                                    ? double(xt::norm_l2(xt::cast<double>(ours) - theirs)() / xt::norm_l2(theirs)())
                                    : 1.0;
        const bool ok = relative <= 2e-2 && relative > 1e-4;
        failed += !ok;
        std::printf("%-28s relative L2 of bf16 to torch's double: %.2g  %s (limit 2e-2)\n", name, relative,
                    ok ? "ok" : "FAILED");
    };
    const xt::xtensor<float, 4> images = tensor4("images");
    const nn::conv2d<float> grouped(tensor4("grouped_weight"), tensor1("grouped_bias"),
                                    {.stride = 2, .padding = 1, .groups = 2});
    const nn::conv2d<float> depthwise(tensor4("depthwise_weight"), {}, {.padding = 2, .dilation = 2, .groups = 8});
    const nn::batch_norm2d<float> norm(tensor1("norm_weight"), tensor1("norm_bias"), tensor1("norm_running_mean"),
                                       tensor1("norm_running_var"));
    const auto features = grouped(images);
    check("grouped_output", features);
    check("depthwise_output", depthwise(features));
    check("norm_output", nn::fold(depthwise, norm)(features));
    check("max_pool", nn::max_pool2d(features, {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true}));
    check("avg_pool", nn::avg_pool2d(features, {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true,
                                                .count_include_pad = false}));
    check("adaptive_pool", nn::adaptive_avg_pool2d(features, {3, 2}));
    for (const auto& [name, a] : {std::pair{"silu", activation::silu}, std::pair{"relu6", activation::relu6},
                                  std::pair{"gelu_tanh", activation::gelu_tanh}}) {
        xt::xtensor<float, 4> scaled = features * 4.0f;
        nonlocal::simd::activate(a, scaled.data(), scaled.size());
        check(name, scaled);
    }

    // The non-local block, in the re-implementation's layout.
    const xt::xtensor<float, 4> maps = tensor4("nonlocal_input");
    check("nonlocal_embedded_gaussian_output",
          nn::load_npy(weights("nonlocal_embedded_gaussian"),
                       nn::nonlocal_block_config{.form = nn::nonlocal_form::embedded_gaussian, .in_channels = 8})(maps));
    check("nonlocal_concatenation_output",
          nn::load_npy(weights("nonlocal_concatenation"),
                       nn::nonlocal_block_config{.form = nn::nonlocal_form::concatenation, .in_channels = 8})(maps));
    const xt::xtensor<double, 4> double_maps = xt::cast<double>(maps);
    for (const auto& [form, name] : {std::pair{nn::nonlocal_form::embedded_gaussian, std::string("embedded_gaussian")},
                                     std::pair{nn::nonlocal_form::concatenation, std::string("concatenation")}})
        check_double(("nonlocal_double_" + name + "_output").c_str(),
                     nn::load_npy<double>(weights("nonlocal_double_" + name),
                                          nn::nonlocal_block_config{.form = form, .in_channels = 8})(double_maps));

    // MobileViT's block, its inverted residuals and a whole MobileViT in timm's layout.
    const auto mvit = nn::load_timm(
        weights("mvit"), nn::mobilevit_block_config{.in_channels = 6, .transformer_dim = 8, .transformer_depth = 2, .num_heads = 2});
    check("mvit_output", mvit(tensor4("mvit_input")));
    check("mvit_odd_output", mvit(tensor4("mvit_odd_input")));
    // InvertedResidual(6, 6, 1, 4) and (6, 10, 2, 2) of tests/nn/torch/timm_layouts.py: in x ratio channels in the middle.
    check("mv2_output", nn::load_timm(weights("mv2"), nn::inverted_residual_config{.in_channels = 6, .out_channels = 6, .mid_channels = 24})(
                            tensor4("mvit_input")));
    check("mv2_strided_output",
          nn::load_timm(weights("mv2_strided"),
                        nn::inverted_residual_config{.in_channels = 6, .out_channels = 10, .stride = 2, .mid_channels = 12})(tensor4("mvit_input")));
    // timm_layouts.py's "small" configuration, 10 classes.
    const nn::mobilevit_config small{.stem = 8,
                                     .stages = {{1, 8, 1, 2}, {2, 12, 2, 2}, {1, 16, 2, 2, 16, 2}, {1, 20, 2, 2, 24, 1}, {1, 24, 2, 2, 24, 1}},
                                     .features = 40, .classes = 10};
    auto mobile = nn::load_timm(weights("mobilevit"), small);
    check("mobilevit_logits", mobile(tensor4("mobilevit_images")));
    check_bf16("mobilevit_double_logits", mobile.to(nonlocal::precision::bf16)(tensor4("mobilevit_images")));
    check_double("mobilevit_double_logits", nn::load_timm<double>(weights("mobilevit_double"), small)(
                                                xt::xtensor<double, 4>(xt::cast<double>(tensor4("mobilevit_images")))));

    // Resizing: bilinear and bicubic, with and without antialias and align_corners.
    const xt::xtensor<float, 4> planes = tensor4("resize_input");
    for (const auto mode : {nn::interpolation::bilinear, nn::interpolation::bicubic})
        for (const nn::size2 size : {nn::size2{5, 4}, nn::size2{29, 17}, nn::size2{13, 3}, nn::size2{1, 1}})
            for (const bool antialias : {false, true})
                for (const bool align_corners : {false, true}) {
                    const std::string name = std::string("resize_") +
                                             (mode == nn::interpolation::bilinear ? "bilinear_" : "bicubic_") +
                                             std::to_string(size.h) + "x" + std::to_string(size.w) +
                                             (antialias ? "_antialias" : "") + (align_corners ? "_corners" : "");
                    check(name.c_str(), nn::resize(planes, size, {mode, antialias, align_corners}));
                }

    // torchvision's VisionTransformer, loaded from its names and from timm's.
    if (!std::filesystem::exists(folder + "vit_logits.npy")) {
        std::printf("vit: skipped, torchvision is not installed (Debian: python3-torchvision)\n");
    } else {
        // parity.py's VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32, num_classes=10)
        const nn::vit_config small{.image_size = 32, .patch = 8, .hidden = 16, .layers = 2, .heads = 2, .mlp = 32, .classes = 10};
        const auto vit = nn::load_torchvision(weights("vit"), small);
        check("vit_logits", vit(tensor4("vit_images")));
        check_double("vit_double_logits", nn::load_torchvision<double>(weights("vit_double"), small)(
                                              xt::xtensor<double, 4>(xt::cast<double>(tensor4("vit_images")))));
        check("vit_logits_48", vit(tensor4("vit_images_48")));
        nn::vision_transformer in_bf16 = vit;
        check_bf16("vit_double_logits", in_bf16.to(nonlocal::precision::bf16)(tensor4("vit_images")));
        const auto timm = nn::load_timm(weights("timm"), small);
        check("timm_logits", timm(tensor4("vit_images")));
        check("timm_logits_48", timm(tensor4("vit_images_48")));
    }
    return failed == 0 ? 0 : 1;
}
