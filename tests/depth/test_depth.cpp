// depth/tasks.hpp: the depth tasks against their definitions (the normalised
// model as two dense solves, the separable model as two separable smooths, coarse-to-fine stages done by hand, the median and
// the depth passes as their compositions), their behaviour on constant depth and
// colour edges, concurrency, and bad input.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>

#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"
#include "support/systems.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_depth)

BOOST_AUTO_TEST_CASE(depth_tasks_run_concurrently) {
    // A dataset refined one pair per thread: every call owns its system and buffers,
    // so concurrent calls give what sequential ones do.
    std::vector<xt::xtensor<float, 3>> guides;
    std::vector<xt::xtensor<float, 2>> depths;
    for (unsigned k = 0; k < 4; ++k) {
        guides.push_back(test::random_tensor<float, 3>({20 + k, 25, 3}, 30 + k, 0, 255));
        xt::xtensor<float, 2> d = test::random_tensor<float, 2>({20 + k, 25}, 40 + k, 10, 90);
        for (std::size_t i = 0; i < d.size(); i += 2) d.data()[i] = 0;
        depths.push_back(d);
    }
    std::vector<xt::xtensor<float, 2>> sequential(4), concurrent(4);
    for (std::size_t k = 0; k < 4; ++k) sequential[k] = fill_depth(depths[k], guides[k]).depth;
    detail::parallel_for(4, 2, [&](std::size_t k) { concurrent[k] = fill_depth(depths[k], guides[k]).depth; });
    for (std::size_t k = 0; k < 4; ++k) BOOST_TEST(concurrent[k] == sequential[k]);
}

namespace {
/// An RGB guide [H, W, 3] as the depth tasks compare it by default: Y, 1.5 Cb, 1.5 Cr of BT.601.
xt::xtensor<double, 3> luma_chroma(const xt::xtensor<double, 3>& guide) {
    xt::xtensor<double, 3> ycc = xt::empty<double>(guide.shape());
    for (std::size_t r = 0; r < guide.shape(0); ++r)
        for (std::size_t c = 0; c < guide.shape(1); ++c) {
            const double R = guide(r, c, 0), G = guide(r, c, 1), B = guide(r, c, 2), Y = 0.299 * R + 0.587 * G + 0.114 * B;
            ycc(r, c, 0) = Y, ycc(r, c, 1) = 1.5 * 0.564 * (B - Y), ycc(r, c, 2) = 1.5 * 0.713 * (R - Y);
        }
    return ycc;
}

/// A random depth in [50, 90] observed on about `fraction` of an H x W grid and at pixel
/// `always` (0 elsewhere), with its mask: {depth, mask}.
std::pair<xt::xtensor<double, 2>, xt::xtensor<double, 2>> sparse_depth(std::size_t H, std::size_t W, unsigned seed,
                                                                      double fraction, std::size_t always) {
    const auto depth = test::random_tensor<double, 2>({H, W}, seed, 50, 90);
    const auto u = test::random_tensor<double, 2>({H, W}, seed + 1, 0, 1);
    xt::xtensor<double, 2> mask = xt::where(u < fraction, 1.0, 0.0);
    mask.data()[always] = 1;
    return {xt::where(mask > 0, depth, 0.0), mask};
}
}  // namespace

BOOST_AUTO_TEST_CASE(normalized_model_is_a_ratio_of_two_solves) {
    // depth = K(m d) / K(m) with K = eps (L + eps I)^-1, eps = 0.5 x the observed fraction:
    // against two dense solves of (L + eps I) on a small problem whose observations all
    // reach every pixel (close colours: K(m) far above the fallback's delta). Colours are
    // compared in the guide's channels (sigma_r 3) or in luma-chroma (the default: Y,
    // 1.5 Cb, 1.5 Cr of BT.601, computed here, sigma_r 1.5).
    const std::size_t H = 9, W = 10;
    const auto guide = test::random_tensor<double, 3>({H, W, 3}, 21, 0, 3);
    const auto ycc = luma_chroma(guide);
    const auto [depth, mask] = sparse_depth(H, W, 22, 0.3, 4 * W + 4);
    const double fraction = xt::sum(mask)() / double(H * W), eps = 0.5 * fraction;
    for (auto space : {color_space::guide, color_space::luma_chroma})
        for (auto color : {color_kernel::laplacian, color_kernel::gaussian}) {
            BOOST_TEST_CONTEXT("colour space " << int(space) << ", kernel " << int(color)) {
                depth_options o;
                o.space = space, o.color = color;
                o.sigma_r = space == color_space::guide ? 3.0 : 1.5;
                o.solve = {1e-12, 1000};
                o.median_scale = 0;   // the model alone, without the edge-sharpening median
                const auto out = fill_depth(depth, guide, o);
                BOOST_TEST(out.report.converged);
                const auto& compared = space == color_space::guide ? guide : ycc;
                const xt::xtensor<double, 2> all_eps = xt::zeros<double>({H, W}) + eps;
                const auto system = [&](const xt::xtensor<double, 2>& values) {
                    return color == color_kernel::laplacian
                               ? ar_system(compared, grid_stencil{H, W, 8}, laplacian_distance(o.sigma_r), values, all_eps, 1e-3)
                               : ar_system(compared, grid_stencil{H, W, 8}, color_weights(H, W, 3, o.sigma_r), values, all_eps,
                                           1e-3);
                };
                const auto kd = test::dense_solve(system(depth)), km = test::dense_solve(system(mask));
                const double delta = 1e-3 * fraction;
                const auto x0 = detail::normalized_interpolation(H, W, mask.data(), depth.data());
                for (std::size_t i = 0; i < H * W; ++i) {
                    BOOST_TEST(km[i] > 100 * delta);
                    BOOST_TEST(std::abs(out.depth.data()[i] - (kd[i] + delta * x0[i]) / (km[i] + delta)) < 1e-3);
                }
            }
        }
}

