// depth/noise.hpp: the noise of a depth map estimated from the map, on synthetic depth whose
// noise is known (three levels, with and without wrong measurements, missing pixels and depth
// steps), on noise-free maps, and by hand; and upsampling weighing noisy samples less
// (`depth_options::data_weight` chosen from held-out samples).
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <nonlocal/depth/noise.hpp>
#include <nonlocal/depth/tasks.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_depth_noise)

namespace {

/// A slanted floor, a sphere's cap in front of it and two boxes standing out by 40 and 80 units:
/// planes, curvature and depth steps, 180 x 240, depths 60 to 250.
xt::xtensor<double, 2> scene() {
    xt::xtensor<double, 2> d = xt::empty<double>({std::size_t(180), std::size_t(240)});
    for (std::size_t r = 0; r < d.shape(0); ++r)
        for (std::size_t c = 0; c < d.shape(1); ++c) {
            const double x = double(c), y = double(r);
            double depth = 200 - 0.3 * x + 0.2 * y;
            const double dx = x - 170, dy = y - 60, radius = 45;
            if (dx * dx + dy * dy < radius * radius) depth = 120 - std::sqrt(radius * radius - dx * dx - dy * dy);
            if (x >= 20 && x < 90 && y >= 100 && y < 160) depth -= 40;
            if (x >= 60 && x < 100 && y >= 20 && y < 80) depth -= 80;
            d(r, c) = depth;
        }
    return d;
}

/// `truth` plus Gaussian noise of `sigma`, a fraction `wrong` of the pixels replaced by any depth
/// in [1, 255] and a fraction `missing` set to 0.
xt::xtensor<double, 2> observed(const xt::xtensor<double, 2>& truth, double sigma, double wrong, double missing, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> noise(0, sigma);
    std::uniform_real_distribution<double> any(1, 255), u(0, 1);
    xt::xtensor<double, 2> d = truth;
    for (double& v : d) {
        v += noise(gen);
        if (u(gen) < wrong) v = any(gen);
        if (u(gen) < missing) v = 0;
    }
    return d;
}

}  // namespace

BOOST_AUTO_TEST_CASE(three_noise_levels_within_15_percent) {
    const auto truth = scene();
    for (double sigma : {0.5, 2.0, 8.0})
        for (double wrong : {0.0, 0.2}) {
            BOOST_TEST_CONTEXT("sigma " << sigma << ", wrong measurements " << wrong) {
                const noise_estimate e = estimate_noise(observed(truth, sigma, wrong, 0.0, unsigned(17 * sigma + 100 * wrong)));
                BOOST_TEST(std::abs(e.sigma / sigma - 1) <= 0.15, "estimated " << e.sigma);
                BOOST_TEST(e.samples == (180u - 2) * (240u - 2));
                if (wrong > 0) BOOST_TEST(e.left_out >= 0.15);   // the wrong measurements, at least
            }
        }
}

BOOST_AUTO_TEST_CASE(missing_pixels_leave_fewer_samples_not_another_scale) {
    // 10 % missing: a 3 x 3 window is observed with probability 0.9^9, 39 %.
    const noise_estimate e = estimate_noise(observed(scene(), 3.0, 0.0, 0.1, 5));
    BOOST_TEST(std::abs(e.sigma / 3 - 1) <= 0.15, "estimated " << e.sigma);
    BOOST_TEST(e.samples > 0.3 * 178 * 238);
    BOOST_TEST(e.samples < 0.5 * 178 * 238);
}

BOOST_AUTO_TEST_CASE(noise_free_maps_have_none) {
    // A plane: each pixel is the median of its neighbours, up to rounding.
    xt::xtensor<float, 2> plane = xt::empty<float>({std::size_t(40), std::size_t(50)});
    for (std::size_t r = 0; r < 40; ++r)
        for (std::size_t c = 0; c < 50; ++c) plane(r, c) = float(60 + 0.2 * double(c) + 0.1 * double(r));
    BOOST_TEST(estimate_noise(plane).sigma < 1e-4);
    // An 8-bit disparity map of the scene (integers): most residuals are 0, so is the noise.
    xt::xtensor<double, 2> levels = xt::round(scene());
    BOOST_TEST(estimate_noise(levels).sigma == 0.0);
}

