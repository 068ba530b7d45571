// nonlocal-denoise: non-local means on a PNG or JPEG, PNG out.
//
//   nonlocal-denoise INPUT OUTPUT --sigma S [--h H] [--patch-radius R] [--search-radius R]
//                    [--threads N] [--bit-depth 8|16]
//
// OUTPUT has the input's channels and, unless --bit-depth says otherwise, its bit depth; an
// alpha channel (grey + alpha, RGBA) is copied, not denoised. Every option:
// docs/tools/nonlocal-denoise.md. Exit status: 0 done, 1 bad input.
#define STB_IMAGE_IMPLEMENTATION
#include "image_io.hpp"

#include <nonlocal/nonlocal.hpp>

#include <CLI/CLI.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include <chrono>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Non-local means denoising (Buades, Coll and Morel 2005)"};
    std::string input, output;
    nonlocal::nlm_options options;
    int threads = 1, bit_depth = 0;
    app.add_option("input", input, "PNG or JPEG image, 8 or 16 bit, grey or colour")->required();
    app.add_option("output", output, "PNG file to write")->required()
        ->check(nonlocal::tools::path_ending_in({".png"}));
    app.add_option("--sigma", options.sigma, "noise standard deviation, in the image's units")->required()
        ->check(nonlocal::tools::at_least(0));
    app.add_option("--h", options.h, "filtering strength (default: 0.65 sigma)")->check(nonlocal::tools::above_zero());
    app.add_option("--patch-radius", options.patch_radius, "patches of (2R+1)^2 pixels")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--search-radius", options.search_radius, "search windows of (2R+1)^2 pixels")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--bit-depth", bit_depth, "8 or 16 (default: the input's)")->check(CLI::IsMember({8, 16}));
    app.add_option("--threads", threads, "threads (row stripes)")->check(nonlocal::tools::at_least(1))->capture_default_str();
    bool quiet = false;
    app.add_flag("--quiet", quiet, "print nothing but errors");
    nonlocal::tools::describe_tool(app, "nonlocal-denoise",
                                   {"noisy.png clean.png --sigma 20",
                                    "scan16.png clean16.png --sigma 300 --patch-radius 2 --threads 2"},
                                   "0 done, 1 bad input.");
    if (const auto status = nonlocal::tools::parse(app, argc, argv)) return *status;

    try {
        const auto img = nonlocal::tools::read_image(input);
        // The colour channels are denoised; an alpha channel, coverage rather than a noisy
        // measurement, is kept as it is and takes no part in the patch distances.
        const auto colour = nonlocal::tools::without_alpha(img);
        const auto t0 = std::chrono::steady_clock::now();
        xt::xtensor<float, 3> out =
            nonlocal::nlm_denoise(colour.pixels, options, nonlocal::execution::parallel_policy{threads});
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (colour.pixels.shape(2) != img.pixels.shape(2))
            out = xt::concatenate(xt::xtuple(out, xt::view(img.pixels, xt::all(), xt::all(), xt::range(out.shape(2), img.pixels.shape(2)))), 2);
        if (bit_depth == 0) bit_depth = img.bit_depth == 16 ? 16 : 8;
        // Pixel values keep their units: 8-bit input written as 16 bit keeps 0..255.
        nonlocal::tools::write_whole(output, [&](const std::string& partial) { nonlocal::tools::write_png(partial, out, bit_depth); });
        if (!quiet)
            std::cout << input << ": " << img.pixels.shape(1) << "x" << img.pixels.shape(0) << "x" << img.pixels.shape(2)
                  << ", " << img.bit_depth << " bit, denoised in " << seconds << " s -> " << output << '\n';
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "nonlocal-denoise: " << e.what() << '\n';
        return 1;
    }
}
