// nn/linear.hpp, nn/nonlocal_block.hpp and the maps <-> tokens copies: against literal loops.
#include <nonlocal/nonlocal.hpp>

#include <functional>
#include <limits>

#include <xtensor/xview.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_nn)

BOOST_AUTO_TEST_CASE(linear_matches_literal) {
    for (std::size_t in : {1, 5, 16, 17}) {
        const auto x = test::random_tensor<float, 2>({7, in}, 1), w = test::random_tensor<float, 2>({3, in}, 2);
        const auto b = test::random_tensor<float, 1>({3}, 3);
        const auto y = nn::linear(x, w, b), y0 = nn::linear(x, w);
        for (std::size_t i = 0; i < 7; ++i)
            for (std::size_t o = 0; o < 3; ++o) {
                double s = 0;
                for (std::size_t c = 0; c < in; ++c) s += double(x(i, c)) * w(o, c);
                BOOST_TEST(std::abs(y0(i, o) - s) < 1e-5);
                BOOST_TEST(std::abs(y(i, o) - (s + b(o))) < 1e-5);
            }
    }
    const xt::xtensor<float, 2> x = xt::zeros<float>({2, 3}), w = xt::zeros<float>({4, 5});
    test::check_invalid([&] { nn::linear(x, w); }, "nn::linear", "x [2, 3]", "weight [4, 5]");
    const xt::xtensor<float, 2> w3 = xt::zeros<float>({4, 3});
    const xt::xtensor<float, 1> b2 = xt::zeros<float>({2});
    test::check_invalid([&] { nn::linear(x, w3, b2); }, "bias [2]");
}

BOOST_AUTO_TEST_CASE(linear_on_awkward_shapes_against_double) {
    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        for (const auto& [n, in, out] : test::awkward_products) {
            const auto [x, w, b] = test::random_linear(n, in, out);
            xt::xtensor<double, 2> expected = xt::empty<double>({n, out});
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t o = 0; o < out; ++o) {
                    double s = b(o);
                    for (std::size_t c = 0; c < in; ++c) s += double(x(i, c)) * w(o, c);
                    expected(i, o) = s;
                }
            const auto y = nn::linear<Arch>(x, w, b);
            test::check_close(y, expected, 1e-6 * double(in + 1), 1e-5,
                              std::string(Arch::name()) + ": [" + std::to_string(n) + ", " + std::to_string(in) +
                                  "] x [" + std::to_string(out) + ", " + std::to_string(in) + "]^T");
            // Threads share out the column panels, and a panel's rows when the panels are fewer
            // than two a thread: the same result, bit for bit.
            const auto on_two = nn::linear<Arch>(execution::parallel_policy{2}, x, w, b);
            const auto on_three = nn::linear<Arch>(execution::parallel_policy{3}, x, w);
            BOOST_TEST(on_two == y);
            BOOST_TEST(on_three == nn::linear<Arch>(x, w));
        }
    });
}

/// The literal x W^T + b in double.
template <class T>
xt::xtensor<double, 2> literal_linear(const xt::xtensor<T, 2>& x, const xt::xtensor<T, 2>& w,
                                      const xt::xtensor<T, 1>& b) {
    const std::size_t n = x.shape(0), in = x.shape(1), out = w.shape(0);
    xt::xtensor<double, 2> y = xt::empty<double>({n, out});
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t o = 0; o < out; ++o) {
            double s = b.size() ? double(b(o)) : 0.0;
            for (std::size_t c = 0; c < in; ++c) s += double(x(i, c)) * double(w(o, c));
            y(i, o) = s;
        }
    return y;
}

BOOST_AUTO_TEST_CASE(linear_in_double_against_double) {
    // Panels of 32 doubles, vectors of 2, 4 and 8.
    const std::array<std::size_t, 3> shapes[] = {{0, 3, 2}, {1, 1, 1}, {7, 9, 31}, {13, 40, 33}, {6, 5, 72}};
    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        for (const auto& [n, in, out] : shapes) {
            const auto x = test::random_tensor<double, 2>({n, in}, unsigned(n + 3));
            const auto w = test::random_tensor<double, 2>({out, in}, unsigned(out + 4));
            const auto b = test::random_tensor<double, 1>({out}, unsigned(out + 5));
            test::check_close(nn::linear<Arch>(x, w, b), literal_linear(x, w, b), 1e-14 * double(in + 1), 1e-13,
                              std::string(Arch::name()) + " double: [" + std::to_string(n) + ", " +
                                  std::to_string(in) + "] x [" + std::to_string(out) + ", " + std::to_string(in) +
                                  "]^T");
        }
    });
}