BOOST_AUTO_TEST_CASE(by_hand) {
    // One residual, 5 - 1 = 4: whatever part of it the mixture calls noise, the noise's scale is
    // sqrt(p 4^2 / p) = 4, over the residual's scale for unit noise, 1.0809: 3.7006.
    const xt::xtensor<double, 2> d = {{1, 1, 1}, {1, 5, 1}, {1, 1, 1}};
    const noise_estimate e = estimate_noise(d);
    BOOST_TEST(e.samples == 1u);
    BOOST_TEST(std::abs(e.sigma - 3.7006) < 1e-3);
    // Missing (0, NaN) neighbours leave no sample; so do maps without an interior.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    BOOST_TEST(estimate_noise(xt::xtensor<double, 2>{{1, 1, 1}, {1, 5, nan}, {1, 1, 1}}).samples == 0u);
    BOOST_TEST(estimate_noise(xt::xtensor<double, 2>{{1, 0, 1}, {1, 5, 1}, {1, 1, 1}}).samples == 0u);
    BOOST_TEST(estimate_noise(xt::xtensor<double, 2>{{1, 2, 3, 4}}).sigma == 0.0);
    BOOST_TEST(estimate_noise(xt::xtensor<double, 2>::from_shape({0, 0})).samples == 0u);
}

BOOST_AUTO_TEST_CASE(the_two_middle_of_eight_as_a_sort_gives_them) {
    // Against std::sort on random values, on values with ties (drawn from 0..2) and by hand.
    std::mt19937 rng(8);
    std::uniform_real_distribution<double> any(-100, 100);
    std::uniform_int_distribution<int> few(0, 2);
    for (int trial = 0; trial < 20000; ++trial) {
        double v[8], sorted[8];
        for (int k = 0; k < 8; ++k) v[k] = sorted[k] = trial % 2 ? any(rng) : double(few(rng));
        std::sort(sorted, sorted + 8);
        const auto [lower, upper] = nonlocal::detail::median8_lower_and_upper(v);
        BOOST_TEST(lower == sorted[3]);
        BOOST_TEST(upper == sorted[4]);
    }
    double v[8] = {8, 1, 7, 2, 6, 3, 5, 4};
    const auto [lower, upper] = nonlocal::detail::median8_lower_and_upper(v);
    BOOST_TEST(lower == 4.0);
    BOOST_TEST(upper == 5.0);
}

BOOST_AUTO_TEST_CASE(refuses_what_is_not_a_map) {
    test::check_invalid([] { estimate_noise(xt::xtensor<double, 1>{1, 2, 3}); }, "estimate_noise", "depth must be [H, W], got [3]");
}

namespace {

/// A flat region at depth 100 (a plane facing the camera) and its smoothly shaded guide, 128 x 128.
struct plane_scene {
    xt::xtensor<float, 2> truth = xt::empty<float>({std::size_t(128), std::size_t(128)});
    xt::xtensor<float, 3> guide = xt::empty<float>({std::size_t(128), std::size_t(128), std::size_t(3)});
    plane_scene() {
        for (std::size_t r = 0; r < 128; ++r)
            for (std::size_t c = 0; c < 128; ++c) {
                truth(r, c) = 100.f;
                for (std::size_t k = 0; k < 3; ++k) guide(r, c, k) = float(90 + 10 * k + 0.3 * double(c + r));
            }
    }
    /// The samples of an upsampling by 8 with Gaussian noise of `sigma`.
    xt::xtensor<float, 2> samples(float sigma) const {
        std::mt19937 gen(8);
        std::normal_distribution<float> noise(0.f, sigma);
        xt::xtensor<float, 2> low = xt::empty<float>({std::size_t(16), std::size_t(16)});
        for (std::size_t r = 0; r < 16; ++r)
            for (std::size_t c = 0; c < 16; ++c) low(r, c) = truth(8 * r, 8 * c) + noise(gen);
        return low;
    }
};

/// The RMS of x - (left + right) / 2 four pixels away along rows and columns: 0 on a plane, large
/// where blotches of the samples' spacing (8) sit.
double roughness(const xt::xtensor<float, 2>& x) {
    double sum = 0;
    std::size_t n = 0;
    for (std::size_t r = 4; r + 4 < x.shape(0); ++r)
        for (std::size_t c = 4; c + 4 < x.shape(1); ++c) {
            const double across = x(r, c) - (x(r, c - 4) + x(r, c + 4)) / 2, down = x(r, c) - (x(r - 4, c) + x(r + 4, c)) / 2;
            sum += across * across + down * down, n += 2;
        }
    return std::sqrt(sum / double(n));
}

double rmse(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& truth) {
    return std::sqrt(double(xt::mean(xt::square(x - truth))()));
}

}  // namespace

BOOST_AUTO_TEST_CASE(noisy_samples_leave_no_blotches_on_a_plane) {
    const plane_scene s;
    const auto low = s.samples(4.f);
    for (auto model : {depth_model::normalized, depth_model::separable, depth_model::ar}) {
        BOOST_TEST_CONTEXT("model " << int(model)) {
            depth_options o{.model = model};
            const depth_result weighed = upsample_depth(low, s.guide, 8, o);
            o.data_weight = 1;
            const depth_result exact = upsample_depth(low, s.guide, 8, o);
            BOOST_TEST(std::abs(weighed.noise / 4 - 1) <= 0.15, "noise taken " << weighed.noise);
            BOOST_TEST(exact.data_weight == 1.0);
            // At the options' weight each sample's noise stays as a blotch around it; on a flat
            // region the held-out samples call for a weaker data term, and the samples are
            // averaged into a surface close to the plane.
            BOOST_TEST(weighed.data_weight < 1.0);
            BOOST_TEST(roughness(weighed.depth) < 0.1 * 4, "roughness " << roughness(weighed.depth));
            BOOST_TEST(roughness(weighed.depth) < 0.5 * roughness(exact.depth), "roughness " << roughness(exact.depth) << " at weight 1");
            BOOST_TEST(rmse(weighed.depth, s.truth) < rmse(exact.depth, s.truth));
        }
    }
}

