// Compositions a user writes from the public API, each at its rate beside dense attention's,
// on one thread: n = 4096 tokens (a 64 x 64 grid), d = dv = 32. Each row prints the kernel
// `nonlocal::plan` names for it; at the end a table gives each row's rate as a share of
//   - dense attention's (scaled_dot_product, dense, softmax), and
//   - the same neighborhood's dot-product attention (scaled_dot_product with the row's
//     normalization; softmax for a row whose exponentials are normalised by `sum`; window2d's
//     for the neighborhood that gives window2d's pairs as ranges),
// both measured in the same run (medians when --benchmark_repetitions is given).
//
//   build/release/benchmarks/bench_compositions [--benchmark_repetitions=3]
//
// GFLOPS counts 2 (d + dv) flops per admissible pair, as bench_aggregate does: what the
// composition needs, whatever the kernel spends.
#include <nonlocal/nonlocal.hpp>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <xtensor/xrandom.hpp>

namespace {

constexpr std::size_t side = 64, n = side * side, d = 32;

// ---------------------------------------------------------------- a user's policies, from the docs

/// The custom-policies tutorial's Laplacian, with `logit` alone.
struct laplacian {
    using weight_function = nonlocal::exp_weight;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        T distance = 0;
        for (std::size_t c = 0; c < q.size(); ++c) distance += std::abs(q[c] - k[c]);
        return -distance / 2;
    }
};

/// The same Laplacian declared as a sum over channels.
struct laplacian_channels {
    using weight_function = nonlocal::exp_weight;
    using traits = nonlocal::similarity_traits<nonlocal::channel_sum_form, nonlocal::symmetric>;
    template <class V>
    V channel_logit(V difference) const { return xsimd::abs(difference) * V(-0.5); }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return nonlocal::channel_sum_logit(*this, q, k); }
};

/// A user's own scaled dot product, declaring its form.
struct my_dot {
    using weight_function = nonlocal::identity_weight;
    using traits = nonlocal::similarity_traits<nonlocal::dot_product_form>;
    double scale(std::size_t dim) const { return 1 / std::sqrt(double(dim)); }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        T s = 0;
        for (std::size_t c = 0; c < q.size(); ++c) s += q[c] * k[c];
        return s * T(scale(q.size()));
    }
};

/// The same declaring nothing.
struct my_plain_dot {
    using weight_function = nonlocal::identity_weight;
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const { return my_dot{}.logit(q, k); }
};

/// A neighborhood giving, as ranges, exactly the pairs of window2d{64, 64, 7}.
struct window_ranges {
    template <class F>
    void for_each_range(std::size_t i, nonlocal::extents, F&& f) const {
        const std::size_t r = i / side, c = i % side;
        const std::size_t r0 = std::min(std::max<std::ptrdiff_t>(std::ptrdiff_t(r) - 3, 0), std::ptrdiff_t(side - 7));
        const std::size_t c0 = std::min(std::max<std::ptrdiff_t>(std::ptrdiff_t(c) - 3, 0), std::ptrdiff_t(side - 7));
        for (std::size_t y = r0; y < r0 + 7; ++y) f(nonlocal::key_range{y * side + c0, 7, 1});
    }
};

/// The tutorial's log-sparse neighborhood.
struct log_sparse {
    template <class F>
    void for_each_range(std::size_t i, nonlocal::extents, F&& f) const {
        std::size_t step = 1;
        while (step <= i) step *= 2;
        for (step /= 2; step >= 1; step /= 2) f(nonlocal::key_range{i - step, 1, 1});
        f(nonlocal::key_range{i, 1, 1});
    }
};

// ---------------------------------------------------------------- rows

template <class Nb>
double admissible_pairs(const Nb& nb) {
    double pairs = 0;
    for (std::size_t i = 0; i < n; ++i)
        nb.for_each_range(i, nonlocal::extents{n, n}, [&](nonlocal::key_range r) { pairs += double(r.count); });
    return pairs;
}

struct row_info {
    std::string name, baseline;
};
std::vector<row_info>& rows() {
    static std::vector<row_info> all;
    return all;
}

