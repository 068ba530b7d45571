#pragma once
/// @file buffer.hpp
/// `buffer<T>`: the storage of the library's large work arrays (the AR system's
/// weights, the solvers' vectors, the depth tasks' intermediates).
///
/// - Its data starts on a 64-byte boundary, a cache line and an AVX-512 register. The
///   stencil passes start their batches on multiples of the batch width
///   (`ar_system::vector_zone`), so a pixel's own entries (its weights, diagonal,
///   right-hand side and output) load and store without splitting cache lines.
/// - Blocks of 128 KiB or more (those the C library maps afresh from the system) are kept
///   when freed, per thread, and handed out again
///   for the next request of the same size. A fresh block costs a page fault and the
///   kernel's zeroing for every 4 KiB page when first written; a depth task on a
///   1.4 Mpix image allocates about 170 MB, and refining a dataset repeats the same
///   sizes image after image. Each thread keeps at most `buffer_cache_limit` bytes
///   (the least recently freed blocks go first); `release_buffer_cache()` gives the
///   calling thread's blocks back, and a thread's blocks go back when it ends.
///   Define NONLOCAL_BUFFER_CACHE to 0 (alike in every translation unit) to free
///   every block at once; under AddressSanitizer that is the default, so that it
///   sees every use after free.
/// - Blocks of 2 MiB or more start on a 2 MiB boundary and, on Linux, are marked for
///   transparent huge pages (MADV_HUGEPAGE, which takes effect where the system's setting
///   is `madvise`, the default of many distributions): the first write to each 2 MiB then
///   costs one fault instead of 512, which matters to the first task of a program where
///   page faults are slow (virtual machines; docs/performance.md has figures); later
///   tasks reuse the kept blocks. A block may then hold up to 2 MiB more memory than it
///   was asked for.

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#ifndef NONLOCAL_BUFFER_CACHE
#if defined(__SANITIZE_ADDRESS__)
#define NONLOCAL_BUFFER_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NONLOCAL_BUFFER_CACHE 0
#endif
#endif
#endif
#ifndef NONLOCAL_BUFFER_CACHE
#define NONLOCAL_BUFFER_CACHE 1
#endif

namespace nonlocal {

/// Whether freed large blocks are kept for reuse (NONLOCAL_BUFFER_CACHE).
inline constexpr bool buffer_cache_enabled = NONLOCAL_BUFFER_CACHE != 0;
/// Bytes to which a `buffer`'s data is aligned.
inline constexpr std::size_t buffer_alignment = 64;
/// Freed blocks of at least this many bytes are kept for reuse.
inline constexpr std::size_t buffer_cache_threshold = std::size_t(128) << 10;
/// Bytes of freed blocks each thread keeps at most.
inline constexpr std::size_t buffer_cache_limit = std::size_t(512) << 20;
/// Blocks of at least this many bytes start on a boundary of as many bytes (a huge page)
/// and are marked for transparent huge pages where the system has them.
inline constexpr std::size_t buffer_huge_page = std::size_t(2) << 20;

namespace detail {

/// The alignment of a block of `bytes`.
constexpr std::size_t block_alignment(std::size_t bytes) noexcept {
    return bytes >= buffer_huge_page ? buffer_huge_page : buffer_alignment;
}
inline void* aligned_block(std::size_t bytes) {
    void* p = ::operator new(bytes, std::align_val_t(block_alignment(bytes)));
#if defined(MADV_HUGEPAGE)
    // A hint over the block's whole 4 KiB pages: where it fails, nothing else changes.
    if (bytes >= buffer_huge_page) (void)::madvise(p, bytes / 4096 * 4096, MADV_HUGEPAGE);
#endif
    return p;
}
inline void free_block(void* p, std::size_t bytes) noexcept {
    ::operator delete(p, std::align_val_t(block_alignment(bytes)));
}

/// The freed large blocks of one thread, least recently freed first.
class block_cache {
public:
    block_cache() = default;
    block_cache(const block_cache&) = delete;
    block_cache& operator=(const block_cache&) = delete;
    ~block_cache() {
        release();
        destroyed() = true;
    }

    /// A kept block of exactly `bytes`, or nullptr.
    void* take(std::size_t bytes) noexcept {
        for (std::size_t k = blocks_.size(); k-- > 0;)
            if (blocks_[k].bytes == bytes) {
                void* p = blocks_[k].pointer;
                blocks_.erase(blocks_.begin() + std::ptrdiff_t(k));
                held_ -= bytes;
                return p;
            }
        return nullptr;
    }

