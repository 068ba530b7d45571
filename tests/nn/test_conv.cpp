// nn/conv2d.hpp, nn/batch_norm.hpp, nn/pooling.hpp and the activations of simd/activation.hpp:
// against a literal double-precision convolution on awkward shapes, both algorithms and every
// architecture, and against values worked out by hand.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <limits>

#include <xtensor/xview.hpp>

#include "support/literal_nn.hpp"
#include "support/support.hpp"

using namespace nonlocal;
using test::literal_conv2d;

BOOST_AUTO_TEST_SUITE(test_conv)

namespace {

struct conv_case {
    std::size_t B, Cin, H, W, Cout, kh, kw;
    nn::size2 stride, padding, dilation;
    std::size_t groups;
};

// Odd sizes, strides, dilations, groups, depthwise (with a channel multiplier), 1 x 1, a
// single pixel, outputs around the panels' 64 pixels and channels that no tile divides, and
// depthwise maps whose rows of output vectors do not fill the direct kernel's 8 (or 4)
// accumulators.
const conv_case cases[] = {
    {1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1},        {2, 4, 17, 13, 6, 3, 3, 2, 1, 1, 2},
    {1, 8, 10, 10, 8, 3, 3, 1, 2, 2, 8},      {1, 16, 5, 33, 16, 3, 3, 2, 1, 1, 16},
    {3, 5, 6, 6, 7, 1, 1, 1, 0, 1, 1},        {1, 2, 1, 1, 3, 1, 1, 1, 0, 1, 1},
    {1, 3, 4, 70, 17, 1, 5, {1, 2}, {0, 2}, 1, 1}, {1, 6, 9, 9, 12, 3, 3, 1, 1, 1, 6},
    {1, 24, 16, 16, 40, 3, 3, 1, 1, 1, 1},    {2, 1, 8, 8, 1, 5, 5, 1, 2, 1, 1},
    {1, 4, 8, 65, 4, 3, 3, {1, 3}, 1, {2, 1}, 4},
    // Depthwise kernels of other sizes than 3 x 3 and 5 x 5 (taps read from memory): 1 x 5,
    // and 7 x 7 with a channel multiplier of 2 and stride 2.
    {1, 5, 9, 23, 5, 1, 5, 1, {0, 2}, 1, 5},  {1, 3, 12, 40, 6, 7, 7, 2, 3, 1, 3},
    // Stride-2 depthwise rows dealt into their phases a vector pair at a time, the input's
    // column 0 in either phase (padding 0 and 2).
    {1, 4, 6, 64, 4, 3, 3, 2, 0, 1, 4},       {1, 3, 5, 47, 3, 5, 5, 2, 2, 1, 3},
    // Depthwise rows swept a block at a time: strides 2 x 1 and 1 x 2, blocks of rows past
    // the map's last (6 and 10 output rows); stride 3 along rows goes output by output.
    {1, 5, 11, 19, 5, 3, 3, {2, 1}, 1, 1, 5}, {1, 5, 10, 37, 5, 3, 3, {1, 2}, {1, 0}, 1, 5},
    {1, 2, 13, 13, 2, 3, 3, 3, 1, 1, 2},
    // A 1 x 1 map taken as one row (several panels, two images), and a depth of 4140 > 4096
    // packed in two blocks.
    {2, 9, 13, 11, 10, 1, 1, 1, 0, 1, 1},     {1, 460, 5, 6, 2, 3, 3, 1, 1, 1, 1},
    // Maps of over a thousand outputs, gathered in panels of up to 512 pixels whose last one
    // is partial (512, 512 and 136 of the 1 x 1's 1160 on one thread).
    {1, 3, 40, 29, 5, 1, 1, 1, 0, 1, 1},      {1, 8, 30, 41, 7, 3, 3, 1, 1, 1, 1},
    // Kernels read in place along padded rows: rows narrower than a vector (a vector's
    // outputs spread over three rows or more), outputs of 15, 16 and 17 a row, padding past
    // the kernel's reach, dilated rows with groups, and a single row.
    {1, 5, 2, 2, 3, 3, 3, 1, 1, 1, 1},        {2, 3, 7, 15, 4, 3, 3, 1, 1, 1, 1},
    {1, 3, 6, 16, 4, 3, 3, 1, 1, 1, 1},       {1, 3, 5, 17, 4, 3, 3, 1, 1, 1, 1},
    {1, 4, 6, 5, 6, 3, 3, 1, {2, 3}, {2, 1}, 2}, {1, 2, 1, 9, 3, 1, 3, 1, {0, 1}, 1, 1},
    // Strides read in place from phases: 2 x 3 with dilation 2 (taps in every phase of a
    // row, and two taps in one phase); a 1 x 1 kernel of stride 2 with padding gathered.
    {1, 4, 11, 12, 4, 3, 3, {2, 3}, {1, 2}, 2, 1}, {1, 3, 7, 9, 4, 1, 1, 2, 1, 1, 1},
};

std::string describe(const conv_case& c) {
    return "x [" + std::to_string(c.B) + ", " + std::to_string(c.Cin) + ", " + std::to_string(c.H) + ", " +
           std::to_string(c.W) + "], weight [" + std::to_string(c.Cout) + ", " + std::to_string(c.Cin / c.groups) +
           ", " + std::to_string(c.kh) + ", " + std::to_string(c.kw) + "], groups " + std::to_string(c.groups);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_small_convolution_by_hand) {
    // x = [[1 2 3] [4 5 6] [7 8 9]], kernel [[1 0] [0 -1]]: each output x(i, j) - x(i + 1, j + 1)
    // = -4; bias 0.5 gives -3.5. Padding 1, stride 2: the windows at (-1, -1), (-1, 1), (1, -1)
    // and (1, 1) give -x(0, 0) = -1, -x(0, 2) = -3, -x(2, 0) = -7 and 5 - 9 = -4.
    const xt::xtensor<float, 3> x{{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}};
    const xt::xtensor<float, 4> w{{{{1, 0}, {0, -1}}}};
    for (const auto algorithm : {nn::conv_algorithm::gemm, nn::conv_algorithm::direct}) {
        const nn::conv2d<float> plain(w, xt::xtensor<float, 1>{0.5f}, {.algorithm = algorithm});
        const xt::xtensor<float, 3> expected{{{-3.5f, -3.5f}, {-3.5f, -3.5f}}};
        BOOST_TEST(plain(x) == expected);
        const nn::conv2d<float> strided(w, {}, {.stride = 2, .padding = 1, .algorithm = algorithm});
        const xt::xtensor<float, 3> corners{{{-1.f, -3.f}, {-7.f, -4.f}}};
        BOOST_TEST(strided(x) == corners);
        // A 3 x 3 kernel over [[1 2] [3 4]] padded by 1, its rows narrower than any vector:
        // all ones sum the whole map; a single 1 right of the centre reads the pixel to the
        // right, zero past the last column.
        const xt::xtensor<float, 3> small{{{1, 2}, {3, 4}}};
        xt::xtensor<float, 4> ones = xt::ones<float>({1, 1, 3, 3}), right = xt::zeros<float>({1, 1, 3, 3});
        right(0, 0, 1, 2) = 1;
        const xt::xtensor<float, 3> sums{{{10, 10}, {10, 10}}}, shifted{{{2, 0}, {4, 0}}};
        BOOST_TEST(nn::conv2d<float>(ones, {}, {.padding = 1, .algorithm = algorithm})(small) == sums);
        BOOST_TEST(nn::conv2d<float>(right, {}, {.padding = 1, .algorithm = algorithm})(small) == shifted);
        // ReLU as the results are stored: every output is negative.
        const nn::conv2d<float> relu(w, {}, {.algorithm = algorithm}, simd::activation::relu);
        BOOST_TEST(xt::all(xt::equal(relu(x), 0.0f)));
    }
}

BOOST_AUTO_TEST_CASE(matches_the_literal_convolution) {
    for (const conv_case& c : cases) {
        const nn::conv2d_options o{c.stride, c.padding, c.dilation, c.groups};
        const auto x = test::random_tensor<float, 4>({c.B, c.Cin, c.H, c.W}, 1);
        const xt::xtensor<float, 4> nans = xt::full_like(x, std::numeric_limits<float>::quiet_NaN());
        const auto w = test::random_tensor<float, 4>({c.Cout, c.Cin / c.groups, c.kh, c.kw}, 2);
        const auto bias = test::random_tensor<float, 1>({c.Cout}, 3);
        const auto expected = literal_conv2d(x, w, bias, o);
        const double atol = 1e-6 * double(c.Cin / c.groups * c.kh * c.kw + 1);
        test::for_each_arch([&](auto arch) {
            using Arch = decltype(arch);
            for (const auto algorithm : {nn::conv_algorithm::gemm, nn::conv_algorithm::direct}) {
                if (algorithm == nn::conv_algorithm::direct && c.Cin != c.groups) continue;
                nn::conv2d_options chosen = o;
                chosen.algorithm = algorithm;
                const nn::conv2d<float> conv(w, bias, chosen);
                const std::string what = describe(c) + (algorithm == nn::conv_algorithm::gemm ? " gemm " : " direct ") +
                                         Arch::name();
                // First over NaNs, which the work arrays kept for the next call then hold: the
                // padding must still read zeros, not what an earlier call left there.
                (void)conv.template operator()<Arch>(nans);
                const auto y = conv.template operator()<Arch>(x);
                test::check_close(y, expected, atol, 1e-5, what);
                BOOST_TEST(conv.template operator()<Arch>(execution::parallel_policy{2}, x) == y, what + " two threads");
            }
        });
        // Double precision, the automatic choice.
        const xt::xtensor<double, 4> xd = xt::cast<double>(x), wd = xt::cast<double>(w);
        const xt::xtensor<double, 1> bd = xt::cast<double>(bias);
        test::check_close(nn::conv2d<double>(wd, bd, o)(xd), literal_conv2d(xd, wd, bd, o), 1e-13, 1e-12,
                          describe(c) + " double");
    }
    // Unbatched input: batch item 0.
    const auto x = test::random_tensor<float, 4>({1, 4, 9, 11}, 4);
    const nn::conv2d<float> conv(test::random_tensor<float, 4>({6, 2, 3, 3}, 5), {}, {.padding = 1, .groups = 2});
    const xt::xtensor<float, 3> x0 = xt::view(x, 0);
    const xt::xtensor<float, 3> y0 = xt::view(conv(x), 0);
    BOOST_TEST(conv(x0) == y0);
}

BOOST_AUTO_TEST_CASE(activations_as_results_are_stored) {
    // Each activation applied by the GEMM's and the direct kernels' stores is the activation
    // of the plain convolution (3 x 3 of stride 1 and 2, depthwise and not).
    const auto x = test::random_tensor<float, 4>({1, 6, 11, 19}, 6);
    const auto bias = test::random_tensor<float, 1>({6}, 7);
    for (const std::size_t groups : {1, 6})
        for (const std::size_t stride : {1, 2}) {
            const auto w = test::random_tensor<float, 4>({6, 6 / groups, 3, 3}, 8);
            const nn::conv2d_options o{.stride = stride, .padding = 1, .groups = groups};
            test::for_each_arch([&](auto arch) {
                using Arch = decltype(arch);
                const xt::xtensor<float, 4> plain = nn::conv2d<float>(w, bias, o).template operator()<Arch>(x);
                for (const auto a : {simd::activation::relu, simd::activation::relu6, simd::activation::silu,
                                     simd::activation::gelu, simd::activation::gelu_tanh}) {
                    xt::xtensor<float, 4> expected = plain;
                    simd::activate<Arch>(a, expected.data(), expected.size());
                    test::check_close(nn::conv2d<float>(w, bias, o, a).template operator()<Arch>(x), expected, 1e-6, 1e-6,
                                      std::string(Arch::name()) + " activation " + std::to_string(int(a)) + ", groups " +
                                          std::to_string(groups) + ", stride " + std::to_string(stride));
                }
            });
        }
}

BOOST_AUTO_TEST_CASE(bad_convolutions_name_their_shapes) {
    const xt::xtensor<float, 4> w = xt::zeros<float>({6, 2, 3, 3});
    test::check_invalid([&] { nn::conv2d<float>(w, {}, {.groups = 4}); }, "nn::conv2d",
                        "conv2d_options::groups must be positive and dividing Cout of weight [6, 2, 3, 3], got 4");
    test::check_invalid([&] { nn::conv2d<float>(w, xt::zeros<float>({5})); }, "weight [6, 2, 3, 3]", "bias [5]");
    test::check_invalid([&] { nn::conv2d<float>(w, {}, {.stride = {1, 0}}); },
                        "conv2d_options::stride must be positive, got (1, 0)");
    test::check_invalid([&] { nn::conv2d<float>(w, {}, {.dilation = 0, .groups = 0}); },
                        "conv2d_options::groups must be positive", "got 0; conv2d_options::dilation must be positive, got (0, 0)");
    test::check_invalid([&] { nn::conv2d<float>(w, {}, {.algorithm = nn::conv_algorithm::direct}); },
                        "conv2d_options::algorithm must be automatic or gemm unless each group has one input channel", "got direct");
    const nn::conv2d<float> conv(w, {}, {.groups = 2});
    test::check_invalid([&] { conv(xt::xtensor<float, 4>(xt::zeros<float>({1, 3, 8, 8}))); }, "x [1, 3, 8, 8]",
                        "4 channels");
    test::check_invalid([&] { conv(xt::xtensor<float, 3>(xt::zeros<float>({4, 2, 8}))); }, "x [4, 2, 8]",
                        "room for the kernel");
    // An empty batch gives an empty result.
    BOOST_TEST(conv(xt::xtensor<float, 4>(xt::zeros<float>({0, 4, 5, 5}))).shape(0) == 0u);
}

BOOST_AUTO_TEST_CASE(batch_norm_and_its_folding) {
    // By hand: mean 1, var 3, eps 1, weight 2, bias -1: (x - 1) / 2 * 2 - 1 = x - 2.
    const nn::batch_norm2d<float> one(xt::xtensor<float, 1>{2}, xt::xtensor<float, 1>{-1}, xt::xtensor<float, 1>{1},
                                      xt::xtensor<float, 1>{3}, 1.0);
    const xt::xtensor<float, 3> x{{{0, 1}, {2, 5}}};
    const xt::xtensor<float, 3> expected{{{-2, -1}, {0, 3}}};
    BOOST_TEST(one(x) == expected);
    // affine=False: no weight nor bias.
    const nn::batch_norm2d<float> plain({}, {}, xt::xtensor<float, 1>{1}, xt::xtensor<float, 1>{4}, 0.0);
    const xt::xtensor<float, 3> halved{{{-0.5f, 0}, {0.5f, 2}}};
    BOOST_TEST(plain(x) == halved);

    // A convolution then its norm, against the folded convolution (each algorithm).
    const std::size_t C = 6;
    const auto images = test::random_tensor<float, 4>({2, C, 11, 7}, 1);
    const nn::batch_norm2d<float> norm(test::random_tensor<float, 1>({C}, 2, 0.5, 2),
                                       test::random_tensor<float, 1>({C}, 3),
                                       test::random_tensor<float, 1>({C}, 4),
                                       test::random_tensor<float, 1>({C}, 5, 0.1, 2));
    for (const std::size_t groups : {std::size_t(1), C}) {
        const nn::conv2d<float> conv(test::random_tensor<float, 4>({C, C / groups, 3, 3}, 6),
                                     test::random_tensor<float, 1>({C}, 7), {.padding = 1, .groups = groups});
        const auto separate = norm(conv(images));
        test::check_close(nn::fold(conv, norm)(images), separate, 1e-5, 1e-5,
                          "folded, groups " + std::to_string(groups));
    }
    test::check_invalid([&] { nn::batch_norm2d<float>(xt::zeros<float>({3}), xt::zeros<float>({3}), xt::zeros<float>({3}),
                                                      xt::zeros<float>({2})); },
                        "nn::batch_norm2d", "running_var [2]");
    test::check_invalid([&] { norm(xt::xtensor<float, 4>(xt::zeros<float>({1, 5, 2, 2}))); }, "x [1, 5, 2, 2]",
                        "6 channels");
    test::check_invalid([&] { nn::fold(nn::conv2d<float>(xt::zeros<float>({4, 1, 1, 1})), norm); }, "nn::fold",
                        "6 channels", "4 output channels");
}

BOOST_AUTO_TEST_CASE(pooling_by_hand) {
    xt::xtensor<float, 3> x = xt::empty<float>({1, 4, 4});
    for (std::size_t i = 0; i < 16; ++i) x.data()[i] = float(i);
    const xt::xtensor<float, 3> maxima{{{5, 7}, {13, 15}}}, means{{{2.5f, 4.5f}, {10.5f, 12.5f}}};
    BOOST_TEST(nn::max_pool2d(x, {.kernel = 2}) == maxima);
    BOOST_TEST(nn::avg_pool2d(x, {.kernel = 2}) == means);
    // Kernel 3, stride 2, padding 1: windows over rows and columns [-1, 1] and [1, 3].
    BOOST_TEST(nn::max_pool2d(x, {.kernel = 3, .stride = 2, .padding = 1}) == maxima);
    // Dilation 2, kernel 2, stride 1: taps (i, j), (i, j + 2), (i + 2, j) and (i + 2, j + 2)
    // for i, j in {0, 1}; the largest is (i + 2, j + 2).
    const xt::xtensor<float, 3> dilated{{{10, 11}, {14, 15}}};
    BOOST_TEST(nn::max_pool2d(x, {.kernel = 2, .stride = 1, .dilation = 2}) == dilated);

    // ceil_mode on 5 x 5 (0 to 24), kernel 2: a third window starting at 4 covers one row.
    xt::xtensor<double, 4> five = xt::empty<double>({1, 1, 5, 5});
    for (std::size_t i = 0; i < 25; ++i) five.data()[i] = double(i);
    const xt::xtensor<double, 4> floor_max{{{{6, 8}, {16, 18}}}};
    const xt::xtensor<double, 4> ceil_max{{{{6, 8, 9}, {16, 18, 19}, {21, 23, 24}}}};
    BOOST_TEST(nn::max_pool2d(five, {.kernel = 2}) == floor_max);
    BOOST_TEST(nn::max_pool2d(five, {.kernel = 2, .ceil_mode = true}) == ceil_max);
    // The average of the cut windows is over what they cover: (4 + 9) / 2, 24.
    const auto ceil_mean = nn::avg_pool2d(five, {.kernel = 2, .ceil_mode = true});
    BOOST_TEST(ceil_mean(0, 0, 0, 2) == 6.5);
    BOOST_TEST(ceil_mean(0, 0, 2, 2) == 24.0);

    // Padding 1 on [[1 2] [3 4]], kernel 2, stride 2: each window holds one value, over 4
    // places with the padding counted, over 1 without.
    const xt::xtensor<float, 3> small{{{1, 2}, {3, 4}}};
    const xt::xtensor<float, 3> quarter{{{0.25f, 0.5f}, {0.75f, 1.f}}};
    BOOST_TEST(nn::avg_pool2d(small, {.kernel = 2, .stride = 2, .padding = 1}) == quarter);
    BOOST_TEST(nn::avg_pool2d(small, {.kernel = 2, .stride = 2, .padding = 1, .count_include_pad = false}) == small);

    // NaN wins the max, as in PyTorch.
    xt::xtensor<float, 3> with_nan = x;
    with_nan(0, 0, 1) = std::numeric_limits<float>::quiet_NaN();
    const auto m = nn::max_pool2d(with_nan, {.kernel = 2});
    BOOST_TEST(std::isnan(m(0, 0, 0)));
    BOOST_TEST(m(0, 1, 1) == 15.f);

    // Adaptive: 5 columns to 3 average [0, 2), [1, 4), [3, 5); to 1 x 1, the global mean.
    const xt::xtensor<float, 3> row{{{0, 1, 2, 3, 4}}};
    const xt::xtensor<float, 3> thirds{{{0.5f, 2.f, 3.5f}}};
    BOOST_TEST(nn::adaptive_avg_pool2d(row, {1, 3}) == thirds);
    BOOST_TEST(nn::adaptive_avg_pool2d(x, 1)(0, 0, 0) == 7.5f);

    // Each option named as the field it is; the shape when the options leave it no window.
    test::check_invalid([&] { nn::max_pool2d(x, {.kernel = 2, .padding = 2}); }, "nn::max_pool2d",
                        "pool2d_options::padding must be at most half the dilated kernel", "got (2, 2)");
    test::check_invalid([&] { nn::max_pool2d(x, {.kernel = {0, 2}}); }, "pool2d_options::kernel must be positive, got (0, 2)");
    test::check_invalid([&] { nn::max_pool2d(x, {.kernel = 2, .stride = {0, 1}}); },
                        "pool2d_options::stride must be positive (or 0: the kernel), got (0, 1)");
    test::check_invalid([&] { nn::max_pool2d(x, {.kernel = 2, .dilation = 0}); },
                        "pool2d_options::dilation must be positive, got (0, 0)");
    test::check_invalid([&] { nn::max_pool2d(x, {.kernel = 5}); }, "x [1, 4, 4] with kernel (5, 5)", "hold a window");
    test::check_invalid([&] { nn::avg_pool2d(x, {.kernel = 2, .dilation = 2}); }, "nn::avg_pool2d", "no dilation");
    test::check_invalid([&] { nn::adaptive_avg_pool2d(x, {0, 2}); }, "nn::adaptive_avg_pool2d", "(0, 2)");
}

BOOST_AUTO_TEST_CASE(activations_by_hand) {
    // ReLU6, SiLU and the tanh GELU at a few points, as PyTorch 1.13 gives them; the limits
    // at -infinity are 0 (PyTorch: NaN for SiLU and GELU).
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x{-inf, -100.f, -3.f, -1.f, 0.f, 0.5f, 1.f, 3.f, 7.f, inf};
    const std::vector<float> relu6{0, 0, 0, 0, 0, 0.5f, 1, 3, 6, 6};
    const std::vector<float> silu{0, -0.f, -0.14227761f, -0.26894143f, 0, 0.31122968f, 0.7310586f, 2.8577225f,
                                  6.993623f, inf};
    const std::vector<float> gelu_tanh{0, -0.f, -0.0036374331f, -0.15880799f, 0, 0.345714f, 0.841192f, 2.9963627f,
                                       7.f, inf};
    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        for (const auto& [a, expected] : {std::pair{simd::activation::relu6, relu6}, std::pair{simd::activation::silu, silu},
                                          std::pair{simd::activation::gelu_tanh, gelu_tanh}}) {
            std::vector<float> y = x;
            simd::activate<Arch>(a, y.data(), y.size());
            for (std::size_t i = 0; i < x.size(); ++i)
                BOOST_TEST((y[i] == expected[i] || std::abs(y[i] - expected[i]) <= 2e-6f * std::max(1.f, std::abs(expected[i]))),
                           Arch::name() << " activation " << int(a) << " at " << x[i] << ": " << y[i]);
        }
        for (const auto a : {simd::activation::relu6, simd::activation::silu}) {
            float nan = std::numeric_limits<float>::quiet_NaN();
            simd::activate<Arch>(a, &nan, 1);
            BOOST_TEST(std::isnan(nan), Arch::name() << " activation " << int(a) << " keeps NaN");
        }
        // SiLU across its range against x / (1 + e^-x) in double: within 4e-7 relative (3 ulp), or
        // 1e-35 absolute for results too small to matter (below x = -87, e^x is flushed to 0).
        // Beyond: the ends of the clamps inside (e^-x from -87.3 to 89) and the largest floats.
        std::vector<float> v(40001);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = -100.f + 0.005f * float(i);
        for (const float far : {87.29f, 87.31f, 88.7f, 88.8f, 89.1f, 1e4f, 1e30f, std::numeric_limits<float>::max()})
            v.insert(v.end(), {far, -far});
        std::vector<float> y = v;
        simd::activate<Arch>(simd::activation::silu, y.data(), y.size());
        double worst = 0;
        for (std::size_t i = 0; i < v.size(); ++i) {
            const double exact = double(v[i]) / (1 + std::exp(-double(v[i])));
            const double error = std::abs(double(y[i]) - exact);
            if (error > 1e-35) worst = std::max(worst, error / std::abs(exact));
            BOOST_TEST(std::isfinite(y[i]), Arch::name() << " SiLU(" << v[i] << ") = " << y[i]);
        }
        BOOST_TEST(worst <= 4e-7, Arch::name() << " SiLU's largest relative error " << worst);
    });
}

BOOST_AUTO_TEST_SUITE_END()
