#pragma once
// What the harnesses share: a private scratch folder for the readers that take a path, and
// the rule every harness checks, that a function may refuse its input only in the way its
// documentation says (std::invalid_argument from the library, std::runtime_error from the
// tools' readers). Any other exception escapes the harness, and libFuzzer reports it as a
// crash, as it reports a sanitizer's finding or a failed `require`.
#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace nonlocal::fuzz {

/// A folder of this process's own under $TMPDIR (or /tmp), created on first use.
inline const std::filesystem::path& scratch_folder() {
    static const std::filesystem::path folder = [] {
        const char* tmp = std::getenv("TMPDIR");
        std::filesystem::path p = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                                  ("nonlocal-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(p);
        return p;
    }();
    return folder;
}

/// Writes `size` bytes to `name` in the scratch folder (replacing it); its path.
inline std::string scratch_file(std::string_view name, const std::uint8_t* data, std::size_t size) {
    const std::filesystem::path path = scratch_folder() / name;
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
    return path.string();
}

/// Stops the run when `condition` is false, a property of the result failed, saying `what`
/// where the sanitizers report (libFuzzer's log, even with the program's stderr closed).
inline void require(bool condition, const char* what) {
    if (condition) return;
    __sanitizer_report_error_summary(("nonlocal fuzz: property failed: " + std::string(what)).c_str());
    std::abort();
}

/// Runs `f`: true when it completed, false when it threw `Refusal` (its documented refusal).
template <class Refusal, class F>
bool completed(F&& f) {
    try {
        f();
        return true;
    } catch (const Refusal&) {
        return false;
    }
}

}  // namespace nonlocal::fuzz
