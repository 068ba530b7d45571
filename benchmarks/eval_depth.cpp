// The depth protocols of ../shared/data/README.md:
//   guided upsampling x2, x4, x8, x16 (`upsampling`): ground truth kept at (s r, s c) where
//     non-zero, the full-resolution left image as guide;
//   noisy upsampling (`noisy`): the same samples plus Gaussian noise of sigma 2, 4 and 8, and
//     of sigma 1 near growing to 8 far (fixed seeds), with the noise estimate_noise finds in them;
//   both on three synthetic scenes of exact depth too (`scenes`, synthetic_scenes.hpp), with
//     the peers; a table of every upsampling case closes the run, with the worst and the
//     geometric mean of nonlocal's RMSE over the best peer's per scene and over all;
//   hole filling with noise: ground truth + N(0, 2^2) (fixed seed), a random 30 %
//     of the pixels and all unknown ones dropped;
//   the real-sensor protocols (`stereo`, `tof`, sensor_protocols.hpp).
// First, where the guide's colour edges lie against the ground truth's depth steps (how
// often the largest colour difference near a step lies on it). Then per task:
// RMSE in disparity units over the pixels whose ground truth is non-zero, and the
// wall time (the best of two runs; of five for nonlocal's defaults, its separable model
// and FGS's best setting, whose ratio ends each task; nonlocal's rows once on the synthetic
// scenes), one thread: nonlocal's defaults and
// variants of them, and where the error of the defaults and of the separable model lies
// (near depth steps or not, in errors above 10 units or not, over or under). With OpenCV
// (ximgproc) in the same run: bicubic,
// joint bilateral and guided filter, each over a few parameters, the fast global
// smoother (normalised: FGS(d c) / FGS(c)) over a grid of 63 settings and a finer one
// around the best, and the fast bilateral solver over 54, each with its best reported; and, to
// show what the edge-sharpening median of nonlocal's tasks does on its own, the
// best FGS result through that median; then the defaults' RMSE over the best peer's
// and their time over FGS's.
//
//   build/release/benchmarks/eval_depth [DATA_DIR [PROTOCOL... SCENE...]]
//     PROTOCOL: upsampling noisy holes stereo tof (all when none is named);
//     SCENE: aloe scenes (Aloe alone when none is named; scenes: the three synthetic ones)
#define STB_IMAGE_IMPLEMENTATION
#include "images.hpp"
#include "sensor_protocols.hpp"
#include "synthetic_scenes.hpp"

#include <nonlocal/nonlocal.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#if NONLOCAL_HAVE_OPENCV_XIMGPROC
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/ximgproc.hpp>
#endif

