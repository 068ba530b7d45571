// nonlocal_model_forward: one forward pass of a PyTorch checkpoint through nonlocal's layers.
//
//   nonlocal_model_forward MODEL PREFIX INPUT.npy OUTPUT.npy [--arch A] [--non-strict] [--similarity S] [--threads N]
//                          [--precision fp32|bf16]
//   nonlocal_model_forward MODEL --list-entries --arch A
//
// MODEL is the checkpoint's layout:
//   torchvision-vit        torchvision's VisionTransformer (vit_b_16, ...): logits [B, classes]
//   timm-vit               timm's VisionTransformer, class-token pooling: logits [B, classes]
//   timm-mobilevit         timm's mobilevit_xxs, _xs or _s: logits [B, classes]
//   timm-mobilevit-block   one MobileVitBlock of timm's (e.g. PREFIX ending in stages_2_1_): maps
//   nonlocal-block-2d      the non-local block of the PyTorch re-implementation (NONLocalBlock2D)
// The architecture comes from --arch or the file PREFIX + "architecture.txt" (see
// checkpoints.hpp: a name such as vit_b_16 or mobilevit_s, or settings), never from the files
// found; the non-local block's defaults to the module's for the input's channels. PREFIX
// starts the name of every weight file: the model's state_dict saved as one .npy per entry,
// the dots of the names as underscores,
//
//   for name, value in model.state_dict().items():
//       numpy.save(PREFIX + name.replace(".", "_") + ".npy", value.numpy())
//
// Loading is strict, as PyTorch's load_state_dict: an entry missing, of another shape or type,
// or a file with the prefix that the architecture does not use is an error naming every such
// entry. --non-strict loads what matches, gives the rest the values of an untrained layer
// (zero; one for norms' scales and running variances), runs, and lists the problems on stderr.
// --list-entries prints the entries the architecture needs, one "name [shape]" a line.
// --precision bf16 runs the linear maps of the Transformer layers and the head with their weights
// and inputs rounded to bfloat16, summing in float (the convolutions, attention's products and
// norms stay float); the non-local block has no such maps and refuses it.
// INPUT holds images or feature maps [B, C, H, W] (float32 or float64); OUTPUT gets the
// model's output as float32, written whole or not at all.
// Exit status: 0 written (or listed), 1 bad options, no architecture, a checkpoint that does not
// fit it, an unreadable file or an unwritable output.
#include "checkpoints.hpp"
#include "cli.hpp"


#include <CLI/CLI.hpp>

#include <iostream>
#include <map>

int main(int argc, char** argv) {
    namespace ex = nonlocal::examples;
    CLI::App app{"One forward pass of a PyTorch checkpoint (a state_dict saved as .npy files) through nonlocal's layers"};
    std::string model, prefix, input_path, output_path, arch;
    bool non_strict = false, list_entries = false;
    ex::run_options run;
    const std::map<std::string, nonlocal::nn::nonlocal_form> forms = {
        {"gaussian", nonlocal::nn::nonlocal_form::gaussian},
        {"embedded_gaussian", nonlocal::nn::nonlocal_form::embedded_gaussian},
        {"dot_product", nonlocal::nn::nonlocal_form::dot_product},
        {"concatenation", nonlocal::nn::nonlocal_form::concatenation}};
    std::string similarity = "embedded_gaussian";
    app.add_option("model", model, "torchvision-vit, timm-vit, timm-mobilevit, timm-mobilevit-block or nonlocal-block-2d")
        ->required()
        ->check(CLI::IsMember(ex::models()));
    app.add_option("prefix", prefix, "the start of every weight file's path");
    app.add_option("input", input_path, ".npy of [B, C, H, W]");
    app.add_option("output", output_path, ".npy file to write")->check(nonlocal::tools::path_ending_in({".npy"}));
    app.add_option("--arch", arch,
                   "the architecture: vit_b_16, vit_base_patch16_224, mobilevit_s, ... or settings (default: PREFIX "
                   "architecture.txt)");
    app.add_flag("--non-strict", non_strict, "load what matches and list what is missing, unexpected or misshapen");
    app.add_flag("--list-entries", list_entries, "print the entries and shapes the architecture expects, and stop");
    app.add_option("--similarity", similarity, "nonlocal-block-2d: gaussian, embedded_gaussian, dot_product or concatenation")
        ->check(CLI::IsMember({"gaussian", "embedded_gaussian", "dot_product", "concatenation"}))
        ->capture_default_str();
    run.add_to(app);
    nonlocal::tools::describe_tool(app, "nonlocal_model_forward",
                                   {"torchvision-vit weights/vit_b_16_ images.npy logits.npy --arch vit_b_16",
                                    "timm-mobilevit weights/mobilevit_s_ images.npy logits.npy --arch mobilevit_s",
                                    "timm-mobilevit --list-entries --arch mobilevit_xxs",
                                    "nonlocal-block-2d weights/nl_ maps.npy out.npy --similarity dot_product"},
                                   "0 written or listed, 1 bad options, no architecture, a checkpoint that does not fit "
                                   "it, an unreadable file or an unwritable output");
    if (const auto status = nonlocal::tools::parse(app, argc, argv)) return *status;
    const auto form = forms.at(similarity);
    try {
        if (list_entries) {
            if (arch.empty() && prefix.empty() && ex::family_of(model) != "nonlocal_block")
                throw std::runtime_error("--list-entries needs --arch (or PREFIX with its architecture.txt)");
            const auto a = ex::architecture_of(model, arch, prefix, 0, form);
            for (const auto& e : ex::entries_of(model, a))
                std::cout << e.name << " " << nonlocal::detail::shape_string(e.shape) << "\n";
            return 0;
        }
        if (prefix.empty() || input_path.empty() || output_path.empty())
            throw std::runtime_error("expected MODEL PREFIX INPUT.npy OUTPUT.npy (or --list-entries); see --help");
        const auto array = nonlocal::detail::load_npy_as<float>(input_path, "nonlocal_model_forward");
        if (array.dimension() != 4)
            throw std::runtime_error(input_path + ": expected [B, C, H, W], got " + nonlocal::detail::shape_string(array.shape()));
        const auto a = ex::architecture_of(model, arch, prefix, array.shape(1), form);
        nonlocal::nn::checkpoint from(prefix, {.strict = !non_strict});
        const auto network = ex::load_checkpoint(model, a, from, run.threads, run.precision());
        ex::warn_about("nonlocal_model_forward", from.finish(ex::loader_of(model)));
        const xt::xarray<float> output = network(xt::xtensor<float, 4>(array));
        nonlocal::io::write_npy(output_path, output);
        std::cout << model << " (architecture from " << a.source << ": " << a.text << "): " << input_path << " "
                  << nonlocal::detail::shape_string(array.shape()) << " -> " << output_path << " "
                  << nonlocal::detail::shape_string(output.shape()) << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "nonlocal_model_forward: " << e.what() << "\n";
        return 1;
    }
}
