// nonlocal-refine: colour-guided depth refinement with the linear AR model.
//
//   nonlocal-refine --guide RGB --depth DEPTH --out OUT [options]
//   nonlocal-refine --batch LIST [--jobs N] [--skip-existing] [options]
//
//   options: [--mode fill|denoise|upsample] [--factor F]
//            [--model normalised|ar|separable] [--separable-passes P] [--separable-strength S]
//            [--colour laplacian|gaussian] [--colour-space luma-chroma|guide]
//            [--chroma-weight C] [--sigma-r S] [--radius R] [--epsilon-scale E] [--lambda L]
//            [--median-scale M] [--median-max-radius R] [--median-flatness F] [--depth-passes P]
//            [--sigma-d S] [--solver pcg|multigrid|pcg-jacobi|jacobi|sor]
//            [--coarsening operator-dependent|aggregation] [--tol T] [--max-iterations N]
//            [--threads N] [--double]
//
// RGB is a PNG (8 or 16 bit; an alpha channel is ignored) or a JPEG, grey or colour.
// DEPTH is an 8- or 16-bit PNG or a .npy of float32, float64 or integers; 0 (or non-finite) is missing.
// OUT is written by extension: .png as 16 bit in the input's units, .npy as float32.
// LIST holds one pair per line, "GUIDE DEPTH OUT" (see batch.hpp); its pairs are refined
// one per job, N jobs at a time, with the same options.
#define STB_IMAGE_IMPLEMENTATION
#include "batch.hpp"
#include "image_io.hpp"

#include <nonlocal/nonlocal.hpp>

#include <CLI/CLI.hpp>
#include <xtensor/xview.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace {

/// What every pair of a run is refined with.
struct refinement {
    std::string mode = "fill";
    std::size_t factor = 1;
    nonlocal::depth_options options;
};

/// Reads a pair, refines it and writes the result; the exceptions of the library and of the
/// image files pass through.
nonlocal::depth_result refine_pair(const nonlocal::tools::depth_pair& pair, const refinement& how) {
    const auto guide = nonlocal::tools::without_alpha(nonlocal::tools::read_image(pair.guide));
    const auto depth_image = nonlocal::tools::read_image(pair.depth);
    if (depth_image.pixels.shape(2) != 1) throw std::runtime_error(pair.depth + " must have one channel");
    const xt::xtensor<float, 2> depth = xt::view(depth_image.pixels, xt::all(), xt::all(), 0);
    const auto refine = [&](const auto& guide_pixels) {
        if (how.mode == "upsample") return nonlocal::upsample_depth(depth, guide_pixels, how.factor, how.options);
        if (how.mode == "denoise") return nonlocal::denoise_depth(depth, guide_pixels, how.options);
        return nonlocal::fill_depth(depth, guide_pixels, how.options);
    };
    // A 16-bit guide as 16-bit integers, which the library brings to the 8-bit scale of --sigma-r.
    nonlocal::depth_result result = guide.bit_depth == 16
                                        ? refine(xt::xtensor<std::uint16_t, 3>(xt::cast<std::uint16_t>(guide.pixels)))
                                        : refine(guide.pixels);
    // Written under a temporary name, then renamed: an interrupted run leaves no partial output
    // that --skip-existing would take for a finished one.
    const std::string partial = pair.out + ".partial";
    try {
        if (nonlocal::tools::ends_with(pair.out, ".npy")) {
            xt::dump_npy(partial, result.depth);
        } else {
            xt::xtensor<float, 3> out = xt::empty<float>({result.depth.shape(0), result.depth.shape(1), std::size_t(1)});
            std::copy(result.depth.begin(), result.depth.end(), out.begin());
            nonlocal::tools::write_png(partial, out, 16);
        }
        std::filesystem::rename(partial, pair.out);
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove(partial, ignored);
        throw;
    }
    return result;
}

/// "solver pcg: 10 iterations, relative residual 9e-05, converged, solve 0.3 s, total 0.5 s -> OUT"
std::string describe(const nonlocal::depth_result& result, const std::string& out_path) {
    const auto& r = result.report;
    std::ostringstream s;
    s << "solver " << r.method << ": " << r.iterations << " iterations, relative residual " << r.relative_residual
      << (r.converged ? ", converged" : ", NOT converged") << ", solve " << r.seconds << " s, total "
      << result.seconds << " s -> " << out_path;
    return s.str();
}

