// nn::nonlocal_feature_block (nn/nonlocal_block.hpp): the non-local block on feature maps and
// videos against its definition written out in double, every form, with and without
// sub-sampling, and its loader for the PyTorch re-implementation's names.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <filesystem>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "support/support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_nonlocal_block)

namespace {

/// The block's weights: 1 x 1 convolutions as matrices, W_z's batch norm as scale and shift.
struct block_weights {
    std::size_t C, e;
    xt::xtensor<float, 2> g, theta, phi, w_z;
    xt::xtensor<float, 1> g_b, theta_b, phi_b, w_z_b, bn_w, bn_b, bn_mean, bn_var, concat;
    block_weights(std::size_t C_, std::size_t e_, unsigned seed)
        : C(C_), e(e_), g(test::random_tensor<float, 2>({e, C}, seed)), theta(test::random_tensor<float, 2>({e, C}, seed + 1)),
          phi(test::random_tensor<float, 2>({e, C}, seed + 2)), w_z(test::random_tensor<float, 2>({C, e}, seed + 3)),
          g_b(test::random_tensor<float, 1>({e}, seed + 4)), theta_b(test::random_tensor<float, 1>({e}, seed + 5)),
          phi_b(test::random_tensor<float, 1>({e}, seed + 6)), w_z_b(test::random_tensor<float, 1>({C}, seed + 7)),
          bn_w(test::random_tensor<float, 1>({C}, seed + 8, 0.5, 2)), bn_b(test::random_tensor<float, 1>({C}, seed + 9)),
          bn_mean(test::random_tensor<float, 1>({C}, seed + 10)), bn_var(test::random_tensor<float, 1>({C}, seed + 11, 0.2, 2)),
          concat(test::random_tensor<float, 1>({2 * e}, seed + 12)) {}

