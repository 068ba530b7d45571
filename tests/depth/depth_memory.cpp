// depth_memory: the peak resident memory of each depth task at its defaults on a 1-megapixel
// pair, beyond the inputs, against `depth_task_bytes_per_pixel`. One task per process (the
// task is the argument), so that each peak is its own: fill, denoise or upsample.
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <nonlocal/depth.hpp>

namespace {

/// The process's peak resident memory in bytes so far.
double peak_resident_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) * 1024.0;   // Linux counts kilobytes
}

}  // namespace

int main(int argc, char** argv) {
    const std::string task = argc == 2 ? argv[1] : "";
    if (task != "fill" && task != "denoise" && task != "upsample") {
        std::fprintf(stderr, "usage: depth_memory fill|denoise|upsample\n");
        return 2;
    }
    // A 1024 x 1024 colour guide of stripes and a depth with every fourth pixel missing
    // (upsampling: its every eighth row and column, 128 x 128).
    constexpr std::size_t H = 1024, W = 1024, factor = 8;
    xt::xtensor<float, 3> guide = xt::empty<float>({H, W, std::size_t(3)});
    xt::xtensor<float, 2> depth = xt::empty<float>({H, W});
    for (std::size_t y = 0; y < H; ++y)
        for (std::size_t x = 0; x < W; ++x) {
            for (std::size_t c = 0; c < 3; ++c) guide(y, x, c) = float((3 * x + 5 * y + 40 * c) % 256);
            depth(y, x) = (x + 3 * y) % 4 == 0 ? 0.0f : float(100 + (x / 64 + y / 64) % 8 * 10);
        }
    xt::xtensor<float, 2> low = xt::empty<float>({H / factor, W / factor});
    for (std::size_t y = 0; y < H / factor; ++y)
        for (std::size_t x = 0; x < W / factor; ++x) low(y, x) = float(100 + (x / 8 + y / 8) % 8 * 10);
    const double before = peak_resident_bytes();
    nonlocal::depth_result result;
    if (task == "fill") result = nonlocal::fill_depth(depth, guide);
    if (task == "denoise") result = nonlocal::denoise_depth(depth, guide);
    if (task == "upsample") result = nonlocal::upsample_depth(low, guide, factor);
    const double per_pixel = (peak_resident_bytes() - before) / double(H * W);
    std::printf("depth_memory: %s on %zu x %zu takes %.0f bytes a pixel beyond its inputs (bound %zu)\n", task.c_str(), H, W,
                per_pixel, nonlocal::depth_task_bytes_per_pixel);
    if (result.depth.shape(0) != H || result.depth.shape(1) != W) {
        std::fprintf(stderr, "depth_memory: the result is not %zu x %zu\n", H, W);
        return 1;
    }
    return per_pixel <= double(nonlocal::depth_task_bytes_per_pixel) ? 0 : 1;
}
