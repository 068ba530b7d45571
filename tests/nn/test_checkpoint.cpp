// nn::checkpoint: a state_dict read strictly against an architecture. Every entry of a
// network removed in turn, one added and one reshaped are refused with the entry named; the
// non-strict mode loads what matches and reports the rest; listing gives the entries.
#include "support/support.hpp"

#include <nonlocal/nonlocal.hpp>

#include <boost/test/unit_test.hpp>
#include <xtensor/xnpy.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>

using namespace nonlocal;

namespace {

/// A folder of its own under the temporary directory (of this process: the suite's
/// configurations run side by side), removed at the end of the test.
struct scratch {
    std::filesystem::path dir;
    explicit scratch(const std::string& name) : dir(test::scratch_dir(name)) {
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
    }
    ~scratch() { std::filesystem::remove_all(dir); }
    std::string prefix(const std::string& start) const { return (dir / start).string(); }
};

/// Every entry `load` reads, written at `prefix` with random values (running variances
/// positive), as a state_dict saved by numpy would be.
template <class Load>
std::vector<nn::checkpoint::entry> write_random(const std::string& prefix, Load load) {
    nn::checkpoint listing = nn::checkpoint::listing();
    load(listing);
    unsigned seed = 1;
    for (const auto& e : listing.expected()) {
        xt::xarray<float> a = test::random_tensor<float, 1>({std::max<std::size_t>(1, std::accumulate(e.shape.begin(), e.shape.end(), std::size_t(1), std::multiplies<>()))}, seed++, -0.5, 0.5);
        a.reshape(e.shape);
        if (e.name.ends_with("running_var")) a = xt::abs(a) + 0.5f;
        xt::dump_npy(prefix + e.name + ".npy", a);
    }
    return listing.expected();
}

/// For each entry in turn: the loader on the checkpoint without it refuses it, naming it.
template <class Load>
void each_missing_entry_refused(const std::string& prefix, const std::vector<nn::checkpoint::entry>& entries, Load load) {
    for (const auto& e : entries) {
        const std::string file = prefix + e.name + ".npy", aside = prefix + "aside";
        std::filesystem::rename(file, aside);
        bool refused = false;
        try {
            nn::checkpoint from(prefix);
            load(from);
            from.finish("test");
        } catch (const nn::checkpoint_error& error) {
            refused = error.report().missing.size() == 1 && error.report().missing[0].starts_with(e.name + " [") &&
                      std::string(error.what()).find("missing " + e.name + " [") != std::string::npos &&
                      error.report().unexpected.empty() && error.report().mismatched.empty();
        }
        BOOST_TEST(refused, "without " << e.name);
        std::filesystem::rename(aside, file);
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_checkpoint)

BOOST_AUTO_TEST_CASE(reads_entries_of_exact_shape_and_reports_every_problem) {
    const scratch s("nonlocal_test_checkpoint_reads");
    const std::string prefix = s.prefix("m_");
    const xt::xtensor<float, 2> w{{1, 2, 3}, {4, 5, 6}};
    xt::dump_npy(prefix + "fc_weight.npy", w);
    xt::dump_npy(prefix + "fc_bias.npy", xt::xtensor<double, 1>{0.5, -0.25});        // float64 converts
    xt::dump_npy(prefix + "bn_num_batches_tracked.npy", xt::xtensor<std::int64_t, 1>{7});   // optional
    xt::dump_npy(prefix + "other.npy", xt::xtensor<float, 1>{1});
    xt::dump_npy(s.prefix("n_fc_weight.npy"), w);   // another prefix: not this checkpoint's

    nn::checkpoint from(prefix);
    BOOST_TEST((from.read<float, 2>("fc_weight", {2, 3}) == w));
    BOOST_TEST((from.read<double, 1>("fc_bias", {2}) == xt::xtensor<double, 1>{0.5, -0.25}));
    const auto absent = from.read<float, 1>("norm_weight", {4}, 1.0f);
    BOOST_TEST((absent == xt::xtensor<float, 1>{1, 1, 1, 1}));
    const nn::load_report report = from.report();
    BOOST_TEST(report.missing == std::vector<std::string>{"norm_weight [4]"}, boost::test_tools::per_element());
    BOOST_TEST(report.unexpected == std::vector<std::string>{"other"}, boost::test_tools::per_element());
    BOOST_TEST(report.mismatched.empty());
    BOOST_TEST(!report.clean());
    test::check_invalid([&] { from.finish("nn::example"); }, "nonlocal::nn::example: the checkpoint " + prefix,
                        "(2 problems)", "missing norm_weight [4]", "unexpected other");

    // Another shape, an integer type and a file that is no .npy are all named at once.
    std::ofstream(prefix + "broken.npy") << "not an array";
    nn::checkpoint again(prefix);
    again.read<float, 2>("fc_weight", {3, 2});
    again.read<float, 1>("bn_num_batches_tracked", {1});
    again.read<float, 1>("broken", {1});
    again.read<float, 1>("other", {1});
    again.read<float, 1>("fc_bias", {2});
    test::check_invalid([&] { again.finish("nn::example"); }, "(3 problems)",
                        prefix + "fc_weight.npy: entry fc_weight holds [2, 3]; expected [3, 2]",
                        prefix + "bn_num_batches_tracked.npy: entry bn_num_batches_tracked holds elements of type <i8",
                        prefix + "broken.npy is not a .npy file");

    // Non-strict: the same problems reported, nothing thrown.
    nn::checkpoint lenient(prefix, {.strict = false});
    BOOST_TEST((lenient.read<float, 2>("fc_weight", {3, 2}) == xt::xtensor<float, 2>(xt::zeros<float>({3, 2}))));
    const nn::load_report lenient_report = lenient.finish("nn::example");
    BOOST_TEST(lenient_report.mismatched.size() == 1u);
    BOOST_TEST(lenient_report.unexpected.size() == 3u);   // fc_bias, other, broken

    // A prefix naming a folder reads every .npy in it; a folder that does not exist holds none.
    nn::checkpoint folder((s.dir / "").string(), {.strict = false});
    BOOST_TEST(folder.report().unexpected.size() == 5u);   // num_batches_tracked aside
    nn::checkpoint nowhere(s.prefix("missing/m_"));
    nowhere.read<float, 1>("a", {1});
    test::check_invalid([&] { nowhere.finish("nn::example"); }, "(1 problem)", "missing a [1]");
}

BOOST_AUTO_TEST_CASE(a_network_with_any_entry_missing_extra_or_misshapen_is_refused) {
    // A small MobileViT as timm builds one (two stages, the second with a MobileViT block).
    const nn::mobilevit_config config{.stem = 8,
                                      .stages = {{.blocks = 1, .channels = 8, .stride = 1, .expansion = 2},
                                                 {.blocks = 2, .channels = 16, .stride = 2, .expansion = 2,
                                                  .transformer_dim = 16, .transformer_depth = 2}},
                                      .features = 24, .classes = 5};
    const auto load = [&](nn::checkpoint& from) { return nn::load_timm(from, config); };
    const scratch s("nonlocal_test_checkpoint_network");
    const std::string prefix = s.prefix("mvit_");
    const auto entries = write_random(prefix, load);
    // stem (5), 3 inverted residuals (15 each), the MobileViT block (18 + 12 a layer),
    // final_conv (5), head (2).
    BOOST_TEST(entries.size() == 5u + 3 * 15 + 18 + 2 * 12 + 5 + 2);
    const auto images = test::random_tensor<float, 4>({1, 3, 32, 32}, 3);
    const auto logits = nn::load_timm(prefix, config)(images);
    BOOST_TEST(logits.shape(1) == 5u);
    each_missing_entry_refused(prefix, entries, load);

    // One more entry, and one of another shape.
    xt::dump_npy(prefix + "stages_2_0_conv1_1x1_conv_weight.npy", xt::xtensor<float, 4>(xt::zeros<float>({8, 16, 1, 1})));
    test::check_invalid([&] { nn::load_timm(prefix, config); }, "nn::load_timm", "(1 problem)",
                        "unexpected stages_2_0_conv1_1x1_conv_weight");
    std::filesystem::remove(prefix + "stages_2_0_conv1_1x1_conv_weight.npy");
    xt::dump_npy(prefix + "head_fc_weight.npy", xt::xtensor<float, 2>(xt::zeros<float>({6, 24})));
    test::check_invalid([&] { nn::load_timm(prefix, config); },
                        prefix + "head_fc_weight.npy: entry head_fc_weight holds [6, 24]; expected [5, 24]");

    // Non-strict without the head: loads, runs, and reports the head missing.
    std::filesystem::remove(prefix + "head_fc_weight.npy");
    std::filesystem::remove(prefix + "head_fc_bias.npy");
    nn::checkpoint lenient(prefix, {.strict = false});
    const auto headless = nn::load_timm(lenient, config);
    const nn::load_report report = lenient.finish("nn::load_timm");
    BOOST_TEST(report.missing == (std::vector<std::string>{"head_fc_weight [5, 24]", "head_fc_bias [5]"}),
               boost::test_tools::per_element());
    BOOST_TEST((headless(images) == xt::xtensor<float, 2>(xt::zeros<float>({1, 5}))));   // a zero head
}

BOOST_AUTO_TEST_CASE(every_vit_entry_is_needed) {
    const nn::vit_config config{.image_size = 16, .patch = 8, .hidden = 8, .layers = 2, .heads = 2, .mlp = 16, .classes = 3};
    const scratch s("nonlocal_test_checkpoint_vit");
    for (const bool timm : {false, true}) {
        const std::string prefix = s.prefix(timm ? "timm_" : "tv_");
        const auto load = [&](nn::checkpoint& from) {
            return timm ? nn::load_timm(from, config) : nn::load_torchvision(from, config);
        };
        const auto entries = write_random(prefix, load);
        BOOST_TEST(entries.size() == 4u + 2 * 12 + 2 + 2);   // patch embedding, tokens, positions; layers; norm; head
        each_missing_entry_refused(prefix, entries, load);
    }
}

BOOST_AUTO_TEST_CASE(listing_names_every_entry_with_its_shape) {
    // nn.MultiheadAttention(6, 2, kdim=4, vdim=5): PyTorch's names and shapes, by hand.
    nn::checkpoint listing = nn::checkpoint::listing();
    nn::load_npy(listing, nn::attention_config{.embed_dim = 6, .num_heads = 2, .kdim = 4, .vdim = 5});
    std::vector<std::string> listed;
    for (const auto& e : listing.expected()) listed.push_back(e.name + " " + detail::shape_string(e.shape));
    BOOST_TEST(listed == (std::vector<std::string>{"out_proj_weight [6, 6]", "out_proj_bias [6]", "in_proj_bias [18]",
                                                   "q_proj_weight [6, 6]", "k_proj_weight [6, 4]", "v_proj_weight [6, 5]"}),
               boost::test_tools::per_element());
    BOOST_TEST(listing.report().clean());   // a listing has nothing to report

    // timm's MobileViTs: 279 entries besides num_batches_tracked, and the parameter counts
    // timm's model cards give (1.3 M, 2.3 M, 5.6 M).
    for (const auto& [name, millions] : {std::pair{"mobilevit_xxs", 1.3}, std::pair{"mobilevit_xs", 2.3}, std::pair{"mobilevit_s", 5.6}}) {
        nn::checkpoint l = nn::checkpoint::listing();
        nn::load_timm(l, nn::mobilevit_config::named(name));
        std::size_t parameters = 0;
        for (const auto& e : l.expected())
            parameters += std::accumulate(e.shape.begin(), e.shape.end(), std::size_t(1), std::multiplies<>());
        BOOST_TEST(l.expected().size() == 279u, name);
        BOOST_TEST(std::abs(double(parameters) / 1e6 - millions) < 0.05, name << ": " << parameters);
    }
}

BOOST_AUTO_TEST_CASE(named_architectures) {
    const auto b16 = nn::vit_config::named("vit_b_16");
    BOOST_TEST((b16.patch == 16 && b16.hidden == 768 && b16.layers == 12 && b16.heads == 12 && b16.mlp == 3072 &&
                b16.image_size == 224 && b16.classes == 1000));
    const auto l32 = nn::vit_config::named("vit_l_32");
    BOOST_TEST((l32.patch == 32 && l32.hidden == 1024 && l32.layers == 24 && l32.heads == 16 && l32.mlp == 4096));
    const auto h14 = nn::vit_config::named("vit_h_14");
    BOOST_TEST((h14.patch == 14 && h14.hidden == 1280 && h14.layers == 32));
    const auto timm = nn::vit_config::named("vit_small_patch16_384.augreg_in21k_ft_in1k");
    BOOST_TEST((timm.patch == 16 && timm.image_size == 384 && timm.hidden == 384 && timm.heads == 6 && timm.mlp == 1536));
    const auto tiny = nn::vit_config::named("vit_tiny_patch16_224");
    BOOST_TEST((tiny.hidden == 192 && tiny.heads == 3));
    for (const char* wrong : {"vit_x_16", "vit_b_", "vit_base_patch16", "vit_base_patch15_224", "resnet50", ""})
        test::check_invalid([&] { nn::vit_config::named(wrong); }, "nn::vit_config::named", "unknown architecture");
    const auto xs = nn::mobilevit_config::named("mobilevit_xs");
    BOOST_TEST(xs.features == 384u);
    BOOST_TEST(xs.stages.size() == 5u);
    test::check_invalid([] { nn::mobilevit_config::named("mobilevit_m"); }, "unknown architecture mobilevit_m",
                        "mobilevit_xxs, mobilevit_xs or mobilevit_s");
    // timm's make_divisible(v, 8).
    BOOST_TEST(nn::divisible_by_8(12) == 16u);
    BOOST_TEST(nn::divisible_by_8(32) == 32u);
    BOOST_TEST(nn::divisible_by_8(3) == 8u);
    BOOST_TEST(nn::divisible_by_8(100) == 104u);
}

BOOST_AUTO_TEST_SUITE_END()