BOOST_AUTO_TEST_CASE(exact_samples_of_a_slanted_plane) {
    // A slanted plane sampled exactly under a guide shaded along it: the noise found is 0. The
    // bandwidth and weight the held-out samples choose bring the samples back within the
    // plane's rise between two of them (1.6) and the plane to an RMSE of 0.5, its rows and
    // columns beyond the last samples included; the bandwidth and weight of the options before
    // they were chosen from the data (1.5, 1) took the guide's shading for edges: samples off by
    // 6 and an RMSE of 2.3.
    plane_scene s;
    for (std::size_t r = 0; r < 128; ++r)
        for (std::size_t c = 0; c < 128; ++c) s.truth(r, c) = float(100 + 0.2 * double(c) + 0.1 * double(r));
    const auto low = s.samples(0.f);
    const auto at_samples = [&](const depth_result& x) {
        double largest = 0;
        for (std::size_t r = 0; r < 16; ++r)
            for (std::size_t c = 0; c < 16; ++c)
                largest = std::max(largest, double(std::abs(x.depth(8 * r, 8 * c) - low(r, c))));
        return largest;
    };
    for (auto model : {depth_model::normalized, depth_model::separable, depth_model::ar}) {
        BOOST_TEST_CONTEXT("model " << int(model)) {
            const depth_result chosen = upsample_depth(low, s.guide, 8, {.model = model});
            const depth_result fixed = upsample_depth(low, s.guide, 8, {.model = model, .sigma_r = 1.5, .data_weight = 1});
            BOOST_TEST(chosen.noise < 1e-3);
            BOOST_TEST(at_samples(chosen) < 1.6);
            BOOST_TEST(rmse(chosen.depth, s.truth) < 0.5);
            BOOST_TEST(rmse(chosen.depth, s.truth) < 0.5 * rmse(fixed.depth, s.truth));
        }
    }
    // Integer depth has noise 0; filling takes the noise as a report only, at weight 1.
    const xt::xtensor<float, 2> levels = xt::round(s.truth);
    xt::xtensor<float, 2> holes = levels;
    for (std::size_t i = 0; i < holes.size(); i += 3) holes.data()[i] = 0;
    const depth_result filled = fill_depth(holes, s.guide);
    BOOST_TEST(filled.noise == 0.0);
    BOOST_TEST(filled.data_weight == 1.0);
}

BOOST_AUTO_TEST_CASE(a_given_noise_is_taken_as_it_is) {
    const plane_scene s;
    depth_options o;
    o.noise = 2.5;
    BOOST_TEST(upsample_depth(s.samples(4.f), s.guide, 8, o).noise == 2.5);
    depth_options f = fill_options();
    f.noise = 1.5;
    BOOST_TEST(denoise_depth(s.truth, s.guide, f).noise == 1.5);
}

BOOST_AUTO_TEST_CASE(a_given_weight_and_bandwidth_are_taken_as_they_are) {
    const plane_scene s;
    const depth_result r = upsample_depth(s.samples(4.f), s.guide, 8, {.sigma_r = 2.5, .data_weight = 0.25});
    BOOST_TEST(r.sigma_r == 2.5);
    BOOST_TEST(r.data_weight == 0.25);
    const depth_result f = fill_depth(s.truth, s.guide, {.sigma_r = 2.5, .data_weight = 0.5});
    BOOST_TEST(f.sigma_r == 2.5);
    BOOST_TEST(f.data_weight == 0.5);
}

BOOST_AUTO_TEST_CASE(bad_noise_options_are_named) {
    const plane_scene s;
    depth_options o;
    o.noise = std::numeric_limits<double>::quiet_NaN();
    test::check_invalid([&] { upsample_depth(s.samples(1.f), s.guide, 8, o); }, "upsample_depth", "depth_options::noise must be finite");
    o.noise = std::numeric_limits<double>::infinity();
    test::check_invalid([&] { fill_depth(s.truth, s.guide, o); }, "fill_depth", "depth_options::noise must be finite", "got inf");
    test::check_invalid([&] { upsample_depth(s.samples(1.f), s.guide, 8, {.data_weight = -1}); }, "upsample_depth",
                        "depth_options::data_weight must be finite and positive, or 0 (chosen from the data), got -1");
}

BOOST_AUTO_TEST_SUITE_END()
