// nonlocal_model_forward loads checkpoints strictly, for every MODEL: a checkpoint of random
// weights for an architecture runs; the same without any one of its entries (each in turn),
// with one entry more, or with one entry of another shape is refused with status 1, the entry
// named and nothing written; timm's mobilevit_xxs loads whole, and --non-strict without its
// head runs and reports it; --list-entries prints the entries the library reads.
//
//   strict_checkpoints MODEL_FORWARD SCRATCH
//
// Exit status 0 when every run behaves so, 1 otherwise.
#include "checkpoints.hpp"


#include <xtensor/xnpy.hpp>
#include <xtensor/xrandom.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace ex = nonlocal::examples;

namespace {

std::string forward, scratch;
int failures = 0;

struct outcome {
    int status = -1;
    std::string out, err;
};

std::string shell_quoted(const std::string& s) { return "'" + s + "'"; }

std::string read_text(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

/// nonlocal_model_forward with `arguments`, its status and what it printed.
outcome run(const std::vector<std::string>& arguments) {
    std::string command = shell_quoted(forward);
    for (const auto& a : arguments) command += " " + shell_quoted(a);
    const std::string out = scratch + "/stdout.txt", err = scratch + "/stderr.txt";
    const int status = std::system((command + " >" + shell_quoted(out) + " 2>" + shell_quoted(err)).c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
}

void expect(bool ok, const std::string& what, const outcome& o) {
    if (ok) return;
    ++failures;
    std::cerr << "FAILED: " << what << " (status " << o.status << ")\n" << o.err << "\n";
}

/// `entries` written at `prefix` with random values (running variances positive); `entries`.
std::vector<nonlocal::nn::checkpoint::entry> write_random(const std::string& prefix,
                                                          std::vector<nonlocal::nn::checkpoint::entry> entries) {
    for (const auto& e : entries) {
        xt::xarray<float> w = xt::random::rand<float>(e.shape, -0.3f, 0.3f);
        if (e.name.ends_with("running_var")) w = w + 1.0f;
        xt::dump_npy(prefix + e.name + ".npy", w);
    }
    return entries;
}

/// One MODEL in architecture `arch` on input [1, C, H, W].
void check_model(const std::string& model, const std::string& arch, std::array<std::size_t, 4> input_shape) {
    const std::string dir = scratch + "/" + model, prefix = dir + "/";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto a = ex::parse_architecture(model, arch, input_shape[1], nonlocal::nn::nonlocal_form::embedded_gaussian);
    const auto entries = write_random(prefix, ex::entries_of(model, a));
    const std::string input = scratch + "/" + model + "_input.npy", output = scratch + "/" + model + "_output.npy";
    xt::dump_npy(input, xt::xarray<float>(xt::random::randn<float>(input_shape)));
    const std::vector<std::string> base = {model, prefix, input, output, "--arch", arch};

    // The list the program prints is the library's.
    const outcome listed = run({model, "--list-entries", "--arch", arch});
    std::string expected_list;
    for (const auto& e : entries) expected_list += e.name + " " + nonlocal::detail::shape_string(e.shape) + "\n";
    expect(listed.status == 0 && listed.out == expected_list, model + ": --list-entries", listed);

    const outcome complete = run(base);
    expect(complete.status == 0 && fs::exists(output) && complete.out.find("architecture from --arch") != std::string::npos,
           model + ": the complete checkpoint", complete);
    fs::remove(output);

    for (const auto& e : entries) {
        const std::string file = prefix + e.name + ".npy", aside = scratch + "/aside.npy";
        fs::rename(file, aside);
        const outcome o = run(base);
        expect(o.status == 1 && o.err.find("missing " + e.name + " [") != std::string::npos && !fs::exists(output),
               model + ": without " + e.name, o);
        fs::rename(aside, file);
    }

    xt::dump_npy(prefix + "extra_weight.npy", xt::xarray<float>(xt::zeros<float>({3})));
    const outcome extra = run(base);
    expect(extra.status == 1 && extra.err.find("unexpected extra_weight") != std::string::npos && !fs::exists(output),
           model + ": an unexpected entry", extra);
    fs::remove(prefix + "extra_weight.npy");

    const auto& first = entries.front();
    std::vector<std::size_t> other = first.shape;
    other[0] += 1;
    fs::rename(prefix + first.name + ".npy", scratch + "/aside.npy");
    xt::dump_npy(prefix + first.name + ".npy", xt::xarray<float>(xt::zeros<float>(other)));
    const outcome misshapen = run(base);
    expect(misshapen.status == 1 &&
               misshapen.err.find("entry " + first.name + " holds " + nonlocal::detail::shape_string(other) + "; expected " +
                                  nonlocal::detail::shape_string(first.shape)) != std::string::npos &&
               !fs::exists(output),
           model + ": " + first.name + " of another shape", misshapen);
    fs::rename(scratch + "/aside.npy", prefix + first.name + ".npy");
    std::cout << model << " (" << arch << "): " << entries.size() << " entries, each refused when missing\n";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: strict_checkpoints MODEL_FORWARD SCRATCH\n");
        return 2;
    }
    forward = argv[1];
    scratch = argv[2];
    fs::create_directories(scratch);
    xt::random::seed(11);
    const std::string small_vit = "vit image_size=16 patch=8 hidden=8 layers=2 heads=2 mlp=16 classes=5";
    check_model("torchvision-vit", small_vit, {1, 3, 16, 16});
    check_model("timm-vit", small_vit, {1, 3, 16, 16});
    // Every kind of entry of MobileViT in a narrow one (each removal is a run); timm's
    // mobilevit_xxs whole below.
    check_model("timm-mobilevit", "mobilevit stem=8 features=16 classes=5 stage=1,8,1,2 stage=1,8,2,2,8,2", {1, 3, 32, 32});
    check_model("timm-mobilevit-block", "mobilevit_block in_channels=6 transformer_dim=8 transformer_depth=2 heads=2",
                {1, 6, 8, 8});
    check_model("nonlocal-block-2d", "nonlocal_block in_channels=8", {1, 8, 6, 6});

    // timm's mobilevit_xxs: its 279 entries load and run; --non-strict without its head runs,
    // writes, and says what was missing.
    const std::string prefix = scratch + "/mobilevit_xxs/", output = scratch + "/headless.npy";
    fs::create_directories(prefix);
    const auto xxs = ex::parse_architecture("timm-mobilevit", "mobilevit_xxs", 3, nonlocal::nn::nonlocal_form::embedded_gaussian);
    const auto xxs_entries = write_random(prefix, ex::entries_of("timm-mobilevit", xxs));
    const outcome whole = run({"timm-mobilevit", prefix, scratch + "/timm-mobilevit_input.npy", scratch + "/xxs.npy", "--arch", "mobilevit_xxs"});
    expect(whole.status == 0 && xxs_entries.size() == 279, "mobilevit_xxs, all 279 entries", whole);
    fs::remove(prefix + "head_fc_weight.npy");
    fs::remove(prefix + "head_fc_bias.npy");
    const outcome strict = run({"timm-mobilevit", prefix, scratch + "/timm-mobilevit_input.npy", output, "--arch", "mobilevit_xxs"});
    expect(strict.status == 1 && strict.err.find("(2 problems)") != std::string::npos, "strict without the head", strict);
    const outcome lenient = run({"timm-mobilevit", prefix, scratch + "/timm-mobilevit_input.npy", output, "--arch",
                                 "mobilevit_xxs", "--non-strict"});
    expect(lenient.status == 0 && fs::exists(output) && lenient.err.find("missing head_fc_weight [1000, 320]") != std::string::npos &&
               lenient.err.find("missing head_fc_bias [1000]") != std::string::npos,
           "--non-strict without the head", lenient);
    // The architecture from the file beside the weights.
    std::ofstream(prefix + "architecture.txt") << "# timm's smallest MobileViT, without its head\nmobilevit_xxs classes=0\n";
    const outcome manifest = run({"timm-mobilevit", prefix, scratch + "/timm-mobilevit_input.npy", scratch + "/features.npy"});
    expect(manifest.status == 0 && manifest.out.find("architecture from " + prefix + "architecture.txt: mobilevit_xxs classes=0") != std::string::npos,
           "the architecture from architecture.txt", manifest);
    // No architecture at all is an error that says how to give one.
    fs::remove(prefix + "architecture.txt");
    const outcome none = run({"timm-mobilevit", prefix, scratch + "/timm-mobilevit_input.npy", output + ".none.npy"});
    expect(none.status == 1 && none.err.find("pass --arch") != std::string::npos, "no architecture", none);
    std::cout << (failures ? "FAILED" : "every checkpoint refused or loaded as expected") << "\n";
    return failures ? 1 : 0;
}
