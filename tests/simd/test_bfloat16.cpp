// simd/bfloat16.hpp and the products in precision::bf16: the rounding against values worked
// out by hand, the step of two pairs and the GEMM against double references on every
// architecture the build allows (the FMA fallback included), the layers' conversion, and a
// Vision Transformer in bfloat16 against the same model in float.
#include <nonlocal/nonlocal.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <xtensor/xnorm.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_bfloat16)

namespace {

std::uint16_t bits_of(float v) { return simd::bfloat16(v).bits; }
float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }
/// v rounded to bfloat16, as a double.
double rounded(float v) { return double(float(simd::bfloat16(v))); }

}  // namespace

BOOST_AUTO_TEST_CASE(rounds_to_nearest_even_by_hand) {
    BOOST_TEST(bits_of(1.0f) == 0x3f80);
    BOOST_TEST(bits_of(-2.5f) == 0xc020);
    BOOST_TEST(bits_of(0.0f) == 0x0000);
    BOOST_TEST(bits_of(-0.0f) == 0x8000);
    // 1 + 2^-8 lies halfway between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81): to the even one.
    BOOST_TEST(bits_of(from_bits(0x3f808000u)) == 0x3f80);
    // 1 + 3 2^-8 lies halfway between 0x3f81 (odd) and 0x3f82 (even): up.
    BOOST_TEST(bits_of(from_bits(0x3f818000u)) == 0x3f82);
    // Just above and below the half.
    BOOST_TEST(bits_of(from_bits(0x3f808001u)) == 0x3f81);
    BOOST_TEST(bits_of(from_bits(0x3f807fffu)) == 0x3f80);
    // 1/3 = 0x3eaaaaab: the dropped half 0xaaab is above a half, up to 0x3eab.
    BOOST_TEST(bits_of(1.0f / 3.0f) == 0x3eab);
    // Infinities kept; the largest float rounds up to infinity, as IEEE rounding says.
    BOOST_TEST(bits_of(std::numeric_limits<float>::infinity()) == 0x7f80);
    BOOST_TEST(bits_of(-std::numeric_limits<float>::infinity()) == 0xff80);
    BOOST_TEST(bits_of(std::numeric_limits<float>::max()) == 0x7f80);
    // NaNs stay NaN and become quiet, their sign kept, even one whose payload is all in the
    // dropped half (0x7f800001 would otherwise round to infinity).
    BOOST_TEST(bits_of(from_bits(0x7fc00000u)) == 0x7fc0);
    BOOST_TEST(bits_of(from_bits(0x7f800001u)) == 0x7fc0);
    BOOST_TEST(bits_of(from_bits(0xffc00001u)) == 0xffc0);
    BOOST_TEST(std::isnan(float(simd::bfloat16(std::numeric_limits<float>::quiet_NaN()))));
    // Subnormals round as any other value: 2^-149 down to 0, halfway 0x8000 to even 0, 0x18000 up to 2.
    BOOST_TEST(bits_of(from_bits(0x00000001u)) == 0x0000);
    BOOST_TEST(bits_of(from_bits(0x00008000u)) == 0x0000);
    BOOST_TEST(bits_of(from_bits(0x00018000u)) == 0x0002);
    // Back to float exactly.
    BOOST_TEST(float(simd::bfloat16::from_bits(0x3f81)) == 1.0f + 1.0f / 128.0f);
    BOOST_TEST(float(simd::bfloat16::from_bits(0xc020)) == -2.5f);
}

BOOST_AUTO_TEST_CASE(a_pair_holds_the_first_in_its_low_half) {
    BOOST_TEST(simd::bf16_pair(1.0f, -2.5f) == 0xc0203f80u);
    BOOST_TEST(simd::bf16_pair(0.0f, 1.0f) == 0x3f800000u);
    // Along a row of odd length, the last pair takes 0 past the end (0.25 is 0x3e80).
    const float row[] = {1.0f, -2.5f, 0.25f};
    BOOST_TEST(simd::bf16_pair_of(row, 0, 3) == 0xc0203f80u);
    BOOST_TEST(simd::bf16_pair_of(row, 1, 3) == 0x00003e80u);
}

