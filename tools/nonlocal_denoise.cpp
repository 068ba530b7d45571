// nonlocal-denoise: non-local means on a PNG, JPEG or .npy image, PNG out.
//
//   nonlocal-denoise INPUT OUTPUT --sigma S [--h H] [--patch-radius R] [--search-radius R]
//                    [--threads N] [--bit-depth 8|16]
//   nonlocal-denoise --batch LIST --sigma S [--jobs N] [--skip-existing] [--shard I/N|auto] [options]
//
// OUTPUT has the input's channels and, unless --bit-depth says otherwise, its bit depth; an
// alpha channel (grey + alpha, RGBA) is copied, not denoised. Every option:
// docs/tools/nonlocal-denoise.md. Exit status: 0 done, 1 bad input or an image failed.
#include "batch.hpp"
#include "batch_run.hpp"
#include "image_io.hpp"

#include <nonlocal/filter.hpp>

#include <CLI/CLI.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <sstream>

namespace {

/// What every image of a run is denoised with.
struct denoising {
    nonlocal::nlm_options options;
    int threads = 1, bit_depth = 0;
};

/// An image of a list: its input and its output.
struct image_item {
    std::string input, out;
    std::size_t line = 0;
};

/// Reads, denoises and writes one image (whole or not at all); the line it prints.
nonlocal::tools::item_outcome denoise_image(const image_item& item, const denoising& how) {
    const auto img = nonlocal::tools::read_image(item.input);
    // The colour channels are denoised; an alpha channel, coverage rather than a noisy
    // measurement, is kept as it is and takes no part in the patch distances.
    const auto color = nonlocal::tools::without_alpha(img);
    const auto t0 = std::chrono::steady_clock::now();
    xt::xtensor<float, 3> out =
        nonlocal::nlm_denoise(nonlocal::execution::parallel_policy{how.threads}, color.pixels, how.options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (color.pixels.shape(2) != img.pixels.shape(2))
        out = xt::concatenate(
            xt::xtuple(out, xt::view(img.pixels, xt::all(), xt::all(), xt::range(out.shape(2), img.pixels.shape(2)))), 2);
    const int bit_depth = how.bit_depth ? how.bit_depth : img.bit_depth == 16 ? 16 : 8;
    // Pixel values keep their units: 8-bit input written as 16 bit keeps 0..255.
    nonlocal::tools::write_whole(item.out, [&](const std::string& partial) {
        nonlocal::tools::write_png(partial, out, bit_depth);
    });
    std::ostringstream line;
    line << item.input << ": " << img.pixels.shape(1) << "x" << img.pixels.shape(0) << "x" << img.pixels.shape(2) << ", "
         << img.bit_depth << " bit, denoised in " << seconds << " s -> " << item.out;
    return {line.str(), true, ", \"seconds\": " + std::to_string(seconds)};
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Non-local means denoising (Buades, Coll and Morel 2005)"};
    std::string input, output;
    denoising how;
    nonlocal::nlm_options& options = how.options;
    auto* input_option = app.add_option("input", input, "PNG (8 or 16 bit) or JPEG image, grey or colour, or a .npy array [H, W] or [H, W, C]");
    auto* output_option =
        app.add_option("output", output, "PNG file to write")->check(nonlocal::tools::path_ending_in({".png"}));
    nonlocal::tools::voice speech;
    nonlocal::tools::batch_command_line batch;
    batch.add_to(app, "images", "INPUT OUTPUT", "line, input, out, status, seconds, error", speech);
    batch.batch->excludes(input_option)->excludes(output_option);
    app.add_option("--sigma", options.sigma, "noise standard deviation, in the image's units")->required()
        ->check(nonlocal::tools::at_least(0));
    app.add_option("--h", options.h, "filtering strength (default: 0.65 sigma)")->check(nonlocal::tools::above_zero());
    app.add_option("--patch-radius", options.patch_radius, "patches of (2R+1)^2 pixels")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--search-radius", options.search_radius, "search windows of (2R+1)^2 pixels")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--bit-depth", how.bit_depth, "8 or 16 (default: the input's)")->check(CLI::IsMember({8, 16}));
    app.add_option("--threads", how.threads, "threads of each image (row stripes)")
        ->check(nonlocal::tools::at_least(1))->capture_default_str();
    nonlocal::tools::describe_tool(app, "nonlocal-denoise",
                                   {"noisy.png clean.png --sigma 20",
                                    "scan16.png clean16.png --sigma 300 --patch-radius 2 --threads 2",
                                    "--batch images.txt --sigma 20 --jobs 2 --skip-existing --report run.jsonl"},
                                   "0 done, 1 bad input or an image failed.");
    if (const auto status = nonlocal::tools::parse(app, argc, argv)) return *status;
    if (!batch.given() && (!input_option->count() || !output_option->count())) {
        std::cerr << "nonlocal-denoise: give INPUT and OUTPUT, or --batch\nRun with --help for more information.\n";
        return 1;
    }
    speech.terminal = isatty(STDOUT_FILENO) == 1;
    speech.report = batch.report;
    const auto fields = [](const image_item& item) {
        return ", \"input\": " + nonlocal::tools::json_quoted(item.input) + ", \"out\": " +
               nonlocal::tools::json_quoted(item.out);
    };
    try {
        if (batch.given()) {
            // Only this shard's images are kept, as nonlocal-refine keeps its pairs.
            const auto settings = batch.settings("images", "denoised");
            const auto items = nonlocal::tools::read_packed_list<image_item, 2>(batch.list, {"INPUT", "OUTPUT"}, {".png"},
                                                                                 settings.part);
            return nonlocal::tools::run_batch(batch.list, items, settings, speech, fields,
                                              [&](const image_item& item) { return denoise_image(item, how); });
        }
        nonlocal::tools::require_distinct_output(output, {input});
        const image_item single{input, output, 0};
        const auto outcome = denoise_image(single, how);
        if (!speech.quiet) std::cout << outcome.summary << '\n';
        speech.record(nonlocal::tools::report_line(0, fields(single), "denoised", outcome.fields, ""));
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "nonlocal-denoise: " << e.what() << '\n';
        return 1;
    }
}
