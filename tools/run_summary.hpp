#pragma once
// The summary of a batch run from the --report files of its shards: pairs done, failed (with
// their first errors), not converged, skipped, claimed elsewhere, the throughput per core and
// the slowest pairs. A pair reported more than once (a shard resumed or requeued) counts by its
// most finished outcome: refined or written over not converged, skipped, failed and claimed.
#include <algorithm>
#include <cstddef>
#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace nonlocal::tools {

/// One --report line: its string fields and its number fields (a flat JSON object).
struct report_record {
    std::map<std::string, std::string> text;
    std::map<std::string, double> numbers;
};

/// The flat JSON object of one --report line (strings, numbers, true, false, null), or false
/// when the line is not one.
inline bool parse_report_line(const std::string& line, report_record& out) {
    std::size_t at = 0;
    const auto skip = [&] {
        while (at < line.size() && (line[at] == ' ' || line[at] == '\t' || line[at] == '\r')) ++at;
    };
    const auto string = [&](std::string& value) {
        if (at >= line.size() || line[at] != '"') return false;
        for (++at; at < line.size() && line[at] != '"'; ++at) {
            char c = line[at];
            if (c == '\\') {
                if (++at >= line.size()) return false;
                c = line[at];
                if (c == 'n') c = '\n';
                else if (c == 't') c = '\t';
                else if (c == 'u') {   // \u00XX, as json_quoted writes control characters
                    if (at + 4 >= line.size()) return false;
                    c = char(std::stoi(line.substr(at + 1, 4), nullptr, 16));
                    at += 4;
                }
            }
            value += c;
        }
        if (at >= line.size()) return false;
        ++at;
        return true;
    };
    skip();
    if (at >= line.size() || line[at++] != '{') return false;
    for (skip(); at < line.size() && line[at] != '}';) {
        std::string key;
        if (!string(key)) return false;
        skip();
        if (at >= line.size() || line[at++] != ':') return false;
        skip();
        if (at < line.size() && line[at] == '"') {
            std::string value;
            if (!string(value)) return false;
            out.text[key] = value;
        } else {
            const std::size_t end = line.find_first_of(",}", at);
            if (end == std::string::npos) return false;
            std::string word = line.substr(at, end - at);
            while (!word.empty() && word.back() == ' ') word.pop_back();
            if (word != "true" && word != "false" && word != "null") {
                try {
                    std::size_t used = 0;
                    out.numbers[key] = std::stod(word, &used);
                    if (used != word.size()) return false;
                } catch (const std::exception&) {
                    return false;
                }
            }
            at = end;
        }
        skip();
        if (at < line.size() && line[at] == ',') ++at, skip();
    }
    if (at >= line.size()) return false;
    ++at;
    skip();
    return at == line.size();
}

/// What the reports of a run say.
struct run_summary {
    std::size_t pairs = 0, done = 0, not_converged = 0, skipped = 0, failed = 0, claimed = 0, unreadable_lines = 0;
    double seconds = 0;                                          ///< of the pairs solved (done and not converged)
    std::vector<std::pair<std::string, std::string>> errors;     ///< (pair, error) of the failed pairs
    std::vector<std::pair<double, std::string>> slowest;        ///< (seconds, pair), the slowest first
};

/// The summary of the --report files `paths`. Throws std::runtime_error naming a file that
/// cannot be read.
inline run_summary summarise_reports(const std::vector<std::string>& paths, std::size_t shown = 5) {
    // The most finished outcome first.
    const std::map<std::string, int> rank = {{"not converged", 1}, {"skipped", 2}, {"failed", 3}, {"claimed", 4}};
    const auto rank_of = [&](const std::string& status) { return rank.count(status) ? rank.at(status) : 0; };
    std::map<std::string, report_record> pairs;
    run_summary s;
    for (const auto& path : paths) {
        std::ifstream file(path);
        if (!file) throw std::runtime_error("cannot read " + path);
        for (std::string line; std::getline(file, line);) {
            if (line.empty()) continue;
            report_record r;
            if (!parse_report_line(line, r) || !r.text.count("status")) {
                ++s.unreadable_lines;
                continue;
            }
            const std::string key = r.text.count("out") ? r.text["out"] : path + ":" + std::to_string(pairs.size());
            const auto known = pairs.find(key);
            if (known == pairs.end() || rank_of(r.text["status"]) <= rank_of(known->second.text["status"])) pairs[key] = r;
        }
    }
    s.pairs = pairs.size();
    for (auto& [out, r] : pairs) {
        const int k = rank_of(r.text["status"]);
        const double seconds = r.numbers.count("seconds") ? r.numbers["seconds"] : 0;
        if (k == 0 || k == 1) {
            (k == 0 ? s.done : s.not_converged) += 1;
            s.seconds += seconds;
            s.slowest.emplace_back(seconds, out);
        } else if (k == 2) {
            ++s.skipped;
        } else if (k == 3) {
            ++s.failed;
            s.errors.emplace_back(out, r.text["error"]);
        } else {
            ++s.claimed;
        }
    }
    std::sort(s.slowest.begin(), s.slowest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (s.slowest.size() > shown) s.slowest.resize(shown);
    if (s.errors.size() > shown) s.errors.resize(shown);
    return s;
}

/// The summary as lines of text.
inline void print_summary(std::ostream& out, const run_summary& s, std::size_t files) {
    out << s.pairs << " pairs in " << files << (files == 1 ? " report" : " reports") << ": " << s.done << " done, "
        << s.failed << " failed, " << s.not_converged << " not converged, " << s.skipped << " skipped, " << s.claimed
        << " claimed elsewhere and not reported done";
    if (s.unreadable_lines) out << "; " << s.unreadable_lines << " lines unreadable";
    out << "\n";
    const std::size_t solved = s.done + s.not_converged;
    if (solved && s.seconds > 0)
        out << "throughput: " << double(solved) / s.seconds << " pairs per second per core (" << s.seconds / double(solved)
            << " s a pair, " << 3600.0 * double(solved) / s.seconds << " pairs per core-hour)\n";
    for (const auto& [seconds, pair] : s.slowest) out << "slow: " << seconds << " s  " << pair << "\n";
    for (const auto& [pair, error] : s.errors) out << "failed: " << pair << ": " << error << "\n";
}

}  // namespace nonlocal::tools
