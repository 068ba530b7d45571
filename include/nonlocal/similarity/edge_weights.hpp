#pragma once
/// @file similarity/edge_weights.hpp
/// Precomputed weights of the edges of a `grid_stencil`, as a similarity: s(i, j) is the
/// weight of the edge {i, j}, whatever the features. With `grid_stencil` and `sum`,
/// `sum_with_data` or `none`, `weighted_aggregate` runs the stencil kernel over them.

#include <cstddef>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/neighborhood/grid_stencil.hpp"

namespace nonlocal {

/// One plane per forward direction of a stencil (`grid_stencil::forward_offsets()`, in that
/// order): plane d holds, at pixel i, the weight of the edge between i and its neighbour at
/// offset d, 0 where that neighbour is outside the grid. Each weight serves both directions
/// of its edge, s(i, j) = s(j, i): the planes are the symmetrised weights w_ij + w_ji the AR
/// system needs, used as given (`ar_system::edges()` hands its own out this way). A view,
/// like a span: the planes stay the caller's and must outlive it.
template <class T>
class edge_weights {
public:
    using weight_function = identity_weight;

    /// Throws `std::invalid_argument` unless `planes` is [D, H, W] for the D forward
    /// directions of `stencil` on its H x W grid.
    edge_weights(const grid_stencil& stencil, const xt::xtensor<T, 3>& planes)
        : height_(stencil.height), width_(stencil.width), offsets_(stencil.forward_offsets()) {
        detail::require(planes.shape(0) == offsets_.size() && planes.shape(1) == height_ && planes.shape(2) == width_,
                        "edge_weights", [&] {
                            return "planes " + detail::shape_string(planes.shape()) + " do not fit the " +
                                   std::to_string(offsets_.size()) + " forward directions of a stencil on " +
                                   std::to_string(height_) + " x " + std::to_string(width_) + " pixels";
                        });
        for (std::size_t d = 0; d < offsets_.size(); ++d) planes_.push_back(planes.data() + d * height_ * width_);
    }

    /// The planes at `planes[d]`, one for each of `offsets` (used by `ar_system::edges()`).
    edge_weights(std::size_t height, std::size_t width, std::vector<stencil_offset> offsets,
                 std::vector<const T*> planes)
        : height_(height), width_(width), offsets_(std::move(offsets)), planes_(std::move(planes)) {}

    std::size_t height() const noexcept { return height_; }
    std::size_t width() const noexcept { return width_; }
    const std::vector<stencil_offset>& offsets() const noexcept { return offsets_; }
    const std::vector<const T*>& planes() const noexcept { return planes_; }

    /// The weight of the edge {i, j}: 0 unless j is i's neighbour in a direction of the planes.
    template <class U>
    U logit(std::span<const U>, std::span<const U>, std::size_t i, std::size_t j) const {
        const std::size_t first = std::min(i, j), second = std::max(i, j);
        const auto r = std::ptrdiff_t(first / width_), c = std::ptrdiff_t(first % width_);
        const auto dr = std::ptrdiff_t(second / width_) - r, dc = std::ptrdiff_t(second % width_) - c;
        for (std::size_t d = 0; d < offsets_.size(); ++d)
            if (offsets_[d].dy == dr && offsets_[d].dx == dc) return static_cast<U>(planes_[d][first]);
        return U(0);
    }

    /// Throws `std::invalid_argument` unless the planes are those of `stencil`'s grid and directions.
    void check_stencil(const grid_stencil& stencil) const {
        const std::vector<stencil_offset> forward = stencil.forward_offsets();
        const bool same = stencil.height == height_ && stencil.width == width_ && forward.size() == offsets_.size() &&
                          std::equal(forward.begin(), forward.end(), offsets_.begin(), [](auto a, auto b) {
                              return a.dy == b.dy && a.dx == b.dx;
                          });
        detail::require(same, "edge_weights", [&] {
            return "the planes are for " + std::to_string(offsets_.size()) + " directions on " +
                   std::to_string(height_) + " x " + std::to_string(width_) + " pixels, the grid_stencil has " +
                   std::to_string(forward.size()) + " on " + std::to_string(stencil.height) + " x " +
                   std::to_string(stencil.width);
        });
    }

private:
    std::size_t height_, width_;
    std::vector<stencil_offset> offsets_;
    std::vector<const T*> planes_;
};

static_assert(similarity<edge_weights<float>>);
static_assert(similarity<edge_weights<double>>);

}  // namespace nonlocal