namespace {

using depth_map = xt::xtensor<float, 2>;

/// The wall time of f(), the best of `runs`: the first also pays for the memory a program
/// sees for the first time (page faults), which refining a dataset pays once, and the
/// machine's load varies.
template <class F>
double seconds(F&& f, int runs = 2) {
    double best = INFINITY;
    for (int run = 0; run < runs; ++run) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

using errors = nonlocal::bench::depth_errors;
errors score(const depth_map& estimate, const depth_map& truth) { return nonlocal::bench::score(estimate.data(), truth); }
double rmse(const depth_map& estimate, const depth_map& truth) { return score(estimate, truth).rmse; }

/// The pixels within 4 of a depth step: those whose 9 x 9 window of known ground truth spans
/// more than 15 disparity units.
std::vector<bool> near_depth_steps(const depth_map& truth) {
    const std::ptrdiff_t H = std::ptrdiff_t(truth.shape(0)), W = std::ptrdiff_t(truth.shape(1));
    std::vector<bool> steps(truth.size());
    for (std::ptrdiff_t r = 0; r < H; ++r)
        for (std::ptrdiff_t c = 0; c < W; ++c) {
            float lo = INFINITY, hi = -INFINITY;
            for (std::ptrdiff_t rr = std::max<std::ptrdiff_t>(0, r - 4); rr <= std::min(H - 1, r + 4); ++rr)
                for (std::ptrdiff_t cc = std::max<std::ptrdiff_t>(0, c - 4); cc <= std::min(W - 1, c + 4); ++cc)
                    if (const float t = truth(rr, cc); t > 0) lo = std::min(lo, t), hi = std::max(hi, t);
            steps[std::size_t(r * W + c)] = hi - lo > 15;
        }
    return steps;
}

/// Where the guide's colour edges lie against the ground truth's depth steps, the bound on
/// what a colour-guided estimator can place: for every pair of horizontal or vertical
/// neighbours with known ground truth differing by more than 15, the link of the largest
/// colour difference (L1 over the channels the depth tasks compare by default) among the
/// five links from 2 before the step to 2 after it. Prints the share of steps whose
/// largest colour difference lies on the step and the mean offset towards the far side
/// (the smaller disparity).
void print_edge_registration(const depth_map& truth, const xt::xtensor<std::uint8_t, 3>& rgb) {
    const std::ptrdiff_t H = std::ptrdiff_t(truth.shape(0)), W = std::ptrdiff_t(truth.shape(1));
    const auto planes = nonlocal::detail::compared_channels(nonlocal::detail::guide_planes<double>(rgb, "eval_depth"),
                                                            nonlocal::depth_options{});
    const auto color_distance = [&](std::ptrdiff_t r0, std::ptrdiff_t c0, std::ptrdiff_t r1, std::ptrdiff_t c1) {
        const std::size_t i = std::size_t(r0 * W + c0), j = std::size_t(r1 * W + c1);
        double d = 0;
        for (std::size_t k = 0; k < planes.channels; ++k) d += std::abs(planes.channel(k)[i] - planes.channel(k)[j]);
        return d;
    };
    std::size_t steps = 0, on_step = 0;
    double offset_sum = 0;
    for (int vertical = 0; vertical < 2; ++vertical) {
        const std::ptrdiff_t dr = vertical, dc = 1 - vertical;
        for (std::ptrdiff_t r = 2 * dr; r + 3 * dr < H; ++r)
            for (std::ptrdiff_t c = 2 * dc; c + 3 * dc < W; ++c) {
                const float a = truth(r, c), b = truth(r + dr, c + dc);
                if (a <= 0 || b <= 0 || std::abs(a - b) <= 15) continue;
                int best = 0;
                double largest = -1;
                for (int o = -2; o <= 2; ++o)
                    if (const double d = color_distance(r + o * dr, c + o * dc, r + (o + 1) * dr, c + (o + 1) * dc); d > largest)
                        largest = d, best = o;
                ++steps, on_step += best == 0;
                offset_sum += a > b ? best : -best;   // positive: towards the far side (the smaller disparity)
            }
    }
    std::printf("colour edges against the %zu depth steps of the ground truth: the largest colour difference lies on "
                "the step for %.0f %% of them, %.2f pixels towards the far side on average\n",
                steps, 100.0 * double(on_step) / double(steps), offset_sum / double(steps));
}

/// Where an estimate's squared error lies: the share on the pixels near depth steps, the share
/// of errors above 10 units, and the share of those that are overestimates.
void print_error_breakdown(const char* task, const std::string& method, const depth_map& estimate,
                           const depth_map& truth, const std::vector<bool>& steps) {
    double total = 0, near_steps = 0, gross = 0, over = 0;
    std::size_t pixels = 0, stepping = 0;
    for (std::size_t i = 0; i < truth.size(); ++i) {
        if (truth.data()[i] <= 0) continue;
        const double e = double(estimate.data()[i]) - truth.data()[i], se = e * e;
        total += se, ++pixels;
        if (steps[i]) near_steps += se, ++stepping;
        if (std::abs(e) > 10) gross += se, over += e > 0 ? se : 0;
    }
    std::printf("%-10s %s: %.0f %% of the squared error on the %.1f %% of pixels near depth steps; %.0f %% from errors "
                "above 10, %.0f %% of those overestimates\n",
                task, method.c_str(), 100 * near_steps / total, 100.0 * double(stepping) / double(pixels),
                100 * gross / total, 100 * over / gross);
}

/// A method's row: its errors (for a peer, the RMSE and bad-1 of the setting of lowest RMSE
/// in its sweep, and the lowest bad-2 of any setting) and its time.
struct result {
    std::string method;
    double rmse = INFINITY, seconds = 0, bad1 = INFINITY, bad2 = INFINITY;
    /// Keeps `y`, `method` and `t` if y's RMSE is the lowest so far, and y's bad-2 if it is.
    void keep_best(const depth_map& y, const depth_map& truth, const std::string& setting, double t) {
        const errors e = score(y, truth);
        if (e.rmse < rmse) rmse = e.rmse, bad1 = e.bad1, method = setting, seconds = t;
        bad2 = std::min(bad2, e.bad2);
    }
};
void print(const char* task, const result& r) {
    std::printf("%-10s %-56s %8.3f %8.3f %6.2f %6.2f\n", task, r.method.c_str(), r.rmse, r.seconds, r.bad1, r.bad2);
}

/// One of nonlocal's rows: a label and the options.
struct variant {
    std::string label;
    nonlocal::depth_options options;
};
/// `base` changed by `change`.
template <class Change>
nonlocal::depth_options with(nonlocal::depth_options base, Change&& change) {
    change(base);
    return base;
}

/// The rows of the clean protocols, from the task's defaults `base`: the defaults first
/// (normalised model, float, colours in luma-chroma, operator-dependent multigrid), then the
/// separable model, the defaults in double, with colours compared in RGB (sigma 3), on
/// aggregation levels, with one adaptive depth pass more or less than the defaults, with the
/// flying pixels' sides when the defaults find flying pixels, and the AR model in float and
/// double.
std::vector<variant> clean_variants(const nonlocal::depth_options& base) {
    using options = nonlocal::depth_options;
    const std::size_t passes = base.depth_passes > 0 ? 0 : 1;
    std::vector<variant> v = {{"", base},
            {"", with(base, [](options& o) { o.model = nonlocal::depth_model::separable; })},
            {", double", with(base, [](options& o) { o.single_precision = false; })},
            {", RGB sigma 3", with(base, [](options& o) { o.space = nonlocal::color_space::guide, o.sigma_r = 3; })},
            {", aggregation", with(base, [](options& o) { o.multigrid.transfer = nonlocal::coarsening::aggregation; })},
            {passes > 0 ? ", 1 depth pass" : ", no depth pass", with(base, [&](options& o) { o.depth_passes = passes; })},
            {"", with(base, [](options& o) { o.model = nonlocal::depth_model::ar; })},
            {", double", with(base, [](options& o) { o.model = nonlocal::depth_model::ar, o.single_precision = false; })}};
    if (base.flying_pixels)   // what the time-of-flight option costs clean depth
        v.insert(v.end() - 2, {", flying pixels' sides", with(base, [](options& o) { o.flying_pixel_sides = true; })});
    return v;
}

/// The rows of the real-sensor protocols (stereo or time of flight): the protocol's options,
/// the separable model as it runs on them (`separable_for_sensors`; on stereo also with the
/// depth pass) and on 8 neighbours, then each of the defences off in turn (the robust data
/// term, flying pixels, the median of the observations, occlusion-aware filling, the flying
/// pixels' sides), all of them off, and the AR model.
std::vector<variant> sensor_variants(bool stereo) {
    using options = nonlocal::depth_options;
    const options base = nonlocal::bench::sensor_protocol_options(stereo);
    const options separable = nonlocal::bench::separable_for_sensors(stereo);
    std::vector<variant> v = {
        {"", base},
        {stereo ? ", connectivity 4, no depth pass" : ", connectivity 4", separable},
        {", connectivity 8", with(base, [](options& o) { o.model = nonlocal::depth_model::separable; })},
        {", no flying pixels", with(base, [](options& o) { o.flying_pixels = false; })},
        {", none of them", with(base, [](options& o) {
             o.robust_iterations = 0, o.flying_pixels = false, o.occlusions = nonlocal::occlusion_fill::blend;
             o.median_of_observations = false;
         })},
        {"", with(base, [](options& o) { o.model = nonlocal::depth_model::ar; })}};
    if (base.robust_iterations > 0) {
        v.insert(v.begin() + 3, {", no robust term", with(base, [](options& o) { o.robust_iterations = 0; })});
        v.insert(v.begin() + 4, {", 2 re-estimates", with(base, [](options& o) { o.robust_iterations = 2; })});
    } else {
        v.insert(v.begin() + 3, {", robust term, 1 re-estimate", with(base, [](options& o) { o.robust_iterations = 1; })});
    }
    if (stereo)
        v.insert(v.begin() + 2, {", connectivity 4, 1 depth pass", with(separable, [](options& o) { o.depth_passes = 1; })});
    if (base.occlusions != nonlocal::occlusion_fill::blend)
        v.insert(v.end() - 2, {", holes blended", with(base, [](options& o) { o.occlusions = nonlocal::occlusion_fill::blend; })});
    if (base.median_of_observations)
        v.insert(v.end() - 2, {", no median of observations", with(base, [](options& o) { o.median_of_observations = false; })});
    else
        v.insert(v.end() - 2, {", median of observations", with(base, [](options& o) { o.median_of_observations = true; })});
    if (base.flying_pixel_sides)
        v.insert(v.end() - 2, {", flying pixels by colour only", with(base, [](options& o) { o.flying_pixel_sides = false; })});
    return v;
}

/// nonlocal's rows of a task (`run` with options, timed as the best of `runs`, the rows after
/// the first two of at most 2), the first two (the defaults and the separable
/// model) with where their error lies (near depth steps or not, in errors above 10 units or not,
/// over or under). Returns the results of those two.
template <class Run>
std::vector<result> nonlocal_rows(const char* task, const std::string& name, const depth_map& truth,
                                  const std::vector<bool>& steps, const std::vector<variant>& variants, int runs, Run&& run) {
    std::vector<result> headline;
    for (const auto& [label, o] : variants) {
        nonlocal::depth_result out;
        const double t = seconds([&] { out = run(o); }, headline.size() < 2 ? runs : std::min(runs, 2));
        const errors e = score(out.depth, truth);
        const std::string robust = o.robust_iterations == 0 ? "" : ", " + std::to_string(out.rejected) + " rejected";
        const std::string flying = o.flying_pixels ? ", " + std::to_string(out.flying) + " flying" : "";
        const result r{"nonlocal " + name + " (" + out.report.method + ", " + std::to_string(out.report.iterations) + " it" +
                           (o.single_precision ? ", float" : "") + label + robust + flying + ")",
                       e.rmse, t, e.bad1, e.bad2};
        print(task, r);
        if (headline.size() < 2) {
            print_error_breakdown(task, headline.empty() ? "  where the defaults' error lies" : "  where the separable model's error lies",
                                  out.depth, truth, steps);
            headline.push_back(r);
        }
    }
    return headline;
}

/// The defaults and the separable model against the best peer (lowest RMSE; lowest bad-2) and
/// against FGS's time.
/// The peer of lowest RMSE (null when none).
const result* best_peer(const std::vector<result>& peers) {
    const result* best = nullptr;
    for (const auto& p : peers)
        if (!p.method.starts_with("(not a peer)") && (!best || p.rmse < best->rmse)) best = &p;
    return best;
}

void summary(const char* task, const std::vector<result>& ours, const std::vector<result>& peers) {
    const result* best = best_peer(peers);
    const result* best_bad2 = nullptr;
    const result* fgs = nullptr;
    for (const auto& p : peers) {
        if (p.method.starts_with("(not a peer)")) continue;
        if (!best_bad2 || p.bad2 < best_bad2->bad2) best_bad2 = &p;
        if (!fgs && p.method.starts_with("OpenCV FGS")) fgs = &p;
    }
    if (!best || !fgs) return;
    const char* names[] = {"nonlocal", "nonlocal separable"};
    for (std::size_t k = 0; k < ours.size(); ++k) {
        std::printf("%-10s %-56s %8.3f %8.1fx\n", task,
                    (std::string(names[k]) + " / best peer (" + best->method + "), RMSE and time / FGS's").c_str(),
                    ours[k].rmse / best->rmse, ours[k].seconds / fgs->seconds);
        std::printf("%-10s %-56s %8.3f\n", task, (std::string(names[k]) + " / best peer (" + best_bad2->method + "), bad-2").c_str(),
                    ours[k].bad2 / best_bad2->bad2);
    }
}

#if NONLOCAL_HAVE_OPENCV_XIMGPROC
cv::Mat as_mat(const depth_map& d) { return cv::Mat(int(d.shape(0)), int(d.shape(1)), CV_32F, const_cast<float*>(d.data())).clone(); }
depth_map from_mat(const cv::Mat& m) {
    depth_map d = xt::empty<float>({std::size_t(m.rows), std::size_t(m.cols)});
    for (int r = 0; r < m.rows; ++r)
        for (int c = 0; c < m.cols; ++c) d(r, c) = m.at<float>(r, c);
    return d;
}
/// The observed pixels of each row interpolated linearly along it, the ends extended from the
/// nearest observation; rows without any from the nearest row that has some (0 = missing).
/// Rows that `filled` says hold nothing copied from the nearest row that holds something.
void copy_empty_rows(depth_map& out, const std::vector<bool>& filled) {
    const std::size_t H = out.shape(0);
    for (std::size_t r = 0; r < H; ++r)
        if (!filled[r])
            for (std::size_t k = 1; k < H; ++k)
                if (const std::size_t from = r >= k && filled[r - k] ? r - k : r + k < H && filled[r + k] ? r + k : H; from < H) {
                    xt::view(out, r) = xt::view(out, from);
                    break;
                }
}

/// A copy of `sparse` whose runs of missing pixels (0 or less) along each row take
/// `fill(k, left_at, left, right_at, right)` at column k, left and right the observations at
/// the columns `left_at` and `right_at` that bound the run (0 where the row ends first), and whose rows
/// without an observation are copied from the nearest row with one.
template <class Fill>
depth_map fill_row_holes(const depth_map& sparse, Fill&& fill) {
    const std::size_t H = sparse.shape(0), W = sparse.shape(1);
    depth_map out = sparse;
    std::vector<bool> filled(H);
    for (std::size_t r = 0; r < H; ++r) {
        std::ptrdiff_t last = -1;
        for (std::size_t c = 0; c <= W; ++c) {
            if (c < W && sparse(r, c) <= 0) continue;
            const float left = last >= 0 ? sparse(r, std::size_t(last)) : 0.f, right = c < W ? sparse(r, c) : 0.f;
            for (std::size_t k = std::size_t(last + 1); k < c; ++k) out(r, k) = fill(k, last, left, std::ptrdiff_t(c), right);
            if (c < W) last = std::ptrdiff_t(c);
        }
        filled[r] = last >= 0;
    }
    copy_empty_rows(out, filled);
    return out;
}

/// Each run of missing pixels of a row interpolated linearly between the observations that
/// bound it, or the one it has at the row's ends.
depth_map row_interpolation(const depth_map& sparse) {
    return fill_row_holes(sparse, [](std::size_t k, std::ptrdiff_t left_at, float left, std::ptrdiff_t right_at, float right) {
        if (left <= 0 || right <= 0) return std::max(left, right);
        const float t = float(std::ptrdiff_t(k) - left_at) / float(right_at - left_at);
        return left + t * (right - left);
    });
}

/// The classic fill of a stereo matcher's holes: each run of missing pixels in a row takes
/// the smaller of the two disparities that bound it (the background, which an occlusion
/// uncovers), or the one it has at the row's ends.
depth_map background_row_fill(const depth_map& sparse) {
    return fill_row_holes(sparse, [](std::size_t, std::ptrdiff_t, float left, std::ptrdiff_t, float right) {
        return left > 0 && right > 0 ? std::min(left, right) : std::max(left, right);
    });
}

/// The observations through a 5 x 5 median of the observed pixels in each window, at the
/// observed pixels (missing ones stay missing).
depth_map observed_median(const depth_map& sparse) {
    const std::ptrdiff_t H = std::ptrdiff_t(sparse.shape(0)), W = std::ptrdiff_t(sparse.shape(1));
    depth_map out = xt::zeros<float>(sparse.shape());
    std::vector<float> window;
    for (std::ptrdiff_t r = 0; r < H; ++r)
        for (std::ptrdiff_t c = 0; c < W; ++c) {
            if (sparse(r, c) <= 0) continue;
            window.clear();
            for (std::ptrdiff_t rr = std::max<std::ptrdiff_t>(0, r - 2); rr <= std::min(H - 1, r + 2); ++rr)
                for (std::ptrdiff_t cc = std::max<std::ptrdiff_t>(0, c - 2); cc <= std::min(W - 1, c + 2); ++cc)
                    if (sparse(rr, cc) > 0) window.push_back(sparse(rr, cc));
            std::nth_element(window.begin(), window.begin() + std::ptrdiff_t(window.size() / 2), window.end());
            out(r, c) = window[window.size() / 2];
        }
    return out;
}

/// The fast global smoother, normalised (FGS(d m) / FGS(m), m the mask of observed pixels), on
/// `sparse` over a grid of 5.5 decades of lambda and 6 octaves of sigma, then a finer one around
/// its best: the peer's best setting is a minimum inside the sweep, not at its edge (with
/// lambda >= 10 only, as this program swept once, FGS's best at x4 and in hole filling was 5 and
/// 24 % worse than the minimum found here). Returns its row, `name` and the best setting, timed
/// over five runs (the ratios' reference), and the result of the setting of lowest RMSE.
std::pair<result, depth_map> fgs_sweep(const depth_map& sparse, const depth_map& truth, const cv::Mat& bgr, const std::string& name) {
    const cv::Mat d = as_mat(sparse);
    cv::Mat mask;
    cv::threshold(d, mask, 0, 1, cv::THRESH_BINARY);
    const auto fgs_normalized = [&](double lambda, double sc) {
        cv::Mat num, den, dm;
        cv::multiply(d, mask, dm);
        cv::ximgproc::fastGlobalSmootherFilter(bgr, dm, num, lambda, sc);
        cv::ximgproc::fastGlobalSmootherFilter(bgr, mask, den, lambda, sc);
        return cv::Mat(num / cv::max(den, 1e-6f));
    };
    result fgs;
    double best_lambda = 0, best_sc = 0;
    const auto try_setting = [&](double lambda, double sc) {
        cv::Mat y;
        const double t = seconds([&] { y = fgs_normalized(lambda, sc); }, 1);
        const double before = fgs.rmse;
        fgs.keep_best(from_mat(y), truth, name, t);
        if (fgs.rmse < before) best_lambda = lambda, best_sc = sc;
    };
    const std::vector<double> lambdas = {0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000, 3000}, sigmas = {1, 2, 4, 8, 16, 32, 64};
    for (double lambda : lambdas)
        for (double sc : sigmas) try_setting(lambda, sc);
    const bool at_edge = best_lambda == lambdas.front() || best_lambda == lambdas.back() ||
                         best_sc == sigmas.front() || best_sc == sigmas.back();
    const double coarse_lambda = best_lambda, coarse_sc = best_sc;
    for (double l : {std::pow(10.0, -0.25), 1.0, std::pow(10.0, 0.25)})
        for (double s : {std::sqrt(0.5), 1.0, std::sqrt(2.0)})
            if (l != 1.0 || s != 1.0) try_setting(coarse_lambda * l, coarse_sc * s);
    char setting[160];
    std::snprintf(setting, sizeof setting, "%s lambda %.3g sigma %.3g%s", name.c_str(), best_lambda, best_sc,
                  at_edge ? " (edge of the sweep)" : "");
    fgs.method = setting;
    depth_map best;
    fgs.seconds = seconds([&] { best = from_mat(fgs_normalized(best_lambda, best_sc)); }, 5);
    return {fgs, best};
}

/// The fast bilateral solver (Barron & Poole 2016; OpenCV contrib's) on the two targets its users
/// give it: the observations with confidence 1 where observed and 0 elsewhere, and the dense first
/// fill `dense` (bicubic when upsampling) with confidence 1 everywhere. Over sigma_spatial 4 to 16,
/// sigma_luma = sigma_chroma 4 to 16 and lambda 8 to 128, by factors of 2 and 4 (its defaults: 8,
/// 8, 8, 128; earlier sweeps found its best inside these on the upsampling protocols), the best
/// timed over three runs. OpenCV's solver prints its iterations on std::cout: silenced here.
result fbs_sweep(const depth_map& sparse, const cv::Mat& dense, const depth_map& truth, const cv::Mat& bgr) {
    const cv::Mat d = as_mat(sparse);
    cv::Mat mask, ones(d.size(), CV_32F, cv::Scalar(1));
    cv::threshold(d, mask, 0, 1, cv::THRESH_BINARY);
    const auto solve = [&](bool on_fill, double spatial, double color, double lambda) {
        std::streambuf* const out = std::cout.rdbuf(nullptr);
        cv::Mat y;
        cv::ximgproc::fastBilateralSolverFilter(bgr, on_fill ? dense : d, on_fill ? ones : mask, y, spatial, color, color, lambda);
        std::cout.rdbuf(out);
        return y;
    };
    const std::vector<double> spatials = {4, 8, 16}, colors = {4, 8, 16}, lambdas = {8, 32, 128};
    result fbs;
    bool best_on_fill = false;
    double best[3] = {0, 0, 0};
    for (bool on_fill : {false, true})
        for (double spatial : spatials)
            for (double color : colors)
                for (double lambda : lambdas) {
                    cv::Mat y;
                    const double t = seconds([&] { y = solve(on_fill, spatial, color, lambda); }, 1);
                    const double before = fbs.rmse;
                    fbs.keep_best(from_mat(y), truth, "", t);
                    if (fbs.rmse < before) best_on_fill = on_fill, best[0] = spatial, best[1] = color, best[2] = lambda;
                }
    char setting[160];
    const auto at_edge = [](double v, const std::vector<double>& grid) { return v == grid.front() || v == grid.back(); };
    std::snprintf(setting, sizeof setting, "OpenCV FBS sigma %g/%g/%g lambda %g%s%s", best[0], best[1], best[1], best[2],
                  best_on_fill ? ", on the first fill" : "",
                  at_edge(best[0], spatials) || at_edge(best[1], colors) || at_edge(best[2], lambdas) ? " (edge of the sweep)" : "");
    fbs.method = setting;
    fbs.seconds = seconds([&] { solve(best_on_fill, best[0], best[1], best[2]); }, 3);
    return fbs;
}

/// The peers on sparse observations `sparse` (0 = missing) with guide `bgr`, each over a sweep
/// of its parameters: `low` the low-resolution map when upsampling (the local filters then
/// start from bicubic), `sensor` for the real-sensor protocols (row interpolation, FGS after
/// a 5 x 5 median of the observations, the local filters start from row interpolation; else
/// from a normalised box interpolation), and `stereo` for a matcher's disparity (the
/// background-side row fill of stereo pipelines, alone and followed by a 3 x 3 or 5 x 5 median).
std::vector<result> peers(const depth_map& sparse, const depth_map& truth, const cv::Mat& bgr, const depth_map* low,
                          bool sensor = false, bool stereo = false) {
    std::vector<result> out;
    cv::Mat dense;
    if (stereo) {   // the stereo pipelines' own fill, alone and followed by a median
        depth_map rows;
        const double t = seconds([&] { rows = background_row_fill(sparse); });
        result r;
        r.keep_best(rows, truth, "background-side row fill", t);
        for (int k : {3, 5}) {
            cv::Mat smoothed;
            const double tm = seconds([&] { cv::medianBlur(as_mat(rows), smoothed, k); });
            r.keep_best(from_mat(smoothed), truth, "background-side row fill, then a " + std::to_string(k) + " x " +
                                                       std::to_string(k) + " median", t + tm);
        }
        out.push_back(r);
    }
    if (low) {
        result r{"bicubic"};
        const double t = seconds([&] { cv::resize(as_mat(*low), dense, cv::Size(bgr.cols, bgr.rows), 0, 0, cv::INTER_CUBIC); });
        r.keep_best(from_mat(dense), truth, "bicubic", t);
        out.push_back(r);
    } else if (sensor) {
        depth_map rows;
        const double t = seconds([&] { rows = row_interpolation(sparse); });
        result r;
        r.keep_best(rows, truth, "observations interpolated along rows", t);
        out.push_back(r);
        dense = as_mat(rows);
    } else {
        const cv::Mat d = as_mat(sparse);
        cv::Mat mask, num, den;
        cv::threshold(d, mask, 0, 1, cv::THRESH_BINARY);
        cv::boxFilter(d, num, -1, cv::Size(9, 9), cv::Point(-1, -1), false);
        cv::boxFilter(mask, den, -1, cv::Size(9, 9), cv::Point(-1, -1), false);
        dense = num / cv::max(den, 1e-6f);
    }
    const std::string first_fill = low ? "" : sensor ? ", on rows" : ", on a box fill";
    result jbf, gf;
    for (double sc : {5.0, 10.0, 20.0, 40.0})
        for (double ss : {3.0, 8.0}) {
            cv::Mat y, guide32;
            bgr.convertTo(guide32, CV_32F);
            const double t = seconds([&] { cv::ximgproc::jointBilateralFilter(guide32, dense, y, -1, sc, ss); });
            jbf.keep_best(from_mat(y), truth,
                          "OpenCV jointBilateralFilter sc " + std::to_string(int(sc)) + " ss " + std::to_string(int(ss)) + first_fill, t);
        }
    for (int radius : {2, 4, 8, 16, 32})
        for (double eps : {3.0, 10.0, 30.0, 100.0}) {
            cv::Mat y;
            const double t = seconds([&] { cv::ximgproc::guidedFilter(bgr, dense, y, radius, eps * eps); });
            gf.keep_best(from_mat(y), truth,
                         "OpenCV guidedFilter r " + std::to_string(radius) + " eps " + std::to_string(int(eps)) + "^2" + first_fill, t);
        }
    out.push_back(jbf), out.push_back(gf);
    const auto [fgs, fgs_best] = fgs_sweep(sparse, truth, bgr, "OpenCV FGS");
    out.push_back(fgs);
    out.push_back(fbs_sweep(sparse, dense, truth, bgr));
    if (sensor) out.push_back(fgs_sweep(observed_median(sparse), truth, bgr, "OpenCV FGS after a 5 x 5 median,").first);
    // For comparison, not a peer: the best FGS result through the median nonlocal's tasks
    // apply (the same radius for the same observations).
    std::size_t observed = 0;
    for (const float v : sparse) observed += v > 0;
    const std::size_t radius = nonlocal::depth_options{}.median_radius(double(observed) / double(sparse.size()));
    depth_map sharpened;
    const double t = seconds([&] { sharpened = nonlocal::median_filter(fgs_best, radius); });
    out.push_back({"(not a peer) OpenCV FGS + nonlocal's median, radius " + std::to_string(radius), rmse(sharpened, truth), t});
    return out;
}
#endif

/// A scene of the upsampling protocols: its guide, its ground truth (0 = unknown) and the pixels
/// near its depth steps.
struct scene {
    std::string name;
    xt::xtensor<float, 3> guide;
    depth_map truth;
    std::vector<bool> steps;
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
    cv::Mat bgr;
#endif
};
scene make_scene_of(std::string name, const xt::xtensor<std::uint8_t, 3>& rgb, depth_map truth) {
    scene s;
    s.name = std::move(name), s.guide = xt::cast<float>(rgb), s.truth = std::move(truth), s.steps = near_depth_steps(s.truth);
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
    cv::cvtColor(cv::Mat(int(rgb.shape(0)), int(rgb.shape(1)), CV_8UC3, const_cast<std::uint8_t*>(rgb.data())), s.bgr,
                 cv::COLOR_RGB2BGR);
#endif
    return s;
}

/// How a task names its samples' noise: "" when none, " s8", " s1-8" when it grows with distance.
std::string noise_name(nonlocal::bench::sample_noise noise) {
    if (noise.sigma <= 0) return "";
    char name[32];
    if (noise.grows_with_distance) std::snprintf(name, sizeof name, " s%g-%g", noise.sigma / 8, noise.sigma);
    else std::snprintf(name, sizeof name, " s%g", noise.sigma);
    return name;
}

/// One case of the protocols: nonlocal's defaults and separable model against the best peer, in
/// a group of cases (clean or noisy upsampling, holes, stereo, tof).
struct protocol_case {
    std::string scene, task, group;
    double defaults = 0, separable = 0, best = 0;
    std::string best_peer;
};

/// The table of every case, then per scene and group and per group over all scenes: the worst and
/// the geometric mean of nonlocal's RMSE over the best peer's.
void print_cases(const std::vector<protocol_case>& cases) {
    if (cases.empty()) return;
    std::printf("\nevery case, RMSE over the best peer's (its parameters swept on the ground truth):\n");
    std::printf("%-10s %-10s %9s %9s %9s %9s  %s\n", "scene", "task", "defaults", "separable", "/ best", "sep / best", "best peer");
    for (const auto& c : cases)
        std::printf("%-10s %-10s %9.3f %9.3f %9.3f %9.3f  %s %.3f\n", c.scene.c_str(), c.task.c_str(), c.defaults, c.separable,
                    c.defaults / c.best, c.separable / c.best, c.best_peer.c_str(), c.best);
    std::vector<std::string> scenes;
    for (const auto& c : cases)
        if (std::find(scenes.begin(), scenes.end(), c.scene) == scenes.end()) scenes.push_back(c.scene);
    scenes.push_back("all");
    std::vector<std::string> groups;
    for (const auto& c : cases)
        if (std::find(groups.begin(), groups.end(), c.group) == groups.end()) groups.push_back(c.group);
    std::printf("%-10s %-6s %5s %24s %24s\n", "scene", "group", "cases", "defaults: worst, geomean", "separable: worst, geomean");
    for (const auto& name : scenes)
        for (const auto& group : groups) {
            std::size_t n = 0;
            double worst[2] = {0, 0}, log_sum[2] = {0, 0};
            for (const auto& c : cases) {
                if ((name != "all" && c.scene != name) || c.group != group) continue;
                const double ratio[2] = {c.defaults / c.best, c.separable / c.best};
                for (int k = 0; k < 2; ++k) worst[k] = std::max(worst[k], ratio[k]), log_sum[k] += std::log(ratio[k]);
                ++n;
            }
            if (n == 0) continue;
            std::printf("%-10s %-6s %5zu %11.3f, %11.3f %11.3f, %11.3f\n", name.c_str(), group.c_str(), n, worst[0],
                        std::exp(log_sum[0] / double(n)), worst[1], std::exp(log_sum[1] / double(n)));
        }
}

}  // namespace

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : nonlocal::bench::data_dir();
    const auto rgb = nonlocal::bench::load_rgb(dir + "/aloeL.jpg");
    int w = 0, h = 0, c = 0;
    unsigned char* gt8 = stbi_load((dir + "/aloeGT.png").c_str(), &w, &h, &c, 1);
    if (!rgb || !gt8) {
        std::printf("skipped: %s/aloeL.jpg or aloeGT.png not found (the reference data is not present)\n", dir.c_str());
        return 0;
    }
    depth_map aloe_truth = xt::empty<float>({std::size_t(h), std::size_t(w)});
    std::copy(gt8, gt8 + std::size_t(w) * h, aloe_truth.begin());
    stbi_image_free(gt8);
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
    cv::setNumThreads(1);
#else
    std::printf("OpenCV with ximgproc not found: only nonlocal is evaluated\n");
#endif
    const scene aloe = make_scene_of("Aloe", *rgb, aloe_truth);
    // The protocols named (all when none is) on the scenes named (Aloe when none is).
    const auto named = [&](const std::string& word) {
        for (int k = 2; k < argc; ++k)
            if (argv[k] == word) return true;
        return false;
    };
    const bool any_protocol = named("upsampling") || named("noisy") || named("holes") || named("stereo") || named("tof");
    const auto wanted = [&](const char* protocol) { return !any_protocol || named(protocol); };
    const auto wanted_scene = [&](const char* name) {
        return named(name) || (std::string(name) == "aloe" && !named("aloe") && !named("scenes"));
    };
    if (wanted_scene("aloe")) print_edge_registration(aloe.truth, *rgb);
    std::printf("%-10s %-56s %8s %8s %6s %6s\n", "task", "method", "RMSE", "time s", "bad-1", "bad-2");

