#pragma once
// A kernel that includes the front end above it: tests/layers.cmake must reject it.
#include "nonlocal/weighted_aggregate.hpp"
