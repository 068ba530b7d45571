// A --batch list of 100,000 pairs, generated: each shard reads exactly its pairs (by the hash
// of their outputs), the shards together every pair once, and an output listed twice is
// refused naming both lines, however far apart, while what the reader keeps of the whole
// list stays 16 bytes a pair (tools/batch.hpp).
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "batch.hpp"

namespace {

std::string generated_list(const std::string& name, std::size_t pairs, const std::string& last_line = "") {
    const auto dir = std::filesystem::temp_directory_path() / "nonlocal-batch-list";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / name).string();
    std::ofstream list(path);
    for (std::size_t i = 0; i < pairs; ++i)
        list << "scenes/" << i / 1000 << "/colour_" << i << ".png \"scenes/" << i / 1000 << "/depth " << i
             << ".png\" out/" << i << ".png\n";
    list << last_line;
    return path;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(batch_list)

BOOST_AUTO_TEST_CASE(shards_of_a_list_of_100000_pairs) {
    const std::size_t n = 100000, shards = 4;
    const std::string path = generated_list("big.txt", n);
    std::set<std::string> seen;
    std::size_t total = 0;
    for (std::size_t s = 1; s <= shards; ++s) {
        const auto pairs = nonlocal::tools::read_pair_list(path, {s, shards});
        for (std::size_t k = 0; k < pairs.size(); ++k) {
            BOOST_TEST(nonlocal::tools::fnv1a(pairs[k].out) % shards + 1 == s);
            seen.insert(pairs[k].out);
        }
        total += pairs.size();
        if (s == 1) {   // one pair, field by field (the depth's path is quoted: it holds a space)
            const auto p = pairs[0];
            const std::size_t i = p.line - 1;
            BOOST_TEST(p.guide == "scenes/" + std::to_string(i / 1000) + "/colour_" + std::to_string(i) + ".png");
            BOOST_TEST(p.depth == "scenes/" + std::to_string(i / 1000) + "/depth " + std::to_string(i) + ".png");
            BOOST_TEST(p.confidence.empty());
        }
    }
    BOOST_TEST(total == n);
    BOOST_TEST(seen.size() == n);
    BOOST_TEST(nonlocal::tools::read_pair_list(path).size() == n);
}

BOOST_AUTO_TEST_CASE(an_output_listed_twice_is_refused_naming_both_lines) {
    const std::string path = generated_list("twice.txt", 100000, "a.png b.png ./out/../out/17.png\n");
    BOOST_CHECK_EXCEPTION(nonlocal::tools::read_pair_list(path, {3, 4}), std::runtime_error, [&](const std::runtime_error& e) {
        return std::string(e.what()) == path + ":100001: the output ./out/../out/17.png is written by line 18 too";
    });
}

BOOST_AUTO_TEST_CASE(packed_items_come_back_field_by_field) {
    nonlocal::tools::packed_list<nonlocal::tools::depth_pair, 4> pairs;
    BOOST_TEST(pairs.empty());
    pairs.push_back({{"g 1.png", "d.png", "", "o.npy"}, 7, "o.npy"});
    pairs.push_back({{"", "", "c.png", "x/y.png"}, 9, "x/y.png"});
    BOOST_TEST(pairs.size() == 2u);
    const auto a = pairs[0], b = pairs[1];
    BOOST_TEST(a.guide == "g 1.png");
    BOOST_TEST(a.depth == "d.png");
    BOOST_TEST(a.confidence.empty());
    BOOST_TEST(a.out == "o.npy");
    BOOST_TEST(a.line == 7u);
    BOOST_TEST(b.guide.empty());
    BOOST_TEST(b.confidence == "c.png");
    BOOST_TEST(b.out == "x/y.png");
    BOOST_TEST(b.line == 9u);
    BOOST_CHECK_THROW(pairs.push_back({{"a.png", "b.png"}, 3, "b.png"}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_path_holding_a_nul_byte_is_refused_naming_its_line) {
    const std::string path = generated_list("nul.txt", 2, std::string("a.png b\0.png c.png\n", 19));
    BOOST_CHECK_EXCEPTION(nonlocal::tools::read_pair_list(path), std::runtime_error, [&](const std::runtime_error& e) {
        return std::string(e.what()) == path + ":3: a path holds a NUL byte";
    });
}

BOOST_AUTO_TEST_SUITE_END()
