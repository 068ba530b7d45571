#pragma once
// What nonlocal_model_forward and nonlocal_classify share: the architectures they build, by
// MODEL (the checkpoint's layout) and by name, and the checkpoints they load into them.
//
// An architecture is written as a name and settings, on the command line (--arch) or in the
// file PREFIX + "architecture.txt" beside the weights (several lines allowed, # starts a
// comment):
//
//   vit_b_16                                 torchvision's names: vit_b_16, vit_b_32, vit_l_16, vit_l_32, vit_h_14
//   vit_base_patch16_224 classes=10          timm's vit_{tiny,small,base,large,huge}_patch{P}_{S}, a setting changed
//   vit image_size=32 patch=8 hidden=16 layers=2 heads=2 mlp=32 classes=10
//   mobilevit_s                              timm's mobilevit_xxs, mobilevit_xs, mobilevit_s
//   mobilevit stem=8 features=40 classes=10 stage=1,8,1,2 stage=2,12,2,2 stage=1,16,2,2,16,2
//   mobilevit_block transformer_dim=8 transformer_depth=2 heads=2
//   nonlocal_block inter_channels=4 sub_sample=0
//
// A stage is blocks,channels,stride,expansion[,transformer_dim,transformer_depth]. The
// settings of each family are the fields of nn::vit_config, nn::mobilevit_config,
// nn::mobilevit_block_config and nn::nonlocal_block_config; in_channels of a block defaults
// to the input's channels.
#include "cli.hpp"
#include "image_io.hpp"

#include <nonlocal/nn/io/checkpoint.hpp>
#include <nonlocal/nn/io/mobilevit.hpp>
#include <nonlocal/nn/io/nonlocal_block.hpp>
#include <nonlocal/nn/io/vision_transformer.hpp>


#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace nonlocal::examples {

/// The architecture a checkpoint is loaded into, the text it was read from and where that came from.
struct architecture {
    std::variant<nn::vit_config, nn::mobilevit_config, nn::mobilevit_block_config, nn::nonlocal_block_config> config;
    std::string text, source;
};

/// The MODELs, each a checkpoint layout of one family of architectures.
inline const std::vector<std::string>& models() {
    static const std::vector<std::string> all = {"torchvision-vit", "timm-vit", "timm-mobilevit", "timm-mobilevit-block",
                                                 "nonlocal-block-2d"};
    return all;
}

/// The family of MODEL: vit, mobilevit, mobilevit_block or nonlocal_block.
inline std::string family_of(const std::string& model) {
    if (model == "torchvision-vit" || model == "timm-vit") return "vit";
    if (model == "timm-mobilevit") return "mobilevit";
    if (model == "timm-mobilevit-block") return "mobilevit_block";
    return "nonlocal_block";
}

