// The checkpoint reader and a loader on any bytes: a transformer encoder layer's checkpoint
// (E = 4, 2 heads, F = 8; twelve entries, all valid) with one entry, chosen by the first
// byte, replaced by the remaining bytes. Loading strictly either succeeds, exactly when
// nothing is reported, or throws checkpoint_error (a std::invalid_argument) naming the entry;
// loading non-strictly never throws and reports the same problems. A truncated file, a header
// that declares a huge shape, another element type or rank, or no .npy at all are among them.
#include "fuzz_support.hpp"

#include <nonlocal/nn/io/transformer.hpp>

#include <xtensor/xnpy.hpp>

namespace nn = nonlocal::nn;

namespace {

const nn::encoder_layer_config config{.embed_dim = 4, .num_heads = 2, .feedforward = 8};

/// The entries of the layer, each written once, valid, into the scratch folder.
const std::vector<nn::checkpoint::entry>& entries() {
    static const std::vector<nn::checkpoint::entry> all = [] {
        nn::checkpoint listing = nn::checkpoint::listing();
        nn::load_npy(listing, config);
        return listing.expected();
    }();
    return all;
}

std::string prefix() { return (nonlocal::fuzz::scratch_folder() / "layer_").string(); }

void write_valid(const nn::checkpoint::entry& e) {
    xt::dump_npy(prefix() + e.name + ".npy", xt::xarray<float>(xt::ones<float>(e.shape)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const bool written = [] {
        for (const auto& e : entries()) write_valid(e);
        return true;
    }();
    (void)written;
    if (size == 0) return 0;
    const auto& chosen = entries()[data[0] % entries().size()];
    nonlocal::fuzz::scratch_file("layer_" + chosen.name + ".npy", data + 1, size - 1);

    nn::checkpoint strict(prefix());
    const auto layer = nn::load_npy(strict, config);   // problems are recorded, not thrown
    const nn::load_report report = strict.report();
    bool refused = false;
    try {
        strict.finish("fuzz");
    } catch (const nn::checkpoint_error& e) {
        refused = true;
        nonlocal::fuzz::require(std::string(e.what()).find(chosen.name) != std::string::npos, "the refusal names the entry");
    }
    nonlocal::fuzz::require(refused == !report.clean(), "strict loading refuses exactly what it reports");
    nonlocal::fuzz::require(report.missing.empty() && report.unexpected.empty() && report.mismatched.size() <= 1,
                            "only the fuzzed entry can be wrong");
    nonlocal::fuzz::require(layer.self_attn.embed_dim == 4 && layer.mlp.hidden() == 8, "the architecture, not the files, sets the shapes");

    nn::checkpoint lenient(prefix(), {.strict = false});
    nn::load_npy(lenient, config);
    const nn::load_report again = lenient.finish("fuzz");
    nonlocal::fuzz::require(again.mismatched.size() == report.mismatched.size(), "non-strict reports the same");
    write_valid(chosen);
    return 0;
}
