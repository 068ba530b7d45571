// buffer.hpp: a buffer's data starts on a 64-byte boundary whatever its size and
// type (on a 2 MiB one from 2 MiB on), and keeps its contents as it grows and shrinks;
// freed large blocks are reused per thread, within the limit, oldest evicted first, and
// released on request.
#include <nonlocal/buffer.hpp>

#include <algorithm>

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

#include "support/support.hpp"

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

BOOST_AUTO_TEST_CASE(blocks_of_a_huge_page_start_on_one) {
    // 2 MiB and more: on a 2 MiB boundary (and marked for transparent huge pages on Linux);
    // just below: on a cache line, as every block.
    for (std::size_t bytes : {buffer_huge_page, buffer_huge_page + 4, 3 * buffer_huge_page + 100}) {
        buffer<float> f(bytes / sizeof(float));
        std::iota(f.begin(), f.end(), 0.f);
        BOOST_TEST(reinterpret_cast<std::uintptr_t>(f.data()) % buffer_huge_page == 0u);
        BOOST_TEST(f[f.size() - 1] == float(f.size() - 1));
    }
    const buffer<float> below(buffer_huge_page / sizeof(float) - 16, 1.f);
    BOOST_TEST(aligned(below.data()));
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

BOOST_AUTO_TEST_CASE(an_uninitialised_buffer_sizes_without_writing_and_keeps_given_values) {
    // A kept block handed to an uninitialised buffer still holds what its last owner wrote
    // (a plain buffer zeroes it); values given explicitly are written as in any vector.
    const std::size_t n = buffer_cache_threshold / sizeof(float) + 7;
    { buffer<float> first(n, 4.0f); }
    uninitialized_buffer<float> reused;
    reused.resize(n);
    BOOST_TEST(aligned(reused.data()));
    if (buffer_cache_enabled) BOOST_TEST(reused[n - 1] == 4.0f);
    const uninitialized_buffer<float> given(5, 2.5f);
    BOOST_TEST(std::count(given.begin(), given.end(), 2.5f) == 5);
    uninitialized_buffer<double> grown{1.0, 2.0};
    grown.push_back(3.0);
    BOOST_TEST((grown == uninitialized_buffer<double>{1.0, 2.0, 3.0}));
    { uninitialized_buffer<float> back(n); }
    const buffer<float> zeroed(n);
    BOOST_TEST(std::count(zeroed.begin(), zeroed.end(), 0.0f) == long(n));
}

BOOST_AUTO_TEST_CASE(large_blocks_are_reused_by_their_thread) {
    if (!buffer_cache_enabled) {   // under AddressSanitizer: every block is freed at once
        { const buffer<float> a(buffer_cache_threshold, 1.0f); }
        BOOST_TEST(buffer_cache_size() == 0u);
        return;
    }
    release_buffer_cache();
    BOOST_TEST(buffer_cache_size() == 0u);
    const std::size_t n = buffer_cache_threshold / sizeof(float) + 5;
    const float* first = nullptr;
    {
        buffer<float> a(n, 1.0f);
        first = a.data();
    }
    BOOST_TEST(buffer_cache_size() == n * sizeof(float));
    {
        const buffer<float> same_size(n, 2.0f);   // the kept block, values set anew
        BOOST_TEST(same_size.data() == first);
        BOOST_TEST(same_size[n - 1] == 2.0f);
        BOOST_TEST(buffer_cache_size() == 0u);
        const buffer<float> other_size(n + 1, 3.0f);   // sizes must match exactly
        BOOST_TEST(other_size.data() != first);
    }
    {
        const buffer<float> small(16, 1.0f);   // below the threshold: never kept
    }
    BOOST_TEST(buffer_cache_size() == (2 * n + 1) * sizeof(float));
    std::size_t other_thread = 1;
    std::thread([&] { other_thread = buffer_cache_size(); }).join();
    BOOST_TEST(other_thread == 0u);   // each thread keeps its own
    release_buffer_cache();
    BOOST_TEST(buffer_cache_size() == 0u);
}

BOOST_AUTO_TEST_CASE(the_cache_keeps_at_most_its_limit) {
    // Blocks taken straight from the allocator are never written: no memory is touched.
    release_buffer_cache();
    buffer_allocator<std::byte> a;
    const std::size_t quarter = buffer_cache_limit / 4;
    std::vector<std::byte*> blocks;
    for (int k = 0; k < 5; ++k) blocks.push_back(a.allocate(quarter));
    for (std::byte* p : blocks) a.deallocate(p, quarter);
    if (!buffer_cache_enabled) {   // under AddressSanitizer: every block is freed at once
        BOOST_TEST(buffer_cache_size() == 0u);
        return;
    }
    BOOST_TEST(buffer_cache_size() == buffer_cache_limit);   // the first freed was evicted
    BOOST_TEST(a.allocate(quarter) == blocks[4]);            // the most recent comes back first
    a.deallocate(blocks[4], quarter);
    std::byte* huge = a.allocate(buffer_cache_limit + 1);
    a.deallocate(huge, buffer_cache_limit + 1);   // larger than the limit: freed, not kept
    BOOST_TEST(buffer_cache_size() == buffer_cache_limit);
    release_buffer_cache();
    BOOST_TEST(buffer_cache_size() == 0u);
}

BOOST_AUTO_TEST_CASE(allocators_compare_equal_and_reject_impossible_sizes) {
    const buffer_allocator<float> f;
    const buffer_allocator<double> d(f);
    BOOST_TEST((f == d));
    buffer_allocator<double> a;
    BOOST_CHECK_THROW(a.allocate(std::size_t(-1) / 4), std::bad_array_new_length);
}

BOOST_AUTO_TEST_CASE(compacted_keeps_the_chosen_values_in_order) {
    // Of 0 .. 9, the odd ones squared; none kept; nothing to choose from; all kept.
    const auto square = [](std::size_t i) { return double(i * i); };
    const auto odd = detail::compacted<uninitialized_buffer<double>>(10, 5, [](std::size_t i) { return i % 2; }, square);
    BOOST_TEST(std::vector<double>(odd.begin(), odd.end()) == (std::vector<double>{1, 9, 25, 49, 81}),
               boost::test_tools::per_element());
    BOOST_TEST(detail::compacted<buffer<double>>(10, 0, [](std::size_t) { return false; }, square).empty());
    BOOST_TEST(detail::compacted<buffer<double>>(0, 0, [](std::size_t) { return true; }, square).empty());
    const auto all = detail::compacted<buffer<std::size_t>>(3, 3, [](std::size_t) { return true; }, [](std::size_t i) { return i; });
    BOOST_TEST(std::vector<std::size_t>(all.begin(), all.end()) == (std::vector<std::size_t>{0, 1, 2}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
