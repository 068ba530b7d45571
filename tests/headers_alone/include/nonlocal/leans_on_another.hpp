#pragma once
// A header that leans on one its user included first (xtensor's): headers_alone.cmake must
// name it (test headers_alone_names_one_that_leans).
#include <vector>

inline std::vector<std::size_t> leans() { return {xt::xtensor<int, 1>().size()}; }
