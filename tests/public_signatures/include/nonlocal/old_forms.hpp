#pragma once
// What tests/public_signatures.cmake refuses: threads the old ways, a detail type, an instruction set fixed.
namespace nonlocal {
template <class Ex>
void smooth(const float* x, float* y, Ex policy = {});
void sharpen(const float* x, float* y, int threads = 1);
void blur(const detail::view& x, float* y);
template <class Arch>
inline constexpr int tile = vector_registers<Arch> >= 32 ? 8 : 4;
inline void median(const float* x) { filter<default_arch>(x); }
namespace detail {
void plumbing(int threads);   // inside detail: allowed
}  // namespace detail
}  // namespace nonlocal