template <class S, class Nb, class Nm>
void run_row(benchmark::State& state, S s, Nb nb, Nm nm) {
    xt::random::seed(1);
    const xt::xtensor<float, 2> q = xt::random::randn<float>({n, d}), k = xt::random::randn<float>({n, d}),
                                v = xt::random::randn<float>({n, d});
    xt::xtensor<float, 2> out = xt::empty<float>({n, d});
    for (auto _ : state) {
        nonlocal::weighted_aggregate(q, k, v, s, nb, nm, out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOPS"] =
        benchmark::Counter(2.0 * admissible_pairs(nb) * double(2 * d) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(nonlocal::kernel::name(nonlocal::plan(q, k, v, s, nb, nm).kernel()));
}

/// Registers a row named "similarity/neighborhood/normalization" and, once per neighborhood
/// and normalization family, its dot-product baseline.
template <class S, class Nb, class Nm>
void add(const std::string& similarity, const std::string& neighborhood, const std::string& normalization, S s,
         Nb nb, Nm nm, const std::string& compared_with = "") {
    constexpr bool exp_sum = std::is_same_v<nonlocal::weight_function_t<S>, nonlocal::exp_weight> &&
                             Nm::kind == nonlocal::normalizer::sum;
    const std::string family = exp_sum ? "softmax" : normalization;
    const std::string baseline = "scaled_dot_product/" + neighborhood + "/" + family;
    const bool known = std::any_of(rows().begin(), rows().end(), [&](const row_info& r) { return r.name == baseline; });
    if (!known) {
        if constexpr (exp_sum)
            benchmark::RegisterBenchmark(baseline.c_str(), [=](benchmark::State& st) {
                run_row(st, nonlocal::scaled_dot_product{}, nb, nonlocal::softmax{});
            })->Unit(benchmark::kMillisecond);
        else
            benchmark::RegisterBenchmark(baseline.c_str(), [=](benchmark::State& st) {
                run_row(st, nonlocal::scaled_dot_product{}, nb, nm);
            })->Unit(benchmark::kMillisecond);
        rows().push_back({baseline, baseline});
    }
    const std::string name = similarity + "/" + neighborhood + "/" + normalization;
    if (!compared_with.empty()) {   // the baseline is another neighborhood's row, registered before
        rows().back().baseline = compared_with;
        return;
    }
    if (name == baseline) return;
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { run_row(st, s, nb, nm); })
        ->Unit(benchmark::kMillisecond);
    rows().push_back({name, baseline});
}

template <class Nb>
void add_neighborhood(const std::string& name, Nb nb) {
    using namespace nonlocal;
    add("scaled_dot_product", name, "softmax", scaled_dot_product{}, nb, softmax{});
    add("gaussian", name, "sum", gaussian{}, nb, sum{});
    add("gaussian_distance", name, "sum", gaussian_distance(8.0), nb, sum{});
    add("squared_euclidean", name, "sum", squared_euclidean{}, nb, sum{});
    add("cosine", name, "softmax", cosine{}, nb, softmax{});
    add("laplacian_distance", name, "sum", laplacian_distance(8.0), nb, sum{});
    add("laplacian_channels", name, "sum", laplacian_channels{}, nb, sum{});
    add("laplacian", name, "sum", laplacian{}, nb, sum{});
    add("my_dot", name, "softmax", my_dot{}, nb, softmax{});
    add("my_plain_dot", name, "softmax", my_plain_dot{}, nb, softmax{});
}

void register_rows() {
    add_neighborhood("dense", nonlocal::dense{});
    add_neighborhood("causal", nonlocal::causal{});
    add_neighborhood("window2d_7x7", nonlocal::window2d{side, side, 7});
    add_neighborhood("window1d_r64", nonlocal::window1d{64});
    // A user's neighborhoods of key ranges, against window2d's rate and dense attention's.
    add("scaled_dot_product", "window_ranges_7x7", "softmax", nonlocal::scaled_dot_product{}, window_ranges{},
        nonlocal::softmax{}, "scaled_dot_product/window2d_7x7/softmax");
    add("scaled_dot_product", "log_sparse", "softmax", nonlocal::scaled_dot_product{}, log_sparse{}, nonlocal::softmax{},
        "scaled_dot_product/dense/softmax");
}

/// The console's rows, and the GFLOPS and kernel of each (its median with repetitions).
class ratio_reporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& run : runs) {
            const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
            if (run.run_type == Run::RT_Aggregate && !median) continue;
            const auto it = run.counters.find("GFLOPS");
            if (it == run.counters.end()) continue;
            std::string name = run.run_name.function_name;
            if (median || !gflops_.count(name)) gflops_[name] = it->second.value, kernel_[name] = run.report_label;
        }
    }
    void print_table() const {
        const auto dense = gflops_.find("scaled_dot_product/dense/softmax");
        if (dense == gflops_.end()) return;
        std::printf("\n%-52s %-13s %8s %9s %12s\n", "composition", "kernel", "GFLOPS", "/ dense", "/ same nb");
        for (const row_info& row : rows()) {
            const auto g = gflops_.find(row.name), b = gflops_.find(row.baseline);
            if (g == gflops_.end()) continue;
            std::printf("%-52s %-13s %8.1f %9.3f %12.3f\n", row.name.c_str(), kernel_.at(row.name).c_str(), g->second,
                        g->second / dense->second, b == gflops_.end() ? NAN : g->second / b->second);
        }
    }

private:
    std::map<std::string, double> gflops_;
    std::map<std::string, std::string> kernel_;
};

}  // namespace

int main(int argc, char** argv) {
    register_rows();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    ratio_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.print_table();
    benchmark::Shutdown();
}