BOOST_AUTO_TEST_CASE(results_lie_within_the_observed_range_even_unconverged) {
    // Every model averages the observations; a solve stopped after two iterations, on a
    // guide of sharp random colours that few observations reach through, still gives depths
    // within [lowest, highest] observed.
    const std::size_t H = 13, W = 11;
    const auto guide = test::random_tensor<float, 3>({H, W, 3}, 51, 0, 255);
    xt::xtensor<float, 2> depth = test::random_tensor<float, 2>({H, W}, 52, 1, 255);
    for (std::size_t i = 0; i < depth.size(); ++i)
        if (i % 7 != 3) depth.data()[i] = 0;
    float lowest = 255, highest = 0;
    for (float d : depth)
        if (d > 0) lowest = std::min(lowest, d), highest = std::max(highest, d);
    for (auto model : {depth_model::normalized, depth_model::ar, depth_model::separable})
        for (auto solver : {depth_solver::pcg_multigrid, depth_solver::pcg_jacobi, depth_solver::jacobi}) {
            BOOST_TEST_CONTEXT("model " << int(model) << ", solver " << int(solver)) {
                depth_options o = fill_options();
                o.model = model, o.solver = solver, o.sigma_r = 1.25, o.solve = {1e-12, 2};
                const auto out = fill_depth(depth, guide, o);
                BOOST_TEST(xt::amin(out.depth)() >= lowest);
                BOOST_TEST(xt::amax(out.depth)() <= highest);
            }
        }
}

BOOST_AUTO_TEST_CASE(negative_and_non_finite_depths_are_missing) {
    // A sensor's invalid codes (negative values, NaN, infinity) fill as 0 does.
    const std::size_t H = 12, W = 14;
    const auto guide = test::random_tensor<float, 3>({H, W, 3}, 61, 0, 255);
    xt::xtensor<float, 2> zeros = test::random_tensor<float, 2>({H, W}, 62, 50, 150);
    xt::xtensor<float, 2> codes = zeros;
    const float invalid[] = {-1.0f, -1e30f, NAN, INFINITY, -INFINITY};
    for (std::size_t i = 0; i < zeros.size(); i += 3) zeros.data()[i] = 0, codes.data()[i] = invalid[i / 3 % 5];
    for (auto model : {depth_model::normalized, depth_model::ar, depth_model::separable}) {
        depth_options o = fill_options();
        o.model = model;
        BOOST_TEST(fill_depth(codes, guide, o).depth == fill_depth(zeros, guide, o).depth);
    }
}

BOOST_AUTO_TEST_CASE(separable_model_is_a_ratio_of_two_separable_smooths) {
    // depth = K_s(m d) / K_s(m), K_s the separable smoothing of the system with alpha = eps =
    // 0.5 x the observed fraction, 2 passes of strength 0.5 / sqrt(fraction): against
    // separable_smooth on that system built here (colours in luma-chroma, computed here).
    const std::size_t H = 14, W = 19;
    const auto guide = test::random_tensor<double, 3>({H, W, 3}, 24, 0, 40);
    const auto ycc = luma_chroma(guide);
    const auto [depth, mask] = sparse_depth(H, W, 25, 0.2, 0);
    const double fraction = xt::sum(mask)() / double(H * W), eps = 0.5 * fraction;
    for (const int connectivity : {4, 8}) {
        BOOST_TEST_CONTEXT("connectivity " << connectivity) {
            const depth_options o{.model = depth_model::separable, .connectivity = connectivity, .sigma_r = 1.5,
                                  .median_scale = 0, .single_precision = false};
            const auto out = fill_depth(depth, guide, o);
            BOOST_TEST(out.report.method == "separable, 2 passes of line solves");
            BOOST_TEST(out.report.iterations == 2u);
            BOOST_TEST(out.report.converged);
            const xt::xtensor<double, 2> all_eps = xt::zeros<double>({H, W}) + eps;
            const ar_system<double> A(ycc, grid_stencil{H, W, connectivity}, laplacian_distance(1.5), depth, all_eps, 1e-3);
            buffer<double> km(mask.begin(), mask.end()), kd(depth.begin(), depth.end());
            const separable_options passes{2, 0.5 / std::sqrt(fraction)};
            separable_smooth(A, std::span<double>(km), passes);
            separable_smooth(A, std::span<double>(kd), passes);
            double lo = 1e30, hi = -1e30;
            for (std::size_t i = 0; i < H * W; ++i)
                if (mask.data()[i] > 0) lo = std::min(lo, depth.data()[i]), hi = std::max(hi, depth.data()[i]);
            for (std::size_t i = 0; i < H * W; ++i) {
                BOOST_TEST(std::abs(out.depth.data()[i] - kd[i] / km[i]) < 1e-4);
                BOOST_TEST(out.depth.data()[i] >= lo - 1e-4);   // a weighted mean of the observations
                BOOST_TEST(out.depth.data()[i] <= hi + 1e-4);
            }
        }
    }
    // Where no observation reaches (the weights underflow to 0 across a step of 255 with no
    // floor), K_s(m) is 0 and the box interpolation of the observations takes over.
    xt::xtensor<float, 2> step_guide = xt::zeros<float>({6, 10}), half = xt::zeros<float>({6, 10});
    for (std::size_t r = 0; r < 6; ++r)
        for (std::size_t c = 0; c < 10; ++c) {
            if (c >= 5) step_guide(r, c) = 255;
            else if ((r + c) % 2 == 0) half(r, c) = float(10 + r + c);
        }
    const auto split = fill_depth(half, step_guide, {.model = depth_model::separable, .min_weight = 0, .median_scale = 0});
    xt::xtensor<double, 2> m = xt::where(half > 0, 1.0, 0.0), md = xt::cast<double>(half);
    const auto x0 = detail::normalized_interpolation(6, 10, m.data(), md.data());
    for (std::size_t r = 0; r < 6; ++r)
        for (std::size_t c = 5; c < 10; ++c) BOOST_TEST(std::abs(split.depth(r, c) - x0[r * 10 + c]) < 1e-4);
}

