// nonlocal-refine --summary's reading of --report files: the JSON lines as the batch runner
// writes them, pairs reported by several shards or runs counted once by their most finished
// outcome, the throughput per core from the solved pairs' seconds, and lines it cannot read.
#define BOOST_TEST_MODULE batch_tools   // with test_batch_list.cpp: one program
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "batch_run.hpp"
#include "run_summary.hpp"

namespace {

std::string write_report(const std::string& name, const std::string& text) {
    const auto dir = std::filesystem::temp_directory_path() / "nonlocal-run-summary";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
}

std::string line(const std::string& out, const std::string& status, double seconds, const std::string& error = "") {
    return nonlocal::tools::report_line(1, ", \"out\": " + nonlocal::tools::json_quoted(out), status,
                                        status == "refined" || status == "not converged"
                                            ? ", \"method\": \"pcg\", \"iterations\": 9, \"seconds\": " + std::to_string(seconds)
                                            : "",
                                        error);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(run_summary)

BOOST_AUTO_TEST_CASE(report_lines_parse_as_the_runner_writes_them) {
    nonlocal::tools::report_record r;
    const std::string written = line("a \"quoted\"\tname\x01.png", "failed", 0, "cannot read x.png: No such file");
    BOOST_TEST(nonlocal::tools::parse_report_line(written.substr(0, written.size() - 1), r));
    BOOST_TEST(r.text["out"] == "a \"quoted\"\tname\x01.png");
    BOOST_TEST(r.text["status"] == "failed");
    BOOST_TEST(r.text["error"] == "cannot read x.png: No such file");
    BOOST_TEST(r.numbers["line"] == 1.0);
    nonlocal::tools::report_record n;
    BOOST_TEST(nonlocal::tools::parse_report_line("{\"seconds\": 2.5e-1, \"ok\": true, \"none\": null}", n));
    BOOST_TEST(n.numbers["seconds"] == 0.25);
    for (const std::string bad : {"", "{", "{\"a\": }", "{\"a\" 1}", "{\"a\": 1", "{\"a\": \"b}", "[1]", "{\"a\": 1} x"}) {
        nonlocal::tools::report_record ignored;
        BOOST_TEST(!nonlocal::tools::parse_report_line(bad, ignored), bad);
    }
}

BOOST_AUTO_TEST_CASE(pairs_count_once_by_their_most_finished_outcome) {
    // Shard 1: a done, b failed, c claimed (shard 2 held it). Shard 2: c done, d not converged.
    // A resumed shard 1: b done this time, e failed twice, f skipped (written before).
    const std::string one = write_report("one.jsonl", line("a", "refined", 2) + line("b", "failed", 0, "disk full") +
                                                          line("c", "claimed", 0));
    const std::string two = write_report("two.jsonl", line("c", "refined", 4) + line("d", "not converged", 6));
    const std::string again = write_report("again.jsonl", line("b", "refined", 8) + line("e", "failed", 0, "bad png") +
                                                              line("e", "failed", 0, "bad png") + line("f", "skipped", 0) +
                                                              "{\"truncated\n");
    const auto s = nonlocal::tools::summarise_reports({one, two, again});
    BOOST_TEST(s.pairs == 6u);
    BOOST_TEST(s.done == 3u);            // a, b (resumed), c
    BOOST_TEST(s.not_converged == 1u);   // d
    BOOST_TEST(s.failed == 1u);          // e
    BOOST_TEST(s.skipped == 1u);         // f
    BOOST_TEST(s.claimed == 0u);         // c was done by shard 2
    BOOST_TEST(s.unreadable_lines == 1u);
    BOOST_TEST(s.seconds == 2.0 + 8 + 4 + 6);
    BOOST_TEST(s.errors.size() == 1u);
    BOOST_TEST(s.errors[0].first == "e");
    BOOST_TEST(s.errors[0].second == "bad png");
    BOOST_TEST(s.slowest.front().second == "b");
    BOOST_TEST(s.slowest.front().first == 8.0);
    std::ostringstream printed;
    nonlocal::tools::print_summary(printed, s, 3);
    BOOST_TEST(printed.str().find("6 pairs in 3 reports: 3 done, 1 failed, 1 not converged, 1 skipped, 0 claimed") == 0u);
    BOOST_TEST(printed.str().find("throughput: 0.2 pairs per second per core (5 s a pair, 720 pairs per core-hour)") !=
               std::string::npos);
    BOOST_TEST(printed.str().find("failed: e: bad png") != std::string::npos);
    BOOST_CHECK_THROW(nonlocal::tools::summarise_reports({one + ".missing"}), std::runtime_error);
}

BOOST_AUTO_TEST_SUITE_END()
