// depth/robust.hpp, depth/flying_pixels.hpp, depth/occlusion.hpp and confidence maps: the
// depth tasks on what real sensors give (wrong measurements, flying pixels, occlusion holes,
// a confidence per pixel), on synthetic scenes whose truth is known, and the parts by hand.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"
#include "support/systems.hpp"

using namespace nonlocal;

namespace {

/// A scene: an RGB guide [H, W, 3] and its true depth [H, W].
struct scene {
    xt::xtensor<float, 3> guide;
    xt::xtensor<float, 2> truth;
};

/// A slanted plane, 60 + 0.2 x + 0.1 y, under a smoothly shaded guide.
scene smooth_surface(std::size_t H, std::size_t W) {
    scene s{xt::empty<float>({H, W, std::size_t(3)}), xt::empty<float>({H, W})};
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            s.truth(r, c) = float(60 + 0.2 * double(c) + 0.1 * double(r));
            for (std::size_t k = 0; k < 3; ++k) s.guide(r, c, k) = float(100 + 2 * k + 0.5 * double(c));
        }
    return s;
}

/// A background at depth 20 left of column `step`, a foreground at 60 from it on; the guide's
/// colour edge on the depth step when `coloured`, else one grey everywhere.
scene step_scene(std::size_t H, std::size_t W, std::size_t step, bool colored) {
    scene s{xt::empty<float>({H, W, std::size_t(3)}), xt::empty<float>({H, W})};
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            const bool front = c >= step;
            s.truth(r, c) = front ? 60.f : 20.f;
            const float color[2][3] = {{40, 90, 160}, {200, 120, 60}};
            for (std::size_t k = 0; k < 3; ++k) s.guide(r, c, k) = colored ? color[front][k] : 128.f;
        }
    return s;
}

/// `depth` plus Gaussian noise of `sigma` (seeded) where it is positive.
xt::xtensor<float, 2> noisy(xt::xtensor<float, 2> depth, double sigma, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> noise(0.f, float(sigma));
    for (float& d : depth)
        if (d > 0) d += noise(gen);
    return depth;
}

double rmse(const xt::xtensor<float, 2>& a, const xt::xtensor<float, 2>& b) {
    double se = 0;
    for (std::size_t i = 0; i < a.size(); ++i) se += (double(a.data()[i]) - b.data()[i]) * (double(a.data()[i]) - b.data()[i]);
    return std::sqrt(se / double(a.size()));
}

/// `fill_options()` with the robust data term, as for sensor depth.
depth_options robust() {
    depth_options o = fill_options();
    o.robust_iterations = 2;
    return o;
}

/// `fill_options()` without flying pixels: what the tasks did before them.
depth_options trusting() {
    depth_options o = fill_options();
    o.flying_pixels = false;
    return o;
}

/// One row of observed depths.
detail::observed_depth observed_row(std::initializer_list<double> depths) {
    detail::observed_depth d(1, depths.size());
    std::size_t i = 0;
    for (const double v : depths) d.observe(i++, v);
    return d;
}

/// `truth` (a step scene's, from 20 to 60 between columns 14 and 15) with noise of sigma 0.2,
/// its columns 14 and 15 replaced by mixes t 60 + (1 - t) 20, t from 0.3 to 0.7 (seeded), as a
/// time-of-flight camera measures the two pixels of a step.
xt::xtensor<float, 2> mixed_step(const xt::xtensor<float, 2>& truth) {
    xt::xtensor<float, 2> depth = noisy(truth, 0.2, 9);
    std::mt19937 gen(10);
    std::uniform_real_distribution<float> t(0.3f, 0.7f);
    for (std::size_t r = 0; r < truth.shape(0); ++r)
        for (const std::size_t c : {14, 15}) {
            const float mix = t(gen);
            depth(r, c) = mix * 60 + (1 - mix) * 20;
        }
    return depth;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_sensor_depth)