namespace detail_ {

inline std::size_t count(const std::string& key, const std::string& value) {
    std::size_t n = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (error != std::errc() || end != value.data() + value.size())
        throw std::runtime_error("architecture: " + key + "=" + value + " is not a whole number");
    return n;
}

inline double real(const std::string& key, const std::string& value) {
    std::size_t used = 0;
    double x = 0;
    try {
        x = std::stod(value, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != value.size() || !(x > 0)) throw std::runtime_error("architecture: " + key + "=" + value + " is not a positive number");
    return x;
}

inline bool flag(const std::string& key, const std::string& value) {
    if (value == "1" || value == "true") return true;
    if (value == "0" || value == "false") return false;
    throw std::runtime_error("architecture: " + key + "=" + value + " is not 0, 1, true or false");
}

inline nn::mobilevit_stage stage(const std::string& value) {
    std::vector<std::string> parts;
    std::stringstream in(value);
    for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
    if (parts.size() != 4 && parts.size() != 6)
        throw std::runtime_error("architecture: stage=" + value +
                                 " is not blocks,channels,stride,expansion[,transformer_dim,transformer_depth]");
    nn::mobilevit_stage s{count("stage", parts[0]), count("stage", parts[1]), count("stage", parts[2]), real("stage", parts[3])};
    if (parts.size() == 6) s.transformer_dim = count("stage", parts[4]), s.transformer_depth = count("stage", parts[5]);
    return s;
}

}  // namespace detail_

/// The architecture `text` describes for MODEL (see the file's comment); `in_channels` the
/// input's channels (a block's default; 0 when there is no input), `form` the non-local block's. Throws
/// `std::runtime_error` naming the word it cannot read.
inline architecture parse_architecture(const std::string& model, const std::string& text, std::size_t in_channels,
                                       nn::nonlocal_form form) {
    std::vector<std::string> words;
    std::stringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        std::stringstream in(line.substr(0, line.find('#')));
        for (std::string word; in >> word;) words.push_back(word);
    }
    const std::string family = family_of(model);
    if (words.empty()) throw std::runtime_error("architecture: empty; expected a name such as " +
                                                std::string(family == "vit" ? "vit_b_16" : family == "mobilevit" ? "mobilevit_s" : family));
    std::string joined;
    for (const std::string& w : words) joined += (joined.empty() ? "" : " ") + w;
    architecture a{{}, joined, ""};
    const std::string& name = words[0];
    if (family == "vit") a.config = name == "vit" ? nn::vit_config{} : nn::vit_config::named(name);
    else if (family == "mobilevit") a.config = name == "mobilevit" ? nn::mobilevit_config{} : nn::mobilevit_config::named(name);
    else if (name == family && family == "mobilevit_block") a.config = nn::mobilevit_block_config{.in_channels = in_channels};
    else if (name == family) a.config = nn::nonlocal_block_config{.form = form, .in_channels = in_channels};
    else throw std::runtime_error("architecture: " + name + " is not one of " + model + "'s; expected " + family);
    bool stages_given = false;
    for (std::size_t i = 1; i < words.size(); ++i) {
        const std::size_t eq = words[i].find('=');
        if (eq == std::string::npos) throw std::runtime_error("architecture: " + words[i] + " is not key=value");
        const std::string key = words[i].substr(0, eq), value = words[i].substr(eq + 1);
        const auto n = [&] { return detail_::count(key, value); };
        const auto unknown = [&] { throw std::runtime_error("architecture: " + family + " has no setting " + key); };
        std::visit(
            [&](auto& c) {
                using C = std::decay_t<decltype(c)>;
                if constexpr (std::is_same_v<C, nn::vit_config>) {
                    const std::map<std::string, std::size_t*> sizes = {
                        {"image_size", &c.image_size}, {"patch", &c.patch}, {"hidden", &c.hidden}, {"layers", &c.layers},
                        {"heads", &c.heads}, {"mlp", &c.mlp}, {"classes", &c.classes}, {"in_channels", &c.in_channels}};
                    if (sizes.count(key)) *sizes.at(key) = n();
                    else if (key == "qkv_bias") c.qkv_bias = detail_::flag(key, value);
                    else unknown();
                } else if constexpr (std::is_same_v<C, nn::mobilevit_config>) {
                    const std::map<std::string, std::size_t*> sizes = {{"in_channels", &c.in_channels}, {"stem", &c.stem},
                                                                       {"features", &c.features}, {"classes", &c.classes},
                                                                       {"heads", &c.num_heads}};
                    if (sizes.count(key)) *sizes.at(key) = n();
                    else if (key == "patch") c.patch = nn::size2(n());
                    else if (key == "stage") {
                        if (!stages_given) c.stages.clear();
                        stages_given = true;
                        c.stages.push_back(detail_::stage(value));
                    } else unknown();
                } else if constexpr (std::is_same_v<C, nn::mobilevit_block_config>) {
                    const std::map<std::string, std::size_t*> sizes = {
                        {"in_channels", &c.in_channels}, {"out_channels", &c.out_channels}, {"transformer_dim", &c.transformer_dim},
                        {"transformer_depth", &c.transformer_depth}, {"heads", &c.num_heads}, {"kernel", &c.kernel}};
                    if (sizes.count(key)) *sizes.at(key) = n();
                    else if (key == "patch") c.patch = nn::size2(n());
                    else if (key == "mlp_ratio") c.mlp_ratio = detail_::real(key, value);
                    else if (key == "fusion") c.fusion = detail_::flag(key, value);
                    else unknown();
                } else {
                    if (key == "in_channels") c.in_channels = n();
                    else if (key == "inter_channels") c.inter_channels = n();
                    else if (key == "sub_sample") c.sub_sample = detail_::flag(key, value);
                    else if (key == "batch_norm") c.batch_norm = detail_::flag(key, value);
                    else unknown();
                }
            },
            a.config);
    }
    const auto* block = std::get_if<nn::mobilevit_block_config>(&a.config);
    if (block && !block->transformer_dim)
        throw std::runtime_error("architecture: mobilevit_block needs transformer_dim=D and transformer_depth=N");
    const auto* nonlocal_block = std::get_if<nn::nonlocal_block_config>(&a.config);
    if ((block && !block->in_channels) || (nonlocal_block && !nonlocal_block->in_channels))
        throw std::runtime_error("architecture: " + family + " needs in_channels=C when no input gives them");
    if (const auto* net = std::get_if<nn::mobilevit_config>(&a.config); net && (net->stages.empty() || !net->features))
        throw std::runtime_error("architecture: mobilevit needs stage=... and features=N, or a name such as mobilevit_s");
    return a;
}

