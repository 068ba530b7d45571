// docs/tutorials/depth-refinement.md: depth upsampling and hole filling guided by a colour
// image, sensor depth with wrong measurements, an occlusion hole and a confidence map, then the
// AR system itself: its solvers, and a Jacobi sweep as one weighted aggregate.
#include <nonlocal/nonlocal.hpp>

#include <cmath>
#include <cstdio>
#include <xtensor/xview.hpp>

int main() {
    // A scene of two surfaces: a tilted plane and a disc in front of it, whose colour
    // differs from the background's; depth in millimetres.
    const std::size_t H = 120, W = 160;
    xt::xtensor<std::uint8_t, 3> rgb = xt::empty<std::uint8_t>({H, W, std::size_t(3)});
    xt::xtensor<float, 2> depth = xt::empty<float>({H, W});
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c) {
            const bool disc = std::hypot(double(r) - 60, double(c) - 80) < 35;
            depth(r, c) = disc ? 900.f : 2000.f + 4.f * float(r);
            for (std::size_t ch = 0; ch < 3; ++ch) rgb(r, c, ch) = disc ? std::uint8_t(40 + 60 * ch) : std::uint8_t(180);
        }

    // Upsampling: a depth map 8 times coarser onto the colour image's grid.
    const xt::xtensor<float, 2> low = xt::view(depth, xt::range(0, H, 8), xt::range(0, W, 8));   // [15, 20]
    const nonlocal::depth_result up = nonlocal::upsample_depth(low, rgb, 8);
    std::printf("upsample x8: %s, %zu iterations, relative residual %.1e, %.3f s\n", up.report.method.c_str(),
                up.report.iterations, up.report.relative_residual, up.seconds);

    // Hole filling: 0 (or NaN) is missing; here a band of columns and every third row.
    xt::xtensor<float, 2> holes = depth;
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < W; ++c)
            if ((c >= 70 && c < 90) || r % 3 == 0) holes(r, c) = 0.f;
    const nonlocal::depth_result filled = nonlocal::fill_depth(holes, rgb);

    // Sensor depth: wrong measurements (every 97th pixel 500 mm off), a hole beside the disc,
    // and the sensor's confidence (half on every fourth row).
    xt::xtensor<float, 2> sensed = depth, confidence = xt::ones<float>({H, W});
    for (std::size_t i = 0; i < sensed.size(); i += 97) sensed.data()[i] += 500.f;
    for (std::size_t r = 40; r < 80; ++r)
        for (std::size_t c = 30; c < 45; ++c) sensed(r, c) = 0.f;
    for (std::size_t r = 0; r < H; r += 4) xt::view(confidence, r) = 0.5f;
    nonlocal::depth_options sensor = nonlocal::fill_options();
    sensor.robust_iterations = 1;   // reject wrong measurements
    const nonlocal::depth_result refined = nonlocal::fill_depth(sensed, confidence, rgb, sensor);
    std::printf("sensor depth: %zu observations rejected, %zu flying pixels\n", refined.rejected, refined.flying);

    // The AR system underneath: min sum w_ij (x_i - x_j)^2 + sum alpha_i (x_i - xhat_i)^2 on
    // the 8-neighbour stencil, weights from the guide's colours, alpha 1 where observed.
    const xt::xtensor<float, 2> alpha = xt::cast<float>(xt::not_equal(holes, 0.f));
    const nonlocal::grid_stencil stencil{H, W, 8};
    const nonlocal::ar_system<float> A(rgb, stencil, nonlocal::laplacian_distance{10.0}, holes, alpha);
    std::vector<float> x(H * W, 0.f);
    const nonlocal::multigrid<float> M(A);
    const nonlocal::solve_report report = nonlocal::pcg(A, x, M);   // conjugate gradients, multigrid-preconditioned
    std::printf("pcg + multigrid: %zu iterations, converged: %s\n", report.iterations, report.converged ? "yes" : "no");

    // One Jacobi sweep of that system is one weighted aggregate over the stencil: the
    // system's edge weights as the similarity, alpha and xhat as the data term.
    const xt::xtensor<float, 2> start = xt::ones<float>({H * W, std::size_t(1)}) * 1500.f;
    const xt::xtensor<float, 1> alpha_column = xt::flatten(alpha);
    const xt::xtensor<float, 2> xhat_column = xt::reshape_view(holes, {H * W, std::size_t(1)});
    const auto sweep = nonlocal::weighted_aggregate(start, start, start, A.edges(), stencil,
                                                    nonlocal::sum_with_data(alpha_column, xhat_column));
    const nonlocal::buffer<float> step = A.jacobi_step(std::span<const float>(start.data(), start.size()));
    const bool same = std::equal(step.begin(), step.end(), sweep.begin());
    std::printf("a Jacobi sweep equals the weighted aggregate bit for bit: %s\n", same ? "yes" : "no");

    // Root-mean-square errors against the true depth; most of it lies on the disc's rim.
    const auto rmse = [&](const auto& estimate) {
        double sum = 0;
        for (std::size_t i = 0; i < H * W; ++i) sum += std::pow(double(estimate.data()[i]) - depth.data()[i], 2);
        return std::sqrt(sum / double(H * W));
    };
    std::printf("RMSE: upsampled %.1f mm, filled %.1f mm, sensor depth %.1f mm (depth 900..2476 mm)\n", rmse(up.depth),
                rmse(filled.depth), rmse(refined.depth));
    return up.report.converged && filled.report.converged && refined.report.converged && report.converged && same ? 0 : 1;
}
