// depth/hold_out.hpp: the guide's contrast and the held-out observations by hand, the search of
// least held-out error on errors whose minimum is known, and upsampling choosing its colour
// bandwidth from the data: the same result for a guide on another scale, and on a textured
// guide a bandwidth above its texture and the error of an untextured one.
#include <cmath>
#include <cstddef>
#include <random>

#include <nonlocal/depth/hold_out.hpp>
#include <nonlocal/depth/tasks.hpp>

#include "support/support.hpp"

using namespace nonlocal;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(test_hold_out)

BOOST_AUTO_TEST_CASE(guide_contrast_by_hand) {
    // Every other row: row 0's differences to the right 2 and 4, downwards 4, 0 and 0; their
    // median is 2, a quarter of it the start of the bandwidth's search.
    const xt::xtensor<double, 2> one = {{0, 2, 6}, {4, 2, 6}};
    const auto planes = detail::guide_planes<double>(one, "test");
    BOOST_TEST(detail::guide_contrast(planes) == 2.0);
    BOOST_TEST(detail::color_bandwidth_start(planes) == 0.5);
    // Channels add up (L1): the same differences in two channels, one of them doubled.
    xt::xtensor<double, 3> two = xt::empty<double>({std::size_t(2), std::size_t(3), std::size_t(2)});
    xt::view(two, xt::all(), xt::all(), 0) = one;
    xt::view(two, xt::all(), xt::all(), 1) = 2.0 * one;
    BOOST_TEST(detail::guide_contrast(detail::guide_planes<double>(two, "test")) == 6.0);
    // A flat guide has no contrast; the search then starts from 1. So does a single pixel.
    const xt::xtensor<double, 2> flat = xt::ones<double>({4, 5});
    BOOST_TEST(detail::guide_contrast(detail::guide_planes<double>(flat, "test")) == 0.0);
    BOOST_TEST(detail::color_bandwidth_start(detail::guide_planes<double>(flat, "test")) == 1.0);
    BOOST_TEST(detail::guide_contrast(detail::guide_planes<double>(xt::xtensor<double, 2>{{3}}, "test")) == 0.0);
}

BOOST_AUTO_TEST_CASE(held_out_observations_by_hand) {
    // Odd rows and odd columns held out, missing observations neither held nor kept.
    xt::xtensor<double, 2> values = xt::ones<double>({4, 4});
    values(3, 3) = 0;
    const detail::held_out_observations small(values);
    BOOST_TEST(small.held.size() == 3u);   // (1, 1), (1, 3), (3, 1)
    BOOST_TEST(!small.usable);             // fewer than 16
    BOOST_TEST(small.kept(1, 1) == 0.0);
    BOOST_TEST(small.kept(1, 2) == 1.0);
    BOOST_TEST(small.kept(3, 3) == 0.0);
    const detail::held_out_observations enough(xt::xtensor<double, 2>(xt::ones<double>({10, 10})));
    BOOST_TEST(enough.held.size() == 25u);
    BOOST_TEST(enough.usable);
    // Nothing kept when every observation lies on odd rows and columns.
    xt::xtensor<double, 2> only_odd = xt::zeros<double>({12, 12});
    for (std::size_t r = 1; r < 12; r += 2)
        for (std::size_t c = 1; c < 12; c += 2) only_odd(r, c) = 1;
    BOOST_TEST(!detail::held_out_observations(only_odd).usable);
}

