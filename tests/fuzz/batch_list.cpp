// The batch-list parser on any bytes, as both tools read it (three fields for
// nonlocal-refine, two for nonlocal-denoise). A list it accepts has the fields the tool
// asked for, an output with an accepted ending on every line, no output twice and none
// over its line's inputs; written back with every field quoted, it reads back the same, and
// kept packed (the tools' packed_list), each item comes back field by field.
// A list it refuses, it refuses with std::runtime_error.
#include "../../tools/batch.hpp"
#include "fuzz_support.hpp"

#include <iomanip>
#include <set>
#include <sstream>

namespace {

struct two {
    std::string input, out;
    std::size_t line;
};
struct three {
    std::string guide, depth, out;
    std::size_t line;
};

/// The entries kept in a packed_list of `Item`s come back as they went in.
template <class Item, std::size_t Fields>
void check_packed(const std::vector<nonlocal::tools::list_entry>& entries) {
    nonlocal::tools::packed_list<Item, Fields> packed;
    for (const auto& e : entries) packed.push_back(e);
    nonlocal::fuzz::require(packed.size() == entries.size(), "packed, as many items");
    for (std::size_t t = 0; t < entries.size(); ++t) {
        const Item item = packed[t];
        std::vector<std::string> files;
        if constexpr (Fields == 2) files = {item.input, item.out};
        else files = {item.guide, item.depth, item.out};
        nonlocal::fuzz::require(files == entries[t].files && item.line == entries[t].line, "packed, the same files and line");
    }
}

void check_list(const std::string& path, const std::vector<std::string>& names, const std::vector<std::string>& outputs) {
    std::vector<nonlocal::tools::list_entry> entries;
    if (!nonlocal::fuzz::completed<std::runtime_error>(
            [&] { entries = nonlocal::tools::read_list(path, names, outputs); }))
        return;
    nonlocal::fuzz::require(!entries.empty(), "a list it accepts lists something");
    if (names.size() == 2) check_packed<two, 2>(entries);
    else check_packed<three, 3>(entries);
    std::set<std::string> outs;
    std::ostringstream again;
    for (const auto& e : entries) {
        nonlocal::fuzz::require(e.files.size() == names.size() && e.out == e.files.back(), "every field, the output last");
        nonlocal::fuzz::require(nonlocal::tools::ending_error(e.out, outputs).empty(), "an accepted output ending");
        nonlocal::fuzz::require(outs.insert(std::filesystem::absolute(e.out).lexically_normal().string()).second,
                                "no output twice");
        for (const auto& f : e.files) again << std::quoted(f) << ' ';
        again << '\n';
    }
    const std::string text = again.str();
    const std::string copy = nonlocal::fuzz::scratch_file("again.txt", reinterpret_cast<const std::uint8_t*>(text.data()),
                                                          text.size());
    const auto reread = nonlocal::tools::read_list(copy, names, outputs);
    nonlocal::fuzz::require(reread.size() == entries.size(), "written back, it lists as many items");
    for (std::size_t t = 0; t < entries.size(); ++t)
        nonlocal::fuzz::require(reread[t].files == entries[t].files, "written back, it lists the same files");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = nonlocal::fuzz::scratch_file("list.txt", data, size);
    check_list(path, {"GUIDE", "DEPTH", "OUT"}, nonlocal::tools::depth_outputs);
    check_list(path, {"INPUT", "OUTPUT"}, {".png"});
    return 0;
}