    static nn::conv2d<float> pointwise(const xt::xtensor<float, 2>& w, const xt::xtensor<float, 1>& b) {
        return nn::conv2d<float>(xt::xtensor<float, 4>(xt::reshape_view(w, {w.shape(0), w.shape(1), std::size_t(1), std::size_t(1)})), b);
    }
    nn::nonlocal_feature_block block(nn::nonlocal_form form, bool sub_sample) const {
        const bool embedded = form != nn::nonlocal_form::gaussian;
        const nn::batch_norm2d<float> bn(bn_w, bn_b, bn_mean, bn_var);
        return {form,
                pointwise(g, g_b),
                embedded ? std::optional(pointwise(theta, theta_b)) : std::nullopt,
                embedded ? std::optional(pointwise(phi, phi_b)) : std::nullopt,
                nn::fold(pointwise(w_z, w_z_b), bn),
                sub_sample,
                form == nn::nonlocal_form::concatenation ? concat : xt::xtensor<float, 1>()};
    }
};

/// The block on x [B, C, T, H, W] as its definition reads, in double.
xt::xtensor<double, 5> literal_block(const xt::xtensor<float, 5>& x, const block_weights& w, nn::nonlocal_form form,
                                     bool sub_sample) {
    const std::size_t B = x.shape(0), C = x.shape(1), T = x.shape(2), H = x.shape(3), W = x.shape(4), e = w.e;
    const std::size_t h = sub_sample ? H / 2 : H, wd = sub_sample ? W / 2 : W, s = sub_sample ? 2 : 1;
    xt::xtensor<double, 5> z = xt::cast<double>(x);
    for (std::size_t b = 0; b < B; ++b) {
        // A 1 x 1 convolution at a pixel; the same, max-pooled over the 2 x 2 window of a
        // pooled position; the identity in the Gaussian form.
        const auto project = [&](const xt::xtensor<float, 2>* m, const xt::xtensor<float, 1>* bias, std::size_t t,
                                 std::size_t y, std::size_t xx) {
            std::vector<double> out(m ? m->shape(0) : C);
            for (std::size_t o = 0; o < out.size(); ++o) {
                if (!m) { out[o] = x(b, o, t, y, xx); continue; }
                double sum = (*bias)(o);
                for (std::size_t c = 0; c < C; ++c) sum += double((*m)(o, c)) * x(b, c, t, y, xx);
                out[o] = sum;
            }
            return out;
        };
        const auto pooled = [&](const xt::xtensor<float, 2>* m, const xt::xtensor<float, 1>* bias, std::size_t t,
                                std::size_t y, std::size_t xx) {
            std::vector<double> best = project(m, bias, t, y * s, xx * s);
            for (std::size_t dy = 0; dy < s; ++dy)
                for (std::size_t dx = 0; dx < s; ++dx) {
                    const auto v = project(m, bias, t, y * s + dy, xx * s + dx);
                    for (std::size_t o = 0; o < v.size(); ++o) best[o] = std::max(best[o], v[o]);
                }
            return best;
        };
        const bool embedded = form != nn::nonlocal_form::gaussian;
        std::vector<std::vector<double>> keys, values;
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t y = 0; y < h; ++y)
                for (std::size_t xx = 0; xx < wd; ++xx) {
                    keys.push_back(pooled(embedded ? &w.phi : nullptr, &w.phi_b, t, y, xx));
                    values.push_back(pooled(&w.g, &w.g_b, t, y, xx));
                }
        const std::size_t M = keys.size();
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t y = 0; y < H; ++y)
                for (std::size_t xx = 0; xx < W; ++xx) {
                    const auto q = project(embedded ? &w.theta : nullptr, &w.theta_b, t, y, xx);
                    std::vector<double> f(M);
                    double top = -INFINITY, total = 0;
                    for (std::size_t j = 0; j < M; ++j) {
                        double dot = 0, a = 0, c = 0;
                        for (std::size_t k = 0; k < q.size(); ++k) dot += q[k] * keys[j][k];
                        if (form == nn::nonlocal_form::concatenation) {
                            for (std::size_t k = 0; k < e; ++k) a += w.concat(k) * q[k], c += w.concat(e + k) * keys[j][k];
                            f[j] = std::max(0.0, a + c);
                        } else {
                            f[j] = dot;
                        }
                        top = std::max(top, f[j]);
                    }
                    const bool softmax = form == nn::nonlocal_form::gaussian || form == nn::nonlocal_form::embedded_gaussian;
                    for (std::size_t j = 0; j < M; ++j) total += softmax ? (f[j] = std::exp(f[j] - top)) : 0.0;
                    std::vector<double> yv(e, 0.0);
                    for (std::size_t j = 0; j < M; ++j)
                        for (std::size_t k = 0; k < e; ++k) yv[k] += f[j] / (softmax ? total : double(M)) * values[j][k];
                    for (std::size_t c = 0; c < C; ++c) {
                        double wy = w.w_z_b(c);
                        for (std::size_t k = 0; k < e; ++k) wy += double(w.w_z(c, k)) * yv[k];
                        const double normed = (wy - w.bn_mean(c)) / std::sqrt(double(w.bn_var(c)) + 1e-5) * w.bn_w(c) + w.bn_b(c);
                        z(b, c, t, y, xx) += normed;
                    }
                }
    }
    return z;
}

const nn::nonlocal_form forms[] = {nn::nonlocal_form::gaussian, nn::nonlocal_form::embedded_gaussian,
                                   nn::nonlocal_form::dot_product, nn::nonlocal_form::concatenation};

}  // namespace

BOOST_AUTO_TEST_CASE(feature_maps_and_videos_as_defined) {
    const block_weights w(6, 3, 1);
    const auto maps = test::random_tensor<float, 4>({2, 6, 5, 7}, 2);   // odd: pooling drops a row and a column
    const xt::xtensor<float, 5> as_video = xt::reshape_view(maps, {std::size_t(2), std::size_t(6), std::size_t(1), std::size_t(5), std::size_t(7)});
    const auto video = test::random_tensor<float, 5>({1, 6, 3, 4, 6}, 3);
    for (const auto form : forms)
        for (const bool sub_sample : {false, true}) {
            const auto block = w.block(form, sub_sample);
            const std::string what = "form " + std::to_string(int(form)) + (sub_sample ? ", sub-sampled" : "");
            const xt::xtensor<double, 4> expected = xt::reshape_view(literal_block(as_video, w, form, sub_sample), maps.shape());
            const auto z = block(maps);
            test::check_close(z, expected, 1e-5, 1e-5, what + ", [B, C, H, W]");
            BOOST_TEST(block(execution::parallel_policy{2}, maps) == z, what);
            test::check_close(block(video), literal_block(video, w, form, sub_sample), 1e-5, 1e-5, what + ", video");
        }
}