    // The upsampling protocols on `sc`: by `factor`, the samples with `noise` (none when its sigma
    // is 0), nonlocal's rows `variants` (their times the best of `runs`) against the peers.
    std::vector<protocol_case> cases;
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
    // The peers' rows of `task`, nonlocal's (`ours`, the defaults and the separable model)
    // against them, and the case in the closing table.
    const auto record = [&](const std::string& task, const scene& sc, std::string label, std::string group,
                            const std::vector<result>& ours, const std::vector<result>& others) {
        for (const auto& r : others) print(task.c_str(), r);
        summary(task.c_str(), ours, others);
        const result& best = *best_peer(others);
        cases.push_back({sc.name, std::move(label), std::move(group), ours[0].rmse, ours[1].rmse, best.rmse, best.method});
    };
#endif
    const auto upsampling = [&](const scene& sc, std::size_t factor, nonlocal::bench::sample_noise noise,
                                const std::vector<variant>& variants, int runs) {
        const depth_map low = nonlocal::bench::upsampling_samples(sc.truth, factor, noise);
        const std::string task = sc.name + " x" + std::to_string(factor) + noise_name(noise);
        if (noise.sigma > 0)
            std::printf("%-10s the samples' noise estimated from them: sigma %.2f (true %s)\n", task.c_str(),
                        nonlocal::estimate_noise(low).sigma, noise_name(noise).c_str() + 2);
        const auto ours = nonlocal_rows(task.c_str(), "upsample_depth", sc.truth, sc.steps, variants, runs,
                                        [&](const nonlocal::depth_options& o) { return nonlocal::upsample_depth(low, sc.guide, factor, o); });
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
        depth_map sparse = xt::zeros<float>(sc.truth.shape());
        for (std::size_t r = 0; r < low.shape(0); ++r)
            for (std::size_t cc = 0; cc < low.shape(1); ++cc) sparse(r * factor, cc * factor) = low(r, cc);
        record(task, sc, "x" + std::to_string(factor) + noise_name(noise), noise.sigma > 0 ? "noisy" : "clean", ours,
               peers(sparse, sc.truth, sc.bgr, &low));
#else
        (void)ours;
#endif
    };
    // Clean and noisy samples: noise of sigma 2, 4 and 8 (a time-of-flight camera's, on the
    // 8-bit disparity scale), and growing with distance from 1 to 8.
    const std::vector<nonlocal::bench::sample_noise> noise_levels = {{2.f}, {4.f}, {8.f}, {8.f, true}};
    const std::vector<variant> noisy_variants = {
        {"", {}}, {"", with({}, [](nonlocal::depth_options& o) { o.model = nonlocal::depth_model::separable; })},
        {"", with({}, [](nonlocal::depth_options& o) { o.model = nonlocal::depth_model::ar; })},
        {", bandwidth 1.5 and weight 1 as given", with({}, [](nonlocal::depth_options& o) { o.sigma_r = 1.5, o.data_weight = 1; })}};
    const std::vector<std::size_t> factors = {2, 4, 8, 16};
    for (std::size_t factor : factors)
        if (wanted("upsampling") && wanted_scene("aloe")) upsampling(aloe, factor, {}, clean_variants({}), 5);
    for (std::size_t factor : factors)
        for (const auto& noise : noise_levels)
            if (wanted("noisy") && wanted_scene("aloe")) upsampling(aloe, factor, noise, noisy_variants, 5);