BOOST_AUTO_TEST_CASE(tukey_weight_and_robust_scale_by_hand) {
    BOOST_TEST(detail::tukey_weight(0, 4) == 1.0);
    BOOST_TEST(detail::tukey_weight(2, 4) == 0.5625, boost::test_tools::tolerance(1e-15));   // (1 - 1/4)^2
    BOOST_TEST(detail::tukey_weight(-2, 4) == 0.5625, boost::test_tools::tolerance(1e-15));
    BOOST_TEST(detail::tukey_weight(4, 4) == 0.0);
    BOOST_TEST(detail::tukey_weight(-9, 4) == 0.0);
    // Residuals 1, -2, 3, 4 and 100 (a wrong measurement) at the observed pixels; the
    // unobserved pixel's 1000 does not count: the median of |r| is 3, the scale 1.4826 x 3.
    detail::observed_depth d(1, 6);
    const double depth[] = {11, 8, 13, 14, 110, 0};
    for (std::size_t i = 0; i < 6; ++i) d.observe(i, depth[i]);
    const std::vector<double> estimate = {10, 10, 10, 10, 10, 1000};
    BOOST_TEST(detail::robust_scale(d, estimate) == 1.4826 * 3, boost::test_tools::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(kth_smallest_matches_nth_element) {
    // Random non-negative values (spread over many exponents, all in one bucket, with ties and
    // zeros) on awkward sizes, every k of the small ones and the ends and middle of the large.
    std::mt19937 engine(23);
    std::exponential_distribution<double> spread(0.3);
    std::uniform_real_distribution<double> narrow(1.0, 1.01);
    std::uniform_int_distribution<int> small(0, 3);
    for (const std::size_t n : {1, 2, 3, 8, 17, 1000, 65537})
        for (int kind = 0; kind < 3; ++kind)
            BOOST_TEST_CONTEXT("n " << n << ", kind " << kind) {
                std::vector<double> values(n);
                for (double& v : values) v = kind == 0 ? spread(engine) : kind == 1 ? narrow(engine) : double(small(engine));
                std::vector<std::size_t> ks = {0, n / 2, n - 1};
                if (n <= 17)
                    for (std::size_t k = 0; k < n; ++k) ks.push_back(k);
                for (const std::size_t k : ks) {
                    std::vector<double> sorted = values;
                    std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(k), sorted.end());
                    BOOST_TEST(detail::kth_smallest_non_negative(values, k) == sorted[k]);
                }
            }
}

BOOST_AUTO_TEST_CASE(robust_weights_by_hand) {
    // 5 x 5 observations of 10, but 12 at (1, 1), 110 at the centre (a wrong measurement) and
    // 40 at (4, 4). The estimate: 10, but 30 at the centre (pulled by the wrong measurement)
    // and 10 at (4, 4). Residuals to it: 0, 2, 80, 30. Their median is 0, so c is half the
    // default step, 5 % of the range 100: 2.5.
    detail::observed_depth d(5, 5);
    for (std::size_t i = 0; i < 25; ++i) d.observe(i, 10);
    d.observe(6, 12), d.observe(12, 110), d.observe(24, 40);
    std::vector<double> estimate(25, 10.0);
    estimate[12] = 30;
    // The median of the 5 x 5 window at the centre is 10; at the corner (4, 4) the window is the
    // pixel alone; at (1, 1) the 3 x 3 window holds eight 10s and the 12.
    BOOST_TEST(detail::observed_median(d, 2, 2) == 10.0);
    BOOST_TEST(detail::observed_median(d, 4, 4) == 40.0);
    BOOST_TEST(detail::observed_median(d, 1, 1) == 10.0);
    const buffer<double> median = detail::observed_medians(d);
    BOOST_TEST(median[12] == 10.0);
    const buffer<double> w = detail::robust_weights(d, estimate, median, depth_options{});
    BOOST_TEST(w[0] == 1.0);
    BOOST_TEST(w[6] == detail::tukey_weight(2, 2.5), boost::test_tools::tolerance(1e-15));   // 2 off both
    BOOST_TEST(w[12] == 0.0);    // 80 off the estimate, 100 off its neighbours' median: rejected
    BOOST_TEST(w[24] == 1.0);    // 30 off the estimate, but its own median (the corner's window) agrees
    // Half a step is the least c: with a step of 200, c = 100 and the centre keeps some weight.
    const buffer<double> wide = detail::robust_weights(d, estimate, median, {.step = 200});
    BOOST_TEST(wide[12] == detail::tukey_weight(80, 100), boost::test_tools::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(medians_of_the_observations_match_a_literal_sort) {
    // Every observed pixel's median against its window's observations sorted (the upper
    // median of an even count; the window shrunk symmetrically near the edges), on sizes
    // around the vector widths, with few, many and no holes, with depths that floats hold
    // (computed in float) and that they do not (in double), and with ties.
    std::mt19937 engine(17);
    enum class depths { doubles, floats, ties };
    for (const auto& grid : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 7}, {5, 5}, {6, 13}, {9, 12}, {9, 13},
                             {9, 21}, {17, 33}, {12, 40}, {7, 37}})
        for (const double holes : {0.0, 0.3, 0.9})
            for (const depths kind : {depths::doubles, depths::floats, depths::ties}) {
                const std::size_t H = grid.first, W = grid.second;   // not bindings: a lambda captures them
                detail::observed_depth d(H, W);
                std::uniform_real_distribution<double> value(0, 50);
                std::bernoulli_distribution missing(holes);
                for (std::size_t i = 0; i < H * W; ++i) {
                    const double v = value(engine) + 1;
                    if (!missing(engine))
                        d.observe(i, kind == depths::ties ? std::floor(v / 10) + 1 : kind == depths::floats ? double(float(v)) : v);
                }
                test::for_each_arch([&](auto arch) {
                    using Arch = decltype(arch);
                    const buffer<double> median = detail::observed_medians<Arch>(d);
                    for (std::size_t r = 0; r < H; ++r)
                        for (std::size_t c = 0; c < W; ++c) {
                            const std::size_t ry = std::min({std::size_t(2), r, H - 1 - r});
                            const std::size_t rx = std::min({std::size_t(2), c, W - 1 - c});
                            std::vector<double> window;
                            for (std::size_t y = r - ry; y <= r + ry; ++y)
                                for (std::size_t x = c - rx; x <= c + rx; ++x)
                                    if (d.observed[y * W + x]) window.push_back(d.depth[y * W + x]);
                            std::sort(window.begin(), window.end());
                            const double expected = d.observed[r * W + c] ? window[window.size() / 2] : 0.0;
                            BOOST_TEST(median[r * W + c] == expected, Arch::name() << ", " << H << " x " << W << ", holes "
                                                                               << holes << ", depths " << int(kind)
                                                                               << ", pixel (" << r << ", " << c << ")");
                        }
                });
            }
}

BOOST_AUTO_TEST_CASE(flying_pixels_by_hand) {
    // One row: 20 20 20 20 [44] [36] 60 60 60 60. Pixel 4 lies between pixels 2 (20) and 6 (60),
    // 24 from 20 and 16 from 60, both above a fifth of 40, and the sides are flat: flying; so
    // is pixel 5 (between 20 at 3 and 60 at 7). With a step of 50 nothing is a step.
    detail::observed_depth d = observed_row({20, 20, 20, 20, 44, 36, 60, 60, 60, 60});
    BOOST_TEST(detail::find_flying_pixels(d, 8) == (std::vector<std::size_t>{4, 5}), boost::test_tools::per_element());
    BOOST_TEST(detail::find_flying_pixels(d, 50).empty());
    // Within a fifth of the jump of one side: a pixel of that side, not flying.
    d.observe(4, 27);
    BOOST_TEST(detail::find_flying_pixels(d, 8) == (std::vector<std::size_t>{5}), boost::test_tools::per_element());
    // A steep plane, 10 a pixel: each pixel lies halfway between those two away, but the depth
    // changes by a quarter of their difference from two to three away: a slope, not a step.
    BOOST_TEST(detail::find_flying_pixels(observed_row({0.5, 10, 20, 30, 40, 50, 60, 70, 80, 90}), 8).empty());
    // A ridge two pixels thin whose sides agree is no step: 20 20 20 50 50 20 20 20.
    BOOST_TEST(detail::find_flying_pixels(observed_row({20, 20, 20, 50, 50, 20, 20, 20}), 8).empty());
    // Removing them: unobserved after, the count down by one.
    detail::remove_flying_pixels(d, {5});
    BOOST_TEST(d.count == 9u);
    BOOST_TEST(!d.observed[5]);
    // Forgetting the 60s: the range narrows to the observations kept, 20 to 27.
    d.forget(std::vector<std::size_t>{6, 7, 8, 9});
    BOOST_TEST(d.count == 5u);
    BOOST_TEST(d.lowest == 20.0);
    BOOST_TEST(d.highest == 27.0);
    BOOST_TEST((!d.observed[8] && d.depth[8] == 0.0 && d.confidence[8] == 0.0));
}

BOOST_AUTO_TEST_CASE(flying_pixel_sides_by_hand) {
    // Rows with a step of 40 from 20 to 60 (step 8), the directions other than the row reaching
    // outside the image.
    const auto sides = [](const detail::observed_depth& d) {
        const detail::depth_lookup at(d);
        return detail::flying_pixel_sides(at, detail::find_flying_pixels(at, 8), 8);
    };
    // A band of two, 44 and 36, between the sides: pixel 4 touches the 20s (the mean of pixels
    // 3 and 2), pixel 5 the 60s (pixels 6 and 7).
    std::vector<detail::flying_side> told = sides(observed_row({20, 20, 22, 18, 44, 36, 62, 58, 60, 60}));
    BOOST_TEST_REQUIRE(told.size() == 2u);
    BOOST_TEST(told[0].pixel == 4u);
    BOOST_TEST(told[0].depth == 20.0);
    BOOST_TEST(told[1].pixel == 5u);
    BOOST_TEST(told[1].depth == 60.0);
    // Its partner measured its own side (22, not flying): pixel 4 lies between 19 and 22, which
    // agree, and takes their mean.
    told = sides(observed_row({20, 20, 20, 19, 44, 22, 60, 60, 60, 60}));
    BOOST_TEST_REQUIRE(told.size() == 1u);
    BOOST_TEST(told[0].pixel == 4u);
    BOOST_TEST(told[0].depth == 20.5);
    // A band of one between the sides (its neighbours 20 and 58 disagree): nothing tells its side.
    BOOST_TEST(sides(observed_row({20, 20, 20, 20, 44, 58, 60, 60, 60, 60})).empty());
    // Without flying pixels, nothing to tell.
    BOOST_TEST(sides(observed_row({20, 20, 20, 20, 20, 60, 60, 60, 60, 60})).empty());
}

BOOST_AUTO_TEST_CASE(flying_pixels_match_a_literal_search) {
    // Steps with mixed pixels, noise and holes on sizes around the vector widths, against the
    // rule written out pixel by pixel with explicit tests of what is observed.
    std::mt19937 engine(23);
    std::size_t found = 0;
    for (const auto& [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {4, 9}, {7, 7}, {9, 14}, {9, 15}, {13, 40}, {21, 23}})
        for (const double holes : {0.0, 0.2}) {
            detail::observed_depth d(H, W);
            std::normal_distribution<double> noise(0, 0.5);
            std::uniform_real_distribution<double> unit(0, 1);
            for (std::size_t r = 0; r < H; ++r)
                for (std::size_t c = 0; c < W; ++c) {
                    const bool far = (r + c) % 11 < 5 || c % 7 == 3;
                    const double mixed = unit(engine) < 0.2 ? 20 + 40 * unit(engine) : (far ? 60.0 : 20.0);
                    if (unit(engine) >= holes) d.observe(r * W + c, mixed + noise(engine));
                }
            std::vector<std::size_t> expected;
            const std::ptrdiff_t h = std::ptrdiff_t(H), w = std::ptrdiff_t(W);
            const auto seen = [&](std::ptrdiff_t r, std::ptrdiff_t c) {
                return r >= 0 && c >= 0 && r < h && c < w && d.observed[std::size_t(r * w + c)];
            };
            const auto at = [&](std::ptrdiff_t r, std::ptrdiff_t c) { return d.depth[std::size_t(r * w + c)]; };
            for (std::ptrdiff_t r = 0; r < h; ++r)
                for (std::ptrdiff_t c = 0; c < w; ++c) {
                    if (!seen(r, c)) continue;
                    bool flies = false;
                    for (const auto& [dy, dx] : {std::pair{0, 1}, {1, 0}, {1, 1}, {1, -1}}) {
                        if (!seen(r - 3 * dy, c - 3 * dx) || !seen(r - 2 * dy, c - 2 * dx) || !seen(r + 2 * dy, c + 2 * dx) ||
                            !seen(r + 3 * dy, c + 3 * dx))
                            continue;
                        const double a = at(r - 2 * dy, c - 2 * dx), b = at(r + 2 * dy, c + 2 * dx), v = at(r, c);
                        const double jump = std::abs(a - b);
                        flies = flies || (jump > 8 && std::abs(a - at(r - 3 * dy, c - 3 * dx)) < 0.125 * jump &&
                                          std::abs(b - at(r + 3 * dy, c + 3 * dx)) < 0.125 * jump &&
                                          v > std::min(a, b) + 0.2 * jump && v < std::max(a, b) - 0.2 * jump);
                    }
                    if (flies) expected.push_back(std::size_t(r * w + c));
                }
            found += expected.size();
            test::for_each_arch([&](auto arch) {
                using Arch = decltype(arch);
                BOOST_TEST(detail::find_flying_pixels<Arch>(d, 8) == expected, boost::test_tools::per_element());
            });
        }
    BOOST_TEST(found > 20u);   // the cases have flying pixels to find
}

BOOST_AUTO_TEST_CASE(far_side_by_hand) {
    // 5 x 5, observed: column 0 at 10 (far, the smaller disparity), column 4 at 50 (near); the
    // middle three columns missing. From (2, 2) the 8 directions meet 10 to the left, up-left
    // and down-left, 50 to the right, up-right and down-right, nothing up and down (missing to
    // the grid's edge). The far side is the second smallest, 10; its interpolation, the mean
    // of the first observations within a step (8) of it, is 10.
    detail::observed_depth d(5, 5);
    for (std::size_t r = 0; r < 5; ++r) d.observe(r * 5, 10), d.observe(r * 5 + 4, 50);
    const detail::far_side far(d, occlusion_fill::from_smaller, 8);
    BOOST_TEST(far.depth[12] == 10.0);
    BOOST_TEST(far.interpolation[12] == 10.0);
    BOOST_TEST(std::isnan(far.depth[10]));   // observed
    BOOST_TEST(far.near_side(d, 12, 14));    // 50 is more than 8 nearer than 10
    BOOST_TEST(!far.near_side(d, 12, 10));
    // Larger depths farther: the far side is 50, and 10 the near side.
    const detail::far_side larger(d, occlusion_fill::from_larger, 8);
    BOOST_TEST(larger.depth[12] == 50.0);
    BOOST_TEST(larger.near_side(d, 12, 10));
    // An observation at 12 in (2, 3), within a step of 10, joins the far side: from (2, 1) the
    // first observations are 10 left (distance 1), up-left and down-left (sqrt 2), 12 right (2).
    detail::observed_depth mixed = d;
    mixed.observe(13, 12);
    const detail::far_side with_middle(mixed, occlusion_fill::from_smaller, 8);
    const double s2 = std::sqrt(2.0);
    const double expected = (10 / 1.0 + 10 / s2 + 10 / s2 + 12 / 2.0) / (1 / 1.0 + 1 / s2 + 1 / s2 + 1 / 2.0);
    BOOST_TEST(with_middle.interpolation[11] == expected, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(far_side_matches_a_literal_walk) {
    // Random observations (two depth levels plus noise, so that holes have a near and a far
    // side) on awkward sizes and hole rates, both orders of depth: from each missing pixel a
    // literal walk along the 8 directions to the first observation, then the far side and its
    // interpolation as the file's comment defines them (the depths met rounded to floats, as
    // the sweeps read them); the holes with one listed in row order.
    std::mt19937 engine(21);
    std::uniform_real_distribution<double> unit(0, 1);
    const double sqrt2 = std::sqrt(2.0);
    for (const auto& [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 9}, {8, 1}, {5, 5}, {17, 16}, {23, 31}})
        for (const double holes : {0.2, 0.6, 0.95})
            for (const auto fill : {occlusion_fill::from_smaller, occlusion_fill::from_larger})
                BOOST_TEST_CONTEXT(H << " x " << W << ", holes " << holes << ", fill " << int(fill)) {
                    detail::observed_depth d(H, W);
                    for (std::size_t i = 0; i < H * W; ++i)
                        if (unit(engine) >= holes) d.observe(i, (unit(engine) < 0.5 ? 20 : 60) + 3 * unit(engine));
                    const double step = 8, sign = fill == occlusion_fill::from_larger ? -1 : 1;
                    const detail::far_side far(d, fill, step);
                    std::vector<std::size_t> expected_holes;
                    for (std::size_t r = 0; r < H; ++r)
                        for (std::size_t c = 0; c < W; ++c) {
                            const std::size_t i = r * W + c;
                            std::vector<std::pair<double, double>> hits;   // depth, distance
                            for (int dy = -1; dy <= 1; ++dy)
                                for (int dx = -1; dx <= 1; ++dx) {
                                    if ((dy == 0 && dx == 0) || d.observed[i]) continue;
                                    std::ptrdiff_t y = std::ptrdiff_t(r), x = std::ptrdiff_t(c), steps = 0;
                                    do y += dy, x += dx, ++steps;
                                    while (y >= 0 && x >= 0 && y < std::ptrdiff_t(H) && x < std::ptrdiff_t(W) &&
                                           !d.observed[std::size_t(y) * W + std::size_t(x)]);
                                    if (y >= 0 && x >= 0 && y < std::ptrdiff_t(H) && x < std::ptrdiff_t(W))
                                        hits.push_back({double(float(d.depth[std::size_t(y) * W + std::size_t(x)])),
                                                        double(steps) * (dy != 0 && dx != 0 ? sqrt2 : 1.0)});
                                }
                            if (hits.size() < 2) {
                                BOOST_TEST(std::isnan(far.depth[i]));
                                continue;
                            }
                            std::vector<double> farthest;
                            for (const auto& hit : hits) farthest.push_back(sign * hit.first);
                            std::sort(farthest.begin(), farthest.end());
                            double sum = 0, weights = 0;
                            for (const auto& [v, distance] : hits)
                                if (sign * v <= farthest[1] + step) sum += v / distance, weights += 1 / distance;
                            BOOST_TEST(far.depth[i] == sign * farthest[1]);
                            BOOST_TEST(far.interpolation[i] == sum / weights, boost::test_tools::tolerance(1e-12));
                            expected_holes.push_back(i);
                        }
                    BOOST_TEST(std::vector<std::size_t>(far.holes.begin(), far.holes.end()) == expected_holes,
                               boost::test_tools::per_element());
                }
}

BOOST_AUTO_TEST_CASE(cut_near_side_matches_a_literal_test_of_every_edge) {
    // On random observations, stencils of radius 1 and 2: an edge's weight becomes the cut
    // weight exactly when one end is a hole with a far side and the other an observation on
    // its near side (and the weight was larger); every other weight is left as it was.
    std::mt19937 engine(22);
    std::uniform_real_distribution<double> unit(0, 1);
    std::size_t cuts = 0;   // over all the cases (a single row or column may have no hole with a far side)
    for (const auto& [H, W] : {std::pair<std::size_t, std::size_t>{1, 7}, {6, 1}, {9, 13}, {20, 17}})
        for (const std::size_t radius : {1, 2})
            for (const double cut : {0.0, 0.25})
                BOOST_TEST_CONTEXT(H << " x " << W << ", radius " << radius << ", cut " << cut) {
                    detail::observed_depth d(H, W);
                    for (std::size_t i = 0; i < H * W; ++i)
                        if (unit(engine) >= 0.4) d.observe(i, (unit(engine) < 0.5 ? 20 : 60) + 3 * unit(engine));
                    const detail::far_side far(d, occlusion_fill::from_smaller, 8);
                    const grid_stencil stencil{H, W, 8, radius};
                    const auto offsets = stencil.forward_offsets();
                    std::vector<buffer<double>> weights;
                    for (std::size_t k = 0; k < offsets.size(); ++k) {
                        buffer<double> plane(H * W, 0.0);
                        for (std::size_t r = 0; r < H; ++r)
                            for (std::size_t c = 0; c < W; ++c) {
                                const std::ptrdiff_t y = std::ptrdiff_t(r) + offsets[k].dy, x = std::ptrdiff_t(c) + offsets[k].dx;
                                if (y >= 0 && x >= 0 && y < std::ptrdiff_t(H) && x < std::ptrdiff_t(W))
                                    plane[r * W + c] = 0.1 + unit(engine);
                            }
                        weights.push_back(std::move(plane));
                    }
                    const std::vector<buffer<double>> before = weights;
                    ar_system<double> A(H, W, offsets, std::move(weights), buffer<double>(H * W, 1.0), buffer<double>(H * W, 0.0));
                    detail::cut_near_side(A, d, far, cut);
                    const auto near = [&](std::size_t hole, std::size_t o) {
                        return !d.observed[hole] && !std::isnan(far.depth[hole]) && d.observed[o] &&
                               d.depth[o] - far.depth[hole] > 8;
                    };
                    for (std::size_t k = 0; k < offsets.size(); ++k)
                        for (std::size_t r = 0; r < H; ++r)
                            for (std::size_t c = 0; c < W; ++c) {
                                const std::ptrdiff_t y = std::ptrdiff_t(r) + offsets[k].dy, x = std::ptrdiff_t(c) + offsets[k].dx;
                                const std::size_t i = r * W + c;
                                if (y < 0 || x < 0 || y >= std::ptrdiff_t(H) || x >= std::ptrdiff_t(W)) {
                                    BOOST_TEST(A.weights()[k][i] == 0.0);
                                    continue;
                                }
                                const std::size_t j = std::size_t(y) * W + std::size_t(x);
                                const bool cut_here = near(i, j) || near(j, i);
                                cuts += cut_here;
                                BOOST_TEST(A.weights()[k][i] == (cut_here ? std::min(before[k][i], cut) : before[k][i]));
                            }
                }
    BOOST_TEST(cuts > 100u);
}

BOOST_AUTO_TEST_CASE(isolated_outliers_on_a_smooth_surface_are_removed) {
    // A fully observed slanted plane with noise 0.3 and 12 wrong measurements, 15 to 40 off,
    // some up, some down: with the robust term each ends within noise of the plane; without it
    // (and the flying pixels: the tasks before them) they are not. Without the edge-sharpening
    // median, which removes isolated pixels too, to see the robust term alone.
    const std::size_t H = 37, W = 45;
    const scene s = smooth_surface(H, W);
    xt::xtensor<float, 2> depth = noisy(s.truth, 0.3, 3);
    std::vector<std::size_t> wrong;
    for (std::size_t k = 0; k < 12; ++k) {
        const std::size_t i = (4 + 2 * k) * W + 4 + (3 * k) % (W - 8);
        depth.data()[i] += float((k % 2 ? -1 : 1) * (15 + 2.5 * double(k))), wrong.push_back(i);
    }
    for (const auto model : {depth_model::normalized, depth_model::separable, depth_model::ar}) {
        BOOST_TEST_CONTEXT("model " << int(model)) {
            depth_options o = robust(), plain = trusting();
            o.model = plain.model = model;
            o.median_scale = plain.median_scale = 0;
            const depth_result robust = fill_depth(depth, s.guide, o), trusted = fill_depth(depth, s.guide, plain);
            BOOST_TEST(robust.rejected == wrong.size());
            BOOST_TEST(robust.robust_iterations >= 1u);
            double worst_robust = 0, worst_trusted = 0;
            for (const std::size_t i : wrong) {
                worst_robust = std::max(worst_robust, std::abs(double(robust.depth.data()[i]) - s.truth.data()[i]));
                worst_trusted = std::max(worst_trusted, std::abs(double(trusted.depth.data()[i]) - s.truth.data()[i]));
            }
            BOOST_TEST(worst_robust < 1.0);
            BOOST_TEST(worst_trusted > 3.0);
        }
    }
}

BOOST_AUTO_TEST_CASE(clusters_of_wrong_measurements_are_removed) {
    // Squares of 2 x 2 and 3 x 3 wrong measurements, 25 above the plane: wider than the
    // edge-sharpening median (radius 1 here) can remove, and supported by each other in the
    // first estimate; the re-estimates reject them all.
    const std::size_t H = 40, W = 40;
    const scene s = smooth_surface(H, W);
    xt::xtensor<float, 2> depth = noisy(s.truth, 0.3, 4);
    std::vector<std::size_t> wrong;
    for (const auto [r0, c0, size] : {std::array<std::size_t, 3>{8, 8, 2}, {25, 20, 3}})
        for (std::size_t r = r0; r < r0 + size; ++r)
            for (std::size_t c = c0; c < c0 + size; ++c) depth(r, c) += 25, wrong.push_back(r * W + c);
    const depth_result out = fill_depth(depth, s.guide, robust());
    for (const std::size_t i : wrong) BOOST_TEST(std::abs(double(out.depth.data()[i]) - s.truth.data()[i]) < 1.0);
    const depth_result trusted = fill_depth(depth, s.guide, trusting());
    BOOST_TEST(std::abs(double(trusted.depth(26, 21)) - s.truth(26, 21)) > 3.0);
}

BOOST_AUTO_TEST_CASE(robust_term_converges_and_reports_its_rounds) {
    // With room for 30 rounds the re-estimates stop by themselves once no weight changes by
    // more than robust_tolerance; the rounds are reported and lie within the limit.
    const std::size_t H = 30, W = 33;
    const scene s = smooth_surface(H, W);
    xt::xtensor<float, 2> depth = noisy(s.truth, 0.5, 5);
    for (std::size_t i = 17; i < depth.size(); i += 97) depth.data()[i] += 30;
    depth_options o = robust();
    o.robust_iterations = 30;
    const depth_result out = fill_depth(depth, s.guide, o);
    BOOST_TEST(out.robust_iterations >= 1u);
    BOOST_TEST(out.robust_iterations < 30u);
    // No robust term: no rounds, nothing rejected.
    const depth_result none = fill_depth(depth, s.guide, trusting());
    BOOST_TEST(none.robust_iterations == 0u);
    BOOST_TEST(none.rejected == 0u);
}

BOOST_AUTO_TEST_CASE(robust_term_never_worsens_noise_free_fully_observed_depth) {
    // Exact depth everywhere: on a plane and on a step along a colour edge the robust term leaves
    // the result no farther from the truth. On a scene of four surfaces whose colour edges are the
    // depth's (two slanted, a stripe two pixels wide, a step) it costs at most 1 %: where the
    // estimate is off the stripe, the stripe is thinner than half the median's window and both
    // residuals are large, so some of its correct observations are rejected (the known limit
    // that keeps the robust term off by default).
    const std::size_t H = 23, W = 29;
    std::vector<scene> scenes = {smooth_surface(H, W), step_scene(H, W, 13, true)};
    scene pieces{xt::empty<float>({H, W, std::size_t(3)}), xt::empty<float>({H, W})};
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            const std::size_t part = c == 9 || c == 10 ? 2 : r < 11 ? 0 : c < 17 ? 1 : 3;
            const float depths[] = {float(40 + 0.5 * double(c)), float(70 - 0.3 * double(r)), 90.f, 25.f};
            const float colors[4][3] = {{200, 40, 40}, {40, 200, 40}, {40, 40, 200}, {200, 200, 40}};
            for (std::size_t k = 0; k < 3; ++k) pieces.guide(r, c, k) = colors[part][k];
            pieces.truth(r, c) = depths[part];
        }
    scenes.push_back(pieces);
    for (std::size_t k = 0; k < scenes.size(); ++k) {
        BOOST_TEST_CONTEXT("scene " << k) {
            const scene& s = scenes[k];
            const double with = rmse(fill_depth(s.truth, s.guide, robust()).depth, s.truth);
            const double without = rmse(fill_depth(s.truth, s.guide).depth, s.truth);
            BOOST_TEST(with <= (k < 2 ? without + 1e-6 : 1.01 * without));
        }
    }
}

BOOST_AUTO_TEST_CASE(confidence_zero_is_missing) {
    const std::size_t H = 17, W = 21;
    const auto guide = test::random_tensor<float, 3>({H, W, 3}, 11, 0, 255);
    const auto depth = test::random_tensor<float, 2>({H, W}, 12, 20, 80);
    xt::xtensor<float, 2> confidence = xt::ones<float>({H, W}), holes = depth;
    for (std::size_t i = 0; i < depth.size(); i += 4) confidence.data()[i] = 0, holes.data()[i] = 0;
    for (const auto model : {depth_model::normalized, depth_model::separable, depth_model::ar}) {
        depth_options o = fill_options();
        o.model = model;
        BOOST_TEST(fill_depth(depth, confidence, guide, o).depth == fill_depth(holes, guide, o).depth);
        BOOST_TEST(denoise_depth(depth, confidence, guide).depth == denoise_depth(holes, guide).depth);
    }
    // Upsampling: the confidence of each low-resolution pixel.
    const xt::xtensor<float, 2> low = xt::view(depth, xt::range(0, 9), xt::range(0, 11));
    xt::xtensor<float, 2> low_confidence = xt::ones<float>({9, 11}), low_holes = low;
    low_confidence(3, 4) = 0, low_holes(3, 4) = 0;
    BOOST_TEST(upsample_depth(low, low_confidence, guide, 2).depth == upsample_depth(low_holes, guide, 2).depth);
}

BOOST_AUTO_TEST_CASE(confidence_scales_the_data_term) {
    // The normalised model is K(c m d) / K(c m): against two dense solves with the confidences
    // folded into the right-hand sides (the model alone: no median, robust term or passes).
    const std::size_t H = 9, W = 10;
    const auto guide = test::random_tensor<double, 3>({H, W, 3}, 21, 0, 3);
    const auto depth = test::random_tensor<double, 2>({H, W}, 22, 50, 90);
    xt::xtensor<double, 2> confidence = test::random_tensor<double, 2>({H, W}, 23, 0, 1);
    for (std::size_t i = 0; i < confidence.size(); i += 3) confidence.data()[i] = 0;
    depth_options o{.space = color_space::guide, .sigma_r = 3, .median_scale = 0};
    o.solve = {1e-12, 1000};
    const depth_result out = fill_depth(depth, confidence, guide, o);
    BOOST_TEST(out.report.converged);
    const double fraction = double(xt::sum(xt::cast<double>(confidence > 0))()) / double(H * W), eps = 0.5 * fraction;
    const xt::xtensor<double, 2> all_eps = xt::zeros<double>({H, W}) + eps, cd = confidence * depth;
    const auto system = [&](const xt::xtensor<double, 2>& values) {
        return ar_system(guide, grid_stencil{H, W, 8}, laplacian_distance(o.sigma_r), values, all_eps, 1e-3);
    };
    const auto kd = test::dense_solve(system(cd)), km = test::dense_solve(system(confidence));
    const double delta = 1e-3 * xt::mean(confidence)();   // of the fallback, scaled with the confidences
    const auto x0 = detail::normalized_interpolation(H, W, confidence.data(), cd.data());
    for (std::size_t i = 0; i < H * W; ++i)
        BOOST_TEST(std::abs(out.depth.data()[i] - (kd[i] + delta * x0[i]) / (km[i] + delta)) < 1e-3);
    // Only the confidences' ratios matter to the normalised model; in the AR model they
    // multiply lambda: confidence 0.25 everywhere is lambda 0.25.
    const xt::xtensor<double, 2> ones = xt::ones<double>({H, W}), quarter = 0.25 * ones;
    BOOST_TEST(xt::allclose(fill_depth(depth, 0.3 * confidence, guide, o).depth, out.depth, 1e-5, 1e-3));
    depth_options ar = o;
    ar.model = depth_model::ar;
    depth_options weaker = ar;
    weaker.lambda = 0.25;
    BOOST_TEST(xt::allclose(fill_depth(depth, quarter, guide, ar).depth, fill_depth(depth, guide, weaker).depth, 1e-5, 1e-3));
}

BOOST_AUTO_TEST_CASE(occlusion_holes_are_filled_from_the_far_side) {
    // Background (20) left of column 22, foreground (60) from it on; columns 12 to 21 missing
    // beside the step, as the part of the background a stereo pair's second camera cannot
    // see. One grey guide: the colours cannot say which side the hole belongs to. Filled from
    // the far side (the smaller disparities), the hole is background; from the larger
    // values, foreground; blended, the foreground reaches into it.
    const std::size_t H = 24, W = 40;
    const scene s = step_scene(H, W, 22, false);
    xt::xtensor<float, 2> depth = s.truth;
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 12; c < 22; ++c) depth(r, c) = 0;
    for (const auto model : {depth_model::normalized, depth_model::separable, depth_model::ar}) {
        BOOST_TEST_CONTEXT("model " << int(model)) {
            depth_options o = fill_options();
            o.model = model, o.occlusions = occlusion_fill::from_smaller;
            const depth_result far = fill_depth(depth, s.guide, o);
            o.occlusions = occlusion_fill::from_larger;
            const depth_result near = fill_depth(depth, s.guide, o);
            o.occlusions = occlusion_fill::blend;
            const depth_result blended = fill_depth(depth, s.guide, o);
            for (std::size_t r = 0; r < H; ++r)
                for (std::size_t c = 12; c < 22; ++c) {
                    BOOST_TEST(std::abs(far.depth(r, c) - 20.f) < 0.5f);
                    BOOST_TEST(std::abs(near.depth(r, c) - 60.f) < 0.5f);
                }
            BOOST_TEST(xt::amax(xt::abs(xt::view(blended.depth, xt::all(), xt::range(12, 22)) - 20.f))() > 5.f);
        }
    }
}