BOOST_AUTO_TEST_CASE(depth_tasks) {
    for (auto model : {depth_model::normalized, depth_model::ar, depth_model::separable})
        for (auto color : {color_kernel::laplacian, color_kernel::gaussian})
        for (bool single : {false, true}) {
            BOOST_TEST_CONTEXT("model " << int(model) << ", colour kernel " << int(color) << ", float " << single) {
                depth_options o;
                o.model = model, o.color = color, o.single_precision = single;
                // A constant depth with holes is a fixed point.
                const auto guide = test::random_tensor<float, 3>({24, 30, 3}, 7, 0, 255);
                xt::xtensor<float, 2> flat = xt::ones<float>({24, 30}) * 1234.f;
                for (std::size_t i = 0; i < flat.size(); i += 3) flat.data()[i] = 0;
                flat(5, 5) = std::nanf("");
                const auto filled = fill_depth(flat, guide, o);
                BOOST_TEST(filled.report.converged);
                test::check_close(filled.depth, xt::xtensor<float, 2>(xt::ones<float>({24, 30}) * 1234.f), 1e-2, 0);

                // A sharp colour edge keeps a depth edge: left half dark and near, right half bright
                // and far, depth observed only on a sparse grid.
                xt::xtensor<float, 2> edge_guide = xt::zeros<float>({32, 32});
                xt::xtensor<float, 2> truth = xt::ones<float>({32, 32}) * 100.f;
                for (std::size_t r = 0; r < 32; ++r)
                    for (std::size_t c = 13; c < 32; ++c) edge_guide(r, c) = 255.f, truth(r, c) = 300.f;
                xt::xtensor<float, 2> low = xt::empty<float>({8, 8});
                for (std::size_t r = 0; r < 8; ++r)
                    for (std::size_t c = 0; c < 8; ++c) low(r, c) = truth(4 * r, 4 * c);
                depth_options sharp = o;
                sharp.min_weight = 1e-5;
                const auto up = upsample_depth(low, edge_guide, 4, sharp);
                BOOST_TEST(up.report.converged);
                // The weight floor lets a fraction of the step leak: about min_weight / 2 (the
                // weight inside a region) in the AR model, min_weight / eps (eps = 0.5 / 16) in the
                // normalised one; with 1e-5 both stay far below 1 %.
                for (std::size_t r = 0; r < 32; ++r) {
                    BOOST_TEST(std::abs(up.depth(r, 12) - 100.f) < 2.f);   // last dark column
                    BOOST_TEST(std::abs(up.depth(r, 13) - 300.f) < 2.f);   // first bright column
                    BOOST_TEST(up.depth(r, 13) - up.depth(r, 12) > 0.98f * 200.f);
                }
                // Denoising averages the noise within regions the guide separates.
                xt::xtensor<float, 2> noisy = truth;
                const auto noise = test::random_tensor<float, 2>({32, 32}, 8, -10, 10);
                noisy += noise;
                depth_options smooth = o;
                smooth.epsilon_scale = denoise_options().epsilon_scale, smooth.lambda = denoise_options().lambda;
                const auto den = denoise_depth(noisy, edge_guide, smooth);
                BOOST_TEST(den.report.converged);
                BOOST_TEST(xt::mean(xt::square(den.depth - truth))() < xt::mean(xt::square(noisy - truth))() / 4);
            }
        }
}

