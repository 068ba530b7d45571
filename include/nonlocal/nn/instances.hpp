#pragma once
/// @file nn/instances.hpp
/// The layers' heavy parts (`nn::convolve`, every algorithm a convolution may choose at run
/// time, and `nn::nonlocal_block_forward`), for float on the default architecture, compiled in
/// the one source file that includes this header (double layers compile where they are used).
/// The program's other sources, compiled with NONLOCAL_NN_EXTERN_INSTANCES defined, call
/// these instead of compiling their own, and compile in about a third of the time
/// (docs/building.md). CMake: link `nonlocal::nn_instances`, which adds that source and the
/// definition to a target. All sources of a program must be compiled with the same
/// architecture flags.

#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/nonlocal_block.hpp"

namespace nonlocal::nn {

NONLOCAL_NN_CONVOLVE(, float)
NONLOCAL_NN_NONLOCAL_BLOCK(, float)

}  // namespace nonlocal::nn