BOOST_AUTO_TEST_CASE(flying_pixels_move_to_the_side_of_their_color) {
    // A step from 20 to 60 between columns 14 and 15 on a colour edge; the two pixels of every
    // row on either side hold mixes t 60 + (1 - t) 20 with t from 0.3 to 0.7, as a
    // time-of-flight camera measures them. With the defaults each ends on its side of the
    // colour edge, within noise; without the flying pixels, mixes stay.
    const std::size_t H = 20, W = 30;
    const scene s = step_scene(H, W, 15, true);
    const xt::xtensor<float, 2> depth = mixed_step(s.truth);
    const depth_result out = fill_depth(depth, s.guide);
    BOOST_TEST(out.flying >= 2 * H);
    for (std::size_t r = 0; r < H; ++r) {
        BOOST_TEST(std::abs(out.depth(r, 14) - 20.f) < 1.f);
        BOOST_TEST(std::abs(out.depth(r, 15) - 60.f) < 1.f);
    }
    const depth_result trusted = fill_depth(depth, s.guide, trusting());
    double worst = 0;
    for (std::size_t r = 0; r < H; ++r)
        worst = std::max({worst, std::abs(double(trusted.depth(r, 14)) - 20), std::abs(double(trusted.depth(r, 15)) - 60)});
    BOOST_TEST(worst > 3.0);
}

