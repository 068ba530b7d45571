// nonlocal_classify: an image through a loaded Vision Transformer or MobileViT to its top
// classes, prepared as torchvision's and timm's evaluation transforms prepare it.
//
//   nonlocal_classify MODEL PREFIX IMAGE [--arch A] [--non-strict] [--labels FILE] [--top K]
//                     [--resize R] [--interpolation I] [--size S] [--mean M M M] [--std S S S]
//                     [--logits OUT.npy]
//
// MODEL is torchvision-vit, timm-vit or timm-mobilevit, PREFIX the start of its weight files,
// the architecture from --arch or PREFIX + "architecture.txt", loaded strictly unless
// --non-strict (see nonlocal_model_forward). IMAGE is a PNG or JPEG (8 or 16 bit, grey or colour) or a
// .npy [H, W, C] (uint8 taken as 0..255, floats as 0..1). The image is scaled to [0, 1],
// resized with antialias by I (bilinear or bicubic, as torchvision resizes a float tensor)
// so that its shorter side is R (the longer one R x long / short, rounded down), cropped to
// S x S at its centre (offsets rounded as torchvision rounds them, half to even), and each
// channel c becomes (x - M_c) / S_c. Defaults per model:
//   torchvision-vit   R 256, bilinear, S 224, ImageNet's mean and std (vit_b_16's weights)
//   timm-vit          R 248, bicubic, S 224, mean 0.5, std 0.5 (crop_pct 0.9)
//   timm-mobilevit    R 284, bicubic, S 256, mean 0, std 1 (crop_pct 0.9)
// A checkpoint's own preprocessing (timm's pretrained_cfg) may differ: pass its values.
// Pictures decoded by PIL are resized in 8 bits, so PIL's results differ from these in the
// last bits of a pixel.
// Prints the top K classes (index, probability, label when --labels gives one per line).
// Exit status: 0 classified, 1 bad options, no architecture, a checkpoint that does not fit it,
// or an unreadable file.
#include "checkpoints.hpp"
#include "cli.hpp"


#include <CLI/CLI.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <vector>

