#pragma once
/// @file filter.hpp
/// The image filters: non-local means (`nlm_denoise`), the joint bilateral filter
/// (`joint_bilateral`) and the median (`median_filter`). Include this rather than
/// `nonlocal.hpp` in programs that only filter images.

#include "nonlocal/filter/median.hpp"
#include "nonlocal/filter/nlm.hpp"