BOOST_AUTO_TEST_CASE(depth_tasks_run_on_another_architecture) {
    // The tasks take the instruction set as a template argument: SSE2 (16 registers, 4 floats
    // a vector, no FMA) fills, denoises (the stereo preset: the robust term's medians, the
    // flying pixels, the edge median) and upsamples the same scene as the build's own
    // architecture does, within the solves' tolerance (their roundings differ).
    xt::xtensor<float, 2> guide = xt::zeros<float>({40, 48}), truth = xt::ones<float>({40, 48}) * 100.f;
    for (std::size_t r = 0; r < 40; ++r)
        for (std::size_t c = 19; c < 48; ++c) guide(r, c) = 200.f, truth(r, c) = 250.f;
    xt::xtensor<float, 2> holes = truth + test::random_tensor<float, 2>({40, 48}, 31, -3, 3);
    for (std::size_t i = 0; i < holes.size(); i += 5) holes.data()[i] = 0;
    xt::xtensor<float, 2> low = xt::empty<float>({10, 12});
    for (std::size_t r = 0; r < 10; ++r)
        for (std::size_t c = 0; c < 12; ++c) low(r, c) = holes(4 * r, 4 * c) > 0 ? holes(4 * r, 4 * c) : truth(4 * r, 4 * c);
    const depth_options stereo = sensor_options(depth_sensor::stereo);
    const auto filled = fill_depth(holes, guide), denoised = denoise_depth(holes, guide, stereo);
    const auto upsampled = upsample_depth(low, guide, 4);
    using sse2 = xsimd::sse2;
    if constexpr (xsimd::supported_architectures::contains<sse2>()) {
        const auto f = fill_depth<sse2>(holes, guide), d = denoise_depth<sse2>(holes, guide, stereo);
        const auto u = upsample_depth<sse2>(execution::parallel_policy{2}, low, guide, 4);
        BOOST_TEST((f.report.converged && d.report.converged && u.report.converged));
        BOOST_TEST(xt::amax(xt::abs(f.depth - filled.depth))() < 0.25f);   // of a step of 150
        BOOST_TEST(xt::amax(xt::abs(d.depth - denoised.depth))() < 0.25f);
        BOOST_TEST(xt::amax(xt::abs(u.depth - upsampled.depth))() < 0.25f);
        BOOST_TEST(xt::amax(xt::abs(f.depth - truth))() < 10.f);   // and both are right
    }
}

BOOST_AUTO_TEST_CASE(sixteen_bit_guides_are_brought_to_the_8_bit_scale) {
    // uint16 planes are scaled by 255 / 65535; uint8 and float planes are as they are.
    xt::xtensor<std::uint16_t, 2> corners = xt::zeros<std::uint16_t>({2, 2});
    corners(0, 1) = 257, corners(1, 1) = 65535;
    const auto scaled = detail::guide_planes<double>(corners, "test");
    BOOST_TEST(scaled.values[0] == 0.0);
    BOOST_TEST(std::abs(scaled.values[1] - 1.0) < 1e-12);
    BOOST_TEST(std::abs(scaled.values[3] - 255.0) < 1e-12);
    const xt::xtensor<float, 2> wide = xt::ones<float>({2, 2}) * 1000.f;
    BOOST_TEST(detail::guide_planes<float>(wide, "test").values[2] == 1000.f);
    // So the same scene in 8 and in 16 bits (8-bit values x 257) refines alike with the same options.
    const xt::xtensor<std::uint8_t, 3> eight = xt::cast<std::uint8_t>(test::random_tensor<float, 3>({20, 27, 3}, 21, 0, 255));
    const xt::xtensor<std::uint16_t, 3> sixteen = xt::cast<std::uint16_t>(xt::cast<std::uint32_t>(eight) * 257u);
    xt::xtensor<float, 2> sparse = xt::zeros<float>({20, 27});
    const auto depth = test::random_tensor<float, 2>({20, 27}, 22, 50, 80);
    for (std::size_t i = 0; i < sparse.size(); i += 5) sparse.data()[i] = depth.data()[i];
    const xt::xtensor<float, 2> low = xt::view(depth, xt::range(0, 20, 4), xt::range(0, 27, 4));
    for (const bool single : {true, false}) {
        depth_options o;
        o.single_precision = single;
        test::check_close(fill_depth(sparse, sixteen, o).depth, fill_depth(sparse, eight, o).depth, 1e-3, 0);
        test::check_close(upsample_depth(low, sixteen, 4, o).depth, upsample_depth(low, eight, 4, o).depth, 1e-3, 0);
    }
}

