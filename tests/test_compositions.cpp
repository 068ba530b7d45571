// The table of compositions (DESIGN.md, section 1): every row as one
// weighted_aggregate composition, against values computed by hand (with an
// independent script, from the formula) on tiny inputs and against literal
// loops or the reference on random ones.
#include <nonlocal/nonlocal.hpp>

#include <fstream>

#include <xtensor/xview.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_compositions)

namespace {
double literal_softmax_row(const std::vector<double>& logits, const std::vector<double>& values) {
    double m = -INFINITY, num = 0, den = 0;
    for (double l : logits) m = std::max(m, l);
    for (std::size_t t = 0; t < logits.size(); ++t) {
        num += std::exp(logits[t] - m) * values[t];
        den += std::exp(logits[t] - m);
    }
    return num / den;
}
const xt::xtensor<double, 2> image5 = {{10, 10, 10, 10, 10},
                                       {10, 50, 50, 50, 10},
                                       {10, 50, 90, 50, 10},
                                       {10, 50, 50, 50, 10},
                                       {10, 10, 10, 10, 100}};
}  // namespace

BOOST_AUTO_TEST_CASE(scaled_dot_product_attention) {
    const xt::xtensor<double, 2> x = {{1, 0}, {0, 1}, {1, 1}}, v = {{1, 2}, {3, 4}, {5, 6}};
    const xt::xtensor<double, 2> expected = {
        {3, 4}, {3.40667255607872, 4.40667255607872}, {3.51046953045366, 4.51046953045366}};
    test::check_close(weighted_aggregate(x, x, v, scaled_dot_product{}, dense{}, softmax{}), expected, 1e-13, 1e-13);
    const xt::xtensor<float, 2> xf = x, vf = v;
    test::check_close(attention(xf, xf, vf), expected, 1e-6, 1e-6);
}

BOOST_AUTO_TEST_CASE(causal_attention) {
    const xt::xtensor<double, 2> x = {{1, 0}, {0, 1}, {1, 1}}, v = {{1, 2}, {3, 4}, {5, 6}};
    const xt::xtensor<double, 2> expected = {
        {1, 2}, {2.33952309865331, 3.33952309865331}, {3.51046953045366, 4.51046953045366}};
    test::check_close(attention(x, x, v, causal{}), expected, 1e-13, 1e-13);
}

BOOST_AUTO_TEST_CASE(neighborhood_attention) {
    // 1-D band of radius 1 on 4 tokens, logit = x_i x_j (scale 1): token 0 sees {0, 1, 2}, token 3 sees {1, 2, 3}.
    const xt::xtensor<double, 2> x = {{0.5}, {-1.0}, {2.0}, {1.5}}, v = {{1}, {2}, {3}, {4}};
    const auto y = attention(x, x, v, window1d{1}, scaled_dot_product{1.0});
    BOOST_TEST(std::abs(y(0, 0) - 2.31119697446054) < 1e-13);
    BOOST_TEST(std::abs(y(3, 0) - 3.31093033951714) < 1e-13);

    // 2-D 3 x 3 windows with dilation and a relative position bias, against a
    // literal masked softmax over all keys.
    const std::size_t H = 6, W = 7, n = H * W, d = 8;
    const window2d win{H, W, 3, 2};
    const auto q = test::random_tensor<double, 2>({n, d}, 1), k = test::random_tensor<double, 2>({n, d}, 2);
    const auto vals = test::random_tensor<double, 2>({n, 1}, 3);
    const auto table = test::random_tensor<double, 3>({1, 5, 5}, 4);
    const auto got = weighted_aggregate(q, k, vals, with_position_bias(scaled_dot_product{}, table, win), win, softmax{});
    for (std::size_t i = 0; i < n; ++i) {
        const std::ptrdiff_t r = i / W, c = i % W;
        // NATTEN-style window start on one axis: centred, shifted inward, inside the dilation group.
        const auto start = [](std::ptrdiff_t p, std::ptrdiff_t len) {
            const std::ptrdiff_t g = p % 2, glen = (len - g + 1) / 2;
            return g + 2 * std::clamp<std::ptrdiff_t>(p / 2 - 1, 0, glen - 3);
        };
        std::vector<double> logits, values;
        for (std::ptrdiff_t rr = start(r, H), tr = 0; tr < 3; rr += 2, ++tr)
            for (std::ptrdiff_t cc = start(c, W), tc = 0; tc < 3; cc += 2, ++tc) {
                const std::size_t j = rr * W + cc;
                double l = 0;
                for (std::size_t t = 0; t < d; ++t) l += q(i, t) * k(j, t);
                logits.push_back(l / std::sqrt(double(d)) + table(0, (rr - r) / 2 + 2, (cc - c) / 2 + 2));
                values.push_back(vals(j, 0));
            }
        BOOST_TEST(std::abs(got(i, 0) - literal_softmax_row(logits, values)) < 1e-12);
    }
}

