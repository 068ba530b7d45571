// filter/median.hpp: the selection network against every 0-1 input (which decides
// any comparator network) and against std::nth_element; the filter on every tested
// architecture over awkward sizes against a literal double-precision median, by
// hand on a small image, and on bad input.
#include <nonlocal/filter/median.hpp>

#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_median)

namespace {

/// The network run on plain doubles, one window.
double run_once(const detail::selection_network& net, std::vector<double> v) {
    detail::run_network<1>(net, v.data());
    return v[net.output];
}

double literal_median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[(v.size() - 1) / 2];
}

/// The median of each (2r + 1)^2 window with the border replicated, in double, literally.
xt::xtensor<double, 2> literal_median_filter(const xt::xtensor<double, 2>& image, std::size_t radius) {
    const auto H = std::ptrdiff_t(image.shape(0)), W = std::ptrdiff_t(image.shape(1)), r = std::ptrdiff_t(radius);
    xt::xtensor<double, 2> out = xt::empty<double>(image.shape());
    for (std::ptrdiff_t y = 0; y < H; ++y)
        for (std::ptrdiff_t x = 0; x < W; ++x) {
            std::vector<double> window;
            for (std::ptrdiff_t dy = -r; dy <= r; ++dy)
                for (std::ptrdiff_t dx = -r; dx <= r; ++dx)
                    window.push_back(image(std::clamp<std::ptrdiff_t>(y + dy, 0, H - 1),
                                           std::clamp<std::ptrdiff_t>(x + dx, 0, W - 1)));
            out(y, x) = literal_median(window);
        }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(network_selects_the_median_of_every_zero_one_input) {
    // A comparator network puts the rank-k value in place for every input if and only
    // if it does for every input of zeros and ones (Knuth, TAOCP 5.3.4, exercise 7).
    for (std::size_t n = 1; n <= 17; ++n) {
        const auto net = detail::median_network(n);
        BOOST_TEST(net.slots == n);
        std::size_t wrong = 0;
        for (std::size_t bits = 0; bits < (std::size_t(1) << n); ++bits) {
            std::vector<double> v(n);
            for (std::size_t i = 0; i < n; ++i) v[i] = double((bits >> i) & 1);
            wrong += run_once(net, v) != literal_median(v);
        }
        BOOST_TEST(wrong == 0u, "n = " << n << ": " << wrong << " of " << (1u << n) << " inputs");
    }
}

BOOST_AUTO_TEST_CASE(compile_time_networks_are_the_run_time_ones) {
    const auto same = [](auto fixed) {
        using net = decltype(fixed);
        const auto run_time = detail::median_network(net::slots);
        BOOST_TEST(net::output == run_time.output);
        BOOST_REQUIRE(net::size == run_time.exchanges.size());
        for (std::size_t e = 0; e < net::size; ++e)
            BOOST_TEST((net::exchanges[e].low == run_time.exchanges[e].low &&
                        net::exchanges[e].high == run_time.exchanges[e].high &&
                        net::exchanges[e].part == run_time.exchanges[e].part));
    };
    same(detail::fixed_median_network<1>{});
    same(detail::fixed_median_network<2>{});
    same(detail::fixed_median_network<3>{});
    // And the unrolled run selects the median of every 0-1 window of radius 1.
    for (std::size_t bits = 0; bits < 512; ++bits) {
        std::vector<double> v(9);
        for (std::size_t i = 0; i < 9; ++i) v[i] = double((bits >> i) & 1);
        const double expected = literal_median(v);
        detail::fixed_median_network<1>::run<1>(v.data());
        BOOST_TEST(v[detail::fixed_median_network<1>::output] == expected);
    }
}

BOOST_AUTO_TEST_CASE(network_selects_the_median_of_windows) {
    std::mt19937 gen(3);
    std::uniform_int_distribution<int> few(0, 4);   // many ties
    std::normal_distribution<double> real(0, 1);
    for (std::size_t radius = 0; radius <= 6; ++radius) {
        const std::size_t n = (2 * radius + 1) * (2 * radius + 1);
        const auto net = detail::median_network(n);
        for (int trial = 0; trial < 200; ++trial) {
            std::vector<double> v(n);
            for (auto& x : v) x = trial % 2 ? double(few(gen)) : real(gen);
            BOOST_TEST(run_once(net, v) == literal_median(v), "radius " << radius << ", trial " << trial);
        }
    }
    // The pruning keeps far fewer operations than the full sort of the padded size.
    BOOST_TEST(detail::median_network(9).operations() == 40u);
    BOOST_TEST(detail::median_network(121).operations() == 2154u);
}

BOOST_AUTO_TEST_CASE(small_image_by_hand) {
    const xt::xtensor<double, 2> image = {{1, 2, 3}, {4, 100, 6}, {7, 8, 9}};
    // Centre: 1 2 3 4 6 7 8 9 100 -> 6. Corner (0, 0), border replicated: 1 1 1 1 2 2 4 4 100 -> 2.
    // Edge (0, 1): 1 1 2 2 3 3 4 6 100 -> 3. Corner (2, 2): 6 6 8 8 9 9 9 9 100 -> 9.
    const xt::xtensor<double, 2> expected = {{2, 3, 3}, {4, 6, 6}, {7, 8, 9}};
    BOOST_TEST(median_filter(image, 1) == expected);
    BOOST_TEST(median_filter(image, 0) == image);
    // A window larger than the image: the replicated border weighs in.
    BOOST_TEST(median_filter(image, 5) == literal_median_filter(image, 5));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(filter_matches_the_literal_median, T, test::value_types) {
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        const std::size_t sizes[] = {1, 2, 3, 7, 15, 16, 17, 33, 65};
        unsigned seed = 0;
        for (std::size_t H : {1, 2, 5, 17})
            for (std::size_t W : sizes)
                for (std::size_t radius : {0, 1, 2, 3, 5}) {
                    BOOST_TEST_CONTEXT("arch " << Arch::name() << ", " << H << " x " << W << ", radius " << radius) {
                        xt::xtensor<T, 2> image = test::random_tensor<T, 2>({H, W}, ++seed, -50, 50);
                        if (seed % 2)   // ties and infinities
                            for (auto& x : image) x = std::abs(x) > 45 ? std::numeric_limits<T>::infinity() * x : std::round(x / 10);
                        const auto expected = literal_median_filter(xt::cast<double>(image), radius);
                        const auto got = median_filter<Arch>(image, radius);
                        BOOST_TEST(xt::cast<double>(got) == expected);
                    }
                }
    });
}

