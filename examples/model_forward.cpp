// nonlocal_model_forward: one forward pass of a PyTorch checkpoint through nonlocal's layers.
//
//   nonlocal_model_forward MODEL PREFIX INPUT.npy OUTPUT.npy [--heads H] [--similarity S] [--threads N]
//
// MODEL is one of
//   torchvision-vit        torchvision's VisionTransformer (vit_b_16, ...): logits [B, classes]
//   timm-vit               timm's VisionTransformer, class-token pooling: logits [B, classes]
//   timm-mobilevit         timm's mobilevit_xxs, _xs or _s: logits [B, classes]
//   timm-mobilevit-block   one MobileVitBlock of timm's (e.g. PREFIX ending in stages_2_1_): maps
//   nonlocal-block-2d      the non-local block of the PyTorch re-implementation (NONLocalBlock2D)
// PREFIX starts the name of every weight file: the model's state_dict saved as one .npy per
// entry, the dots of the names as underscores,
//
//   for name, value in model.state_dict().items():
//       numpy.save(PREFIX + name.replace(".", "_") + ".npy", value.numpy())
//
// INPUT holds images or feature maps [B, C, H, W] (float32 or float64); OUTPUT gets the
// model's output as float32, written whole or not at all.
// Exit status: 0 written, 1 bad options, an unreadable or mismatched file, or an unwritable output.
#include "checkpoints.hpp"
#include "cli.hpp"

#include <nonlocal/nonlocal.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <map>

int main(int argc, char** argv) {
    CLI::App app{"One forward pass of a PyTorch checkpoint (a state_dict saved as .npy files) through nonlocal's layers"};
    std::string model, prefix, input_path, output_path;
    std::size_t heads = 0;
    int threads = 1;
    const std::map<std::string, nonlocal::nn::nonlocal_form> forms = {
        {"gaussian", nonlocal::nn::nonlocal_form::gaussian},
        {"embedded_gaussian", nonlocal::nn::nonlocal_form::embedded_gaussian},
        {"dot_product", nonlocal::nn::nonlocal_form::dot_product},
        {"concatenation", nonlocal::nn::nonlocal_form::concatenation}};
    std::string similarity = "embedded_gaussian";
    app.add_option("model", model, "torchvision-vit, timm-vit, timm-mobilevit, timm-mobilevit-block or nonlocal-block-2d")
        ->required()
        ->check(CLI::IsMember({"torchvision-vit", "timm-vit", "timm-mobilevit", "timm-mobilevit-block", "nonlocal-block-2d"}));
    app.add_option("prefix", prefix, "the start of every weight file's path")->required();
    app.add_option("input", input_path, ".npy of [B, C, H, W]")->required();
    app.add_option("output", output_path, ".npy file to write")->required()->check(nonlocal::tools::path_ending_in({".npy"}));
    app.add_option("--heads", heads, "attention heads (ViTs: required, e.g. 12 for ViT-B; MobileViT: 4)")
        ->check(nonlocal::tools::at_least(1));
    app.add_option("--similarity", similarity, "nonlocal-block-2d: gaussian, embedded_gaussian, dot_product or concatenation")
        ->check(CLI::IsMember({"gaussian", "embedded_gaussian", "dot_product", "concatenation"}))
        ->capture_default_str();
    app.add_option("--threads", threads, "threads (default 1)")->check(nonlocal::tools::at_least(1));
    nonlocal::tools::describe_tool(app, "nonlocal_model_forward",
                                   {"torchvision-vit weights/vit_b_16_ images.npy logits.npy --heads 12",
                                    "timm-mobilevit weights/mobilevit_s_ images.npy logits.npy",
                                    "nonlocal-block-2d weights/nl_ maps.npy out.npy --similarity dot_product"},
                                   "0 written, 1 bad options, an unreadable or mismatched file, or an unwritable output");
    if (const auto status = nonlocal::tools::parse(app, argc, argv)) return *status;
    if (!nonlocal::examples::heads_given("nonlocal_model_forward", model, heads)) return 1;
    try {
        const auto array = nonlocal::detail::load_npy_as<float>(input_path, "nonlocal_model_forward");
        if (array.dimension() != 4)
            throw std::runtime_error(input_path + ": expected [B, C, H, W], got " + nonlocal::detail::shape_string(array.shape()));
        const xt::xarray<float> output = nonlocal::examples::run_checkpoint(
            model, prefix, xt::xtensor<float, 4>(array), heads, forms.at(similarity), threads);
        nonlocal::examples::write_npy(output_path, output);
        std::cout << model << ": " << input_path << " " << nonlocal::detail::shape_string(array.shape()) << " -> "
                  << output_path << " " << nonlocal::detail::shape_string(output.shape()) << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "nonlocal_model_forward: " << e.what() << "\n";
        return 1;
    }
}