/// The architecture of the checkpoint at PREFIX for MODEL: `--arch`'s text when given, else
/// the file PREFIX + "architecture.txt", else the non-local block of the module's defaults.
/// Throws `std::runtime_error` when none is given for a network.
inline architecture architecture_of(const std::string& model, const std::string& arch, const std::string& prefix,
                                    std::size_t in_channels, nn::nonlocal_form form) {
    if (!arch.empty()) {
        architecture a = parse_architecture(model, arch, in_channels, form);
        a.source = "--arch";
        return a;
    }
    const std::string manifest = prefix + "architecture.txt";
    if (std::filesystem::exists(manifest)) {
        std::ifstream file(manifest);
        std::stringstream text;
        text << file.rdbuf();
        if (!file) throw std::runtime_error("cannot read " + manifest);
        try {
            architecture a = parse_architecture(model, text.str(), in_channels, form);
            a.source = manifest;
            return a;
        } catch (const std::exception& e) {
            throw std::runtime_error(manifest + ": " + e.what());
        }
    }
    const std::string family = family_of(model);
    if (family == "nonlocal_block") {
        architecture a = parse_architecture(model, family, in_channels, form);
        a.source = "the module's defaults";
        return a;
    }
    throw std::runtime_error("no architecture for " + model + ": pass --arch (" +
                             (family == "vit" ? "vit_b_16, vit_base_patch16_224, ..." : family == "mobilevit" ? "mobilevit_s, ..." : "mobilevit_block transformer_dim=D transformer_depth=N") +
                             ") or write it into " + manifest);
}

/// The network of MODEL in architecture `a`, loaded from `from`, as a function of the input on
/// `threads` threads, its linear maps in precision `p` (`to(p)`; the non-local block, which has
/// none, only in float: std::runtime_error naming --precision otherwise). Defined in
/// checkpoints.cpp, which instantiates every network once for the programs that link it.
std::function<xt::xarray<float>(const xt::xtensor<float, 4>&)> load_checkpoint(const std::string& model,
                                                                               const architecture& a,
                                                                               nn::checkpoint& from, int threads,
                                                                               precision p);

/// How the programs run a network: --threads and --precision.
struct run_options {
    int threads = 1;
    std::string precision_name = "fp32";

    /// Adds --threads and --precision to `app`.
    void add_to(CLI::App& app) {
        app.add_option("--threads", threads, "threads (default 1)")->check(nonlocal::tools::at_least(1));
        app.add_option("--precision", precision_name,
                       "fp32, or bf16: the linear maps' weights and inputs rounded to bfloat16, float sums (twice "
                       "the products per instruction with AVX512-BF16; the convolutions stay fp32)")
            ->check(CLI::IsMember({"fp32", "bf16"}))
            ->capture_default_str();
    }
    nonlocal::precision precision() const {
        return precision_name == "bf16" ? nonlocal::precision::bf16 : nonlocal::precision::native;
    }
};

/// The library's loader of MODEL, which names a checkpoint's problems.
inline std::string loader_of(const std::string& model) {
    if (model == "torchvision-vit") return "nn::load_torchvision";
    if (model == "timm-vit") return "nn::load_timm";
    if (model == "timm-mobilevit") return "nn::load_timm";
    if (model == "timm-mobilevit-block") return "nn::load_timm";
    return "nn::load_npy";
}

/// The entries (name and shape) that MODEL in architecture `a` reads (checkpoints.cpp).
std::vector<nn::checkpoint::entry> entries_of(const std::string& model, const architecture& a);

/// `program: --non-strict: N entries missing ...` on stderr, one line per problem.
inline void warn_about(const std::string& program, const nn::load_report& report) {
    if (report.clean()) return;
    std::cerr << program << ": --non-strict: " << report.missing.size() << " missing, " << report.unexpected.size()
              << " unexpected, " << report.mismatched.size() << " mismatched (missing and mismatched entries are zero, "
              << "or one for a norm's scale and a running variance):" << report.describe() << "\n";
}

}  // namespace nonlocal::examples
