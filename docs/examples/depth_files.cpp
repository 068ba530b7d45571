// docs/tutorials/depth-refinement.md, "From files to a result": the holes of a depth map filled
// along the edges of its colour image, both read from files, the result written to one.
//   docs_depth_files GUIDE DEPTH OUT
// The suite runs it on Aloe (aloeL.jpg, aloeGT.png) where the data is present, and on the
// demo's pictures otherwise.
#include <nonlocal/depth.hpp>
#include <nonlocal/io/depth.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s GUIDE DEPTH OUT\n", argv[0]);
        return 2;
    }
    const xt::xtensor<float, 3> guide = nonlocal::io::read_guide(argv[1]);  // [H, W, C], on the 8-bit scale
    const xt::xtensor<float, 2> depth = nonlocal::io::read_depth(argv[2]);  // [H, W], 0 where missing
    const nonlocal::depth_result filled = nonlocal::fill_depth(depth, guide);
    nonlocal::io::write_depth(argv[3], filled.depth);  // 16-bit PNG, or .npy by its name
    std::printf("%s: %zu x %zu, %s in %zu iterations, noise %.2f, %.2f s\n", argv[3], depth.shape(0),
                depth.shape(1), filled.report.method.c_str(), filled.report.iterations, filled.noise, filled.seconds);
    return filled.report.converged ? 0 : 1;
}