    /// Keeps the block if it is large and fits the limit (evicting the oldest); else frees it.
    void give_back(void* p, std::size_t bytes) noexcept {
        if (!buffer_cache_enabled || bytes < buffer_cache_threshold || bytes > buffer_cache_limit)
            return free_block(p, bytes);
        while (held_ + bytes > buffer_cache_limit) {
            free_block(blocks_.front().pointer, blocks_.front().bytes);
            held_ -= blocks_.front().bytes;
            blocks_.erase(blocks_.begin());
        }
        try {
            blocks_.push_back({p, bytes});
            held_ += bytes;
        } catch (...) {   // no room to remember it: free it instead
            free_block(p, bytes);
        }
    }

    void release() noexcept {
        for (const auto& b : blocks_) free_block(b.pointer, b.bytes);
        blocks_.clear();
        held_ = 0;
    }

    std::size_t held() const noexcept { return held_; }

    /// Set when the calling thread's cache has been destroyed (a trivially destructible
    /// thread_local, readable to the thread's end): blocks freed after that, by objects
    /// that outlive it, are freed directly.
    static bool& destroyed() noexcept {
        thread_local bool gone = false;
        return gone;
    }

private:
    struct block {
        void* pointer;
        std::size_t bytes;
    };
    std::vector<block> blocks_;
    std::size_t held_ = 0;
};

/// The calling thread's cache, or nullptr once it has been destroyed.
inline block_cache* thread_block_cache() noexcept {
    if (block_cache::destroyed()) return nullptr;
    thread_local block_cache cache;
    return &cache;
}

}  // namespace detail

/// The allocator of `buffer`: 64-byte aligned blocks (2 MiB for those of 2 MiB or more), large ones reused per thread
/// (see the file's comment). Stateless: any two compare equal.
template <class T>
struct buffer_allocator {
    using value_type = T;

    buffer_allocator() noexcept = default;
    template <class U>
    buffer_allocator(const buffer_allocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
        const std::size_t bytes = n * sizeof(T);
        if (bytes >= buffer_cache_threshold)
            if (detail::block_cache* cache = detail::thread_block_cache())
                if (void* p = cache->take(bytes)) return static_cast<T*>(p);
        return static_cast<T*>(detail::aligned_block(bytes));
    }

    void deallocate(T* p, std::size_t n) noexcept {
        detail::block_cache* cache = detail::thread_block_cache();
        if (cache) cache->give_back(p, n * sizeof(T));
        else detail::free_block(p, n * sizeof(T));
    }

    template <class U>
    friend bool operator==(const buffer_allocator&, const buffer_allocator<U>&) noexcept {
        return true;
    }
};

/// A contiguous array of T for large work arrays: a `std::vector` with `buffer_allocator`.
template <class T>
using buffer = std::vector<T, buffer_allocator<T>>;

/// `buffer_allocator` whose elements of a trivial type start uninitialised (`resize(n)`
/// default-initialises them instead of writing zeros), for arrays whose every element is
/// written before it is read.
template <class T>
struct uninitialized_buffer_allocator : buffer_allocator<T> {
    uninitialized_buffer_allocator() noexcept = default;
    template <class U>
    uninitialized_buffer_allocator(const uninitialized_buffer_allocator<U>&) noexcept {}

    template <class U>
    void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

/// A `buffer` that `resize` leaves uninitialised.
template <class T>
using uninitialized_buffer = std::vector<T, uninitialized_buffer_allocator<T>>;
/// The names before 0.1.0, kept for one release.
template <class T>
using uninitialised_buffer [[deprecated("use nonlocal::uninitialized_buffer")]] = uninitialized_buffer<T>;
template <class T>
using uninitialised_buffer_allocator [[deprecated("use nonlocal::uninitialized_buffer_allocator")]] =
    uninitialized_buffer_allocator<T>;

namespace detail {
/// value(i) for each i < n where keep(i), in order, into a `Buffer` of the `count` of them,
/// without a branch (the kept indices often lie at random): every value is written, and the
/// next one's place advances past the kept ones only (one slot more for the last).
template <class Buffer, class Keep, class Value>
Buffer compacted(std::size_t n, std::size_t count, Keep&& keep, Value&& value) {
    Buffer out(count + 1);
    for (std::size_t i = 0, at = 0; i < n; ++i) out[at] = value(i), at += std::size_t(bool(keep(i)));
    out.resize(count);
    return out;
}
}  // namespace detail

/// Bytes of freed buffer blocks the calling thread keeps for reuse.
inline std::size_t buffer_cache_size() noexcept {
    const detail::block_cache* cache = detail::thread_block_cache();
    return cache ? cache->held() : 0;
}

/// Frees the blocks the calling thread keeps for reuse.
inline void release_buffer_cache() noexcept {
    if (detail::block_cache* cache = detail::thread_block_cache()) cache->release();
}

}  // namespace nonlocal
