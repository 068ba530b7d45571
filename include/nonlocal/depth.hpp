#pragma once
/// @file depth.hpp
/// The depth module: colour-guided hole filling, denoising and upsampling of depth maps
/// (`fill_depth`, `denoise_depth`, `upsample_depth`), their options and sensor presets, and
/// the noise estimate from the data. Include this rather than `nonlocal.hpp` in programs that
/// only refine depth: they compile in about half the time. Reading and writing depth files is
/// `nonlocal/io/depth.hpp` (target `nonlocal::io`).

#include "nonlocal/depth/tasks.hpp"
#include "nonlocal/depth/noise.hpp"