namespace {

namespace nn = nonlocal::nn;

/// How a model wants its images.
struct preparation {
    std::size_t resize = 0, size = 0;
    std::string interpolation;
    std::vector<double> mean, std;
};

preparation defaults_of(const std::string& model) {
    if (model == "torchvision-vit") return {256, 224, "bilinear", {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}};
    if (model == "timm-vit") return {248, 224, "bicubic", {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}};
    return {284, 256, "bicubic", {0, 0, 0}, {1, 1, 1}};
}

/// The image as the model's input [1, 3, S, S] (see the file's comment).
xt::xtensor<float, 4> prepare(const nonlocal::tools::image& img, const preparation& p) {
    const std::size_t H = img.pixels.shape(0), W = img.pixels.shape(1), C = img.pixels.shape(2);
    if (C != 1 && C != 3)
        throw std::runtime_error("expected a grey or colour image, got " + std::to_string(C) + " channels");
    const double scale = img.array && img.bit_depth == 32 ? 1.0 : img.bit_depth == 16 ? 65535.0 : 255.0;
    xt::xtensor<float, 4> x = xt::empty<float>({std::size_t(1), std::size_t(3), H, W});
    for (std::size_t c = 0; c < 3; ++c)
        for (std::size_t y = 0; y < H; ++y)
            for (std::size_t i = 0; i < W; ++i) x(0, c, y, i) = float(img.pixels(y, i, C == 1 ? 0 : c) / scale);
    const bool tall = H > W;
    const std::size_t shorter = std::min(H, W), longer = std::max(H, W);
    const std::size_t resized_long = p.resize * longer / shorter;
    const nn::size2 resized = tall ? nn::size2{resized_long, p.resize} : nn::size2{p.resize, resized_long};
    if (resized.h < p.size || resized.w < p.size)
        throw std::runtime_error("--size " + std::to_string(p.size) + " is larger than the resized image");
    const auto mode = p.interpolation == "bicubic" ? nn::interpolation::bicubic : nn::interpolation::bilinear;
    const xt::xtensor<float, 4> big = nn::resize(x, resized, {mode, true});
    // Rounded half to even, as Python's round() in torchvision's centre_crop.
    const auto top = std::size_t(std::nearbyint((resized.h - p.size) / 2.0));
    const auto left = std::size_t(std::nearbyint((resized.w - p.size) / 2.0));
    xt::xtensor<float, 4> crop = xt::view(big, xt::all(), xt::all(), xt::range(top, top + p.size), xt::range(left, left + p.size));
    for (std::size_t c = 0; c < 3; ++c)
        xt::view(crop, 0, c) = (xt::view(crop, 0, c) - float(p.mean[c])) / float(p.std[c]);
    return crop;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Classifies an image with a Vision Transformer or MobileViT loaded from a PyTorch checkpoint"};
    namespace ex = nonlocal::examples;
    std::string model, prefix, image_path, labels_path, logits_path, arch;
    std::size_t top = 5;
    bool non_strict = false;
    preparation p;
    ex::run_options run;
    app.add_option("model", model, "torchvision-vit, timm-vit or timm-mobilevit")
        ->required()
        ->check(CLI::IsMember({"torchvision-vit", "timm-vit", "timm-mobilevit"}));
    app.add_option("prefix", prefix, "the start of every weight file's path")->required();
    app.add_option("image", image_path, "PNG, JPEG or .npy [H, W, C]")->required();
    app.add_option("--arch", arch,
                   "the architecture: vit_b_16, vit_base_patch16_224, mobilevit_s, ... (default: PREFIX architecture.txt)");
    app.add_flag("--non-strict", non_strict, "load what matches and list what is missing, unexpected or misshapen");
    app.add_option("--labels", labels_path, "a text file of class names, one per line");
    app.add_option("--top", top, "classes to print (default 5)")->check(nonlocal::tools::at_least(1));
    app.add_option("--resize", p.resize, "the shorter side after resizing (default: the model's)")
        ->check(nonlocal::tools::at_least(1));
    app.add_option("--interpolation", p.interpolation, "bilinear or bicubic (default: the model's)")
        ->check(CLI::IsMember({"bilinear", "bicubic"}));
    app.add_option("--size", p.size, "the side of the centre crop (default: the model's)")->check(nonlocal::tools::at_least(1));
    app.add_option("--mean", p.mean, "three channel means")->expected(3);
    app.add_option("--std", p.std, "three channel deviations")->expected(3)->check(nonlocal::tools::above_zero());
    app.add_option("--logits", logits_path, "also write the logits [1, classes] to this .npy file")
        ->check(nonlocal::tools::path_ending_in({".npy"}));
    run.add_to(app);
    nonlocal::tools::describe_tool(app, "nonlocal_classify",
                                   {"torchvision-vit weights/vit_b_16_ cat.jpg --arch vit_b_16 --labels imagenet_classes.txt",
                                    "timm-mobilevit weights/mobilevit_s_ cat.png --arch mobilevit_s --top 3",
                                    "timm-vit weights/vit_base_ cat.jpg --arch vit_base_patch16_224 --precision bf16"},
                                   "0 classified, 1 bad options, no architecture, a checkpoint that does not fit it, or "
                                   "an unreadable file");
    if (const auto status = nonlocal::tools::parse(app, argc, argv)) return *status;
    const preparation d = defaults_of(model);
    if (!p.resize) p.resize = d.resize;
    if (!p.size) p.size = d.size;
    if (p.interpolation.empty()) p.interpolation = d.interpolation;
    if (p.mean.empty()) p.mean = d.mean;
    if (p.std.empty()) p.std = d.std;
    try {
        std::vector<std::string> labels;
        if (!labels_path.empty()) {
            std::ifstream file(labels_path);
            if (!file) throw std::runtime_error("cannot read " + labels_path);
            for (std::string line; std::getline(file, line);) labels.push_back(line);
        }
        const xt::xtensor<float, 4> input = prepare(nonlocal::tools::without_alpha(nonlocal::tools::read_image(image_path)), p);
        const auto a = ex::architecture_of(model, arch, prefix, 3, nn::nonlocal_form::embedded_gaussian);
        nn::checkpoint from(prefix, {.strict = !non_strict});
        const auto network = ex::load_checkpoint(model, a, from, run.threads, run.precision());
        ex::warn_about("nonlocal_classify", from.finish(ex::loader_of(model)));
        std::cerr << "nonlocal_classify: " << model << ", architecture from " << a.source << ": " << a.text << "\n";
        const xt::xtensor<float, 2> logits = network(input);
        if (!logits_path.empty()) nonlocal::io::write_npy(logits_path, logits);
        // Softmax over the classes, the largest first.
        const std::size_t classes = logits.shape(1);
        const float largest = xt::amax(logits)();
        std::vector<double> probability(classes);
        double sum = 0;
        for (std::size_t k = 0; k < classes; ++k) sum += probability[k] = std::exp(double(logits(0, k) - largest));
        std::vector<std::size_t> order(classes);
        std::iota(order.begin(), order.end(), 0);
        const std::size_t shown = std::min(top, classes);
        std::partial_sort(order.begin(), order.begin() + long(shown), order.end(),
                          [&](std::size_t a, std::size_t b) { return probability[a] > probability[b]; });
        for (std::size_t r = 0; r < shown; ++r) {
            const std::size_t k = order[r];
            std::cout << std::setw(6) << k << "  " << std::fixed << std::setprecision(4) << probability[k] / sum;
            if (k < labels.size()) std::cout << "  " << labels[k];
            std::cout << "\n";
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "nonlocal_classify: " << e.what() << "\n";
        return 1;
    }
}