BOOST_AUTO_TEST_CASE(normalized_interpolation_by_hand) {
    // One row of 9: alpha 0.3 (depth 2) at column 0 and 0.7 (depth 4) at column 8. Boxes
    // [c - R, c + R] of radius R = 2, 4, 8, ... until one covers an observation:
    //   columns 0-2 see column 0 at R = 2: 2; columns 6-8 see column 8: 4;
    //   columns 3-5 see nothing at R = 2; at R = 4, column 3 sees [0, 7]: 2, column 5 sees
    //   [1, 8]: 4, column 4 sees both: (0.3 * 2 + 0.7 * 4) / 1.0 = 3.4.
    std::vector<double> alpha(9, 0.0), rhs(9, 0.0);
    alpha[0] = 0.3, rhs[0] = 0.6, alpha[8] = 0.7, rhs[8] = 2.8;
    const auto x = nonlocal::detail::normalized_interpolation(1, 9, alpha.data(), rhs.data());
    const std::vector<double> expected = {2, 2, 2, 2, 3.4, 4, 4, 4, 4};
    for (std::size_t c = 0; c < 9; ++c) BOOST_TEST(std::abs(x[c] - expected[c]) < 1e-12);
    // Many non-dyadic alphas: wherever a box holds no observation, it is seen as empty (an
    // exact count), not as a rounding residue of the alphas' running sums.
    const std::size_t H = 40, W = 50;
    std::vector<double> a(H * W, 0.0), b(H * W, 0.0);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c)
            if (c < 20 || c >= 45) a[r * W + c] = 0.1 + 0.01 * double((r * 7 + c) % 13), b[r * W + c] = 9 * a[r * W + c];
    const auto y = nonlocal::detail::normalized_interpolation(H, W, a.data(), b.data());
    for (double v : y) BOOST_TEST(std::abs(v - 9) < 1e-9);
}

BOOST_AUTO_TEST_CASE(normalized_interpolation_against_literal_boxes) {
    // Sparse random observations on awkward sizes: each pixel's value is the box sums,
    // added up literally, of the first box of radius 2, 4, 8, ... that holds one.
    std::mt19937 gen(5);
    for (std::size_t H : {1, 2, 7, 23})
        for (std::size_t W : {1, 3, 17, 31})
            for (double density : {0.02, 0.3}) {
                std::bernoulli_distribution observed(density);
                std::uniform_real_distribution<double> value(0.1, 2.0);
                std::vector<double> alpha(H * W, 0.0), rhs(H * W, 0.0);
                for (std::size_t i = 0; i < H * W; ++i)
                    if (observed(gen)) alpha[i] = value(gen), rhs[i] = alpha[i] * value(gen);
                if (std::count(alpha.begin(), alpha.end(), 0.0) == std::ptrdiff_t(H * W)) alpha[0] = 1, rhs[0] = 1;
                const auto x = nonlocal::detail::normalized_interpolation(H, W, alpha.data(), rhs.data());
                for (std::size_t r = 0; r < H; ++r)
                    for (std::size_t c = 0; c < W; ++c)
                        for (std::size_t R = 2;; R *= 2) {
                            double sw = 0, swx = 0;
                            std::size_t count = 0;
                            for (std::size_t rr = r > R ? r - R : 0; rr < std::min(H, r + R + 1); ++rr)
                                for (std::size_t cc = c > R ? c - R : 0; cc < std::min(W, c + R + 1); ++cc)
                                    sw += alpha[rr * W + cc], swx += rhs[rr * W + cc], count += alpha[rr * W + cc] > 0;
                            if (count == 0) continue;
                            BOOST_TEST(std::abs(x[r * W + c] - swx / sw) < 1e-12 * (1 + std::abs(swx / sw)),
                                       H << " x " << W << ", density " << density << ", pixel " << r << ", " << c);
                            break;
                        }
            }
}

BOOST_AUTO_TEST_CASE(half_resolution_guide) {
    // 3 x 3 box means around the even pixels, clipped to the image, by hand:
    //   1 2 3
    //   4 5 6   ->   (1+2+4+5)/4 = 3   (2+3+5+6)/4 = 4
    //   7 8 9        (4+5+7+8)/4 = 6   (5+6+8+9)/4 = 7
    const xt::xtensor<double, 2> image = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    const auto half = nonlocal::detail::half_resolution(nonlocal::detail::to_planes<double>(image, "test", "image"));
    BOOST_TEST(half.height == 2u);
    BOOST_TEST(half.width == 2u);
    BOOST_TEST(half.channel(0)[0] == 3.0);
    BOOST_TEST(half.channel(0)[1] == 4.0);
    BOOST_TEST(half.channel(0)[2] == 6.0);
    BOOST_TEST(half.channel(0)[3] == 7.0);
    // Interior pixels average all nine; each channel on its own.
    const auto rgb = test::random_tensor<double, 3>({7, 6, 3}, 31, 0, 255);
    const auto h = nonlocal::detail::half_resolution(nonlocal::detail::to_planes<double>(rgb, "test", "image"));
    for (std::size_t k = 0; k < 3; ++k) {
        double sum = 0;
        for (std::size_t r = 1; r <= 3; ++r)
            for (std::size_t c = 1; c <= 3; ++c) sum += rgb(r, c, k);
        BOOST_TEST(std::abs(h.channel(k)[1 * 3 + 1] - sum / 9) < 1e-12);
    }
}

