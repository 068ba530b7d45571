#pragma once
/// @file simd/convolution/geometry.hpp
/// What a 2-D convolution's algorithms need to know of its shape: the channels of a group,
/// the kernel, stride, padding and dilation, and the outputs they give.

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <utility>

namespace nonlocal {

/// A pair of sizes along (height, width); one number stands for both, as in PyTorch.
struct size2 {
    std::size_t h = 0, w = 0;
    constexpr size2() = default;
    constexpr size2(std::size_t both) noexcept : h(both), w(both) {}   // NOLINT: 3 means (3, 3)
    constexpr size2(std::size_t h_, std::size_t w_) noexcept : h(h_), w(w_) {}
    friend constexpr bool operator==(size2, size2) = default;
    /// Written as "(h, w)".
    friend std::ostream& operator<<(std::ostream& out, size2 s) { return out << '(' << s.h << ", " << s.w << ')'; }
};

}  // namespace nonlocal

namespace nonlocal::detail {
/// Output length of a window of `kernel` taps `dilation` apart, `stride` apart over `size`
/// values padded by `padding` on each side; 0 when the window does not fit.
constexpr std::size_t window_count(std::size_t size, std::size_t kernel, std::size_t stride, std::size_t padding,
                                   std::size_t dilation) noexcept {
    const std::size_t span = dilation * (kernel - 1) + 1, padded = size + 2 * padding;
    return padded < span ? 0 : (padded - span) / stride + 1;
}
/// The outputs o in [first, last) whose tap o stride + offset - padding lies in [0, size).
inline std::pair<std::size_t, std::size_t> outputs_inside(std::size_t outputs, std::size_t size, std::size_t stride,
                                                          std::size_t offset, std::size_t padding) noexcept {
    // o stride + offset >= padding, and o stride + offset <= padding + size - 1.
    const std::size_t first = offset >= padding ? 0 : (padding - offset + stride - 1) / stride;
    const std::size_t last = padding + size <= offset ? 0 : std::min(outputs, (padding + size - 1 - offset) / stride + 1);
    return {std::min(first, last), last};
}
}  // namespace nonlocal::detail

namespace nonlocal::simd {

/// A convolution of `groups` groups of `in_per_group` input and `out_per_group` output
/// channels each, by a kernel of `kernel` taps `dilation` apart, `stride` apart over an image
/// padded by `padding` zeros on each side.
struct conv_geometry {
    std::size_t groups = 1, in_per_group = 1, out_per_group = 1;
    size2 kernel = 1, stride = 1, padding = 0, dilation = 1;

    constexpr std::size_t in_channels() const noexcept { return groups * in_per_group; }
    constexpr std::size_t out_channels() const noexcept { return groups * out_per_group; }
    /// The output's height and width for an input of `height` x `width`.
    constexpr size2 output_size(std::size_t height, std::size_t width) const noexcept {
        return {detail::window_count(height, kernel.h, stride.h, padding.h, dilation.h),
                detail::window_count(width, kernel.w, stride.w, padding.w, dilation.w)};
    }
};

}  // namespace nonlocal::simd
