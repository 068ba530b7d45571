// nonlocal::nn::multi_head_attention against PyTorch's nn.MultiheadAttention itself: runs
// tests/torch/mha_parity.py, which writes a layer's weights, inputs, masks of every kind and
// PyTorch's outputs and attention weights as .npy files, loads them and compares.
//   torch_parity PYTHON SCRIPT FOLDER
// Exit status: 0 when every case matches within 1e-5 (1e-12 in double), 1 when one does not,
// 77 (a skipped test) when the script finds no torch.
#include <nonlocal/nonlocal.hpp>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

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
    const auto mha = nonlocal::nn::multi_head_attention::load_npy(folder, 4);
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
    const auto unbiased = nonlocal::nn::multi_head_attention::load_npy(folder + "unbiased_", 4);
    compare("unbiased", unbiased.forward(x, memory, memory, cases[0].options));
    // kdim = 10 and vdim = 7: q_proj_weight, k_proj_weight and v_proj_weight.
    const auto narrow = nonlocal::nn::multi_head_attention::load_npy(folder + "narrow_", 4);
    const xt::xtensor<float, 3> keys = load("narrow_keys"), values = load("narrow_values");
    compare("narrow", narrow.forward(x, keys, values, options([&](auto& o) {
        o.key_padding_mask = padding, o.average_attn_weights = false;
    })));
    // The first layer in double, with a padding and an additive mask.
    const auto wide = nonlocal::nn::basic_multi_head_attention<double>::load_npy(folder + "double_", 4);
    const xt::xtensor<double, 3> x64 = xt::cast<double>(x), memory64 = xt::cast<double>(memory);
    compare("double", wide.forward(x64, memory64, memory64, options([&](auto& o) {
        o.key_padding_mask = padding, o.attn_bias = bias;
    })));
    return failed == 0 ? 0 : 1;
}