BOOST_AUTO_TEST_CASE(flying_pixel_sides_hold_a_band_off_the_color_edge) {
    // The step from 20 to 60 lies between columns 14 and 15, the colour edge a pixel to its
    // left, between 13 and 14, as real scenes often have it; columns 14 and 15 hold mixes
    // t 60 + (1 - t) 20, t from 0.3 to 0.7. With `flying_pixel_sides` each ends on its side
    // within noise; by colour alone column 14 takes the foreground's colour and depth.
    const std::size_t H = 20, W = 30;
    scene s = step_scene(H, W, 15, true);
    const scene shifted = step_scene(H, W, 14, true);
    s.guide = shifted.guide;
    const xt::xtensor<float, 2> depth = mixed_step(s.truth);
    depth_options o = fill_options();
    o.flying_pixel_sides = true;
    const depth_result sided = fill_depth(depth, s.guide, o);
    BOOST_TEST(sided.flying >= 2 * H);
    for (std::size_t r = 0; r < H; ++r) {
        BOOST_TEST(std::abs(sided.depth(r, 14) - 20.f) < 1.f);
        BOOST_TEST(std::abs(sided.depth(r, 15) - 60.f) < 1.f);
    }
    const depth_result colored = fill_depth(depth, s.guide);
    double worst = 0;
    for (std::size_t r = 0; r < H; ++r) worst = std::max(worst, std::abs(double(colored.depth(r, 14)) - 20));
    BOOST_TEST(worst > 10.0);
    // Without `flying_pixels` nothing is found, and the sides change nothing.
    o.flying_pixels = false;
    depth_options neither = o;
    neither.flying_pixel_sides = false;
    BOOST_TEST(fill_depth(depth, s.guide, o).depth == fill_depth(depth, s.guide, neither).depth);
}