BOOST_AUTO_TEST_CASE(linear_layer_packs_once_and_applies_its_epilogue) {
    // By hand: x = [1, 2], W = [[1, 0], [0, 1], [1, -1]], b = [0.5, -3, 0]:
    // x W^T + b = [1.5, -1, -1]; ReLU [1.5, 0, 0]; GELU(v) = v Phi(v): GELU(1.5) = 1.5 x 0.9331928,
    // GELU(-1) = -Phi(-1) = -0.1586553.
    const xt::xtensor<float, 2> x1{{1, 2}}, w1{{1, 0}, {0, 1}, {1, -1}};
    const xt::xtensor<float, 1> b1{0.5f, -3.f, 0.f};
    const nn::linear_layer<float> small(w1, b1);
    const xt::xtensor<float, 2> plain{{1.5f, -1.f, -1.f}}, relu{{1.5f, 0.f, 0.f}};
    BOOST_TEST(small(x1) == plain);
    BOOST_TEST(small(execution::seq, x1, simd::activation::relu) == relu);
    const auto gelu = small(execution::seq, x1, simd::activation::gelu);
    BOOST_TEST(std::abs(gelu(0, 1) - -0.15865525f) < 1e-6f);
    BOOST_TEST(std::abs(gelu(0, 0) - 1.3997892f) < 1e-6f);

    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        for (const auto& [n, in, out] : {std::array<std::size_t, 3>{7, 19, 45}, {13, 64, 129}, {1, 3, 300}}) {
            const auto x = test::random_tensor<float, 2>({n, in}, 11), w = test::random_tensor<float, 2>({out, in}, 12);
            const auto b = test::random_tensor<float, 1>({out}, 13);
            const nn::linear_layer<float> layer(w, b);
            const std::string what = std::string(Arch::name()) + " [" + std::to_string(out) + ", " +
                                     std::to_string(in) + "]";
            // Only the packed panels are kept: the weight comes back from them as it was.
            BOOST_TEST(layer.weight() == w, what);
            BOOST_TEST(layer.bias() == b, what);
            // Packed once or for each product: the same values.
            const auto y = layer.template operator()<Arch>(x);
            BOOST_TEST(y == nn::linear<Arch>(x, w, b), what);
            test::check_close(y, literal_linear(x, w, b), 1e-6 * double(in + 1), 1e-5, what);
            // The activation as the GEMM stores, and the array's activation after it.
            xt::xtensor<float, 2> activated = y;
            simd::activate<Arch>(simd::activation::gelu, activated.data(), activated.size());
            test::check_close(layer.template operator()<Arch>(execution::seq, x, simd::activation::gelu), activated,
                              1e-7, 1e-6, what + " gelu");
            // A residual added as the results are stored.
            const auto residual = test::random_tensor<float, 2>({n, out}, 14);
            xt::xtensor<float, 2> sum = residual;
            simd::linear_rows<Arch>(execution::seq, as_rows(x), layer.packed(),
                                    simd::store_rows<float>{sum.data(), out, {layer.bias_data()}, true});
            const xt::xtensor<float, 2> added = residual + y;
            BOOST_TEST(sum == added, what + " residual");
            // Nothing stored past the last column: rows out + 3 apart, NaN between them.
            xt::xtensor<float, 2> wide = xt::empty<float>({n, out + 3});
            wide.fill(std::numeric_limits<float>::quiet_NaN());
            simd::linear_rows<Arch>(execution::seq, as_rows(x), layer.packed(),
                                    simd::store_rows<float>{wide.data(), out + 3, {layer.bias_data()}});
            const xt::xtensor<float, 2> stored = xt::view(wide, xt::all(), xt::range(0, out));
            BOOST_TEST(stored == y, what + " rows apart");
            BOOST_TEST(xt::all(xt::isnan(xt::view(wide, xt::all(), xt::range(out, out + 3)))), what + " rows apart");
            // Two weights side by side in one pass: y = x [W^T W2^T], each part as alone, the
            // lanes past W's last column not spilling into W2's first (out is not a multiple
            // of every vector width).
            const auto w2 = test::random_tensor<float, 2>({out + 2, in}, 15);
            const simd::packed_weight<float> second(execution::seq, as_rows(w2));
            const simd::packed_weight<float>* both[] = {&layer.packed(), &second};
            xt::xtensor<float, 2> joined = xt::empty<float>({n, 2 * out + 2});
            for (const int threads : {1, 2}) {
                joined.fill(std::numeric_limits<float>::quiet_NaN());
                simd::linear_rows<Arch>(execution::parallel_policy{threads}, as_rows(x), std::span<const simd::packed_weight<float>* const>(both),
                                        simd::store_rows<float>{joined.data(), 2 * out + 2});
                const xt::xtensor<float, 2> left = xt::view(joined, xt::all(), xt::range(0, out));
                const xt::xtensor<float, 2> right = xt::view(joined, xt::all(), xt::range(out, 2 * out + 2));
                BOOST_TEST(left == nn::linear<Arch>(x, w), what + " side by side");
                BOOST_TEST(right == nn::linear<Arch>(x, w2), what + " side by side");
            }
            // The same on two threads, bit for bit.
            BOOST_TEST(layer.template operator()<Arch>(execution::parallel_policy{2}, x) == y, what);
        }
    });
}