BOOST_AUTO_TEST_CASE(upsampling_goes_coarse_to_fine_above_the_stage_factor) {
    // Awkward sizes: the guide is 16 (h - 1) + 1 rows and 16 w columns.
    const std::size_t h = 3, w = 4, H = 16 * (h - 1) + 1, W = 16 * w;
    const auto guide = test::random_tensor<double, 3>({H, W, 3}, 41, 0, 255);
    const auto low = test::random_tensor<float, 2>({h, w}, 42, 50, 150);
    // The 3 x 3 box means of the guide at its even pixels, computed here.
    const std::size_t Hh = (H + 1) / 2, Wh = (W + 1) / 2;
    xt::xtensor<double, 3> half_guide = xt::zeros<double>({Hh, Wh, std::size_t(3)});
    for (std::size_t r = 0; r < Hh; ++r)
        for (std::size_t c = 0; c < Wh; ++c)
            for (std::size_t k = 0; k < 3; ++k) {
                double sum = 0, count = 0;
                for (std::ptrdiff_t dr = -1; dr <= 1; ++dr)
                    for (std::ptrdiff_t dc = -1; dc <= 1; ++dc) {
                        const std::ptrdiff_t rr = std::ptrdiff_t(2 * r) + dr, cc = std::ptrdiff_t(2 * c) + dc;
                        if (rr < 0 || cc < 0 || rr >= std::ptrdiff_t(H) || cc >= std::ptrdiff_t(W)) continue;
                        sum += guide(std::size_t(rr), std::size_t(cc), k), ++count;
                    }
                half_guide(r, c, k) = sum / count;
            }
    for (auto model : {depth_model::normalized, depth_model::ar, depth_model::separable}) {
        // The bandwidth and weight given: chosen, each stage's samples would choose their own.
        depth_options o{.model = model, .sigma_r = 1.5, .data_weight = 1, .single_precision = false};
        o.solve.tolerance = 1e-10;
        const auto staged = upsample_depth(low, guide, 16, o);   // stage_factor 8: x8, then x2
        const auto coarse = upsample_depth(low, half_guide, 8, o);
        const auto by_hand = upsample_depth(coarse.depth, guide, 2, o);
        BOOST_TEST(staged.report.converged);
        BOOST_TEST(staged.report.method.starts_with("coarse to fine"));
        BOOST_TEST(staged.report.iterations == coarse.report.iterations + by_hand.report.iterations);
        test::check_close(staged.depth, by_hand.depth, 1e-5, 1e-3);
        // A stage factor of 16 or more, or an odd factor, upsamples in one stage.
        depth_options direct = o;
        direct.stage_factor = 16;
        const auto one = upsample_depth(low, guide, 16, direct);
        BOOST_TEST(!one.report.method.starts_with("coarse to fine"));
        BOOST_TEST(one.report.converged);
        depth_options small = o;
        small.stage_factor = 2;
        const auto odd = upsample_depth(low, xt::view(guide, xt::range(0, 3 * (h - 1) + 1), xt::range(0, 3 * w), xt::all()),
                                        3, small);
        BOOST_TEST(!odd.report.method.starts_with("coarse to fine"));
        // Both ways, a constant depth stays constant.
        const xt::xtensor<float, 2> flat = xt::ones<float>({h, w}) * 77.f;
        test::check_close(upsample_depth(flat, guide, 16, o).depth, xt::xtensor<float, 2>(xt::ones<float>({H, W}) * 77.f),
                          1e-4, 0);
    }
}

BOOST_AUTO_TEST_CASE(depth_edges_are_sharpened_by_a_median) {
    // The radius follows the observations' spacing: round(0.75 / sqrt(fraction)), at most 4.
    const depth_options o;
    BOOST_TEST(o.median_radius(1.0 / 16) == 3u);   // x4: spacing 4
    BOOST_TEST(o.median_radius(1.0 / 64) == 4u);   // x8: 6, capped
    BOOST_TEST(o.median_radius(0.5) == 1u);        // round(1.06)
    BOOST_TEST(o.median_radius(1.0) == 1u);        // round(0.75)
    BOOST_TEST(depth_options{.median_scale = 0.3}.median_radius(1.0) == 0u);
    BOOST_TEST(depth_options{.median_scale = 0}.median_radius(1.0 / 256) == 0u);
    BOOST_TEST(depth_options{.median_max_radius = 9}.median_radius(1.0 / 256) == 9u);

    // A task's result is the model's result filtered with that radius: exactly, for
    // median_flatness = 0; by default windows spanning at most 1 % of the observed range
    // keep the model's value, the others take their median.
    const auto guide = test::random_tensor<float, 3>({23, 29, 3}, 51, 0, 255);
    xt::xtensor<float, 2> depth = test::random_tensor<float, 2>({23, 29}, 52, 10, 90);
    for (std::size_t i = 0; i < depth.size(); i += 4) depth.data()[i] = 0;   // 3 / 4 observed: radius 1
    depth_options plain = o, exact = o;
    plain.median_scale = 0, exact.median_flatness = 0;
    const auto sharpened = fill_depth(depth, guide, exact), blended = fill_depth(depth, guide, plain);
    BOOST_TEST(sharpened.depth == median_filter(blended.depth, 1));
    BOOST_TEST(sharpened.depth != blended.depth);
    float lo = 1e30f, hi = -1e30f;
    for (float v : depth)
        if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    xt::xtensor<float, 2> skipping = blended.depth;
    nonlocal::detail::median_filter<default_arch>(blended.depth.data(), 23, 29, 1, skipping.data(), 1, 0.01f * (hi - lo));
    BOOST_TEST(fill_depth(depth, guide, o).depth == skipping);

    // A depth step whose far (bright) side carries a dark streak, one pixel high, that
    // runs from the near (dark) side into it: the model follows the streak's colour and
    // gives it the near depth; the median gives the streak, a minority in every window
    // away from the step, the far depth (the step's column near the streak, where near
    // values are the majority, goes the other way).
    const std::size_t H = 32, W = 48;
    xt::xtensor<float, 2> streak_guide = xt::zeros<float>({H, W}), truth = xt::ones<float>({H, W}) * 100.f;
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 23; c < W; ++c) streak_guide(r, c) = (r == 13 && c < 35) ? 0.f : 255.f, truth(r, c) = 300.f;
    xt::xtensor<float, 2> low = xt::empty<float>({H / 4, W / 4});
    for (std::size_t r = 0; r < H / 4; ++r)
        for (std::size_t c = 0; c < W / 4; ++c) low(r, c) = truth(4 * r, 4 * c);
    const auto wrong_in_streak = [&](const xt::xtensor<float, 2>& d) {
        std::size_t count = 0;
        for (std::size_t c = 23; c < 35; ++c) count += std::abs(d(13, c) - 300.f) > 50.f;
        return count;
    };
    BOOST_TEST(wrong_in_streak(upsample_depth(low, streak_guide, 4, plain).depth) == 12u);
    BOOST_TEST(wrong_in_streak(upsample_depth(low, streak_guide, 4).depth) == 1u);   // its first pixel, at the step
}