namespace {

/// The search over values v against a prediction whose held-out error is n (log2 v - log2 best)^2.
double search(double best, double start, double lowest, double highest, std::size_t* calls = nullptr,
              std::size_t size = 10) {
    const xt::xtensor<double, 2> values = xt::ones<double>({size, size});
    return detail::choose_by_hold_out(detail::held_out_observations(values), start, lowest, highest,
                                      [&](const xt::xtensor<double, 2>& kept, double v) {
        if (calls) ++*calls;
        xt::xtensor<double, 2> x = kept;
        x += 1 + std::log2(v / best);   // at the held-out observations: 1 + the error
        return x;
    }, [&](std::size_t r, std::size_t c) { return r * size + c; });
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_search_finds_the_least_held_out_error_within_a_factor_of_sqrt_2) {
    BOOST_TEST(search(4, 1, 1.0 / 32, 8) == 4.0);                            // 1, 2, 4, 8: 4; 5.66 and 2.83 no better
    BOOST_TEST(search(3, 1, 1.0 / 32, 8) == 2 * std::sqrt(2.0), tt::tolerance(1e-12));   // 4, then 2.83
    BOOST_TEST(search(0.1, 1, 1.0 / 32, 8) == 0.125 / std::sqrt(2.0), tt::tolerance(1e-12));   // halved, then 0.088
    BOOST_TEST(search(1, 1, 1.0 / 32, 8) == 1.0);
    // Bounds hold: the best beyond them gives the bound.
    BOOST_TEST(search(100, 1, 1.0 / 32, 8) == 8.0);
    BOOST_TEST(search(1e-4, 1, 1.0 / 32, 8) == 1.0 / 32);
    // Too few observations to hold out: the start, with no prediction made.
    std::size_t calls = 0;
    BOOST_TEST(search(4, 1.5, 1.0 / 32, 8, &calls, 6) == 1.5);
    BOOST_TEST(calls == 0u);
}

namespace {

/// A box at depth 150 before a plane at 50, 96 x 96, its guide two colours apart at the box's
/// edge plus a random texture of amplitude `texture` on both, and the samples of an upsampling by 4.
struct box_scene {
    xt::xtensor<float, 2> truth = xt::empty<float>({std::size_t(96), std::size_t(96)});
    xt::xtensor<float, 3> guide = xt::empty<float>({std::size_t(96), std::size_t(96), std::size_t(3)});
    xt::xtensor<float, 2> low = xt::empty<float>({std::size_t(24), std::size_t(24)});
    explicit box_scene(float texture) {
        std::mt19937 gen(3);
        std::uniform_real_distribution<float> grain(-texture, texture);
        for (std::size_t r = 0; r < 96; ++r)
            for (std::size_t c = 0; c < 96; ++c) {
                const bool box = r >= 30 && r < 70 && c >= 25 && c < 75;
                truth(r, c) = box ? 150.f : 50.f;
                const float g = grain(gen);
                for (std::size_t k = 0; k < 3; ++k) guide(r, c, k) = (box ? 170.f : 70.f) + 10.f * float(k) + g;
            }
        for (std::size_t r = 0; r < 24; ++r)
            for (std::size_t c = 0; c < 24; ++c) low(r, c) = truth(4 * r, 4 * c);
    }
};

double rmse(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& truth) {
    return std::sqrt(double(xt::mean(xt::square(x - truth))()));
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_guide_on_another_scale_gives_the_same_depth) {
    const box_scene s(20.f);
    const xt::xtensor<float, 3> unit = s.guide / 255.f;
    for (auto model : {depth_model::normalized, depth_model::separable}) {
        BOOST_TEST_CONTEXT("model " << int(model)) {
            const depth_result a = upsample_depth(s.low, s.guide, 4, {.model = model});
            const depth_result b = upsample_depth(s.low, unit, 4, {.model = model});
            BOOST_TEST(b.sigma_r * 255 == a.sigma_r, tt::tolerance(1e-4));
            BOOST_TEST(b.data_weight == a.data_weight);
            BOOST_TEST(xt::amax(xt::abs(a.depth - b.depth))() < 1e-2);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_textured_guide_gets_a_wider_bandwidth_and_a_lower_error_by_it) {
    // With a texture of +-30 on both surfaces, the bandwidth of the options before it was chosen
    // from the data (1.5) takes the texture's differences for edges, and the box's edge is lost
    // among them (RMSE 8.5); the chosen one lies above the texture's steps and finds it (4.6, the
    // error of the box's edges between the samples, as on an untextured guide).
    const box_scene plain(1.f), textured(30.f);
    const depth_result chosen = upsample_depth(textured.low, textured.guide, 4);
    const depth_result fixed = upsample_depth(textured.low, textured.guide, 4, {.sigma_r = 1.5});
    const depth_result untextured = upsample_depth(plain.low, plain.guide, 4);
    BOOST_TEST(chosen.sigma_r > 3.0);
    BOOST_TEST(rmse(chosen.depth, textured.truth) < 0.7 * rmse(fixed.depth, textured.truth),
               "RMSE " << rmse(chosen.depth, textured.truth) << " against " << rmse(fixed.depth, textured.truth));
    BOOST_TEST(rmse(chosen.depth, textured.truth) < 1.05 * rmse(untextured.depth, plain.truth));
}

BOOST_AUTO_TEST_SUITE_END()