BOOST_AUTO_TEST_CASE(mobilevit_attention) {
    // MobileViT's unfold -> attention within each patch offset -> fold, done literally.
    const std::size_t H = 6, W = 4, ph = 2, pw = 2, d = 5;
    const auto x = test::random_tensor<float, 2>({H * W, d}, 5);
    const auto y = attention(x, x, x, patch_group{H, W, ph, pw});
    xt::xtensor<double, 2> expected = xt::zeros<double>({H * W, d});
    for (std::size_t orow = 0; orow < ph; ++orow)
        for (std::size_t ocol = 0; ocol < pw; ++ocol) {
            std::vector<std::size_t> tokens;   // unfold: the pixels at offset (orow, ocol) of every patch
            for (std::size_t r = orow; r < H; r += ph)
                for (std::size_t c = ocol; c < W; c += pw) tokens.push_back(r * W + c);
            for (std::size_t i : tokens)
                for (std::size_t ch = 0; ch < d; ++ch) {
                    std::vector<double> logits, values;
                    for (std::size_t j : tokens) {
                        double l = 0;
                        for (std::size_t t = 0; t < d; ++t) l += double(x(i, t)) * x(j, t);
                        logits.push_back(l / std::sqrt(double(d)));
                        values.push_back(x(j, ch));
                    }
                    expected(i, ch) = literal_softmax_row(logits, values);   // fold: back to pixel i
                }
        }
    test::check_close(y, expected, 1e-6, 1e-5);
}

BOOST_AUTO_TEST_CASE(non_local_means) {
    // Patch radius 1 (reflected borders), 3 x 3 search window, h = 30:
    // s = exp(-mean squared patch distance / h^2) = gaussian_distance{h * sqrt(9)}.
    const auto patches = patch_features<double>(image5, 1);
    const xt::xtensor<double, 2> values = xt::reshape_view(image5, {25, 1});
    const auto y = weighted_aggregate(patches, patches, values, gaussian_distance{30.0 * 3}, window2d{5, 5, 3}, sum{});
    BOOST_TEST(std::abs(y(12, 0) - 61.5373602885843) < 1e-11);
    BOOST_TEST(std::abs(y(0, 0) - 19.884889567695) < 1e-11);
    BOOST_TEST(std::abs(y(24, 0) - 66.8051484926866) < 1e-11);
    // A constant image stays constant.
    const xt::xtensor<float, 2> flat = xt::ones<float>({6, 7}) * 42.f;
    const auto fp = patch_features(flat, 2);
    const xt::xtensor<float, 2> fv = xt::reshape_view(flat, {42, 1});
    const auto same = weighted_aggregate(fp, fp, fv, gaussian_distance{10.0}, window2d{6, 7, 5}, sum{});
    test::check_close(same, fv, 1e-4, 1e-6);
}

BOOST_AUTO_TEST_CASE(joint_bilateral) {
    // Guide = image5, values = 5 r + c, sigma_s = 1, sigma_r = 20, 3 x 3 window.
    const auto features = bilateral_features<double>(image5, 1.0, 20.0);
    xt::xtensor<double, 2> values = xt::empty<double>({25, 1});
    for (std::size_t i = 0; i < 25; ++i) values(i, 0) = double(i);
    const auto y = weighted_aggregate(features, features, values, gaussian_distance{1.0}, window2d{5, 5, 3}, sum{});
    BOOST_TEST(std::abs(y(12, 0) - 12.0) < 1e-12);
    BOOST_TEST(std::abs(y(4, 0) - 5.50301112152675) < 1e-12);
}

