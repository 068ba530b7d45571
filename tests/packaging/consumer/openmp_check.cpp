// Built the way a user builds against nonlocal: `execution::par` runs on OpenMP threads.
#include <nonlocal/execution.hpp>

#include <cstdio>

int main() {
    if (!NONLOCAL_HAS_OPENMP) {
        std::puts("nonlocal was built without OpenMP: execution::par would run sequentially");
        return 1;
    }
    const int threads = nonlocal::detail::thread_count(nonlocal::execution::parallel_policy{2});
    std::printf("execution::par{2} runs on %d threads\n", threads);
    return threads == 2 ? 0 : 1;
}
