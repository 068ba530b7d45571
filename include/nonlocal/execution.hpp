#pragma once
/// @file execution.hpp
/// Execution policies: `execution::seq` (the default) runs on the calling
/// thread; `execution::par` splits independent work (batch items x heads, or
/// the query tiles of one slice) over OpenMP threads. Each tile is computed by
/// one thread with the same arithmetic either way, so results are bitwise
/// identical to `seq`. Without OpenMP (`NONLOCAL_HAS_OPENMP` is 0), `par` runs
/// sequentially.

#include <concepts>
#include <cstddef>
#include <exception>
#include <string>
#include <type_traits>

#include "nonlocal/detail/errors.hpp"

#if defined(_OPENMP)
#include <omp.h>
#define NONLOCAL_HAS_OPENMP 1
#else
#define NONLOCAL_HAS_OPENMP 0
#endif

namespace nonlocal::execution {

/// Run on the calling thread.
struct sequenced_policy {};
/// Run on `threads` OpenMP threads (0: OpenMP's default, `OMP_NUM_THREADS`; negative counts are
/// rejected by the functions that take the policy).
struct parallel_policy {
    int threads = 0;
};

inline constexpr sequenced_policy seq{};
inline constexpr parallel_policy par{};

}  // namespace nonlocal::execution

namespace nonlocal {

template <class E>
concept execution_policy =
    std::same_as<std::remove_cvref_t<E>, execution::sequenced_policy> ||
    std::same_as<std::remove_cvref_t<E>, execution::parallel_policy>;

namespace detail {

/// Threads a policy runs on. Throws `std::invalid_argument` for a negative thread count.
inline int thread_count(execution::sequenced_policy) noexcept { return 1; }
inline int thread_count(execution::parallel_policy p) {
    require(p.threads >= 0, "execution::parallel_policy", [&] {
        return "threads must be >= 0 (0: OpenMP's default), got " + std::to_string(p.threads);
    });
#if NONLOCAL_HAS_OPENMP
    return p.threads > 0 ? p.threads : omp_get_max_threads();
#else
    (void)p;
    return 1;
#endif
}

/// Any policy as the parallel policy of as many threads (for code compiled once for both).
template <class Ex>
execution::parallel_policy as_parallel(Ex policy) {
    return {thread_count(policy)};
}

/// How `parallel_for` deals its calls out: `uneven` tasks one at a time to whichever
/// thread is free (OpenMP's dynamic schedule), `even` ones in equal runs of consecutive
/// indices, thread t always the t-th run (static schedule). With even tasks over the same
/// data (a GEMM's column panels, a layer's pixels), each thread then meets again the data
/// it touched in the call before, still in its own cache, instead of the other threads';
/// a dynamic deal moves it from core to core.
enum class task_costs { uneven, even };

/// Calls f(i) for i in [0, count) on `threads` threads, scheduled as `costs` says;
/// the first exception thrown by any call is rethrown on the calling thread.
template <class F>
void parallel_for(std::size_t count, int threads, F&& f, task_costs costs = task_costs::uneven) {
    if (threads <= 1 || count <= 1) {
        for (std::size_t i = 0; i < count; ++i) f(i);
        return;
    }
    std::exception_ptr error;
    const auto call = [&](std::ptrdiff_t i) {
        try {
            f(static_cast<std::size_t>(i));
        } catch (...) {
#if NONLOCAL_HAS_OPENMP
#pragma omp critical(nonlocal_parallel_for_error)
#endif
            if (!error) error = std::current_exception();
        }
    };
    const auto n = static_cast<std::ptrdiff_t>(count);
    if (costs == task_costs::even) {
#if NONLOCAL_HAS_OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
        for (std::ptrdiff_t i = 0; i < n; ++i) call(i);
    } else {
#if NONLOCAL_HAS_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
        for (std::ptrdiff_t i = 0; i < n; ++i) call(i);
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace detail
}  // namespace nonlocal
