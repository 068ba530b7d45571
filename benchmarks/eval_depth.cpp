// The depth protocols of ../shared/data/README.md on Aloe:
//   guided upsampling x4, x8, x16: ground truth kept at (s r, s c) where non-zero,
//     the full-resolution left image as guide;
//   hole filling with noise: ground truth + N(0, 2^2) (fixed seed), a random 30 %
//     of the pixels and all unknown ones dropped;
// First, where the guide's colour edges lie against the ground truth's depth steps (how
// often the largest colour difference near a step lies on it). Then per task:
// RMSE in disparity units over the pixels whose ground truth is non-zero, and the
// wall time (the best of two runs; of five for nonlocal's defaults, its separable model
// and FGS's best setting, whose ratio ends each task), one thread: nonlocal's defaults and
// variants of them, and where the error of the defaults and of the separable model lies
// (near depth steps or not, in errors above 10 units or not, over or under). With OpenCV
// (ximgproc) in the same run: bicubic,
// joint bilateral and guided filter, each over a few parameters, and the fast global
// smoother (normalised: FGS(d c) / FGS(c)) over a grid of 63 settings and a finer one
// around the best, each with its best reported; and, to
// show what the edge-sharpening median of nonlocal's tasks does on its own, the
// best FGS result through that median; then the defaults' RMSE over the best peer's
// and their time over FGS's.
//
//   build/release/benchmarks/eval_depth [DATA_DIR]
#define STB_IMAGE_IMPLEMENTATION
#include "images.hpp"

#include <nonlocal/nonlocal.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
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

