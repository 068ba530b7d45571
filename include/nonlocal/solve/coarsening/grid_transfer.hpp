#pragma once
/// @file solve/coarsening/grid_transfer.hpp
/// What `multigrid` asks of a grid transfer: the coarser system a level makes
/// and the two maps between the levels' vectors. Two transfers implement it,
/// `operator_dependent_interpolation` (`operator_dependent.hpp`) and
/// `aggregation` (`aggregation.hpp`); `multigrid_options::transfer` picks one
/// per level at run time.

#include <cstddef>

#include "nonlocal/config.hpp"
#include "nonlocal/solve/ar_system.hpp"

namespace nonlocal::detail {

/// A transfer between an AR system on a height x width grid and its coarse system on
/// the (height + 1) / 2 x (width + 1) / 2 grid: interpolation P from coarse to fine,
/// restriction P^T, and the Galerkin coarse system P^T A P, which the constructor of
/// each transfer builds and `multigrid` takes over.
template <class T, class Arch = default_arch>
class grid_transfer {
public:
    std::size_t height = 0, width = 0;                 ///< of the fine grid
    std::size_t coarse_height = 0, coarse_width = 0;   ///< (height + 1) / 2, (width + 1) / 2
    ar_system<T, Arch> coarse;                         ///< P^T A P

    virtual ~grid_transfer() = default;
    /// z = P zc, or z += P zc when `add`.
    virtual void prolong(const T* zc, T* z, bool add) const = 0;
    /// rc = P^T r.
    virtual void restrict_to(const T* r, T* rc) const = 0;

protected:
    explicit grid_transfer(const ar_system<T, Arch>& fine)
        : height(fine.height()), width(fine.width()), coarse_height((fine.height() + 1) / 2),
          coarse_width((fine.width() + 1) / 2) {}
    grid_transfer(const grid_transfer&) = default;
    grid_transfer& operator=(const grid_transfer&) = default;
};

}  // namespace nonlocal::detail
