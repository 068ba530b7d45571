#pragma once
// The lists of the tools' --batch: one item per line, its files separated by spaces or tabs,
// the output last,
//
//     GUIDE DEPTH [CONFIDENCE] OUT   (nonlocal-refine; the confidence map may be left out)
//     INPUT OUTPUT                   (nonlocal-denoise)
//
// a path holding spaces written in double quotes ("my scans/0001.png", with \" and \\ inside
// quotes); blank lines and lines whose first field starts with # are skipped; CRLF line ends
// and a UTF-8 byte-order mark are taken in stride. Relative paths are relative to the working
// directory.
#include "image_io.hpp"
#include "shard.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nonlocal::tools {

/// What a refined depth may be written as: a 16-bit PNG or a float32 .npy.
inline const std::vector<std::string> depth_outputs = {".png", ".npy"};

/// One line of a list: its files, the output last; `line` is its line in the list (0 for an
/// item given on the command line).
struct list_entry {
    std::vector<std::string> files;
    std::size_t line = 0;
    std::string out;   ///< files.back()
};

/// A guide, the depth it refines, the depth's confidence map (empty: none) and where the
/// result goes, and its line in the list.
struct depth_pair {
    std::string guide, depth, confidence, out;
    std::size_t line = 0;
};

/// Whether every double quote of a line that opens a quoted field is closed (inside quotes,
/// a backslash escapes the next character, as std::quoted reads it).
inline bool closes_its_quotes(const std::string& text) {
    bool quoted = false;
    for (std::size_t c = 0; c < text.size(); ++c) {
        if (quoted && text[c] == '\\') ++c;
        else if (text[c] == '"') quoted = !quoted;
    }
    return !quoted;
}

/// Reads and checks a whole list before anything is computed, passing each item of shard
/// `part` to `visit` (a `list_entry&&`) in line order: every line has the fields `names` (say
/// "GUIDE DEPTH OUT"; a name in brackets, "[CONFIDENCE]", is a field a line may leave out, read
/// as empty), every output ends in one of `outputs`, and no two items (nor an item and its own
/// inputs) share an output. Throws std::runtime_error naming the file and the line. What it
/// keeps of the whole list is 16 bytes an item (the outputs' hashes and lines, to find an
/// output listed twice), so a shard of a list of 100,000 is read in a few MB.
template <class Visit>
void for_each_list_entry(const std::string& path, const std::vector<std::string>& names,
                         const std::vector<std::string>& outputs, shard part, Visit&& visit) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    const auto where = [&](std::size_t line) { return path + ':' + std::to_string(line) + ": "; };
    const auto key = [](const std::string& p) { return std::filesystem::absolute(p).lexically_normal().string(); };
    std::string expected;
    for (const std::string& name : names) expected += (expected.empty() ? "" : " ") + name;
    const auto optional = std::find_if(names.begin(), names.end(), [](const std::string& n) { return n.starts_with('['); });
    const std::size_t least = names.size() - (optional != names.end());
    // The fields of a line, or none for a blank or comment line.
    const auto fields_of = [&](std::string text, std::size_t line) {
        if (line == 1 && text.starts_with("\xef\xbb\xbf")) text.erase(0, 3);   // a UTF-8 byte-order mark
        std::istringstream fields(text);
        std::vector<std::string> f;
        for (std::string field; fields >> std::quoted(field);) f.push_back(field);
        if (!closes_its_quotes(text)) throw std::runtime_error(where(line) + "a quote is not closed");
        if (f.empty() || f[0].starts_with('#')) f.clear();
        for (const std::string& field : f)
            if (field.find('\0') != std::string::npos) throw std::runtime_error(where(line) + "a path holds a NUL byte");
        return f;
    };
    std::vector<std::pair<std::uint64_t, std::size_t>> written;   // (hash of the output's key, its line)
    std::string text;
    for (std::size_t line = 1; std::getline(in, text); ++line) {
        std::vector<std::string> f = fields_of(text, line);
        if (f.empty()) continue;
        if (f.size() != names.size() && f.size() != least)
            throw std::runtime_error(where(line) + "expected " + expected + ", got " + std::to_string(f.size()) +
                                     (f.size() == 1 ? " field" : " fields"));
        if (f.size() < names.size()) f.insert(f.begin() + (optional - names.begin()), std::string());
        list_entry entry{f, line, f.back()};
        if (const std::string error = ending_error(entry.out, outputs); !error.empty())
            throw std::runtime_error(where(line) + "the output " + error);
        const std::string out = key(entry.out);
        // Paths whose last parts differ (neither . nor ..) name different files: no need to normalise.
        const auto last = [](const std::string& p) { return std::filesystem::path(p).filename().string(); };
        const auto plain = [](const std::string& name) { return !name.empty() && name != "." && name != ".."; };
        const std::string out_name = last(entry.out);
        for (std::size_t i = 0; i + 1 < f.size(); ++i)
            if (!f[i].empty() && (!plain(out_name) || !plain(last(f[i])) || last(f[i]) == out_name) && out == key(f[i]))
                throw std::runtime_error(where(line) + "the output " + entry.out + " would overwrite an input of its line");
        written.emplace_back(fnv1a(out), line);
        if (in_shard(entry.out, part)) visit(std::move(entry));
    }
    if (written.empty()) throw std::runtime_error(path + ": nothing listed");
    // Outputs listed twice: equal hashes, told apart by the lines' own outputs (read again).
    std::sort(written.begin(), written.end());
    std::optional<std::pair<std::size_t, std::size_t>> twice;   // (the later line, the earlier one)
    const auto output_of_line = [&](std::size_t wanted) {
        std::ifstream again(path);
        std::string t;
        for (std::size_t line = 1; std::getline(again, t); ++line)
            if (line == wanted) return fields_of(t, line).back();
        return std::string();
    };
    for (std::size_t a = 0; a < written.size(); ++a)
        for (std::size_t b = a + 1; b < written.size() && written[b].first == written[a].first; ++b) {
            if (twice && written[b].second >= twice->first) continue;
            if (key(output_of_line(written[a].second)) == key(output_of_line(written[b].second)))
                twice = std::pair{written[b].second, written[a].second};
        }
    if (twice)
        throw std::runtime_error(where(twice->first) + "the output " + output_of_line(twice->first) + " is written by line " +
                                 std::to_string(twice->second) + " too");
}