BOOST_AUTO_TEST_CASE(depth_passes_add_the_last_result_to_the_guide) {
    // A pass is the task on the guide with the previous result x sigma_r / sigma_d as one
    // more channel: its weights are the colour weights times the kernel of the depth difference.
    const std::size_t H = 19, W = 26;
    const auto guide = test::random_tensor<double, 3>({H, W, 3}, 61, 0, 255);
    xt::xtensor<float, 2> depth = test::random_tensor<float, 2>({H, W}, 62, 20, 60);
    for (std::size_t i = 0; i < depth.size(); i += 3) depth.data()[i] = 0;
    for (auto model : {depth_model::normalized, depth_model::ar, depth_model::separable}) {
        BOOST_TEST_CONTEXT("model " << int(model)) {
            // The bandwidth given: the guide with the depth channel has a contrast of its own.
            const depth_options once{.model = model, .sigma_r = 1.5, .depth_passes = 1, .sigma_d = 5};
            const auto first = fill_depth(depth, guide, {.model = model, .sigma_r = 1.5});
            xt::xtensor<double, 3> joint = xt::empty<double>({H, W, std::size_t(4)});
            xt::view(joint, xt::all(), xt::all(), xt::range(0, 3)) = guide;
            xt::view(joint, xt::all(), xt::all(), 3) = xt::cast<double>(first.depth) * (once.sigma_r / once.sigma_d);
            const auto by_hand = fill_depth(depth, joint, {.model = model, .sigma_r = 1.5});
            const auto passed = fill_depth(depth, guide, once);
            BOOST_TEST(passed.depth == by_hand.depth);
            BOOST_TEST(passed.report.iterations == first.report.iterations + by_hand.report.iterations);
            // sigma_d = 0: 2 % of the observed range.
            float lo = 1e30f, hi = -1e30f;
            for (float d : depth)
                if (d > 0) lo = std::min(lo, d), hi = std::max(hi, d);
            BOOST_TEST(fill_depth(depth, guide, {.model = model, .depth_passes = 1}).depth ==
                       fill_depth(depth, guide, {.model = model, .depth_passes = 1, .sigma_d = 0.02 * (double(hi) - lo)}).depth);
        }
    }
    // Hole filling and denoising run one pass by default (and find flying pixels), upsampling none.
    const auto filled = fill_depth(depth, guide), denoised = denoise_depth(depth, guide);
    const depth_options sensor{.depth_passes = 1, .flying_pixels = true};
    BOOST_TEST(filled.depth == fill_depth(depth, guide, sensor).depth);
    BOOST_TEST(filled.depth != fill_depth(depth, guide, {.depth_passes = 0, .flying_pixels = true}).depth);
    BOOST_TEST(denoised.depth == denoise_depth(depth, guide,
                                               {.epsilon_scale = 0.25, .lambda = 0.2, .depth_passes = 1, .flying_pixels = true})
                                     .depth);
    BOOST_TEST(denoised.depth != denoise_depth(depth, guide, {.epsilon_scale = 0.25, .lambda = 0.2, .flying_pixels = true})
                                     .depth);
    const xt::xtensor<float, 2> low = xt::view(depth, xt::range(std::size_t(0), H, std::size_t(2)),
                                               xt::range(std::size_t(0), W, std::size_t(2)));
    BOOST_TEST(upsample_depth(low, guide, 2).depth == upsample_depth(low, guide, 2, {.depth_passes = 0}).depth);
    // Constant observations leave nothing to adapt to: no pass runs.
    xt::xtensor<float, 2> flat = xt::where(depth > 0, 42.f, 0.f);
    const auto plain = fill_depth(flat, guide, depth_options{}), passes = fill_depth(flat, guide, {.depth_passes = 2});
    BOOST_TEST(passes.depth == plain.depth);
    BOOST_TEST(passes.report.iterations == plain.report.iterations);
}