/// Refines every pair of the list, `jobs` pairs at a time, each on its own thread (the
/// library's solves are reentrant, and each thread reuses its own work arrays). A pair that
/// fails is reported and the others go on. Exit status: 1 if a pair failed, else 2 if a solve
/// did not converge, else 0.
int refine_batch(const std::string& list_path, std::size_t jobs, bool skip_existing, const refinement& how) {
    const std::vector<nonlocal::tools::depth_pair> pairs = nonlocal::tools::read_pair_list(list_path);
    std::mutex output;
    std::atomic<std::size_t> next{0}, failed{0}, unconverged{0}, skipped{0};
    std::size_t done = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto work = [&] {
        for (std::size_t k; (k = next.fetch_add(1)) < pairs.size();) {
            const auto& pair = pairs[k];
            std::string line;
            bool ok = false, converged = false;
            try {
                if (skip_existing && std::filesystem::exists(pair.out)) {
                    line = "skipped, " + pair.out + " exists";
                    ok = converged = true;
                    ++skipped;
                } else {
                    const auto result = refine_pair(pair, how);
                    line = describe(result, pair.out);
                    ok = true, converged = result.report.converged;
                }
            } catch (const std::exception& e) {
                line = e.what();
            }
            failed += !ok, unconverged += ok && !converged;
            const std::lock_guard lock(output);
            (ok ? std::cout : std::cerr) << '[' << ++done << '/' << pairs.size() << "] " << list_path << ':'
                                         << pair.line << (ok ? ": " : ": failed: ") << line << std::endl;
        }
    };
    {
        std::vector<std::jthread> workers;
        for (std::size_t t = 1; t < std::min(jobs, pairs.size()); ++t) workers.emplace_back(work);
        work();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::size_t refined = pairs.size() - failed - skipped;
    std::cout << "refined " << refined << " of " << pairs.size() << " pairs in " << seconds << " s ("
              << (seconds > 0 ? double(refined) / seconds : 0.0) << " pairs/s, " << std::min(jobs, pairs.size())
              << " jobs); " << skipped << " skipped, " << failed << " failed, " << unconverged << " not converged"
              << std::endl;
    return failed ? 1 : unconverged ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Colour-guided depth refinement (linear AR model)"};
    std::string guide_path, depth_path, out_path, list_path, solver = "pcg", model = "normalised",
                colour = "laplacian", space = "luma-chroma", coarsening = "operator-dependent";
    std::size_t jobs = std::max(1u, std::thread::hardware_concurrency());
    refinement how;
    nonlocal::depth_options& options = how.options;
    auto* guide_option =
        app.add_option("--guide", guide_path, "colour (or grey) guide image, PNG (8 or 16 bit, its alpha ignored) or JPEG");
    auto* depth_option = app.add_option("--depth", depth_path, "depth: 8- or 16-bit PNG, or .npy of float32, float64 or integers; 0 is missing");
    auto* out_option = app.add_option("--out", out_path, "output: .png (16 bit) or .npy (float32)")
                           ->check(nonlocal::tools::path_ending_in(nonlocal::tools::depth_outputs));
    auto* batch_option = app.add_option("--batch", list_path,
                                        "a list of pairs, one \"GUIDE DEPTH OUT\" per line (paths may be quoted; # "
                                        "starts a comment), refined with the same options")
                             ->check(CLI::ExistingFile)->excludes(guide_option, depth_option, out_option);
    app.add_option("--jobs", jobs, "--batch: pairs refined at a time, one thread each")->check(CLI::PositiveNumber)
        ->needs(batch_option)->capture_default_str();
    bool skip_existing = false;
    app.add_flag("--skip-existing", skip_existing,
                 "--batch: leave pairs whose output exists (outputs are written whole, so a run resumes)")
        ->needs(batch_option);
    app.add_option("--mode", how.mode, "fill, denoise or upsample")
        ->check(CLI::IsMember({"fill", "denoise", "upsample"}))->capture_default_str();
    auto* factor_option =
        app.add_option("--factor", how.factor, "upsampling factor (mode upsample)")->check(CLI::PositiveNumber);
    app.add_option("--model", model,
                   "normalised (K(m d) / K(m)), ar (the AR model's minimiser) or separable (K(m d) / K(m) with K "
                   "approximated by line solves, as the fast global smoother does: several times faster)")
        ->check(CLI::IsMember({"normalised", "ar", "separable"}))->capture_default_str();
    app.add_option("--colour", colour, "colour weight: laplacian exp(-|dI|_1 / s) or gaussian exp(-|dI|^2 / 2 s^2)")
        ->check(CLI::IsMember({"laplacian", "gaussian"}))->capture_default_str();
    app.add_option("--colour-space", space,
                   "compare colours in luma-chroma (an RGB guide as Y, c Cb, c Cr) or in the guide's own channels")
        ->check(CLI::IsMember({"luma-chroma", "guide"}))->capture_default_str();
    app.add_option("--chroma-weight", options.chroma_weight, "luma-chroma: the weight c of chroma against luma")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    app.add_option("--sigma-r", options.sigma_r,
                   "colour bandwidth s, in the compared channels' units on the 8-bit scale (16-bit guides are brought "
                   "to it): luma; about 3 for RGB in the guide's space")
        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--radius", options.radius, "stencil radius (1: the 8 neighbours)")->check(CLI::PositiveNumber)
        ->capture_default_str();
    auto* epsilon = app.add_option("--epsilon-scale", options.epsilon_scale,
                                   "normalised model: eps = this x observed fraction (mode denoise: 0.25 unless given)")
                        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--separable-passes", options.separable_passes,
                   "model separable: passes of line solves along every stencil direction")
        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--separable-strength", options.separable_strength,
                   "model separable: the fast global smoother's lambda over eps, per pixel of the observations' spacing")
        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--median-scale", options.median_scale,
                   "edge-sharpening median of radius this x the observations' spacing (0: none)")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    app.add_option("--median-max-radius", options.median_max_radius, "largest radius of that median")
        ->capture_default_str();
    app.add_option("--median-flatness", options.median_flatness,
                   "windows spanning at most this fraction of the observed depth range keep their value (0: exact median)")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    auto* passes = app.add_option("--depth-passes", options.depth_passes,
                                  "re-solves whose weights also follow the last result's depth (adaptive weights; "
                                  "default: 1 in modes fill and denoise, 0 in mode upsample)");
    app.add_option("--sigma-d", options.sigma_d, "depth bandwidth of those weights, in depth units (0: 2 % of the range)")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    app.add_option("--threads", options.threads, "threads of each pair's solver passes")->check(CLI::PositiveNumber)
        ->capture_default_str();
    bool double_precision = false;
    app.add_flag("--double", double_precision, "solve in double precision (default: float)");
    auto* lambda = app.add_option("--lambda", options.lambda, "model ar: confidence of the observations")->check(CLI::PositiveNumber);
    app.add_option("--solver", solver, "pcg (multigrid-preconditioned), multigrid, pcg-jacobi, jacobi or sor")
        ->check(CLI::IsMember({"pcg", "multigrid", "pcg-jacobi", "jacobi", "sor"}))->capture_default_str();
    app.add_option("--coarsening", coarsening,
                   "multigrid levels: operator-dependent interpolation with Galerkin coarse systems, or 2 x 2 aggregation")
        ->check(CLI::IsMember({"operator-dependent", "aggregation"}))->capture_default_str();
    app.add_option("--tol", options.solve.tolerance, "relative residual to reach")->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_option("--max-iterations", options.solve.max_iterations, "iteration budget")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (factor_option->count() > 0 && how.mode != "upsample") {   // an upsampling meant, a fill run instead
        std::cerr << "nonlocal-refine: --factor applies to --mode upsample only, not to --mode " << how.mode << '\n';
        return 1;
    }
    if (!batch_option->count() && (!guide_option->count() || !depth_option->count() || !out_option->count())) {
        std::cerr << "nonlocal-refine: give --guide, --depth and --out, or --batch\nRun with --help for more information.\n";
        return 1;
    }

    const std::map<std::string, nonlocal::depth_solver> solvers = {
        {"pcg", nonlocal::depth_solver::pcg_multigrid}, {"multigrid", nonlocal::depth_solver::multigrid},
        {"pcg-jacobi", nonlocal::depth_solver::pcg_jacobi}, {"jacobi", nonlocal::depth_solver::jacobi},
        {"sor", nonlocal::depth_solver::sor}};
    options.solver = solvers.at(solver);
    options.single_precision = !double_precision;
    const std::map<std::string, nonlocal::depth_model> models = {{"normalised", nonlocal::depth_model::normalised},
                                                                 {"ar", nonlocal::depth_model::ar},
                                                                 {"separable", nonlocal::depth_model::separable}};
    options.model = models.at(model);
    options.colour = colour == "gaussian" ? nonlocal::colour_kernel::gaussian : nonlocal::colour_kernel::laplacian;
    options.space = space == "guide" ? nonlocal::colour_space::guide : nonlocal::colour_space::luma_chroma;
    options.multigrid.transfer =
        coarsening == "aggregation" ? nonlocal::coarsening::aggregation : nonlocal::coarsening::operator_dependent;
    if (how.mode != "upsample") {   // the task's defaults, unless given
        const nonlocal::depth_options defaults = how.mode == "denoise" ? nonlocal::denoise_options() : nonlocal::fill_options();
        if (!lambda->count()) options.lambda = defaults.lambda;
        if (!epsilon->count()) options.epsilon_scale = defaults.epsilon_scale;
        if (!passes->count()) options.depth_passes = defaults.depth_passes;
    }
    try {
        if (batch_option->count()) return refine_batch(list_path, jobs, skip_existing, how);
        const auto result = refine_pair({guide_path, depth_path, out_path, 0}, how);
        std::cout << describe(result, out_path) << '\n';
        return result.report.converged ? 0 : 2;
    } catch (const std::exception& e) {
        std::cerr << "nonlocal-refine: " << e.what() << '\n';
        return 1;
    }
}