BOOST_AUTO_TEST_CASE(x_packed_once_and_w_packed_as_the_product_reaches_it) {
    // x packed once (`packed_rows`, a convolution's weights) times W^T gathered a panel at a
    // time (`packed_on_demand`, a convolution's columns): the values of the product that
    // packs both itself, on awkward shapes, a depth of two blocks (4100) and two threads.
    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        for (const auto& [n, in, out] : {std::array<std::size_t, 3>{7, 19, 45}, {13, 64, 129}, {1, 3, 300}, {8, 4100, 17},
                                          {5, 3, 1160}}) {
            const auto x = test::random_tensor<float, 2>({n, in}, 21), w = test::random_tensor<float, 2>({out, in}, 22);
            const std::string what = std::string(Arch::name()) + " x [" + std::to_string(n) + ", " + std::to_string(in) +
                                     "], W [" + std::to_string(out) + ", " + std::to_string(in) + "]";
            const simd::packed_rows<float> packed_x(as_rows(x));
            BOOST_TEST((packed_x.rows() == n && packed_x.cols() == in), what);
            const auto columns = simd::pack_on_demand<float>(
                in, out, [&](std::size_t column, std::size_t count, std::size_t first, std::size_t depth, std::size_t width, float* to) {
                    for (std::size_t p = 0; p < depth; ++p)
                        for (std::size_t o = 0; o < count; ++o) to[p * width + o] = w(column + o, first + p);
                });
            for (const int threads : {1, 2}) {
                xt::xtensor<float, 2> y = xt::empty<float>({n, out});
                simd::linear_rows<Arch>(execution::parallel_policy{threads}, packed_x, columns, simd::store_rows<float>{y.data(), out});
                BOOST_TEST(y == nn::linear<Arch>(x, w), what + " on " + std::to_string(threads) + " threads");
            }
        }
    });
    // W^T read in place (`rows_in_place`, an implicit GEMM's columns): its rows stored in
    // reverse order, each followed by NaNs up to a whole stored panel, which are read and
    // must not reach y.
    test::for_each_arch([&](auto arch) {
        using Arch = decltype(arch);
        for (const auto& [n, in, out] : {std::array<std::size_t, 3>{7, 19, 45}, {13, 64, 129}, {1, 3, 300}, {8, 4100, 17},
                                          {5, 3, 1160}, {6, 1, 1}}) {
            const auto x = test::random_tensor<float, 2>({n, in}, 23), w = test::random_tensor<float, 2>({out, in}, 24);
            const std::string what = std::string(Arch::name()) + " in place, x [" + std::to_string(n) + ", " +
                                     std::to_string(in) + "], W [" + std::to_string(out) + ", " + std::to_string(in) + "]";
            const std::size_t step = simd::panel_layout<float>::width_step, stride = (out + step - 1) / step * step;
            std::vector<float> stored(in * stride, std::numeric_limits<float>::quiet_NaN());
            std::vector<const float*> rows(in);
            for (std::size_t p = 0; p < in; ++p) {
                float* row = stored.data() + (in - 1 - p) * stride;
                for (std::size_t o = 0; o < out; ++o) row[o] = w(o, p);
                rows[p] = row;
            }
            const simd::packed_rows<float> packed_x(as_rows(x));
            for (const int threads : {1, 2}) {
                xt::xtensor<float, 2> y = xt::empty<float>({n, out});
                simd::linear_rows<Arch>(execution::parallel_policy{threads}, packed_x, simd::rows_in_place<float>{in, out, rows.data()},
                                        simd::store_rows<float>{y.data(), out});
                BOOST_TEST(y == nn::linear<Arch>(x, w), what + " on " + std::to_string(threads) + " threads");
            }
        }
    });
    // The panels gathered on demand: rows of 512 floats at most, a work array of 256 KiB at
    // most, two panels a thread at least, never narrower than a stored panel.
    using layout = simd::panel_layout<float>;
    BOOST_TEST(layout::gathered_width(3, 1160, 1) == 512);     // panels of 512, 512 and 136
    BOOST_TEST(layout::gathered_width(256, 4096, 1) == 256);   // 65536 / 256 floats in 256 KiB
    BOOST_TEST(layout::gathered_width(1728, 1024, 1) == 64);   // 37 floats: one stored panel's 64
    BOOST_TEST(layout::gathered_width(16, 400, 2) == 64);      // 100 a panel for four: 64
    BOOST_TEST(layout::gathered_width(16, 1024, 2) == 256);
    BOOST_TEST(layout::panels(3, 1160, 512).back().columns == 136);
    BOOST_TEST(layout::panels(3, 1160, 512).back().width == 144);

    const simd::packed_rows<float> x(as_rows(xt::xtensor<float, 2>(xt::zeros<float>({2, 3}))));
    const auto four = simd::pack_on_demand<float>(4, 5, [](auto...) {});
    test::check_invalid([&] { simd::linear_rows(execution::seq, x, four, simd::store_rows<float>{nullptr, 5}); }, "simd::linear_rows",
                        "x [2, 3]", "4 inputs");
    test::check_invalid(
        [&] { simd::linear_rows(execution::seq, x, simd::rows_in_place<float>{4, 5, nullptr}, simd::store_rows<float>{nullptr, 5}); },
        "simd::linear_rows", "x [2, 3]", "4 inputs");
}