BOOST_AUTO_TEST_CASE(flat_windows_keep_their_value) {
    // With a flatness bound, a pixel keeps its value only when its window spans at most the
    // bound (decided for each batch of pixels); every other pixel, and every pixel for
    // a bound of 0, gets the exact median. Piecewise-constant
    // steps plus small noise on awkward sizes, every architecture, radius 1 to 5.
    test::for_each_arch([](auto arch) {
        using Arch = decltype(arch);
        unsigned seed = 100;
        for (std::size_t H : {1, 6, 19})
            for (std::size_t W : {1, 7, 16, 33, 70})
                for (std::size_t radius : {1, 2, 3, 4, 5})
                    for (float flat : {0.f, 0.5f}) {
                        BOOST_TEST_CONTEXT("arch " << Arch::name() << ", " << H << " x " << W << ", radius " << radius
                                                   << ", flat " << flat) {
                            xt::xtensor<float, 2> image = test::random_tensor<float, 2>({H, W}, ++seed, 0, 0.2);
                            for (std::size_t r = 0; r < H; ++r)
                                for (std::size_t c = 0; c < W; ++c) image(r, c) += (c > W / 2 ? 10.f : 0.f);
                            if (seed % 2)
                                for (std::size_t c = 0; c < W / 3; ++c) image(0, c) = 5;   // constant stretches
                            const auto exact = literal_median_filter(xt::cast<double>(image), radius);
                            xt::xtensor<float, 2> out = xt::empty<float>(image.shape());
                            detail::median_filter<Arch>(image.data(), H, W, radius, out.data(), 1, flat);
                            std::size_t kept = 0;
                            for (std::size_t r = 0; r < H; ++r)
                                for (std::size_t c = 0; c < W; ++c) {
                                    if (double(out(r, c)) == exact(r, c)) continue;
                                    double lo = 1e30, hi = -1e30;
                                    const auto R = std::ptrdiff_t(radius);
                                    for (std::ptrdiff_t dy = -R; dy <= R; ++dy)
                                        for (std::ptrdiff_t dx = -R; dx <= R; ++dx) {
                                            const double v = image(std::clamp<std::ptrdiff_t>(std::ptrdiff_t(r) + dy, 0, std::ptrdiff_t(H) - 1),
                                                                   std::clamp<std::ptrdiff_t>(std::ptrdiff_t(c) + dx, 0, std::ptrdiff_t(W) - 1));
                                            lo = std::min(lo, v), hi = std::max(hi, v);
                                        }
                                    BOOST_TEST(out(r, c) == image(r, c));
                                    BOOST_TEST(hi - lo <= double(flat));
                                    ++kept;
                                }
                            if (flat == 0.f) BOOST_TEST(kept == 0u);
                        }
                    }
    });
    // The step's windows span 10: a bound of 0.5 keeps the noise of flat regions, not the step.
    xt::xtensor<float, 2> image = test::random_tensor<float, 2>({40, 64}, 7, 0, 0.2);
    for (std::size_t r = 0; r < 40; ++r)
        for (std::size_t c = 32; c < 64; ++c) image(r, c) += 10;
    xt::xtensor<float, 2> out = xt::empty<float>(image.shape());
    detail::median_filter<default_arch>(image.data(), 40, 64, 2, out.data(), 1, 0.5f);
    const auto exact = literal_median_filter(xt::cast<double>(image), 2);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < out.size(); ++i) kept += double(out.data()[i]) != exact.data()[i];
    BOOST_TEST(kept > 0u);
    for (std::size_t r = 0; r < 40; ++r)   // windows holding both sides of the step
        for (std::size_t c = 30; c < 34; ++c) BOOST_TEST(double(out(r, c)) == exact(r, c));
}

