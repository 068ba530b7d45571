#pragma once
// Running a --batch list: its items (the lines of tools/batch.hpp's lists) `jobs` at a time, each
// on its own thread, one shard of the list, resumable (--skip-existing), each output claimed
// (tools/shard.hpp), with a progress line on a terminal and a JSON line per item for --report.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli.hpp"
#include "shard.hpp"

namespace nonlocal::tools {

/// `text` as a JSON string, quoted and escaped.
std::string json_quoted(const std::string& text) {
    std::ostringstream out;
    out << '"';
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') out << '\\' << ch;
        else if (c == '\n') out << "\\n";
        else if (c == '\t') out << "\\t";
        else if (c < 0x20) out << "\\u" << std::hex << std::setw(4) << std::setfill('0') << int(c) << std::dec;
        else out << ch;
    }
    out << '"';
    return out.str();
}

/// How a run speaks: `quiet` says nothing but errors; on a terminal a batch shows one
/// progress line, elsewhere one line per item; `report` (--report) gets a JSON line per item,
/// appended in one write as each item ends, so a killed run keeps the lines of what it did.
struct voice {
    bool quiet = false;
    bool terminal = false;
    std::string report;

    void record(const std::string& line) const {
        if (report.empty()) return;
        const int fd = ::open(report.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        const bool written = fd >= 0 && ::write(fd, line.data(), line.size()) == ssize_t(line.size());
        if (fd >= 0) ::close(fd);
        if (!written) throw std::runtime_error("cannot append to " + report);
    }
};

/// "[12/100] 3.1 per second, 0:29 left, 1 failed"
std::string progress(std::size_t done, std::size_t total, double seconds, std::size_t failed) {
    std::ostringstream out;
    const double rate = seconds > 0 ? double(done) / seconds : 0.0;
    out << '[' << done << '/' << total << "] " << std::fixed << std::setprecision(2) << rate << " per second";
    if (rate > 0 && done < total) {
        const auto left = std::size_t(double(total - done) / rate + 0.5);
        out << ", " << left / 3600 << ':' << std::setw(2) << std::setfill('0') << left / 60 % 60 << ':' << std::setw(2)
            << left % 60 << " left";
    }
    if (failed) out << ", " << failed << " failed";
    return out.str();
}

/// What a batch is run with.
struct batch_settings {
    std::size_t jobs = 1;
    bool skip_existing = false;
    shard part;
    const char* unit = "pairs";     ///< what the items are called in the summary
    const char* verb = "refined";   ///< what is done to them: the summary's verb and an item's status
};

/// The options of a batch run, as both tools take them.
struct batch_command_line {
    std::string list, shard_text = "1/1", report;
    std::size_t jobs = std::max(1u, std::thread::hardware_concurrency()), shard_count = 0;
    bool skip_existing = false;
    CLI::Option* batch = nullptr;   ///< --batch, for the options that exclude it

    /// Adds --batch (a list of `format` lines, one per item), --jobs, --skip-existing, --shard,
    /// --shard-count, --report (`report_fields`: what its lines hold) and --quiet.
    void add_to(CLI::App& app, const std::string& items, const std::string& format, const std::string& report_fields,
                voice& speech) {
        batch = app.add_option("--batch", list,
                               "a list of " + items + ", one \"" + format + "\" per line (paths may be quoted; # starts a "
                               "comment), all with the same options")
                    ->check(CLI::ExistingFile);
        app.add_option("--jobs", jobs, "--batch: " + items + " at a time, one thread each")
            ->check(at_least(1))->needs(batch)->capture_default_str();
        app.add_flag("--skip-existing", skip_existing,
                     "--batch: leave " + items + " whose output exists (outputs are written whole, so a run resumes)")
            ->needs(batch);
        app.add_option("--shard", shard_text,
                       "--batch: the I-th of N disjoint slices of the list (I/N), or the one the scheduler names "
                       "(auto: a Slurm job array, or a Kubernetes indexed Job with --shard-count)")
            ->needs(batch)->capture_default_str();
        app.add_option("--shard-count", shard_count, "--shard auto under Kubernetes: the Job's completions")
            ->check(at_least(1))->needs(batch);
        app.add_option("--report", report, "append one JSON line per item as it ends: " + report_fields)
            ->check(path_ending_in({".jsonl", ".json"}));
        app.add_flag("--quiet", speech.quiet, "print nothing but errors");
    }

