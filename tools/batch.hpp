#pragma once
// The pair lists of `nonlocal-refine --batch`: one pair per line,
//
//     GUIDE DEPTH OUT
//
// separated by spaces or tabs; a path holding spaces is written in double quotes
// ("my scans/0001.png", with \" and \\ inside quotes); blank lines and lines whose first
// field starts with # are skipped. Relative paths are relative to the working directory.
#include "image_io.hpp"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace nonlocal::tools {

/// What a refined depth may be written as: a 16-bit PNG or a float32 .npy.
inline const std::vector<std::string> depth_outputs = {".png", ".npy"};

/// A guide, the depth it refines and where the result goes; `line` is its line in the list
/// (0 for a pair given on the command line).
struct depth_pair {
    std::string guide, depth, out;
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

/// Reads and checks a pair list before anything is computed: every line has three fields,
/// every output ends in .png or .npy, and no two pairs (nor a pair and its own inputs) share an
/// output. Throws std::runtime_error naming the file and the line.
inline std::vector<depth_pair> read_pair_list(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    const auto where = [&](std::size_t line) { return path + ':' + std::to_string(line) + ": "; };
    const auto key = [](const std::string& p) { return std::filesystem::absolute(p).lexically_normal().string(); };
    std::vector<depth_pair> pairs;
    std::map<std::string, std::size_t> written;   // output -> the line that writes it
    std::string text;
    for (std::size_t line = 1; std::getline(in, text); ++line) {
        std::istringstream fields(text);
        std::vector<std::string> f;
        for (std::string field; fields >> std::quoted(field);) f.push_back(field);
        if (!closes_its_quotes(text)) throw std::runtime_error(where(line) + "a quote is not closed");
        if (f.empty() || f[0].starts_with('#')) continue;
        if (f.size() != 3)
            throw std::runtime_error(where(line) + "expected GUIDE DEPTH OUT, got " + std::to_string(f.size()) +
                                     (f.size() == 1 ? " field" : " fields"));
        depth_pair pair{f[0], f[1], f[2], line};
        if (const std::string error = ending_error(pair.out, depth_outputs); !error.empty())
            throw std::runtime_error(where(line) + "the output " + error);
        const std::string out = key(pair.out);
        if (out == key(pair.guide) || out == key(pair.depth))
            throw std::runtime_error(where(line) + "the output " + pair.out + " would overwrite an input of its pair");
        if (const auto [at, fresh] = written.emplace(out, line); !fresh)
            throw std::runtime_error(where(line) + "the output " + pair.out + " is written by line " +
                                     std::to_string(at->second) + " too");
        pairs.push_back(std::move(pair));
    }
    if (pairs.empty()) throw std::runtime_error(path + ": no pairs listed");
    return pairs;
}

}  // namespace nonlocal::tools
