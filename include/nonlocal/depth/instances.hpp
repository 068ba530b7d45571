#pragma once
/// @file depth/instances.hpp
/// The depth tasks' solves, for float and double, compiled in the one source file that
/// includes this header. The program's other sources, compiled with
/// NONLOCAL_DEPTH_EXTERN_INSTANCES defined, call these instead of compiling their own, and
/// compile in about half the time (docs/building.md). CMake: link `nonlocal::depth_instances`,
/// which adds that source and the definition to a target. All sources of a program must be
/// compiled with the same architecture flags.

#include "nonlocal/depth/pipeline.hpp"

namespace nonlocal {

NONLOCAL_DEPTH_SOLVES(, float)
NONLOCAL_DEPTH_SOLVES(, double)

}  // namespace nonlocal
