// A tool's command line from any bytes: one argument per line, at most 32. The tool runs as
// its main would, in an empty scratch folder (arguments starting with '/' or holding ".." are
// skipped, so that no path leads out of it), which is emptied again after each run. Whatever the options say,
// the tool must end with a documented exit status (0, 1 or 2) and leave no file behind but
// the report it was asked for; an exception escaping its main is a crash.
//
// Built once per tool: NONLOCAL_FUZZ_TOOL names the tool's source, whose main is renamed
// tool_main (CMakeLists.txt).
#include NONLOCAL_FUZZ_TOOL
#include "fuzz_support.hpp"

#include <filesystem>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::filesystem::current_path(nonlocal::fuzz::scratch_folder());
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args{"tool"};
    std::string arg;
    for (std::size_t t = 0; t <= size; ++t) {
        if (t == size || data[t] == '\n') {
            args.push_back(arg);
            arg.clear();
        } else {
            arg += char(data[t]);
        }
    }
    if (args.size() > 33) return 0;
    for (const std::string& a : args)
        if (a.starts_with('/') || a.find("..") != std::string::npos || a.find('\0') != std::string::npos) return 0;
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int status = tool_main(int(args.size()), argv.data());
    nonlocal::fuzz::require(status == 0 || status == 1 || status == 2, "a documented exit status");
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::current_path())) {
        const std::string name = entry.path().filename().string();
        nonlocal::fuzz::require(!name.ends_with(".partial") && !name.ends_with(".claim"), "no temporary file left");
        std::filesystem::remove_all(entry.path());
    }
    return 0;
}