BOOST_AUTO_TEST_CASE(median_of_observations_replaces_each_by_its_windows_median) {
    // Random observations with holes: the task with the median of the observations equals the
    // task on the observations replaced by hand by the median of the observed ones in each
    // 5 x 5 window (narrowed symmetrically at the edges; the upper median of an even count).
    const std::size_t H = 13, W = 16;
    const auto guide = test::random_tensor<float, 3>({H, W, 3}, 31, 0, 255);
    xt::xtensor<float, 2> depth = test::random_tensor<float, 2>({H, W}, 32, 20, 80);
    for (std::size_t i = 0; i < depth.size(); i += 5) depth.data()[i] = 0;
    xt::xtensor<float, 2> by_hand = depth;
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            if (depth(r, c) == 0) continue;
            const std::size_t ry = std::min({std::size_t(2), r, H - 1 - r}), rx = std::min({std::size_t(2), c, W - 1 - c});
            std::vector<float> window;
            for (std::size_t y = r - ry; y <= r + ry; ++y)
                for (std::size_t x = c - rx; x <= c + rx; ++x)
                    if (depth(y, x) != 0) window.push_back(depth(y, x));
            std::sort(window.begin(), window.end());
            by_hand(r, c) = window[window.size() / 2];
        }
    depth_options plain = fill_options();
    plain.flying_pixels = false;
    depth_options median = plain;
    median.median_of_observations = true;
    BOOST_TEST(fill_depth(depth, guide, median).depth == fill_depth(by_hand, guide, plain).depth);
}