BOOST_AUTO_TEST_CASE(loads_the_pytorch_reimplementation) {
    const block_weights w(4, 2, 20);
    const auto video = test::random_tensor<float, 5>({1, 4, 2, 4, 4}, 21);
    const auto dir = test::scratch_dir("nonlocal_test_nonlocal_block");
    std::filesystem::create_directories(dir);
    const std::string prefix = (dir / "block_").string();
    // NONLocalBlock3D(4, sub_sample=True, bn_layer=True), concatenation: 1 x 1 x 1 convolutions.
    const auto conv3d = [](const xt::xtensor<float, 2>& m) {
        return xt::xtensor<float, 5>(xt::reshape_view(m, {m.shape(0), m.shape(1), std::size_t(1), std::size_t(1), std::size_t(1)}));
    };
    xt::dump_npy(prefix + "g_0_weight.npy", conv3d(w.g));
    xt::dump_npy(prefix + "g_0_bias.npy", w.g_b);
    xt::dump_npy(prefix + "theta_weight.npy", conv3d(w.theta));
    xt::dump_npy(prefix + "theta_bias.npy", w.theta_b);
    xt::dump_npy(prefix + "phi_0_weight.npy", conv3d(w.phi));
    xt::dump_npy(prefix + "phi_0_bias.npy", w.phi_b);
    xt::dump_npy(prefix + "W_0_weight.npy", conv3d(w.w_z));
    xt::dump_npy(prefix + "W_0_bias.npy", w.w_z_b);
    xt::dump_npy(prefix + "W_1_weight.npy", w.bn_w);
    xt::dump_npy(prefix + "W_1_bias.npy", w.bn_b);
    xt::dump_npy(prefix + "W_1_running_mean.npy", w.bn_mean);
    xt::dump_npy(prefix + "W_1_running_var.npy", w.bn_var);
    xt::dump_npy(prefix + "concat_project_0_weight.npy",
                 xt::xtensor<float, 4>(xt::reshape_view(w.concat, {std::size_t(1), 2 * w.e, std::size_t(1), std::size_t(1)})));
    const nn::nonlocal_block_config config{.form = nn::nonlocal_form::concatenation, .in_channels = 4, .dimensions = 3};
    const auto loaded = nn::load_npy(prefix, config);
    BOOST_TEST(loaded.sub_sample());
    BOOST_TEST(loaded.inter_channels() == 2u);
    BOOST_TEST(loaded(video) == w.block(nn::nonlocal_form::concatenation, true)(video));
    xt::dump_npy(prefix + "theta_weight.npy", xt::xtensor<float, 4>(xt::zeros<float>({2, 4, 3, 3})));
    // The dot-product form has no concat_project; a 3 x 3 theta is another layer.
    auto dot_product = config;
    dot_product.form = nn::nonlocal_form::dot_product;
    test::check_invalid([&] { nn::load_npy(prefix, dot_product); },
                        "nn::load_npy", "(2 problems)",
                        "theta_weight.npy: entry theta_weight holds [2, 4, 3, 3]; expected [2, 4, 1, 1, 1]",
                        "unexpected concat_project_0_weight");
    // Without sub-sampling the entries are g and phi, not g.0 and phi.0.
    auto dense_keys = config;
    dense_keys.sub_sample = false;
    test::check_invalid([&] { nn::load_npy(prefix, dense_keys); }, "missing g_weight [2, 4, 1, 1, 1]",
                        "unexpected g_0_weight");
    std::filesystem::remove_all(dir);

    test::check_invalid([&] { w.block(nn::nonlocal_form::dot_product, false)(xt::xtensor<float, 4>(xt::zeros<float>({1, 3, 4, 4}))); },
                        "nn::nonlocal_feature_block", "x [1, 3, 4, 4]", "4 channels");
    test::check_invalid([&] { w.block(nn::nonlocal_form::dot_product, true)(xt::xtensor<float, 4>(xt::zeros<float>({1, 4, 1, 4}))); },
                        "at least 2 x 2");
    test::check_invalid([&] {
        nn::nonlocal_feature_block(nn::nonlocal_form::gaussian, block_weights::pointwise(w.g, w.g_b),
                                   block_weights::pointwise(w.theta, w.theta_b), std::nullopt,
                                   block_weights::pointwise(w.w_z, w.w_z_b), false);
    }, "nn::nonlocal_feature_block", "no theta and phi in the Gaussian form");
}

BOOST_AUTO_TEST_SUITE_END()
