// nonlocal::io as a user links it: a depth map and a colour image written and read back.
#include <nonlocal/io/depth.hpp>
#include <nonlocal/io/image.hpp>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

int main() {
    const auto dir = std::filesystem::temp_directory_path() / "nonlocal_io_check";
    std::filesystem::create_directories(dir);
    const xt::xtensor<float, 2> depth{{0, 1, 2}, {1000, 40000, 65535}};
    nonlocal::io::write_depth((dir / "depth.png").string(), depth);
    const bool depth_ok = nonlocal::io::read_depth((dir / "depth.png").string()) == depth;
    xt::xtensor<float, 3> color = xt::zeros<float>({2, 2, 3});
    color(1, 0, 2) = 255, color(0, 1, 0) = 17;
    nonlocal::io::write_image((dir / "colour.png").string(), color, 8);
    const auto read = nonlocal::io::read_image((dir / "colour.png").string());
    const bool color_ok = read.pixels == color && read.bit_depth == 8;
    bool refused = false;
    try {
        nonlocal::io::read_image((dir / "absent.png").string());
    } catch (const std::runtime_error& e) {
        refused = std::string(e.what()).find("absent.png") != std::string::npos;
    }
    std::filesystem::remove_all(dir);
    std::printf("io: depth %s, colour %s, a missing file %s\n", depth_ok ? "ok" : "WRONG", color_ok ? "ok" : "WRONG",
                refused ? "refused" : "NOT REFUSED");
    return depth_ok && color_ok && refused ? 0 : 1;
}
