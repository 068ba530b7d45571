// nonlocal-refine: colour-guided depth refinement with the linear AR model.
//
//   nonlocal-refine --guide RGB --depth DEPTH --out OUT [--preview PNG] [options]
//   nonlocal-refine --batch LIST [--jobs N] [--skip-existing] [--shard I/N|auto] [options]
//   nonlocal-refine --summary REPORT.jsonl...
//
// RGB is a PNG (8 or 16 bit; an alpha channel is ignored) or a JPEG, grey or colour.
// DEPTH is an 8- or 16-bit PNG or a .npy of float32, float64 or integers; 0, negative or non-finite is missing.
// OUT is written by extension: .png as 16 bit in the input's units, .npy as float32.
// LIST holds one pair per line, "GUIDE DEPTH OUT" (see batch.hpp); its pairs are refined
// one per job, N jobs at a time, with the same options. --summary reads the --report files of a
// run's shards and prints what happened (tools/run_summary.hpp). Every option:
// docs/tools/nonlocal-refine.md.
// Exit status: 0 done, 1 bad input or a pair failed, 2 a solve did not converge.
#include "batch.hpp"
#include "batch_run.hpp"
#include "image_io.hpp"
#include "run_summary.hpp"

#include <nonlocal/io/depth.hpp>

#include <nonlocal/depth.hpp>

#include <CLI/CLI.hpp>
#include <xtensor/xview.hpp>

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