/// The items of a list in shard `part` (every item by default), the whole list checked as
/// `for_each_list_entry` checks it.
inline std::vector<list_entry> read_list(const std::string& path, const std::vector<std::string>& names,
                                         const std::vector<std::string>& outputs, shard part = {1, 1}) {
    std::vector<list_entry> entries;
    for_each_list_entry(path, names, outputs, part, [&](list_entry&& e) { entries.push_back(std::move(e)); });
    return entries;
}

/// Throws std::runtime_error when `out` names the same file as one of `inputs` (the check a
/// list's lines get, for a single item given on the command line); empty inputs are absent.
inline void require_distinct_output(const std::string& out, const std::vector<std::string>& inputs) {
    std::error_code error;
    for (const std::string& input : inputs) {
        if (input.empty()) continue;
        if (std::filesystem::absolute(out).lexically_normal() == std::filesystem::absolute(input).lexically_normal() ||
            std::filesystem::equivalent(out, input, error))
            throw std::runtime_error("the output " + out + " would overwrite the input " + input);
    }
}

/// The items of a list as a shard keeps them, packed: an item's `Fields` paths in one buffer
/// shared by all items (each path ended by a '\0'), and 16 bytes an item beside them, where a
/// std::string a path would cost 32 bytes and a heap block. `items[k]` builds the k-th item,
/// `Item{path..., line}` (an aggregate of `Fields` strings and its line in the list).
template <class Item, std::size_t Fields>
class packed_list {
public:
    /// Keeps an entry of the list (its `Fields` files, the output last).
    void push_back(const list_entry& entry) {
        if (entry.files.size() != Fields)
            throw std::invalid_argument("packed_list: an entry has " + std::to_string(entry.files.size()) +
                                        " files, expected " + std::to_string(Fields));
        kept_.push_back({paths_.size(), entry.line});
        for (const std::string& file : entry.files) (paths_ += file) += '\0';
    }
    [[nodiscard]] std::size_t size() const { return kept_.size(); }
    [[nodiscard]] bool empty() const { return kept_.empty(); }
    /// The k-th item kept.
    [[nodiscard]] Item operator[](std::size_t k) const { return item(k, std::make_index_sequence<Fields>{}); }

private:
    struct kept {
        std::size_t start, line;   // where its paths begin in paths_; its line in the list
    };
    template <std::size_t... I>
    Item item(std::size_t k, std::index_sequence<I...>) const {
        std::array<std::string, Fields> files;
        for (std::size_t f = 0, at = kept_[k].start; f < Fields; ++f) {
            files[f] = paths_.c_str() + at;
            at += files[f].size() + 1;
        }
        return Item{std::move(files[I])..., kept_[k].line};
    }
    std::string paths_;
    std::vector<kept> kept_;
};

/// Reads a list with `for_each_list_entry` and keeps the items of shard `part` packed.
template <class Item, std::size_t Fields>
packed_list<Item, Fields> read_packed_list(const std::string& path, const std::vector<std::string>& names,
                                           const std::vector<std::string>& outputs, shard part) {
    packed_list<Item, Fields> items;
    for_each_list_entry(path, names, outputs, part, [&](list_entry&& e) { items.push_back(e); });
    return items;
}

/// The pairs of a `nonlocal-refine --batch` list in shard `part` (the whole list is checked).
inline packed_list<depth_pair, 4> read_pair_list(const std::string& path, shard part = {1, 1}) {
    return read_packed_list<depth_pair, 4>(path, {"GUIDE", "DEPTH", "[CONFIDENCE]", "OUT"}, depth_outputs, part);
}

}  // namespace nonlocal::tools
