// The networks of the checkpoint programs, compiled once for nonlocal_model_forward,
// nonlocal_classify and strict_checkpoints (each network is most of a program's compile time).
#include "checkpoints.hpp"

#include <nonlocal/execution.hpp>

namespace nonlocal::examples {

std::function<xt::xarray<float>(const xt::xtensor<float, 4>&)> load_checkpoint(const std::string& model,
                                                                                      const architecture& a,
                                                                                      nn::checkpoint& from, int threads,
                                                                                      precision p) {
    const execution::parallel_policy policy{threads};
    const auto wrap = [&](auto network) {
        if constexpr (requires { network.to(p); }) network.to(p);
        else if (p != precision::native)
            throw std::runtime_error("--precision bf16: " + model + " has no bfloat16 products (its convolutions run in float)");
        return [network = std::move(network), policy](const xt::xtensor<float, 4>& x) -> xt::xarray<float> { return network(policy, x); };
    };
    if (model == "torchvision-vit") return wrap(nn::load_torchvision(from, std::get<nn::vit_config>(a.config)));
    if (model == "timm-vit") return wrap(nn::load_timm(from, std::get<nn::vit_config>(a.config)));
    if (model == "timm-mobilevit") return wrap(nn::load_timm(from, std::get<nn::mobilevit_config>(a.config)));
    if (model == "timm-mobilevit-block")
        return wrap(nn::load_timm(from, std::get<nn::mobilevit_block_config>(a.config)));
    const auto block = nn::load_npy(from, std::get<nn::nonlocal_block_config>(a.config));
    return wrap(block);
}

std::vector<nn::checkpoint::entry> entries_of(const std::string& model, const architecture& a) {
    nn::checkpoint listing = nn::checkpoint::listing();
    load_checkpoint(model, a, listing, 1, precision::native);
    return listing.expected();
}

}  // namespace nonlocal::examples
