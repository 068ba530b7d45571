#pragma once
/// @file nn/io/checkpoint.hpp
/// A PyTorch state_dict saved as one .npy per entry, read strictly, as `load_state_dict`
/// reads one by default: the architecture (a configuration the loader is given, never the
/// files it finds) names every entry and its shape; an entry missing, of another shape or
/// element type, unreadable, or a file with the prefix that the architecture does not use is
/// an error, and all of them are reported at once when loading ends (`finish`).
///
///     for name, value in model.state_dict().items():
///         numpy.save(prefix + name.replace(".", "_") + ".npy", value.numpy())
///
/// Entries that PyTorch itself may leave out of a state_dict (`num_batches_tracked`) are
/// neither needed nor unexpected.

#include <algorithm>
#include <array>
#include <cstddef>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/npy.hpp"

namespace nonlocal::nn {

/// What loading a checkpoint found wrong, as PyTorch's `load_state_dict` reports it.
struct load_report {
    std::vector<std::string> missing;      ///< entries the architecture needs that no file holds
    std::vector<std::string> unexpected;   ///< entries with the prefix that the architecture does not use
    std::vector<std::string> mismatched;   ///< "entry: what the file holds; what was expected"

    /// Whether every entry was found as expected and none was left over.
    bool clean() const noexcept { return missing.empty() && unexpected.empty() && mismatched.empty(); }

    /// One line per problem: "missing NAME [shape]", "unexpected NAME", "NAME: ...".
    std::string describe() const {
        std::string out;
        for (const auto& m : mismatched) out += "\n  " + m;
        for (const auto& m : missing) out += "\n  missing " + m;
        for (const auto& u : unexpected) out += "\n  unexpected " + u;
        return out;
    }
};

/// The error of a strict load: a `std::invalid_argument` whose message names the files and
/// entries, with the report itself.
class checkpoint_error : public std::invalid_argument {
public:
    checkpoint_error(const std::string& what, load_report report)
        : std::invalid_argument(what), report_(std::move(report)) {}
    const load_report& report() const noexcept { return report_; }

private:
    load_report report_;
};

/// How a checkpoint is read.
struct checkpoint_options {
    /// Every problem an error (`finish` throws `checkpoint_error`); false loads what matches,
    /// gives a missing or misshapen entry the value of an untrained layer (zero, or one for a
    /// norm's scale and a running variance) and reports the problems instead, as
    /// `load_state_dict(strict=False)` does.
    bool strict = true;
};

/// The entries of one saved state_dict: the files `prefix + name + ".npy"`. Loaders read the
/// entries their architecture needs (`read`); `finish` then reports what was missing,
/// misshapen or left over. A checkpoint made by `listing()` has no files and records what a
/// loader reads (`expected`), which lists an architecture's entries without any weights.
class checkpoint {
public:
    /// One entry the architecture needs: its name (below the prefix) and its shape.
    struct entry {
        std::string name;
        std::vector<std::size_t> shape;
    };

    /// The files `prefix + name + ".npy"` of the folder `prefix` starts with.
    explicit checkpoint(std::string prefix, checkpoint_options options = {})
        : prefix_(std::move(prefix)), options_(options) {
        const std::filesystem::path path(prefix_);
        const std::filesystem::path folder = path.has_filename() ? path.parent_path() : path;
        const std::string start = path.has_filename() ? path.filename().string() : std::string();
        std::error_code error;
        for (std::filesystem::directory_iterator it(folder.empty() ? "." : folder, error), end; !error && it != end;
             it.increment(error)) {
            const std::string file = it->path().filename().string();
            if (file.size() > start.size() + 4 && file.starts_with(start) && file.ends_with(".npy"))
                found_.insert(file.substr(start.size(), file.size() - start.size() - 4));
        }
    }

    /// A checkpoint without files that records the entries loaders read.
    static checkpoint listing() { return checkpoint(listing_tag{}); }

    const std::string& prefix() const noexcept { return prefix_; }
    bool strict() const noexcept { return options_.strict; }
    /// The file of entry `name`.
    std::string path(const std::string& name) const { return prefix_ + name + ".npy"; }

