// buffer.hpp: a buffer's data starts on a 64-byte boundary whatever its size and
// type, and keeps its contents as it grows and shrinks.
#include <nonlocal/buffer.hpp>

#include <cstdint>
#include <numeric>

#include "support.hpp"

using namespace nonlocal;

BOOST_AUTO_TEST_SUITE(test_buffer)

namespace {
bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % buffer_alignment == 0; }
}  // namespace

BOOST_AUTO_TEST_CASE(data_starts_on_a_cache_line) {
    for (std::size_t n : {1, 3, 15, 16, 17, 1000, 65537, 1 << 20}) {
        const buffer<float> f(n, 1.5f);
        const buffer<double> d(n, 2.5);
        const buffer<std::uint8_t> bytes(n, 7);
        BOOST_TEST(aligned(f.data()));
        BOOST_TEST(aligned(d.data()));
        BOOST_TEST(aligned(bytes.data()));
        BOOST_TEST(std::accumulate(f.begin(), f.end(), 0.0) == 1.5 * double(n));
    }
}

BOOST_AUTO_TEST_CASE(growth_and_shrinking_keep_the_contents) {
    buffer<double> v;
    const std::size_t n = 300001;
    for (std::size_t i = 0; i < n; ++i) v.push_back(double(i));
    bool same = true;
    for (std::size_t i = 0; i < n; ++i) same = same && v[i] == double(i);
    BOOST_TEST(same);
    BOOST_TEST(aligned(v.data()));
    v.resize(5);
    v.shrink_to_fit();
    BOOST_TEST(v.size() == 5u);
    BOOST_TEST(v[4] == 4.0);
    BOOST_TEST(aligned(v.data()));
    buffer<double> empty;
    BOOST_TEST(empty.empty());
    empty.swap(v);
    BOOST_TEST(empty.size() == 5u);
}

BOOST_AUTO_TEST_SUITE_END()