BOOST_AUTO_TEST_CASE(the_step_of_two_pairs_against_double) {
    // acc + a.high b.high + a.low b.low, lane by lane, on every architecture (native
    // vdpbf16ps where the build has it): the products of bfloat16 values are exact in float,
    // so the result is within two float roundings of the sum in double.
    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        using words = xsimd::batch<std::uint32_t, Arch>;
        using floats = xsimd::batch<float, Arch>;
        constexpr std::size_t W = floats::size;
        const auto values = test::random_tensor<float, 1>({5 * W}, 3, -4.0, 4.0);
        alignas(64) std::uint32_t a[W], b[W];
        alignas(64) float acc[W], got[W];
        for (std::size_t l = 0; l < W; ++l) {
            a[l] = simd::bf16_pair(values(l), values(W + l));
            b[l] = simd::bf16_pair(values(2 * W + l), values(3 * W + l));
            acc[l] = values(4 * W + l);
        }
        simd::dot_bf16_pairs{}(words::load_aligned(a), words::load_aligned(b), floats::load_aligned(acc))
            .store_aligned(got);
        for (std::size_t l = 0; l < W; ++l) {
            const double high = rounded(values(W + l)) * rounded(values(3 * W + l));
            const double low = rounded(values(l)) * rounded(values(2 * W + l));
            const double expected = double(acc[l]) + high + low;
            BOOST_TEST_CONTEXT(Arch::name() << " lane " << l) {
                BOOST_TEST(std::abs(got[l] - expected) <=
                           0x1p-23 * (std::abs(acc[l]) + std::abs(high) + std::abs(low)) + 1e-30);
            }
        }
        // By hand: 1.5 x 2 + (-1) x 0.25 + 10 = 12.75 in every lane.
        const words one(simd::bf16_pair(-1.0f, 1.5f)), two(simd::bf16_pair(0.25f, 2.0f));
        simd::dot_bf16_pairs{}(one, two, floats(10.0f)).store_aligned(got);
        for (std::size_t l = 0; l < W; ++l) BOOST_TEST(got[l] == 12.75f);
    });
}

BOOST_AUTO_TEST_CASE(products_in_bf16_on_awkward_shapes_against_double) {
    // The float product's shapes; odd depths pair their last input with 0.
    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        for (const auto& [n, in, out] : test::awkward_products) {
            const auto [x, w, b] = test::random_linear(n, in, out);
            nn::linear_layer<float> layer(w, b);
            layer.to(precision::bf16);
            BOOST_TEST((layer.precision() == precision::bf16));
            const auto y = layer.template operator()<Arch>(x);
            const std::string what = std::string(Arch::name()) + ": [" + std::to_string(n) + ", " +
                                     std::to_string(in) + "] x [" + std::to_string(out) + ", " + std::to_string(in) + "]^T";
            BOOST_TEST_CONTEXT(what) {
                for (std::size_t i = 0; i < n; ++i)
                    for (std::size_t o = 0; o < out; ++o) {
                        // The sum over the rounded operands in double: float accumulation adds at
                        // most (in + 1) roundings of 2^-24 each of the absolute sum. Against the
                        // exact sum, each product is off by at most 2^-8 + 2^-16 of its size (two
                        // operands of 8 significant bits).
                        double of_rounded = b(o), exact = b(o), size = std::abs(b(o));
                        for (std::size_t c = 0; c < in; ++c) {
                            of_rounded += rounded(x(i, c)) * rounded(w(o, c));
                            exact += double(x(i, c)) * w(o, c);
                            size += std::abs(double(x(i, c)) * w(o, c));
                        }
                        const double accumulation = 0x1p-24 * double(in + 2) * 1.1 * size + 1e-30;
                        BOOST_TEST(std::abs(y(i, o) - of_rounded) <= accumulation);
                        BOOST_TEST(std::abs(y(i, o) - exact) <= (0x1p-8 + 0x1p-16) * size + accumulation);
                    }
            }
            // The same, bit for bit, on any number of threads.
            BOOST_TEST(layer.template operator()<Arch>(execution::parallel_policy{2}, x) == y);
            BOOST_TEST(layer.template operator()<Arch>(execution::parallel_policy{3}, x) == y);
        }
    });
}

