#pragma once
// What nonlocal_model_forward and nonlocal_classify share: the checkpoints they load, by
// MODEL name, and how they write an array whole.
#include "image_io.hpp"

#include <nonlocal/nonlocal.hpp>

#include <xtensor/xnpy.hpp>

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

namespace nonlocal::examples {

/// Whether MODEL is a ViT, whose number of heads the weights do not tell.
inline bool needs_heads(const std::string& model) { return model == "torchvision-vit" || model == "timm-vit"; }

/// `program: --heads is required for MODEL` on stderr and false when a ViT is given no
/// heads; true otherwise.
inline bool heads_given(const std::string& program, const std::string& model, std::size_t heads) {
    if (!needs_heads(model) || heads > 0) return true;
    std::cerr << program << ": --heads is required for " << model << " (12 for ViT-B, 16 for ViT-L)\n";
    return false;
}

/// The output of checkpoint MODEL (torchvision-vit, timm-vit, timm-mobilevit,
/// timm-mobilevit-block or nonlocal-block-2d), its weights at PREFIX, for `input`, on
/// `threads` threads; MobileViT with 4 heads (timm's) when `heads` is 0.
inline xt::xarray<float> run_checkpoint(const std::string& model, const std::string& prefix,
                                        const xt::xtensor<float, 4>& input, std::size_t heads, nn::nonlocal_form form,
                                        int threads) {
    const execution::parallel_policy policy{threads};
    if (model == "torchvision-vit") return nn::vision_transformer::load_torchvision(prefix, heads)(input, policy);
    if (model == "timm-vit") return nn::vision_transformer::load_timm(prefix, heads)(input, policy);
    if (heads == 0) heads = 4;
    if (model == "timm-mobilevit") return nn::mobilevit::load_timm(prefix, heads)(input, policy);
    if (model == "timm-mobilevit-block") return nn::mobilevit_block::load_timm(prefix, heads)(input, policy);
    return nn::nonlocal_feature_block::load_npy(prefix, form)(input, policy);
}

/// `array` as a .npy file at `path`, written whole or not at all (errors name `path`).
inline void write_npy(const std::string& path, const xt::xarray<float>& array) {
    tools::write_whole(path, [&](const std::string& partial) {
        std::ofstream file(partial, std::ios::binary);
        file << xt::dump_npy(array);
        if (!file.flush()) throw std::runtime_error("cannot write " + partial);
    });
}

}  // namespace nonlocal::examples