BOOST_AUTO_TEST_CASE(linear_layer_names_bad_shapes) {
    const xt::xtensor<float, 2> w = xt::zeros<float>({6, 4});
    test::check_invalid([&] { nn::linear_layer<float>(w, xt::zeros<float>({5})); }, "nn::linear_layer",
                        "weight [6, 4]", "bias [5]");
    const nn::linear_layer<float> layer(w);
    BOOST_TEST(layer.bias_data() == nullptr);
    const xt::xtensor<float, 2> x = xt::zeros<float>({2, 3});
    test::check_invalid([&] { layer(x); }, "nn::linear_layer", "x [2, 3]", "weight [6, 4]");
    test::check_invalid([&] { simd::linear_rows(execution::seq, as_rows(x), layer.packed(), simd::store_rows<float>{nullptr, 6}); },
                        "simd::linear_rows", "x [2, 3]", "4 inputs");
}

namespace {
/// Literal non-local block: z_i = x_i + W_z (1 / C_i) sum_j f(x_i, x_j) W_g x_j.
xt::xtensor<double, 2> literal_block(const xt::xtensor<double, 2>& x, const xt::xtensor<double, 2>& wg,
                                     const xt::xtensor<double, 2>& wz,
                                     const std::function<double(std::size_t, std::size_t)>& f, bool by_count) {
    const std::size_t n = x.shape(0), c = x.shape(1), e = wg.shape(0);
    xt::xtensor<double, 2> g = xt::zeros<double>({n, e}), z = x;
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t a = 0; a < e; ++a)
            for (std::size_t t = 0; t < c; ++t) g(j, a) += wg(a, t) * x(j, t);
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> y(e, 0.0);
        double norm = 0;
        for (std::size_t j = 0; j < n; ++j) {
            const double s = f(i, j);
            norm += by_count ? 1.0 : s;
            for (std::size_t a = 0; a < e; ++a) y[a] += s * g(j, a);
        }
        for (std::size_t t = 0; t < c; ++t)
            for (std::size_t a = 0; a < e; ++a) z(i, t) += wz(t, a) * y[a] / norm;
    }
    return z;
}
double dot_rows(const xt::xtensor<double, 2>& w, const xt::xtensor<double, 2>& x, std::size_t e, std::size_t i) {
    double s = 0;
    for (std::size_t t = 0; t < x.shape(1); ++t) s += w(e, t) * x(i, t);
    return s;
}
}  // namespace