    // The synthetic scenes (synthetic_scenes.hpp, textured with baboon.jpg and fruits.jpg) when
    // asked for, nonlocal's rows timed once each.
    std::vector<scene> synthetic;
    const auto baboon = nonlocal::bench::load_rgb(dir + "/baboon.jpg"), fruits = nonlocal::bench::load_rgb(dir + "/fruits.jpg");
    if (wanted_scene("scenes") && (!baboon || !fruits))
        std::printf("scenes: skipped, %s/baboon.jpg or fruits.jpg not found\n", dir.c_str());
    else if (wanted_scene("scenes"))
        for (unsigned seed : {0u, 1u, 2u}) {
            const auto made = nonlocal::bench::make_scene(seed, *baboon, *fruits);
            synthetic.push_back(make_scene_of("scene " + std::to_string(seed), xt::cast<std::uint8_t>(made.guide), made.truth));
        }
    for (const scene& sc : synthetic)
        for (std::size_t factor : factors) {
            if (wanted("upsampling")) upsampling(sc, factor, {}, {noisy_variants[0], noisy_variants[1], noisy_variants[2]}, 1);
            for (const auto& noise : noise_levels)
                if (wanted("noisy")) upsampling(sc, factor, noise, noisy_variants, 1);
        }

    // Hole filling with noise and the real-sensor protocols (`sensor_protocol_options`) on `sc`,
    // nonlocal's rows (their times the best of `runs`) against the peers.
    const auto holes_protocol = [&](const scene& sc, int runs) {
        std::mt19937 gen(2014);
        std::normal_distribution<float> noise(0.f, 2.f);
        std::bernoulli_distribution dropped(0.3);
        depth_map holes = sc.truth;
        for (auto& d : holes) d = (d > 0 && !dropped(gen)) ? d + noise(gen) : 0.f;
        const std::string task = sc.name + " holes";
        auto variants = clean_variants(nonlocal::fill_options());
        if (runs == 1) variants.resize(2);   // the defaults and the separable model
        const auto ours = nonlocal_rows(task.c_str(), "fill_depth", sc.truth, sc.steps, variants, runs,
                                        [&](const nonlocal::depth_options& o) { return nonlocal::fill_depth(holes, sc.guide, o); });
        nonlocal::depth_result den;
        const double td = seconds([&] { den = nonlocal::denoise_depth(holes, sc.guide); }, runs);
        const errors e = score(den.depth, sc.truth);
        print(task.c_str(), {"nonlocal denoise_depth", e.rmse, td, e.bad1, e.bad2});
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
        record(task, sc, "holes", "holes", ours, peers(holes, sc.truth, sc.bgr, nullptr));
#else
        (void)ours;
#endif
    };
    const auto sensor_protocol = [&](const scene& sc, bool stereo, int runs) {
        const std::string task = sc.name + (stereo ? " stereo" : " tof");
        const depth_map observed = stereo ? nonlocal::bench::stereo_protocol(sc.truth) : nonlocal::bench::tof_protocol(sc.truth);
        const errors input = score(observed, sc.truth);
        std::printf("%-10s %-56s %8.3f %8s %6.2f %6.2f\n", task.c_str(), "(the observations, 0 where missing)", input.rmse, "",
                    input.bad1, input.bad2);
        auto variants = sensor_variants(stereo);
        if (runs == 1) variants.resize(2);   // the protocol's options and the separable model
        const auto ours = nonlocal_rows(task.c_str(), "fill_depth", sc.truth, sc.steps, variants, runs,
                                        [&](const nonlocal::depth_options& o) { return nonlocal::fill_depth(observed, sc.guide, o); });
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
        const char* protocol = stereo ? "stereo" : "tof";
        record(task, sc, protocol, protocol, ours, peers(observed, sc.truth, sc.bgr, nullptr, true, stereo));
#else
        (void)ours;
#endif
    };
    if (wanted("holes") && wanted_scene("aloe")) holes_protocol(aloe, 5);
    for (const bool stereo : {true, false})
        if (wanted(stereo ? "stereo" : "tof") && wanted_scene("aloe")) sensor_protocol(aloe, stereo, 5);
    for (const scene& sc : synthetic) {
        if (wanted("holes")) holes_protocol(sc, 1);
        for (const bool stereo : {true, false})
            if (wanted(stereo ? "stereo" : "tof")) sensor_protocol(sc, stereo, 1);
    }
    print_cases(cases);
}