    /// Whether --batch was given.
    bool given() const { return batch && batch->count() > 0; }
    /// The settings of `run_batch` (the shard parsed now: it may read the scheduler's variables).
    batch_settings settings(const char* unit, const char* verb) const {
        return {jobs, skip_existing, parse_shard(shard_text, shard_count), unit, verb};
    }
};

/// What one item's work gives back: its line for the log, whether its solve converged, and the
/// JSON fields of its result (", \"seconds\": 0.3"), for --report.
struct item_outcome {
    std::string summary;
    bool converged = true;
    std::string fields;
};

/// One line of --report: the item's own fields (`described`, as ", \"out\": ..."), its status
/// (the settings' verb, not converged, skipped, claimed, failed), the result's fields or the error.
inline std::string report_line(std::size_t line, const std::string& described, const std::string& status,
                               const std::string& fields, const std::string& error) {
    std::ostringstream out;
    out << "{\"line\": " << line << described << ", \"status\": " << json_quoted(status) << fields;
    if (!error.empty()) out << ", \"error\": " << json_quoted(error);
    out << "}\n";
    return out.str();
}

/// Runs `work(item)` (an item_outcome; it throws to fail) for `items`, the list's items in the
/// settings' shard as its reader kept them (a `packed_list`; `items[k]` an item with `out` and
/// `line`), `jobs` at a time. An item that fails is reported and the others go on;
/// `describe(item)` gives its fields for the report. Exit status: 1 if an item failed, else 2
/// if a solve did not converge, else 0.
template <class Items, class Describe, class Work>
int run_batch(const std::string& list_path, const Items& items, const batch_settings& settings,
              const voice& speech, Describe&& describe, Work&& work) {
    std::mutex output;
    std::atomic<std::size_t> next{0}, failed{0}, unconverged{0}, skipped{0}, claimed{0};
    std::size_t done = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    const auto run = [&] {
        for (std::size_t k; (k = next.fetch_add(1)) < items.size();) {
            const auto item = items[k];
            std::string line, status, error;
            item_outcome outcome;
            const auto finished = [&] { return settings.skip_existing && std::filesystem::exists(item.out); };
            try {
                // Another process of the same list (a shard run twice, a second job) may hold the
                // item; a finished item needs no claim, and a claimed one is checked again, as the
                // process that held it may have finished it just before.
                std::optional<output_claim> claim;
                if (!finished()) claim.emplace(item.out);
                if (claim && !claim->held()) {
                    line = "left, " + item.out + " is claimed by " + claim->owner(), status = "claimed";
                    ++claimed;
                } else if (finished()) {
                    if (!claim) output_claim::remove_leftover(item.out);
                    line = "skipped, " + item.out + " exists", status = "skipped";
                    ++skipped;
                } else {
                    outcome = work(item);
                    line = outcome.summary;
                    status = outcome.converged ? settings.verb : "not converged";
                    unconverged += !outcome.converged;
                }
            } catch (const std::exception& e) {
                line = error = e.what(), status = "failed";
                ++failed;
            }
            const std::lock_guard lock(output);
            ++done;
            speech.record(report_line(item.line, describe(item), status, outcome.fields, error));
            const std::string where = '[' + std::to_string(done) + '/' + std::to_string(items.size()) + "] " + list_path +
                                      ':' + std::to_string(item.line);
            if (status == "failed") {
                if (speech.terminal && !speech.quiet) std::cout << "\r\x1b[K" << std::flush;
                std::cerr << where << ": failed: " << line << std::endl;
            } else if (!speech.quiet && !speech.terminal) {
                std::cout << where << ": " << line << std::endl;
            }
            if (speech.terminal && !speech.quiet)
                std::cout << "\r\x1b[K" << progress(done, items.size(), elapsed(), failed) << std::flush;
        }
    };
    {
        std::vector<std::jthread> workers;
        for (std::size_t t = 1; t < std::min(settings.jobs, items.size()); ++t) workers.emplace_back(run);
        run();
    }
    const double seconds = elapsed();
    const std::size_t finished_now = items.size() - failed - skipped - claimed;
    const shard part = settings.part;
    if (speech.terminal && !speech.quiet) std::cout << "\r\x1b[K";
    if (!speech.quiet)
        std::cout << settings.verb << ' ' << finished_now << " of " << items.size() << ' ' << settings.unit << " in " << seconds
                  << " s (" << (seconds > 0 ? double(finished_now) / seconds : 0.0) << ' ' << settings.unit << "/s, "
                  << std::min(settings.jobs, items.size()) << " jobs"
                  << (part.count > 1 ? ", shard " + std::to_string(part.index) + '/' + std::to_string(part.count) : "")
                  << "); " << skipped << " skipped, " << failed << " failed, " << unconverged << " not converged"
                  << (claimed ? ", " + std::to_string(claimed) + " claimed by another process" : "") << std::endl;
    return failed ? 1 : unconverged ? 2 : 0;
}

}  // namespace nonlocal::tools
