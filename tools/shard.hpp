#pragma once
// Splitting a pair list across processes and machines, and claiming outputs so that two
// processes never write the same one.
//
// A shard is the I-th of N disjoint slices of a list: a pair belongs to shard
// 1 + fnv1a(its output path as written) mod N, so every pair lies in exactly one shard,
// whichever machine runs which shard and in what order, and adding pairs to a list moves
// no other pair. `--shard auto` takes I and N from the scheduler: a Slurm job array
// (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN + 1 of SLURM_ARRAY_TASK_COUNT) or a Kubernetes
// indexed Job (JOB_COMPLETION_INDEX + 1 of --shard-count).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>


namespace nonlocal::tools {

/// Shard `index` (1-based) of `count`.
struct shard {
    std::size_t index = 1, count = 1;
};

/// 64-bit FNV-1a of a string: the same on every machine and compiler.
inline std::uint64_t fnv1a(const std::string& text) {
    std::uint64_t h = 14695981039346656037ull;
    for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    return h;
}

/// Whether the item writing `out` lies in shard `s`.
inline bool in_shard(const std::string& out, shard s) { return fnv1a(out) % s.count + 1 == s.index; }

/// An environment variable as a count, or nothing when it is not set.
inline std::optional<std::size_t> environment_number(const char* name) {
    const char* text = std::getenv(name);
    if (!text || !*text) return std::nullopt;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (*end != '\0') throw std::runtime_error(std::string(name) + " is not a number: " + text);
    return std::size_t(value);
}

/// `--shard I/N` or `--shard auto` (with `count` from --shard-count for Kubernetes). Throws
/// std::runtime_error naming the option or the variable when they do not give a shard.
inline shard parse_shard(const std::string& text, std::size_t count) {
    if (text == "auto") {
        if (const auto id = environment_number("SLURM_ARRAY_TASK_ID")) {
            const auto total = environment_number("SLURM_ARRAY_TASK_COUNT");
            const std::size_t first = environment_number("SLURM_ARRAY_TASK_MIN").value_or(0);
            if (!total || *id < first || *id - first >= *total)
                throw std::runtime_error("--shard auto: SLURM_ARRAY_TASK_ID, _MIN and _COUNT do not give a shard");
            return {*id - first + 1, *total};
        }
        if (const auto index = environment_number("JOB_COMPLETION_INDEX")) {
            if (count == 0 || *index >= count)
                throw std::runtime_error("--shard auto: JOB_COMPLETION_INDEX " + std::to_string(*index) +
                                         " needs --shard-count above it (the Job's completions)");
            return {*index + 1, count};
        }
        throw std::runtime_error("--shard auto: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set");
    }
    const std::size_t slash = text.find('/');
    std::size_t i = 0, n = 0;
    try {
        std::size_t used = 0;
        if (slash == std::string::npos) throw std::invalid_argument(text);
        i = std::stoul(text.substr(0, slash), &used);
        if (used != slash) throw std::invalid_argument(text);
        n = std::stoul(text.substr(slash + 1), &used);
        if (used != text.size() - slash - 1) throw std::invalid_argument(text);
    } catch (const std::logic_error&) {
        throw std::runtime_error("--shard: expected I/N (for example 3/8) or auto, got " + text);
    }
    if (n == 0 || i == 0 || i > n) throw std::runtime_error("--shard: I/N needs 1 <= I <= N, got " + text);
    return {i, n};
}

/// An exclusive claim on an output: a write lock (fcntl, which NFS carries too) on the file
/// OUT.claim, which holds "HOST PID" of its owner for others to read. The kernel drops the
/// lock when its process ends, however it ends, so a claim left by a killed process is free
/// again without any guess about its owner; the file goes when the claim is released.
class output_claim {
public:
    explicit output_claim(const std::string& out) : path_(out + ".claim") {
        for (;;) {
            fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
            if (fd_ < 0) throw std::runtime_error("cannot create " + path_ + ": " + std::strerror(errno));
            struct flock lock {};
            lock.l_type = F_WRLCK;
            lock.l_whence = SEEK_SET;
            if (::fcntl(fd_, F_SETLK, &lock) != 0) {   // held by a running process: say whose
                char text[300] = {};
                const ssize_t got = ::pread(fd_, text, sizeof text - 1, 0);
                owner_ = got > 0 ? std::string(text, std::size_t(got)) : "another process";
                while (!owner_.empty() && owner_.back() == '\n') owner_.pop_back();
                release(false);
                return;
            }
            // The lock holds the file this path names now, not one its last owner removed.
            struct stat opened {}, named {};
            if (::fstat(fd_, &opened) == 0 && ::stat(path_.c_str(), &named) == 0 && opened.st_ino == named.st_ino &&
                opened.st_dev == named.st_dev)
                break;
            release(false);
        }
        const std::string owner = this_host() + ' ' + std::to_string(::getpid()) + '\n';
        if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, owner.data(), owner.size(), 0) != ssize_t(owner.size())) {
            release(true);
            throw std::runtime_error("cannot write " + path_);
        }
        held_ = true;
    }
    output_claim(const output_claim&) = delete;
    output_claim& operator=(const output_claim&) = delete;
    ~output_claim() { release(held_); }

    /// Whether this process holds the claim.
    bool held() const noexcept { return held_; }
    /// "HOST PID" of the process that holds it, when this one does not.
    const std::string& owner() const noexcept { return owner_; }

    /// Removes the claim file a killed process left beside a finished output, unless a running
    /// process holds it.
    static void remove_leftover(const std::string& out) {
        if (std::filesystem::exists(out + ".claim")) output_claim{out};
    }

private:
    static std::string this_host() {
        char name[256] = {};
        ::gethostname(name, sizeof name - 1);
        return name;
    }
    /// Closes the file (dropping the lock), removing it first when `remove`.
    void release(bool remove) {
        if (fd_ < 0) return;
        if (remove) ::unlink(path_.c_str());
        ::close(fd_);
        fd_ = -1;
        held_ = false;
    }

    std::string path_, owner_;
    int fd_ = -1;
    bool held_ = false;
};

}  // namespace nonlocal::tools