    /// Entry `name` as T, which must be a float32 or float64 array of exactly `shape`. A
    /// problem is recorded for `finish`, and the entry is then `absent` throughout.
    template <class T, std::size_t N>
    xt::xtensor<T, N> read(const std::string& name, const std::array<std::size_t, N>& shape, T absent = T(0)) {
        expected_.push_back({name, std::vector<std::size_t>(shape.begin(), shape.end())});
        xt::xtensor<T, N> out = xt::empty<T>(shape);
        std::fill(out.begin(), out.end(), absent);
        if (listing_) return out;
        if (!found_.count(name)) {
            report_.missing.push_back(name + " " + detail::shape_string(shape));
            return out;
        }
        used_.insert(name);
        try {
            const detail::npy_header header = detail::read_npy_header(path(name));
            if (header.type != "<f4" && header.type != "<f8") {
                report_.mismatched.push_back(path(name) + ": entry " + name + " holds elements of type " + header.type +
                                             "; expected float32 or float64 (<f4, <f8)");
                return out;
            }
            if (!std::equal(header.shape.begin(), header.shape.end(), shape.begin(), shape.end())) {
                report_.mismatched.push_back(path(name) + ": entry " + name + " holds " +
                                             detail::shape_string(header.shape) + "; expected " +
                                             detail::shape_string(shape));
                return out;
            }
            const xt::xarray<T> a = detail::read_npy<T>(path(name), header, "nn::checkpoint");
            std::copy(a.begin(), a.end(), out.begin());
        } catch (const std::exception& e) {   // unreadable: not a .npy file, truncated, ...
            report_.mismatched.push_back(std::string(e.what()).starts_with(path(name)) ? e.what()
                                                                                       : path(name) + ": " + e.what());
        }
        return out;
    }

    /// The entries read so far, in the order the loaders read them.
    const std::vector<entry>& expected() const noexcept { return expected_; }

    /// What was missing, misshapen or left over.
    load_report report() const {
        load_report r = report_;
        for (const std::string& name : found_)
            if (!used_.count(name) && !name.ends_with("num_batches_tracked")) r.unexpected.push_back(name);
        return r;
    }

    /// The report; when strict, throws `checkpoint_error` from `who` naming the prefix and
    /// every problem unless it is clean.
    load_report finish(std::string_view who) const {
        load_report r = report();
        if (options_.strict && !r.clean()) {
            const std::size_t problems = r.missing.size() + r.unexpected.size() + r.mismatched.size();
            throw checkpoint_error("nonlocal::" + std::string(who) + ": the checkpoint " + prefix_ + "*.npy does not fit the architecture (" +
                                       std::to_string(problems) + (problems == 1 ? " problem" : " problems") + "):" +
                                       r.describe(),
                                   r);
        }
        return r;
    }

private:
    struct listing_tag {};
    explicit checkpoint(listing_tag) : options_{.strict = false}, listing_(true) {}   // reads no folder

    std::string prefix_;
    checkpoint_options options_;
    bool listing_ = false;
    std::set<std::string> found_, used_;
    std::vector<entry> expected_;
    load_report report_;
};

/// `load(checkpoint)` of the files `prefix + name + ".npy"`, strictly: what the prefix
/// overloads of the loaders do. Throws `checkpoint_error` from `who` naming every entry
/// missing, misshapen or left over.
template <class Load>
auto load_strictly(const std::string& prefix, std::string_view who, Load&& load) {
    checkpoint from(prefix);
    auto loaded = load(from);
    from.finish(who);
    return loaded;
}

/// The loader of `config`'s architecture in PyTorch's own layout (`nn::load_npy(checkpoint&,
/// config)`: `attention_config`, `encoder_layer_config`, `nonlocal_block_config`) over the
/// files `prefix + name + ".npy"`, strictly: throws `checkpoint_error` naming every entry
/// missing, misshapen or left over.
template <class T = float, class Config>
auto load_npy(const std::string& prefix, const Config& config) {
    return load_strictly(prefix, "nn::load_npy", [&](checkpoint& from) { return load_npy<T>(from, config); });
}

/// The same for torchvision's layout (`vit_config`).
template <class T = float, class Config>
auto load_torchvision(const std::string& prefix, const Config& config) {
    return load_strictly(prefix, "nn::load_torchvision", [&](checkpoint& from) { return load_torchvision<T>(from, config); });
}

/// The same for timm's layout (`vit_config`, `mobilevit_config`, `mobilevit_block_config`,
/// `inverted_residual_config`, `encoder_layer_config`).
template <class T = float, class Config>
auto load_timm(const std::string& prefix, const Config& config) {
    return load_strictly(prefix, "nn::load_timm", [&](checkpoint& from) { return load_timm<T>(from, config); });
}

}  // namespace nonlocal::nn