BOOST_AUTO_TEST_CASE(layers_convert_their_weights_once) {
    const auto w = test::random_tensor<float, 2>({5, 7}, 1);
    const auto b = test::random_tensor<float, 1>({5}, 2);
    nn::linear_layer<float> layer(w, b);
    BOOST_TEST((layer.precision() == precision::native));
    BOOST_TEST(layer.weight() == w);
    layer.to(precision::bf16);
    // The weights held rounded; back in float, they keep the rounded values.
    xt::xtensor<float, 2> rounded_w = w;
    for (float& v : rounded_w) v = float(simd::bfloat16(v));
    BOOST_TEST(layer.weight() == rounded_w);
    BOOST_TEST(!(layer.weight() == w));
    layer.to(precision::native);
    BOOST_TEST((layer.precision() == precision::native));
    BOOST_TEST(layer.weight() == rounded_w);
    // Built in bfloat16 directly: the same panels.
    const nn::linear_layer<float> direct(w, b, precision::bf16);
    const auto x = test::random_tensor<float, 2>({3, 7}, 3);
    layer.to(precision::bf16);
    BOOST_TEST(direct(x) == layer(x));
    // Double layers have no bfloat16 products; weights of two precisions make no one product.
    nn::linear_layer<double> in_double(test::random_tensor<double, 2>({2, 3}, 4));
    test::check_invalid([&] { in_double.to(precision::bf16); }, "simd::packed_weight", "float");
    const nn::linear_layer<float> native(w, b);
    const simd::packed_weight<float>* both[] = {&direct.packed(), &native.packed()};
    test::check_invalid(
        [&] {
            simd::linear_rows(execution::seq, row_matrix<const float>{x.data(), 3, 7}, std::span<const simd::packed_weight<float>* const>(both),
                              simd::store_rows<float>{nullptr, 10});
        },
        "simd::linear_rows", "precisions differ");
}

BOOST_AUTO_TEST_CASE(a_vision_transformer_in_bf16) {
    // Random weights of a small ViT with layer norms (E = 64, 4 heads, MLP 128, 2 layers,
    // a 4 x 4 grid of 4 x 4 patches, 10 classes): its linear maps in bfloat16 against the
    // same model in float, logits within 2e-2 (relative L2). torch_parity holds the parity
    // models in bfloat16 to PyTorch's in double the same way (vit_double_logits,
    // mobilevit_double_logits).
    constexpr std::size_t E = 64, heads = 4, hidden = 128, patch = 4, grid = 4, classes = 10;
    unsigned seed = 1;
    const auto random = [&]<std::size_t N>(std::array<std::size_t, N> shape, double lo = -0.2, double hi = 0.2) {
        return test::random_tensor<float, N>(shape, seed++, lo, hi);
    };
    const auto norm = [&] { return nn::layer_norm(random(std::array{E}, 0.5, 1.5), random(std::array{E}), 1e-6); };
    std::vector<nn::transformer_encoder_layer> layers;
    for (int l = 0; l < 2; ++l)
        layers.emplace_back(nn::multi_head_attention(heads, random(std::array{3 * E, E}), random(std::array{3 * E}),
                                                     random(std::array{E, E}), random(std::array{E})),
                            nn::feed_forward(random(std::array{hidden, E}), random(std::array{hidden}),
                                             random(std::array{E, hidden}), random(std::array{E}), nn::activation::gelu),
                            norm(), norm(), true);
    auto vit = nn::vision_transformer(
        nn::conv2d<float>(random(std::array{E, std::size_t(3), patch, patch}), random(std::array{E}), {.stride = patch}),
        random(std::array{E}), random(std::array{1 + grid * grid, E}), std::move(layers), norm(),
        nn::linear_layer<float>(random(std::array{classes, E}, -1.0, 1.0), random(std::array{classes})));
    const auto images = test::random_tensor<float, 4>({2, 3, grid * patch, grid * patch}, 99);
    const xt::xtensor<float, 2> native = vit(images);
    vit.to(precision::bf16);
    const xt::xtensor<float, 2> bf16 = vit(execution::parallel_policy{2}, images);
    const double relative = double(xt::norm_l2(bf16 - native)() / xt::norm_l2(native)());
    BOOST_TEST(relative < 2e-2);
    BOOST_TEST(relative > 1e-4);   // rounding did happen: bfloat16 is not float
    BOOST_TEST(vit(images) == bf16);
}

BOOST_AUTO_TEST_SUITE_END()