BOOST_AUTO_TEST_CASE(four_forms_of_the_block) {
    const std::size_t n = 12, c = 6, e = 4;
    const auto x = test::random_tensor<double, 2>({n, c}, 10);
    const auto wg = test::random_tensor<double, 2>({e, c}, 11), wz = test::random_tensor<double, 2>({c, e}, 12);
    const auto theta = test::random_tensor<double, 2>({e, c}, 13), phi = test::random_tensor<double, 2>({e, c}, 14);
    const auto w_f = test::random_tensor<double, 1>({2 * e}, 15);
    const auto embedded = [&](std::size_t i, std::size_t j) {
        double s = 0;
        for (std::size_t a = 0; a < e; ++a) s += dot_rows(theta, x, a, i) * dot_rows(phi, x, a, j);
        return s;
    };

    const nn::nonlocal_block gaussian_block(gaussian{}, sum{}, wg, wz);
    test::check_close(gaussian_block(x),
                      literal_block(x, wg, wz, [&](std::size_t i, std::size_t j) {
                          double s = 0;
                          for (std::size_t t = 0; t < c; ++t) s += x(i, t) * x(j, t);
                          return std::exp(s);
                      }, false),
                      1e-12, 1e-12, "Gaussian");
    test::check_close(nn::nonlocal_block(embedded_gaussian(theta, phi), sum{}, wg, wz)(x),
                      literal_block(x, wg, wz, [&](auto i, auto j) { return std::exp(embedded(i, j)); }, false), 1e-12,
                      1e-12, "embedded Gaussian");
    test::check_close(nn::nonlocal_block(embedded_dot_product(theta, phi), count{}, wg, wz)(x),
                      literal_block(x, wg, wz, embedded, true), 1e-12, 1e-12, "dot product");
    test::check_close(nn::nonlocal_block(concatenation(theta, phi, w_f), count{}, wg, wz)(x),
                      literal_block(x, wg, wz, [&](std::size_t i, std::size_t j) {
                          double s = 0;
                          for (std::size_t a = 0; a < e; ++a)
                              s += w_f(a) * dot_rows(theta, x, a, i) + w_f(e + a) * dot_rows(phi, x, a, j);
                          return std::max(s, 0.0);
                      }, true),
                      1e-12, 1e-12, "concatenation");

    // Float and batched inputs: each batch item is the block on its own.
    const auto xb = test::random_tensor<float, 3>({2, n, c}, 16);
    const auto zb = gaussian_block(xb);
    for (std::size_t b = 0; b < 2; ++b) {
        const xt::xtensor<double, 2> xi = xt::view(xb, b);
        const xt::xtensor<float, 2> zi = xt::view(zb, b);
        test::check_close(zi, gaussian_block(xi), 1e-4, 1e-4, "batch item");
    }
}

BOOST_AUTO_TEST_CASE(maps_and_tokens_exchange_on_awkward_shapes) {
    // [B, C, P] maps and [B, P, C] tokens, with fewer channels than pixels and more (the two
    // loop orders), empty and single-value, in the identity order and with token r at pixel
    // P - 1 - r; each value an integer code of (b, c, pixel).
    for (const auto& shape : {std::array<std::size_t, 3>{1, 0, 5}, {2, 3, 0}, {1, 1, 1}, {2, 17, 33}, {2, 33, 17},
                              {1, 16, 16}, {1, 144, 1024}, {1, 1024, 144}, {3, 15, 49}})
        for (const bool reversed : {false, true}) {
            const std::size_t B = shape[0], C = shape[1], P = shape[2];   // named: lambdas below capture them
            const auto pixel_of = [&](std::size_t r) { return reversed ? P - 1 - r : r; };
            const auto code = [&](std::size_t b, std::size_t c, std::size_t pixel) { return float((b * C + c) * P + pixel); };
            std::vector<float> maps(B * C * P), tokens(B * P * C, -1.f), back(B * C * P, -1.f);
            for (std::size_t i = 0; i < maps.size(); ++i) maps[i] = float(i);
            detail::maps_to_tokens(maps.data(), B, C, P, tokens.data(), pixel_of);
            bool tokens_right = true;
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t r = 0; r < P; ++r)
                    for (std::size_t c = 0; c < C; ++c) tokens_right &= tokens[(b * P + r) * C + c] == code(b, c, pixel_of(r));
            BOOST_TEST(tokens_right, "maps_to_tokens, B " << B << ", C " << C << ", P " << P << ", reversed " << reversed);
            detail::tokens_to_maps(tokens.data(), B, P, C, back.data(), pixel_of);
            BOOST_TEST(back == maps, "tokens_to_maps undoes it, B " << B << ", C " << C << ", P " << P);
        }
}

BOOST_AUTO_TEST_CASE(block_shapes) {
    const xt::xtensor<double, 2> wg = xt::zeros<double>({4, 6}), wz = xt::zeros<double>({5, 4});
    test::check_invalid([&] { nn::nonlocal_block(gaussian{}, sum{}, wg, wz); }, "g_weight [4, 6]", "z_weight [5, 4]");
    const xt::xtensor<double, 2> wz6 = xt::zeros<double>({6, 4}), x = xt::zeros<double>({3, 5});
    test::check_invalid([&] { nn::nonlocal_block(gaussian{}, sum{}, wg, wz6)(x); }, "x [3, 5]", "g_weight [4, 6]");
}

BOOST_AUTO_TEST_SUITE_END()