BOOST_AUTO_TEST_CASE(integer_images_and_channels) {
    // 16-bit depth in millimetres, the full range: filtered in float, exactly.
    xt::xtensor<std::uint16_t, 2> depth = xt::empty<std::uint16_t>({13, 21});
    std::mt19937 gen(5);
    std::uniform_int_distribution<int> mm(0, 65535);
    for (auto& d : depth) d = std::uint16_t(mm(gen));
    depth(0, 0) = 65535, depth(0, 1) = 65534;
    const auto filtered = median_filter(depth, 2);
    static_assert(std::is_same_v<typename decltype(filtered)::value_type, std::uint16_t>);
    BOOST_TEST(xt::cast<double>(filtered) == literal_median_filter(xt::cast<double>(depth), 2));
    // 32-bit signed values beyond float's 24-bit mantissa: filtered in double.
    xt::xtensor<std::int32_t, 2> wide = {{-2000000001, 2000000001, 7}, {16777217, -3, 16777216}};
    BOOST_TEST(xt::cast<double>(median_filter(wide, 1)) == literal_median_filter(xt::cast<double>(wide), 1));
    // [H, W, C]: each channel on its own.
    const auto rgb = xt::xtensor<std::uint8_t, 3>(xt::cast<std::uint8_t>(test::random_tensor<double, 3>({9, 17, 3}, 6, 0, 255)));
    const auto per_channel = median_filter(rgb, 1);
    for (std::size_t k = 0; k < 3; ++k) {
        const xt::xtensor<double, 2> channel = xt::cast<double>(xt::view(rgb, xt::all(), xt::all(), k));
        const xt::xtensor<double, 2> got = xt::cast<double>(xt::view(per_channel, xt::all(), xt::all(), k));
        BOOST_TEST(got == literal_median_filter(channel, 1));
    }
}

BOOST_AUTO_TEST_CASE(threads_do_not_change_results) {
    const auto image = test::random_tensor<float, 2>({70, 41}, 9, 0, 10);
    const auto one = median_filter(image, 2);
    BOOST_TEST(median_filter(execution::parallel_policy{2}, image, 2) == one);
    BOOST_TEST(median_filter(execution::parallel_policy{3}, image, 2) == one);
}

BOOST_AUTO_TEST_CASE(in_place) {
    // The kernel reads its input into a padded copy before it writes: output = input is allowed.
    for (std::size_t radius : {1, 4}) {
        auto image = test::random_tensor<float, 2>({37, 53}, 10, 0, 10);
        const auto expected = median_filter(execution::parallel_policy{2}, image, radius);
        detail::median_filter<default_arch>(image.data(), 37, 53, radius, image.data(), 2);
        BOOST_TEST(image == expected);
    }
}

BOOST_AUTO_TEST_CASE(empty_and_bad_input) {
    const xt::xtensor<float, 2> empty = xt::zeros<float>({0, 5});
    BOOST_TEST(median_filter(empty, 2).size() == 0u);
    xt::xtensor<float, 2> with_nan = xt::ones<float>({3, 4});
    with_nan(1, 2) = std::nanf("");
    test::check_invalid([&] { median_filter(with_nan, 1); }, "median_filter", "image [3, 4]", "NaN at flat index 6");
    test::check_invalid([&] { median_filter(execution::parallel_policy{-1}, xt::xtensor<float, 2>(xt::ones<float>({3, 4})), 1); },
                        "execution::parallel_policy", "threads must be >= 0", "got -1");
}

BOOST_AUTO_TEST_SUITE_END()