BOOST_AUTO_TEST_CASE(bad_confidence_maps_are_refused) {
    const xt::xtensor<float, 3> guide = xt::ones<float>({4, 5, 3});
    const xt::xtensor<float, 2> depth = xt::ones<float>({4, 5});
    const xt::xtensor<float, 2> wrong_size = xt::ones<float>({4, 6});
    test::check_invalid([&] { fill_depth(depth, wrong_size, guide); }, "fill_depth", "confidence [4, 6] and depth [4, 5]");
    test::check_invalid([&] { denoise_depth(depth, wrong_size, guide); }, "denoise_depth", "confidence [4, 6]");
    xt::xtensor<float, 2> bad = xt::ones<float>({4, 5});
    bad(2, 3) = -0.5f;
    test::check_invalid([&] { fill_depth(depth, bad, guide); }, "fill_depth", "confidence at pixel (2, 3) is -0.5",
                        "finite and at least 0");
    bad(2, 3) = std::nanf("");
    test::check_invalid([&] { fill_depth(depth, bad, guide); }, "fill_depth", "confidence at pixel (2, 3) is nan");
    bad(2, 3) = std::numeric_limits<float>::infinity();
    test::check_invalid([&] { fill_depth(depth, bad, guide); }, "fill_depth", "confidence at pixel (2, 3) is inf");
    const xt::xtensor<float, 2> low = xt::ones<float>({2, 3}), low_bad = xt::ones<float>({3, 3});
    test::check_invalid([&] { upsample_depth(low, low_bad, guide, 2); }, "upsample_depth", "confidence [3, 3] and depth [2, 3]");
    // Confidence 0 everywhere: nothing observed.
    const xt::xtensor<float, 2> zero = xt::zeros<float>({4, 5});
    test::check_invalid([&] { fill_depth(depth, zero, guide); }, "fill_depth", "nothing is observed");
    // The new options' ranges.
    test::check_invalid([&] { fill_depth(depth, guide, {.step = -1}); }, "fill_depth", "depth_options::step must be", "got -1");
    test::check_invalid([&] { fill_depth(depth, guide, {.robust_threshold = 0}); }, "fill_depth", "depth_options::robust_threshold must be", "got 0");
    test::check_invalid([&] { fill_depth(depth, guide, {.robust_tolerance = std::nan("")}); }, "fill_depth",
                        "depth_options::robust_tolerance must be", "got nan");
}

