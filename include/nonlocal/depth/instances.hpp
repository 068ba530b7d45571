#pragma once
/// @file depth/instances.hpp
/// The depth tasks' solves, for float and double, compiled in the one source file that
/// includes this header. The program's other sources, compiled with
/// NONLOCAL_DEPTH_EXTERN_INSTANCES defined, call these instead of compiling their own, and
/// compile in about half the time (docs/building.md). CMake: link `nonlocal::depth_instances`,
/// which adds that source and the definition to a target. All sources of a program must be
/// compiled with the same architecture flags.

#include "nonlocal/filter/depth.hpp"

namespace nonlocal::detail {

template depth_result refine_with_passes<float>(const image_planes<float>&, observed_depth, const depth_options&,
                                                std::string_view, const stopwatch&);
template depth_result refine_with_passes<double>(const image_planes<double>&, observed_depth, const depth_options&,
                                                 std::string_view, const stopwatch&);
template depth_result upsample<float>(const xt::xtensor<double, 2>&, const double*, const image_planes<float>&, std::size_t,
                                      const depth_options&, const depth_options&, const stopwatch&);
template depth_result upsample<double>(const xt::xtensor<double, 2>&, const double*, const image_planes<double>&,
                                       std::size_t, const depth_options&, const depth_options&, const stopwatch&);

}  // namespace nonlocal::detail