BOOST_AUTO_TEST_CASE(bad_input) {
    const xt::xtensor<float, 2> guide = xt::zeros<float>({4, 5}), none = xt::zeros<float>({4, 5});
    const auto low_ones = [] { return xt::xtensor<float, 2>(xt::ones<float>({2, 3})); };
    test::check_invalid([&] { fill_depth(none, guide); }, "fill_depth", "nothing is observed");
    test::check_invalid([&] { fill_depth(none, guide, {.model = depth_model::ar}); }, "fill_depth", "nothing is observed");
    test::check_invalid([&] { upsample_depth(none, guide, 1); }, "upsample_depth", "nothing is observed");
    const xt::xtensor<float, 2> some = xt::ones<float>({4, 5});
    test::check_invalid([&] { fill_depth(some, guide, {.epsilon_scale = 0}); }, "fill_depth",
                        "depth_options::epsilon_scale must be finite and positive, got 0");
    // Each wrong field is named with its value, and only those.
    test::check_invalid([&] { fill_depth(some, guide, {.connectivity = 6, .sigma_r = -1}); }, "fill_depth",
                        "depth_options::connectivity must be 4 or 8, got 6; depth_options::sigma_r must be finite and positive, or 0 "
                        "(chosen from the data), got -1");
    test::check_invalid([&] { denoise_depth(some, guide, {.lambda = -1}); }, "denoise_depth", "depth_options::lambda must be", "got -1");
    test::check_invalid([&] { fill_depth(execution::parallel_policy{-1}, some, guide); }, "execution::parallel_policy",
                        "threads must be >= 0", "got -1");
    test::check_invalid([&] { fill_depth(some, guide, {.median_scale = -1}); }, "fill_depth", "depth_options::median_scale must be", "got -1");
    test::check_invalid([&] { fill_depth(some, guide, {.sigma_d = -2}); }, "fill_depth", "depth_options::sigma_d must be", "got -2");
    test::check_invalid([&] { fill_depth(some, guide, {.median_scale = std::nan("")}); }, "fill_depth",
                        "depth_options::median_scale must be", "got nan");
    test::check_invalid([&] { fill_depth(some, guide, {.chroma_weight = -1}); }, "fill_depth", "depth_options::chroma_weight must be", "got -1");
    test::check_invalid([&] { fill_depth(some, guide, {.median_flatness = -0.5}); }, "fill_depth", "depth_options::median_flatness must be", "got -0.5");
    test::check_invalid([&] { fill_depth(some, guide, {.min_weight = -1e-3}); }, "fill_depth", "depth_options::min_weight must be", "got -0.001");
    test::check_invalid([&] { upsample_depth(low_ones(), guide, 2, {.stage_factor = 1}); }, "upsample_depth", "depth_options::stage_factor must be", "got 1");
    test::check_invalid([&] { upsample_depth(low_ones(), guide, 2, {.stage_factor = 0}); }, "upsample_depth", "depth_options::stage_factor must be", "got 0");
    test::check_invalid([&] { fill_depth(some, guide, {.separable_passes = 0}); }, "fill_depth", "depth_options::separable_passes must be", "got 0");
    test::check_invalid([&] { fill_depth(some, guide, {.separable_strength = -1}); }, "fill_depth",
                        "depth_options::separable_strength must be", "got -1");
    depth_options nan_tolerance;
    nan_tolerance.solve.tolerance = std::nan("");
    test::check_invalid([&] { fill_depth(some, guide, nan_tolerance); }, "fill_depth", "depth_options::solve.tolerance must be", "got nan");
    // A guide value that is not finite would spread through the weights: rejected by name and position.
    xt::xtensor<float, 3> rgb = xt::ones<float>({4, 5, 3});
    rgb(1, 4, 2) = std::nanf("");
    test::check_invalid([&] { fill_depth(some, rgb); }, "fill_depth", "guide holds a value that is not finite: nan",
                        "pixel (1, 4), channel 2");
    rgb(1, 4, 2) = std::numeric_limits<float>::infinity();
    test::check_invalid([&] { upsample_depth(low_ones(), rgb, 2); }, "upsample_depth", "guide holds", "inf at pixel (1, 4), channel 2");
    test::check_invalid([&] { denoise_depth(some, rgb); }, "denoise_depth", "guide holds");
    // Depth beyond float's range (the result's type), in either precision of the solve.
    xt::xtensor<double, 2> deep = xt::ones<double>({4, 5});
    deep(2, 1) = 1e300;
    for (const bool single : {true, false})
        test::check_invalid([&] { fill_depth(deep, guide, {.single_precision = single}); }, "fill_depth",
                            "the depth 1", "at pixel (2, 1) is beyond the range of float");
    const xt::xtensor<float, 2> other = xt::ones<float>({4, 6});
    test::check_invalid([&] { fill_depth(other, guide); }, "fill_depth", "depth [4, 6]", "guide 4 x 5");
    const xt::xtensor<float, 2> low = xt::ones<float>({2, 2});
    test::check_invalid([&] { upsample_depth(low, guide, 4); }, "upsample_depth", "2 x 2 depth map upsampled by 4");
}

BOOST_AUTO_TEST_SUITE_END()