namespace {

/// What every pair of a run is refined with.
struct refinement {
    std::string mode = "fill";
    std::size_t factor = 1;
    nonlocal::depth_options options;
    int threads = 1;   ///< of each pair's solves
};

/// The confidence map at `path` for a depth map of `shape`: a PNG of 8 or 16 bits scaled to
/// [0, 1] (255 or 65535 is 1), or a .npy as it is. Throws std::runtime_error naming the file
/// unless it has one channel, the depth's size, and values that are finite and at least 0.
xt::xtensor<float, 2> read_confidence(const std::string& path, const std::array<std::size_t, 2>& shape) {
    const auto image = nonlocal::tools::read_image(path);
    if (image.pixels.shape(2) != 1) throw std::runtime_error(path + " must have one channel");
    if (image.pixels.shape(0) != shape[0] || image.pixels.shape(1) != shape[1])
        throw std::runtime_error(path + " is " + std::to_string(image.pixels.shape(0)) + " x " +
                                 std::to_string(image.pixels.shape(1)) + ", its depth map " + std::to_string(shape[0]) +
                                 " x " + std::to_string(shape[1]));
    const float scale = image.array ? 1.0f : 1.0f / float((1u << image.bit_depth) - 1);
    xt::xtensor<float, 2> confidence = xt::view(image.pixels, xt::all(), xt::all(), 0) * scale;
    for (std::size_t i = 0; i < confidence.size(); ++i)
        if (const float c = confidence.data()[i]; !std::isfinite(c) || c < 0)
            throw std::runtime_error(path + ": the confidence at pixel (" + std::to_string(i / shape[1]) + ", " +
                                     std::to_string(i % shape[1]) + ") is " + std::to_string(c) +
                                     "; confidences must be finite and at least 0");
    return confidence;
}

/// Reads a pair, refines it and writes the result; the exceptions of the library and of the
/// image files pass through.
nonlocal::depth_result refine_pair(const nonlocal::tools::depth_pair& pair, const refinement& how) {
    // 16-bit guides on the 8-bit scale of --sigma-r, as the library scales uint16 images.
    const xt::xtensor<float, 3> guide = nonlocal::io::read_guide(pair.guide);
    const xt::xtensor<float, 2> depth = nonlocal::io::read_depth(pair.depth);
    const std::optional<xt::xtensor<float, 2>> confidence =
        pair.confidence.empty() ? std::nullopt
                                : std::optional(read_confidence(pair.confidence, {depth.shape(0), depth.shape(1)}));
    const nonlocal::execution::parallel_policy on{how.threads};
    const auto refine = [&]() {
        if (confidence) {
            if (how.mode == "upsample") return nonlocal::upsample_depth(on, depth, *confidence, guide, how.factor, how.options);
            if (how.mode == "denoise") return nonlocal::denoise_depth(on, depth, *confidence, guide, how.options);
            return nonlocal::fill_depth(on, depth, *confidence, guide, how.options);
        }
        if (how.mode == "upsample") return nonlocal::upsample_depth(on, depth, guide, how.factor, how.options);
        if (how.mode == "denoise") return nonlocal::denoise_depth(on, depth, guide, how.options);
        return nonlocal::fill_depth(on, depth, guide, how.options);
    };
    nonlocal::depth_result result = refine();
    // Written whole or not at all: an interrupted run leaves no partial output that
    // --skip-existing would take for a finished one.
    nonlocal::io::write_depth(pair.out, result.depth);
    return result;
}

/// "solver pcg: 10 iterations, relative residual 9e-05, converged, solve 0.3 s, total 0.5 s;
/// colour bandwidth 1.6, noise 1.2, data weight 0.25; 12 observations rejected, 3 flying pixels
/// re-estimated -> OUT" (the noise when there is some, the weight when not 1, the last part
/// when there are any)
std::string describe(const nonlocal::depth_result& result, const std::string& out_path) {
    const auto& r = result.report;
    std::ostringstream s;
    s << "solver " << r.method << ": " << r.iterations << " iterations, relative residual " << r.relative_residual
      << (r.converged ? ", converged" : ", NOT converged") << ", solve " << r.seconds << " s, total "
      << result.seconds << " s";
    s << "; colour bandwidth " << result.sigma_r;
    if (result.noise > 0) s << ", noise " << result.noise;
    if (result.data_weight != 1) s << ", data weight " << result.data_weight;
    if (result.rejected > 0 || result.flying > 0)
        s << "; " << result.rejected << " observations rejected, " << result.flying << " flying pixels re-estimated";
    s << " -> " << out_path;
    return s.str();
}

/// A pair's own fields in its --report line.
std::string pair_fields(const nonlocal::tools::depth_pair& pair) {
    using nonlocal::tools::json_quoted;
    return ", \"guide\": " + json_quoted(pair.guide) + ", \"depth\": " + json_quoted(pair.depth) +
           (pair.confidence.empty() ? "" : ", \"confidence\": " + json_quoted(pair.confidence)) +
           ", \"out\": " + json_quoted(pair.out);
}

/// A result's fields in its --report line: the solve's method, iterations, relative residual,
/// the seconds, the observations the robust term rejected, the flying pixels, the robust
/// term's rounds, the colour bandwidth, the observations' noise and the data term's weight.
std::string solve_fields(const nonlocal::depth_result& result) {
    std::ostringstream fields;
    fields << ", \"method\": " << nonlocal::tools::json_quoted(result.report.method)
           << ", \"iterations\": " << result.report.iterations << ", \"relative_residual\": " << result.report.relative_residual
           << ", \"seconds\": " << result.seconds << ", \"rejected\": " << result.rejected
           << ", \"flying\": " << result.flying << ", \"robust_iterations\": " << result.robust_iterations
           << ", \"sigma_r\": " << result.sigma_r << ", \"noise\": " << result.noise
           << ", \"data_weight\": " << result.data_weight;
    return fields.str();
}

/// A pair refined and written, as the batch runner takes it.
nonlocal::tools::item_outcome refine_item(const nonlocal::tools::depth_pair& pair, const refinement& how) {
    const nonlocal::depth_result result = refine_pair(pair, how);
    return {describe(result, pair.out), result.report.converged, solve_fields(result)};
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Colour-guided depth refinement (linear AR model)"};
    std::string guide_path, depth_path, confidence_path, out_path, solver = "pcg", model = "normalized",
                color = "laplacian", space = "luma-chroma", coarsening = "operator-dependent", occlusions = "blend",
                flying = "default";
    refinement how;
    nonlocal::depth_options& options = how.options;
    auto* guide_option =
        app.add_option("--guide", guide_path, "colour (or grey) guide image, PNG (8 or 16 bit, its alpha ignored) or JPEG");
    auto* depth_option = app.add_option("--depth", depth_path, "depth: 8- or 16-bit PNG, or .npy of float32, float64 or integers; 0, negative or not finite is missing");
    auto* out_option = app.add_option("--out", out_path, "output: .png (16 bit) or .npy (float32)")
                           ->check(nonlocal::tools::path_ending_in(nonlocal::tools::depth_outputs));
    auto* confidence_option = app.add_option(
        "--confidence", confidence_path,
        "confidence per depth pixel, scaling its data term: 8- or 16-bit PNG (255 or 65535 is 1) or .npy (as it is); 0 is missing");
    nonlocal::tools::voice speech;
    nonlocal::tools::batch_command_line batch;
    batch.add_to(app, "pairs", "GUIDE DEPTH [CONFIDENCE] OUT",
                 "line, guide, depth, confidence (when listed), out, status, method, iterations, relative_residual, seconds, "
                 "rejected, flying, robust_iterations, noise, data_weight, error",
                 speech);
    batch.batch->excludes(guide_option)->excludes(depth_option)->excludes(out_option)->excludes(confidence_option);
    std::vector<std::string> summary_paths;
    auto* summary_option =
        app.add_option("--summary", summary_paths,
                       "print what the --report files of a run (every shard's) say: pairs done, failed with their errors, "
                       "not converged, skipped, claimed elsewhere, pairs per core-hour, the slowest; exit status 1 when "
                       "a pair failed or a line cannot be read")
            ->expected(1, -1)
            ->check(CLI::ExistingFile);
    summary_option->excludes(guide_option)->excludes(depth_option)->excludes(out_option)->excludes(batch.batch);
    app.add_option("--mode", how.mode, "fill, denoise or upsample")
        ->check(CLI::IsMember({"fill", "denoise", "upsample"}))->capture_default_str();
    auto* factor_option =
        app.add_option("--factor", how.factor, "upsampling factor (mode upsample)")->check(nonlocal::tools::at_least(1));
    app.add_option("--model", model,
                   "normalized (K(m d) / K(m)), ar (the AR model's minimiser) or separable (K(m d) / K(m) with K "
                   "approximated by line solves, as the fast global smoother does: several times faster); "
                   "normalised, the spelling before 0.1.0, is read for one release")
        ->check(CLI::IsMember({"normalized", "normalised", "ar", "separable"}))->capture_default_str();
    app.add_option("--color,--colour", color,
                   "color weight: laplacian exp(-|dI|_1 / s) or gaussian exp(-|dI|^2 / 2 s^2) (--colour: the "
                   "spelling before 0.1.0, read for one release)")
        ->check(CLI::IsMember({"laplacian", "gaussian"}))->capture_default_str();
    app.add_option("--color-space,--colour-space", space,
                   "compare colours in luma-chroma (an RGB guide as Y, c Cb, c Cr) or in the guide's own channels")
        ->check(CLI::IsMember({"luma-chroma", "guide"}))->capture_default_str();
    app.add_option("--chroma-weight", options.chroma_weight, "luma-chroma: the weight c of chroma against luma")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--sigma-r", options.sigma_r,
                   "colour bandwidth s, in the compared channels' units on the 8-bit scale (16-bit guides are brought "
                   "to it); 0: chosen from the data (upsampling: by holding a quarter of the samples out; filling and "
                   "denoising: a quarter of the guide's median colour difference between neighbours)")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--radius", options.radius, "stencil radius (1: the 8 neighbours)")->check(nonlocal::tools::at_least(1))
        ->capture_default_str();
    app.add_option("--connectivity", options.connectivity,
                   "stencil neighbours: 8 (the square of the radius) or 4 (the diamond; suits the separable model on "
                   "sensor depth)")
        ->check(CLI::IsMember({4, 8}))->capture_default_str();
    auto* epsilon = app.add_option("--epsilon-scale", options.epsilon_scale,
                                   "normalised model: eps = this x observed fraction (mode denoise: 0.25 unless given)")
                        ->check(nonlocal::tools::above_zero())->capture_default_str();
    app.add_option("--noise", options.noise,
                   "the observations' noise (a standard deviation, in depth units) as the report gives it; default: "
                   "estimated from them")
        ->check(nonlocal::tools::at_least(0));
    app.add_option("--data-weight", options.data_weight,
                   "the data term's weight against the smoothness, a factor on eps and lambda; 0: 1 when filling and "
                   "denoising, chosen by holding a quarter of the samples out when upsampling")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--separable-passes", options.separable_passes,
                   "model separable: passes of line solves along every stencil direction")
        ->check(nonlocal::tools::at_least(1))->capture_default_str();
    app.add_option("--separable-strength", options.separable_strength,
                   "model separable: the fast global smoother's lambda over eps, per pixel of the observations' spacing")
        ->check(nonlocal::tools::above_zero())->capture_default_str();
    app.add_option("--median-scale", options.median_scale,
                   "edge-sharpening median of radius this x the observations' spacing (0: none)")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--median-max-radius", options.median_max_radius, "largest radius of that median")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--median-flatness", options.median_flatness,
                   "windows spanning at most this fraction of the observed depth range keep their value (0: exact median)")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    auto* passes = app.add_option("--depth-passes", options.depth_passes,
                                  "re-solves whose weights also follow the last result's depth (adaptive weights; "
                                  "default: 1 in modes fill and denoise, 0 in mode upsample)")
                      ->check(nonlocal::tools::at_least(0));
    app.add_option("--sigma-d", options.sigma_d, "depth bandwidth of those weights, in depth units (0: 2 % of the range)")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    auto* robust_option = app.add_option("--robust-iterations", options.robust_iterations,
                   "re-estimates of the robust data term, which rejects wrong measurements (0: off; 1 suits sensor depth)")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--robust-threshold", options.robust_threshold,
                   "Tukey's c in robust standard deviations of the residuals (at least half a --step)")
        ->check(nonlocal::tools::above_zero())->capture_default_str();
    app.add_option("--flying-pixels", flying,
                   "find the pixels that straddle a depth step (time of flight) and re-estimate them: on or off "
                   "(default: on in modes fill and denoise, off in mode upsample)")
        ->check(CLI::IsMember({"on", "off"}));
    std::string sensor;
    auto* sensor_option =
        app.add_option("--sensor", sensor,
                       "what the depth comes from, which sets the options its artefacts call for (explicit options "
                       "still win): clean (the mode's defaults); stereo (a matcher's disparity: --robust-iterations 1 "
                       "--occlusions smaller); structured-light (distance: --robust-iterations 1 --occlusions larger); "
                       "tof (--median-of-observations --flying-pixel-sides)")
            ->check(CLI::IsMember({"clean", "stereo", "structured-light", "tof"}));
    auto* occlusions_option = app.add_option("--occlusions", occlusions,
                   "holes beside a depth step: blend them from both sides, or fill them from the far side, that of "
                   "the smaller values (disparity: stereo, structured light) or of the larger ones (distance)")
        ->check(CLI::IsMember({"blend", "smaller", "larger"}))->capture_default_str();
    auto* median_option = app.add_flag("--median-of-observations", options.median_of_observations,
                 "replace each observation by the median of those in its 5 x 5 window first (noisy time-of-flight depth)");
    auto* sides_option = app.add_flag("--flying-pixel-sides", options.flying_pixel_sides,
                 "a flying pixel whose neighbours tell which side of the step it touches takes that side's depth "
                 "(time of flight; a ledge one or two pixels wide looks the same)");
    app.add_option("--step", options.step, "a depth step, in depth units (0: 5 % of the observed range)")
        ->check(nonlocal::tools::at_least(0))->capture_default_str();
    app.add_option("--threads", how.threads, "threads of each pair's solver passes")->check(nonlocal::tools::at_least(1))
        ->capture_default_str();
    bool double_precision = false;
    app.add_flag("--double", double_precision, "solve in double precision (default: float)");
    auto* lambda = app.add_option("--lambda", options.lambda, "model ar: confidence of the observations")->check(nonlocal::tools::above_zero());
    app.add_option("--solver", solver, "pcg (multigrid-preconditioned), multigrid, pcg-jacobi, jacobi or sor")
        ->check(CLI::IsMember({"pcg", "multigrid", "pcg-jacobi", "jacobi", "sor"}))->capture_default_str();
    app.add_option("--coarsening", coarsening,
                   "multigrid levels: operator-dependent interpolation with Galerkin coarse systems, or 2 x 2 aggregation")
        ->check(CLI::IsMember({"operator-dependent", "aggregation"}))->capture_default_str();
    app.add_option("--tol", options.solve.tolerance, "relative residual to reach")->check(nonlocal::tools::above_zero())
        ->capture_default_str();
    app.add_option("--max-iterations", options.solve.max_iterations, "iteration budget")
        ->check(nonlocal::tools::at_least(1))->capture_default_str();
    std::string preview_path;
    auto* preview_option =
        app.add_option("--preview", preview_path,
                       "also write the result as a colour-mapped PNG (turbo: nearest blue, farthest red, missing black)")
            ->check(nonlocal::tools::path_ending_in({".png"}))->excludes(batch.batch);
    nonlocal::tools::describe_tool(app, "nonlocal-refine",
                                   {"--guide rgb.png --depth holes.png --out filled.png --preview filled_view.png",
                                    "--mode denoise --guide rgb.png --depth noisy.png --out clean.npy",
                                    "--mode upsample --factor 8 --guide rgb.png --depth low.png --out up.png",
                                    "--guide left.png --depth disparity.png --out filled.png --sensor stereo",
                                    "--guide rgb.png --depth tof.png --out filled.png --sensor tof",
                                    "--batch pairs.txt --jobs 2 --skip-existing --report run.jsonl",
                                    "--summary run-*.jsonl"},
                                   "0 done, 1 bad input or a pair failed, 2 a solve did not converge.");
    if (const auto status = nonlocal::tools::parse(app, argc, argv)) return *status;
    speech.terminal = isatty(STDOUT_FILENO) == 1;
    if (summary_option->count()) {
        try {
            const auto summary = nonlocal::tools::summarise_reports(summary_paths);
            nonlocal::tools::print_summary(std::cout, summary, summary_paths.size());
            return summary.failed || summary.unreadable_lines ? 1 : 0;
        } catch (const std::exception& e) {
            std::cerr << "nonlocal-refine: " << e.what() << '\n';
            return 1;
        }
    }
    if (factor_option->count() > 0 && how.mode != "upsample") {   // an upsampling meant, a fill run instead
        std::cerr << "nonlocal-refine: --factor applies to --mode upsample only, not to --mode " << how.mode << '\n';
        return 1;
    }
    if (!batch.given() && (!guide_option->count() || !depth_option->count() || !out_option->count())) {
        std::cerr << "nonlocal-refine: give --guide, --depth and --out, or --batch\nRun with --help for more information.\n";
        return 1;
    }

    const std::map<std::string, nonlocal::depth_solver> solvers = {
        {"pcg", nonlocal::depth_solver::pcg_multigrid}, {"multigrid", nonlocal::depth_solver::multigrid},
        {"pcg-jacobi", nonlocal::depth_solver::pcg_jacobi}, {"jacobi", nonlocal::depth_solver::jacobi},
        {"sor", nonlocal::depth_solver::sor}};
    options.solver = solvers.at(solver);
    options.single_precision = !double_precision;
    const std::map<std::string, nonlocal::depth_model> models = {{"normalized", nonlocal::depth_model::normalized},
                                                                 {"normalised", nonlocal::depth_model::normalized},
                                                                 {"ar", nonlocal::depth_model::ar},
                                                                 {"separable", nonlocal::depth_model::separable}};
    options.model = models.at(model);
    options.color = color == "gaussian" ? nonlocal::color_kernel::gaussian : nonlocal::color_kernel::laplacian;
    options.space = space == "guide" ? nonlocal::color_space::guide : nonlocal::color_space::luma_chroma;
    options.multigrid.transfer =
        coarsening == "aggregation" ? nonlocal::coarsening::aggregation : nonlocal::coarsening::operator_dependent;
    if (how.mode != "upsample") {   // the task's defaults, unless given
        const nonlocal::depth_options defaults = how.mode == "denoise" ? nonlocal::denoise_options() : nonlocal::fill_options();
        if (!lambda->count()) options.lambda = defaults.lambda;
        if (!epsilon->count()) options.epsilon_scale = defaults.epsilon_scale;
        if (!passes->count()) options.depth_passes = defaults.depth_passes;
        options.flying_pixels = defaults.flying_pixels;
    }
    if (flying != "default") options.flying_pixels = flying == "on";
    options.occlusions = occlusions == "smaller"  ? nonlocal::occlusion_fill::from_smaller
                         : occlusions == "larger" ? nonlocal::occlusion_fill::from_larger
                                                  : nonlocal::occlusion_fill::blend;
    if (sensor_option->count()) {   // what the sensor's preset sets, unless given
        const std::map<std::string, nonlocal::depth_sensor> sensors = {
            {"clean", nonlocal::depth_sensor::clean}, {"stereo", nonlocal::depth_sensor::stereo},
            {"structured-light", nonlocal::depth_sensor::structured_light}, {"tof", nonlocal::depth_sensor::time_of_flight}};
        const nonlocal::depth_options preset = nonlocal::sensor_options(sensors.at(sensor));
        if (!robust_option->count()) options.robust_iterations = preset.robust_iterations;
        if (!occlusions_option->count()) options.occlusions = preset.occlusions;
        if (!median_option->count()) options.median_of_observations = preset.median_of_observations;
        if (!sides_option->count()) options.flying_pixel_sides = preset.flying_pixel_sides;
    }
    speech.report = batch.report;
    const nonlocal::tools::depth_pair single{guide_path, depth_path, confidence_path, out_path, 0};
    try {
        if (batch.given()) {
            // Only this shard's pairs are kept: a list of 100,000 costs a few MB in each shard.
            const auto settings = batch.settings("pairs", "refined");
            return nonlocal::tools::run_batch(batch.list, nonlocal::tools::read_pair_list(batch.list, settings.part), settings,
                                              speech, pair_fields,
                                              [&](const nonlocal::tools::depth_pair& pair) { return refine_item(pair, how); });
        }
        nonlocal::tools::require_distinct_output(out_path, {guide_path, depth_path, confidence_path});
        const auto result = refine_pair(single, how);
        if (!speech.quiet) std::cout << describe(result, out_path) << '\n';
        if (preview_option->count()) {
            const auto observed = [](float v) { return v > 0; };
            const nonlocal::tools::value_range range = nonlocal::tools::finite_range(result.depth, observed);
            nonlocal::tools::write_whole(preview_path, [&](const std::string& partial) {
                const xt::xtensor<float, 3> rgb = xt::cast<float>(nonlocal::tools::color_mapped(result.depth, range.lo, range.hi, observed));
                nonlocal::tools::write_png(partial, rgb, 8);
            });
            if (!speech.quiet)
                std::cout << "preview: depth " << range.lo << " (blue) to " << range.hi << " (red) -> " << preview_path << '\n';
        }
        speech.record(nonlocal::tools::report_line(0, pair_fields(single),
                                                   result.report.converged ? "refined" : "not converged",
                                                   solve_fields(result), ""));
        return result.report.converged ? 0 : 2;
    } catch (const std::exception& e) {
        std::cerr << "nonlocal-refine: " << e.what() << '\n';
        if (!batch.given()) {
            try {
                speech.record(nonlocal::tools::report_line(0, pair_fields(single), "failed", "", e.what()));
            } catch (const std::exception&) {   // the report's own failure: the error above is what matters
            }
        }
        return 1;
    }
}
