#pragma once
// A header that takes its threads the old ways, for the execution-form test to refuse.
namespace nonlocal {
template <class Ex>
void smooth(const float* x, float* y, Ex policy = {});
void sharpen(const float* x, float* y, int threads = 1);
namespace detail {
void plumbing(int threads);   // inside detail: allowed
}  // namespace detail
}  // namespace nonlocal