double rmse(const depth_map& estimate, const depth_map& truth) {
    double se = 0;
    std::size_t count = 0;
    for (std::size_t i = 0; i < truth.size(); ++i)
        if (truth.data()[i] > 0) {
            const double e = double(estimate.data()[i]) - truth.data()[i];
            se += e * e, ++count;
        }
    return std::sqrt(se / double(count));
}

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
    const auto colour_distance = [&](std::ptrdiff_t r0, std::ptrdiff_t c0, std::ptrdiff_t r1, std::ptrdiff_t c1) {
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
                    if (const double d = colour_distance(r + o * dr, c + o * dc, r + (o + 1) * dr, c + (o + 1) * dc); d > largest)
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

struct result {
    std::string method;
    double rmse = INFINITY, seconds = 0;
};
void print(const char* task, const result& r) { std::printf("%-10s %-56s %8.3f %8.3f\n", task, r.method.c_str(), r.rmse, r.seconds); }

/// nonlocal's rows of a task (`run` with options), from the task's defaults `base`: the
/// defaults first (normalised model, float, colours in luma-chroma, operator-dependent
/// multigrid), then the separable model, the defaults in double, with colours compared in
/// RGB (sigma 3), on aggregation levels, with one adaptive depth pass more or less than the
/// defaults, and the AR model in float and double. Returns the results of the defaults and
/// of the separable model.
template <class Run>
std::vector<result> nonlocal_rows(const char* task, const std::string& name, const depth_map& truth,
                                  const std::vector<bool>& steps, const nonlocal::depth_options& base, Run&& run) {
    struct variant {
        std::string label;
        nonlocal::depth_options options;
    };
    const auto with = [&](auto change) {
        nonlocal::depth_options o = base;
        change(o);
        return o;
    };
    using options = nonlocal::depth_options;
    const std::size_t passes = base.depth_passes > 0 ? 0 : 1;
    const std::vector<variant> variants = {
        {"", base},
        {"", with([](options& o) { o.model = nonlocal::depth_model::separable; })},
        {", double", with([](options& o) { o.single_precision = false; })},
        {", RGB sigma 3", with([](options& o) { o.space = nonlocal::colour_space::guide, o.sigma_r = 3; })},
        {", aggregation", with([](options& o) { o.multigrid.transfer = nonlocal::coarsening::aggregation; })},
        {passes > 0 ? ", 1 depth pass" : ", no depth pass", with([&](options& o) { o.depth_passes = passes; })},
        {"", with([](options& o) { o.model = nonlocal::depth_model::ar; })},
        {", double", with([](options& o) { o.model = nonlocal::depth_model::ar, o.single_precision = false; })}};
    std::vector<result> headline;
    for (const auto& [label, o] : variants) {
        nonlocal::depth_result out;
        const double t = seconds([&] { out = run(o); }, headline.size() < 2 ? 5 : 2);
        const result r{"nonlocal " + name + " (" + out.report.method + ", " + std::to_string(out.report.iterations) + " it" +
                           (o.single_precision ? ", float" : "") + label + ")",
                       rmse(out.depth, truth), t};
        print(task, r);
        if (headline.size() < 2) {
            print_error_breakdown(task, headline.empty() ? "  where the defaults' error lies" : "  where the separable model's error lies",
                                  out.depth, truth, steps);
            headline.push_back(r);
        }
    }
    return headline;
}

/// The defaults and the separable model against the best peer (lowest RMSE) and against FGS's time.
void summary(const char* task, const std::vector<result>& ours, const std::vector<result>& peers) {
    const result* best = nullptr;
    const result* fgs = nullptr;
    for (const auto& p : peers) {
        if (p.method.starts_with("(not a peer)")) continue;
        if (!best || p.rmse < best->rmse) best = &p;
        if (p.method.starts_with("OpenCV FGS")) fgs = &p;
    }
    if (!best || !fgs) return;
    const char* names[] = {"nonlocal", "nonlocal separable"};
    for (std::size_t k = 0; k < ours.size(); ++k)
        std::printf("%-10s %-56s %8.3f %8.1fx\n", task,
                    (std::string(names[k]) + " / best peer (" + best->method + "), RMSE and time / FGS's").c_str(),
                    ours[k].rmse / best->rmse, ours[k].seconds / fgs->seconds);
}

#if NONLOCAL_HAVE_OPENCV_XIMGPROC
cv::Mat as_mat(const depth_map& d) { return cv::Mat(int(d.shape(0)), int(d.shape(1)), CV_32F, const_cast<float*>(d.data())).clone(); }
depth_map from_mat(const cv::Mat& m) {
    depth_map d = xt::empty<float>({std::size_t(m.rows), std::size_t(m.cols)});
    for (int r = 0; r < m.rows; ++r)
        for (int c = 0; c < m.cols; ++c) d(r, c) = m.at<float>(r, c);
    return d;
}
/// Best of the peers on sparse observations `sparse` (0 = missing) with guide `bgr`.
std::vector<result> peers(const depth_map& sparse, const depth_map& truth, const cv::Mat& bgr, const depth_map* low) {
    std::vector<result> out;
    const cv::Mat d = as_mat(sparse);
    cv::Mat mask;
    cv::threshold(d, mask, 0, 1, cv::THRESH_BINARY);
    // A dense starting point for the local filters: bicubic from the low-resolution map,
    // or the sparse map filled by normalised box interpolation.
    cv::Mat dense;
    if (low) {
        cv::resize(as_mat(*low), dense, cv::Size(bgr.cols, bgr.rows), 0, 0, cv::INTER_CUBIC);
        result r{"bicubic"};
        r.seconds = seconds([&] { cv::resize(as_mat(*low), dense, cv::Size(bgr.cols, bgr.rows), 0, 0, cv::INTER_CUBIC); });
        r.rmse = rmse(from_mat(dense), truth);
        out.push_back(r);
    } else {
        cv::Mat num, den;
        cv::boxFilter(d, num, -1, cv::Size(9, 9), cv::Point(-1, -1), false);
        cv::boxFilter(mask, den, -1, cv::Size(9, 9), cv::Point(-1, -1), false);
        dense = num / cv::max(den, 1e-6f);
    }
    result jbf{"OpenCV jointBilateralFilter"}, gf{"OpenCV guidedFilter"}, fgs{"OpenCV fastGlobalSmootherFilter"};
    for (double sc : {5.0, 10.0, 20.0, 40.0})
        for (double ss : {3.0, 8.0}) {
            cv::Mat y, guide32;
            bgr.convertTo(guide32, CV_32F);
            const double t = seconds([&] { cv::ximgproc::jointBilateralFilter(guide32, dense, y, -1, sc, ss); });
            const double e = rmse(from_mat(y), truth);
            if (e < jbf.rmse) jbf.rmse = e, jbf.seconds = t, jbf.method = "OpenCV jointBilateralFilter sc " + std::to_string(int(sc)) + " ss " + std::to_string(int(ss));
        }
    for (int radius : {2, 4, 8, 16, 32})
        for (double eps : {3.0, 10.0, 30.0, 100.0}) {
            cv::Mat y;
            const double t = seconds([&] { cv::ximgproc::guidedFilter(bgr, dense, y, radius, eps * eps); });
            const double e = rmse(from_mat(y), truth);
            if (e < gf.rmse) gf.rmse = e, gf.seconds = t, gf.method = "OpenCV guidedFilter r " + std::to_string(radius) + " eps " + std::to_string(int(eps)) + "^2";
        }
    // FGS normalised: FGS(d m) / FGS(m).
    const auto fgs_normalised = [&](double lambda, double sc) {
        cv::Mat num, den, dm;
        cv::multiply(d, mask, dm);
        cv::ximgproc::fastGlobalSmootherFilter(bgr, dm, num, lambda, sc);
        cv::ximgproc::fastGlobalSmootherFilter(bgr, mask, den, lambda, sc);
        return cv::Mat(num / cv::max(den, 1e-6f));
    };
    // A grid over 4 decades of lambda and 6 octaves of sigma, then a finer one around
    // its best: the peer's best setting is a minimum inside the sweep, not at its edge
    // (with lambda >= 10 only, as this program swept once, FGS's best at x4 and in hole
    // filling was 5 and 24 % worse than the minimum found here).
    double best_lambda = 0, best_sc = 0;
    const auto try_setting = [&](double lambda, double sc) {
        cv::Mat y;
        const double t = seconds([&] { y = fgs_normalised(lambda, sc); }, 1);
        const double e = rmse(from_mat(y), truth);
        if (e < fgs.rmse) fgs.rmse = e, fgs.seconds = t, best_lambda = lambda, best_sc = sc;
    };
    const std::vector<double> lambdas = {0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000}, sigmas = {1, 2, 4, 8, 16, 32, 64};
    for (double lambda : lambdas)
        for (double sc : sigmas) try_setting(lambda, sc);
    const bool at_edge = best_lambda == lambdas.front() || best_lambda == lambdas.back() ||
                         best_sc == sigmas.front() || best_sc == sigmas.back();
    const double coarse_lambda = best_lambda, coarse_sc = best_sc;
    for (double l : {std::pow(10.0, -0.25), 1.0, std::pow(10.0, 0.25)})
        for (double s : {std::sqrt(0.5), 1.0, std::sqrt(2.0)})
            if (l != 1.0 || s != 1.0) try_setting(coarse_lambda * l, coarse_sc * s);
    char setting[96];
    std::snprintf(setting, sizeof setting, "OpenCV FGS lambda %.3g sigma %.3g%s", best_lambda, best_sc,
                  at_edge ? " (edge of the sweep)" : "");
    fgs.method = setting;
    fgs.seconds = seconds([&] { fgs_normalised(best_lambda, best_sc); }, 5);   // the ratios' reference
    out.push_back(jbf), out.push_back(gf), out.push_back(fgs);
    // For comparison, not a peer: the best FGS result through the median nonlocal's tasks
    // apply (the same radius for the same observations).
    const std::size_t radius = nonlocal::depth_options{}.median_radius(cv::countNonZero(mask) / double(mask.total()));
    depth_map sharpened;
    const double t = seconds([&] { sharpened = nonlocal::median_filter(from_mat(fgs_normalised(best_lambda, best_sc)), radius); });
    out.push_back({"(not a peer) OpenCV FGS + nonlocal's median, radius " + std::to_string(radius), rmse(sharpened, truth), t});
    return out;
}
#endif

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
    depth_map truth = xt::empty<float>({std::size_t(h), std::size_t(w)});
    std::copy(gt8, gt8 + std::size_t(w) * h, truth.begin());
    stbi_image_free(gt8);
    const xt::xtensor<float, 3> guide = xt::cast<float>(*rgb);
    const std::vector<bool> steps = near_depth_steps(truth);
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
    cv::setNumThreads(1);
    cv::Mat bgr;
    cv::cvtColor(cv::Mat(h, w, CV_8UC3, const_cast<std::uint8_t*>(rgb->data())), bgr, cv::COLOR_RGB2BGR);
#else
    std::printf("OpenCV with ximgproc not found: only nonlocal is evaluated\n");
#endif
    print_edge_registration(truth, *rgb);
    std::printf("%-10s %-56s %8s %8s\n", "task", "method", "RMSE", "time s");

    for (std::size_t factor : {4, 8, 16}) {
        const std::size_t lh = (std::size_t(h) + factor - 1) / factor, lw = (std::size_t(w) + factor - 1) / factor;
        depth_map low = xt::zeros<float>({lh, lw}), sparse = xt::zeros<float>(truth.shape());
        for (std::size_t r = 0; r < lh; ++r)
            for (std::size_t cc = 0; cc < lw; ++cc) low(r, cc) = sparse(r * factor, cc * factor) = truth(r * factor, cc * factor);
        const std::string task = "x" + std::to_string(factor);
        const auto ours = nonlocal_rows(task.c_str(), "upsample_depth", truth, steps, {}, [&](const nonlocal::depth_options& o) {
            return nonlocal::upsample_depth(low, guide, factor, o);
        });
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
        const auto others = peers(sparse, truth, bgr, &low);
        for (const auto& r : others) print(task.c_str(), r);
        summary(task.c_str(), ours, others);
#else
        (void)ours;
#endif
    }

    // Hole filling with noise.
    std::mt19937 gen(2014);
    std::normal_distribution<float> noise(0.f, 2.f);
    std::bernoulli_distribution dropped(0.3);
    depth_map holes = truth;
    for (auto& d : holes) d = (d > 0 && !dropped(gen)) ? d + noise(gen) : 0.f;
    const auto ours = nonlocal_rows("holes", "fill_depth", truth, steps, nonlocal::fill_options(),
                                    [&](const nonlocal::depth_options& o) { return nonlocal::fill_depth(holes, guide, o); });
    nonlocal::depth_result den;
    const double td = seconds([&] { den = nonlocal::denoise_depth(holes, guide); });
    print("holes", {"nonlocal denoise_depth", rmse(den.depth, truth), td});
#if NONLOCAL_HAVE_OPENCV_XIMGPROC
    const auto others = peers(holes, truth, bgr, nullptr);
    for (const auto& r : others) print("holes", r);
    summary("holes", ours, others);
#else
    (void)ours;
#endif
}
