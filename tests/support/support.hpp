#pragma once
// Helpers shared by the tests: seeded random tensors, element-wise comparison
// with a tolerance, and the value types and SIMD architectures every kernel is
// run on.

#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <unistd.h>
#include <random>
#include <sstream>
#include <string>

#include <xsimd/xsimd.hpp>
#include <xtensor/xtensor.hpp>

namespace nonlocal::test {

/// The value types every kernel is tested in.
using value_types = boost::mpl::list<float, double>;

/// Uniform values in [lo, hi), reproducible from `seed`.
template <class T, std::size_t N>
xt::xtensor<T, N> random_tensor(const std::array<std::size_t, N>& shape, unsigned seed, double lo = -1.0,
                                double hi = 1.0) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    xt::xtensor<T, N> t = xt::empty<T>(shape);
    for (auto& x : t) x = static_cast<T>(dist(gen));
    return t;
}

/// Checks that `actual` and `expected` have the same shape and that every
/// element satisfies |a - e| <= atol + rtol * |e|; reports the worst element.
template <class A, class E>
void check_close(const A& actual, const E& expected, double atol, double rtol, const std::string& what = "") {
    BOOST_TEST_CONTEXT(what) {
        BOOST_REQUIRE_MESSAGE(actual.shape().size() == expected.shape().size() &&
                                  std::equal(actual.shape().begin(), actual.shape().end(), expected.shape().begin()),
                              "shapes differ");
        double worst = 0;
        std::size_t worst_at = 0, bad = 0;
        auto a = actual.begin();
        auto e = expected.begin();
        for (std::size_t t = 0; t < actual.size(); ++t, ++a, ++e) {
            const double ad = static_cast<double>(*a), ed = static_cast<double>(*e);
            const double excess = std::abs(ad - ed) - (atol + rtol * std::abs(ed));
            if (!(excess <= 0) || std::isnan(ad) != std::isnan(ed)) {
                ++bad;
                if (!(excess <= worst)) worst = excess, worst_at = t;
            }
        }
        std::ostringstream msg;
        msg << bad << " of " << actual.size() << " elements outside atol " << atol << " + rtol " << rtol
            << " (worst at flat index " << worst_at << ", by " << worst << ")";
        BOOST_TEST(bad == 0u, msg.str());
    }
}

/// The architectures the kernels are tested on: the default one (what the
/// build flags select) and, when the flags allow them, SSE2 and AVX2 + FMA,
/// unless NONLOCAL_TEST_DEFAULT_ARCH_ONLY is defined (CMake option
/// NONLOCAL_TEST_EVERY_ARCH=OFF: the sanitizer, AVX2 and scalar builds, whose
/// flags select the architecture they test).
template <class F>
void for_each_arch(F&& f) {
    f(xsimd::default_arch{});
#ifndef NONLOCAL_TEST_DEFAULT_ARCH_ONLY
    if constexpr (!std::is_same_v<xsimd::default_arch, xsimd::sse2> &&
                  xsimd::supported_architectures::contains<xsimd::sse2>())
        f(xsimd::sse2{});
    if constexpr (!std::is_same_v<xsimd::default_arch, xsimd::fma3<xsimd::avx2>> &&
                  xsimd::supported_architectures::contains<xsimd::fma3<xsimd::avx2>>())
        f(xsimd::fma3<xsimd::avx2>{});
#endif
}

/// Lengths around the SIMD widths (4, 8, 16 floats; 2, 4, 8 doubles) and an
/// unroll of 4 batches, plus the empty and single-element cases.
inline const std::size_t awkward_lengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33,
                                              63, 64, 65, 100, 127, 128, 129, 257};

/// Shapes [n, in, out] of x [n, in] W^T for the GEMM's tests: rows around the micro-kernel's
/// 6 and past a block of rows (2 MiB of x: 700 rows of 800 floats make two), odd depths and
/// depths past a depth block (4096), columns around the vector widths and the panels (64
/// floats; the micro-kernel's 16 with AVX2 and 64 with AVX-512), and empty sizes.
inline const std::array<std::size_t, 3> awkward_products[] = {
    {0, 5, 3},     {1, 1, 1},    {1, 17, 9},  {5, 7, 8},    {6, 8, 16},    {7, 9, 17},     {13, 255, 33}, {97, 257, 65},
    {103, 600, 7}, {400, 70, 40}, {12, 0, 5}, {3, 4, 0},    {9, 33, 130},  {13, 4099, 20}, {700, 800, 17}};

/// x [n, in], weight [out, in] and bias [out] of random floats, seeded by the shape.
struct random_linear {
    xt::xtensor<float, 2> x, w;
    xt::xtensor<float, 1> b;
    random_linear(std::size_t n, std::size_t in, std::size_t out)
        : x(random_tensor<float, 2>({n, in}, unsigned(n + in))), w(random_tensor<float, 2>({out, in}, unsigned(out + 1))),
          b(random_tensor<float, 1>({out}, unsigned(out + 2))) {}
};

/// temp/NAME_PID: a folder of this process's own under the temporary directory (the suite's
/// configurations run their tests side by side; they must not share files).
inline std::filesystem::path scratch_dir(const std::string& name) {
    return std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
}

/// Runs `statement` and checks it throws std::invalid_argument whose message contains every `part`.
template <class F, class... Parts>
void check_invalid(F&& statement, const Parts&... parts) {
    try {
        statement();
        BOOST_ERROR("expected std::invalid_argument, nothing was thrown");
    } catch (const std::invalid_argument& e) {
        const std::string message = e.what();
        const auto contains = [&](const std::string& part) {
            BOOST_TEST(message.find(part) != std::string::npos,
                       "message \"" << message << "\" should contain \"" << part << "\"");
        };
        (contains(parts), ...);
    }
}

}  // namespace nonlocal::test