BOOST_AUTO_TEST_CASE(linear_ar_jacobi_sweep) {
    // A = L(w_ij + w_ji) + diag(alpha), b = alpha xhat on a 3 x 3 grid with 4-neighbours and
    // w_ij = exp(-(g_i - g_j)^2). Jacobi: x1 = D^-1 (b - (A - D) x0), computed by hand.
    // Since w is symmetric, w_ij + w_ji = 2 w_ij: the aggregate with s = w and a data term
    // alpha / 2 is the same ratio.
    const xt::xtensor<double, 2> guide = {{0.0}, {0.1}, {0.9}, {0.2}, {0.3}, {1.0}, {0.1}, {0.8}, {1.1}};
    const xt::xtensor<double, 1> alpha = {2, 0, 2, 0, 0, 0, 2, 0, 2};
    const xt::xtensor<double, 2> xhat = {{1}, {0}, {5}, {0}, {0}, {0}, {2}, {0}, {4}};
    const xt::xtensor<double, 2> x0 = {{1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}};
    const auto x1 = weighted_aggregate(guide, guide, x0, gaussian_distance{1.0}, grid_stencil{3, 3, 4},
                                       sum_with_data(alpha / 2, xhat));
    const double expected[] = {2.31231076757308, 2.97638511735843, 4.76489989132466,
                               4.36649835422296, 4.72372358051703, 5.76371341221185,
                               4.17309320763856, 7.11723158047471, 5.94072356935872};
    for (std::size_t i = 0; i < 9; ++i) BOOST_TEST(std::abs(x1(i, 0) - expected[i]) < 1e-12);
}

BOOST_AUTO_TEST_CASE(dissimilarity_matrix) {
    const xt::xtensor<double, 2> p = {{0, 0}, {3, 4}, {1, 1}};
    const xt::xtensor<double, 2> expected = {{0, 25, 2}, {25, 0, 13}, {2, 13, 0}};
    BOOST_TEST(pairwise(p, p, squared_euclidean{}) == expected);
    const xt::xtensor<float, 2> pf = p;
    test::check_close(pairwise(pf, pf, squared_euclidean{}), expected, 1e-5, 1e-6);
    // The Gram matrix is the dot-product dissimilarity; cosine normalises it.
    const xt::xtensor<double, 2> gram = {{0, 0, 0}, {0, 25, 7}, {0, 7, 2}};
    BOOST_TEST(pairwise(p, p, dot_product{}) == gram);
}

BOOST_AUTO_TEST_CASE(iris_dissimilarities) {
    std::ifstream in(NONLOCAL_TEST_DATA_DIR "/iris.csv");
    if (!in) {
        BOOST_TEST_MESSAGE("skipped: reference data not found at " NONLOCAL_TEST_DATA_DIR "/iris.csv");
        return;
    }
    std::string line;
    std::getline(in, line);   // row count, feature count, class names
    std::vector<double> values;
    std::size_t rows = 0;
    while (std::getline(in, line)) {
        std::stringstream s(line);
        std::string cell;
        for (int c = 0; c < 4 && std::getline(s, cell, ','); ++c) values.push_back(std::stod(cell));
        ++rows;
    }
    BOOST_TEST(rows == 150u);
    xt::xtensor<double, 2> x = xt::empty<double>({rows, std::size_t(4)});
    std::copy(values.begin(), values.end(), x.begin());
    const auto d = pairwise(x, x, squared_euclidean{});
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < rows; ++j) {
            double literal = 0;
            for (std::size_t c = 0; c < 4; ++c) literal += (x(i, c) - x(j, c)) * (x(i, c) - x(j, c));
            BOOST_TEST(std::abs(d(i, j) - literal) < 1e-12);
            BOOST_TEST(d(i, j) == d(j, i));
        }
}

BOOST_AUTO_TEST_SUITE_END()