BOOST_AUTO_TEST_CASE(sensor_presets_set_what_their_docs_say) {
    const depth_options fill = fill_options();
    const depth_options clean = sensor_options(depth_sensor::clean), stereo = sensor_options(depth_sensor::stereo),
                        light = sensor_options(depth_sensor::structured_light),
                        tof = sensor_options(depth_sensor::time_of_flight);
    const auto same_as_fill = [&](const depth_options& o) {
        return o.model == fill.model && o.depth_passes == fill.depth_passes && o.flying_pixels == fill.flying_pixels &&
               o.connectivity == fill.connectivity && o.noise == fill.noise;
    };
    BOOST_TEST(same_as_fill(clean));
    BOOST_TEST(clean.robust_iterations == 0u);
    BOOST_TEST((clean.occlusions == occlusion_fill::blend));
    BOOST_TEST(!clean.median_of_observations);
    BOOST_TEST(same_as_fill(stereo));
    BOOST_TEST(stereo.robust_iterations == 1u);
    BOOST_TEST((stereo.occlusions == occlusion_fill::from_smaller));
    BOOST_TEST(!stereo.median_of_observations);
    BOOST_TEST(same_as_fill(light));
    BOOST_TEST(light.robust_iterations == 1u);
    BOOST_TEST((light.occlusions == occlusion_fill::from_larger));
    BOOST_TEST(same_as_fill(tof));
    BOOST_TEST(tof.robust_iterations == 0u);
    BOOST_TEST((tof.occlusions == occlusion_fill::blend));
    BOOST_TEST(tof.median_of_observations);
    BOOST_TEST(tof.flying_pixel_sides);
    BOOST_TEST(!stereo.flying_pixel_sides);
}

BOOST_AUTO_TEST_SUITE_END()
