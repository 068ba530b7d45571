#pragma once
// What the command-line tools share: checks whose failures say in words what was wrong
// ("--threads: must be at least 1, got -1") and `--version`.
#include <cmath>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <nonlocal/config.hpp>

namespace nonlocal::tools {

/// `text` as a number, or false when it is not one as a whole.
inline bool as_number(const std::string& text, double& value) {
    std::istringstream in(text);
    in >> value;
    return !in.fail() && (in >> std::ws).eof();
}

/// A number, written as the user would: 1, 0.5, 1e-06.
inline std::string number_text(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

/// Whether `s` ends in `suffix`.
inline bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Why `path` is not a path to write with one of `suffixes`: "must end in .png or .npy, got
/// PATH", or the empty string when it ends in one of them.
inline std::string ending_error(const std::string& path, const std::vector<std::string>& suffixes) {
    std::string listed;
    for (const std::string& suffix : suffixes) {
        if (ends_with(path, suffix)) return {};
        listed += listed.empty() ? suffix : " or " + suffix;
    }
    return "must end in " + listed + ", got " + path;
}

/// A command-line check that a path to write ends in one of `suffixes` (".png", ".npy"), with
/// `ending_error`'s message, so that a run with another one fails before it computes.
inline CLI::Validator path_ending_in(std::vector<std::string> suffixes) {
    std::string shown;   // "PATH.png|PATH.npy" in the help
    for (const std::string& suffix : suffixes) shown += (shown.empty() ? "PATH" : "|PATH") + suffix;
    return CLI::Validator([suffixes](std::string& path) { return ending_error(path, suffixes); }, shown);
}

/// A check that the value is at least `minimum`.
inline CLI::Validator at_least(double minimum) {
    return CLI::Validator(
        [minimum](std::string& text) -> std::string {
            double value = 0;
            if (!as_number(text, value)) return "must be a number, got " + text;
            if (!(value >= minimum)) return "must be at least " + number_text(minimum) + ", got " + text;
            return {};
        },
        ">= " + number_text(minimum));
}

/// A check that the value is a number above 0.
inline CLI::Validator above_zero() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double value = 0;
            if (!as_number(text, value)) return "must be a number, got " + text;
            if (!(value > 0) || !std::isfinite(value)) return "must be a finite number above 0, got " + text;
            return {};
        },
        "> 0");
}

/// Parses the command line. Returns the exit status when the run ends here: 0 after --help
/// or --version, 1 for a bad option or value (its message printed first); nothing otherwise.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
        return std::nullopt;
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 1;
    }
}

/// What every tool says of itself: `--version` ("TOOL VERSION", the library's version) and,
/// after --help's options, `examples` (each a command line after the tool's name) and the
/// meaning of its exit statuses.
inline void describe_tool(CLI::App& app, const std::string& tool, std::initializer_list<const char*> examples,
                          const std::string& exit_statuses) {
    app.set_version_flag("--version", tool + " " + NONLOCAL_VERSION_STRING);
    std::string footer = "Examples:\n";
    for (const char* example : examples) footer += "  " + tool + " " + example + "\n";
    app.footer(footer + "Exit status: " + exit_statuses + "\n");
}

}  // namespace nonlocal::tools
