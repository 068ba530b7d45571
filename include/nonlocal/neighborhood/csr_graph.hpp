#pragma once
/// @file neighborhood/csr_graph.hpp
/// An explicit sparse graph in compressed sparse row form.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"

namespace nonlocal {

/// N(i) = columns[row_offsets[i], row_offsets[i + 1]). Columns of a row must be
/// strictly increasing; runs of consecutive columns are handed to the kernels
/// as one range.
class csr_graph {
public:
    /// Throws `std::invalid_argument` unless row_offsets starts at 0, never
    /// decreases and ends at columns.size(), and each row's columns strictly increase.
    csr_graph(std::vector<std::size_t> row_offsets, std::vector<std::size_t> columns)
        : offsets_(std::move(row_offsets)), columns_(std::move(columns)) {
        detail::require(!offsets_.empty() && offsets_.front() == 0 && offsets_.back() == columns_.size(),
                        "csr_graph", [&] {
                            return "row_offsets (" + std::to_string(offsets_.size()) +
                                   " entries) must start at 0 and end at columns.size() = " +
                                   std::to_string(columns_.size());
                        });
        for (std::size_t r = 0; r + 1 < offsets_.size(); ++r) {
            detail::require(offsets_[r] <= offsets_[r + 1], "csr_graph", [&] {
                return "row_offsets decrease at row " + std::to_string(r);
            });
            for (std::size_t t = offsets_[r] + 1; t < offsets_[r + 1]; ++t)
                detail::require(columns_[t - 1] < columns_[t], "csr_graph", [&] {
                    return "the columns of row " + std::to_string(r) + " are not strictly increasing (" +
                           std::to_string(columns_[t - 1]) + " then " + std::to_string(columns_[t]) + ")";
                });
        }
    }

    std::size_t rows() const noexcept { return offsets_.size() - 1; }
    const std::vector<std::size_t>& row_offsets() const noexcept { return offsets_; }
    const std::vector<std::size_t>& columns() const noexcept { return columns_; }

    void check(extents e) const {
        detail::require(e.queries == rows(), "csr_graph", [&] {
            return "the graph has " + std::to_string(rows()) + " rows but there are " +
                   std::to_string(e.queries) + " queries";
        });
        for (std::size_t c : columns_)
            detail::require(c < e.keys, "csr_graph", [&] {
                return "column " + std::to_string(c) + " is out of range for " + std::to_string(e.keys) + " keys";
            });
    }
    template <class F>
    void for_each_range(std::size_t i, extents, F&& f) const {
        std::size_t t = offsets_[i];
        const std::size_t end = offsets_[i + 1];
        while (t < end) {
            std::size_t run = 1;
            while (t + run < end && columns_[t + run] == columns_[t] + run) ++run;
            f(key_range{columns_[t], run, 1});
            t += run;
        }
    }

private:
    std::vector<std::size_t> offsets_;
    std::vector<std::size_t> columns_;
};

static_assert(neighborhood<csr_graph>);

}  // namespace nonlocal
