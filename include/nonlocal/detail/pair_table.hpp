#pragma once
/// @file detail/pair_table.hpp
/// One value per (query, key) pair, for every slice, per batch item or per slice: the
/// storage of the element-wise masks and biases. Stored in blocks of 64 queries (the tiled
/// kernel's query block), key by key within a block, so that a 64 x 64 tile's entries are
/// 4096 consecutive values and the entries of one key for a block's queries are contiguous,
/// as the kernel's transposed scores hold them.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <xtensor/xarray.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"
#include "nonlocal/detail/slices.hpp"

namespace nonlocal::detail {

template <class U>
class pair_table {
public:
    /// Queries per block.
    static constexpr std::size_t block = 64;

    /// No table.
    pair_table() = default;

    /// The entries of `a`, [n, m] or [count, n, m]; throws `std::invalid_argument` naming
    /// `where` and `what` for another rank.
    pair_table(const xt::xarray<U>& a, std::string_view where, std::string_view what) {
        const std::size_t r = a.dimension();
        require(r == 2 || r == 3, where, [&] {
            return std::string(what) + " must be [n, m] or [slices, n, m], got " + shape_string(a.shape());
        });
        count_ = r == 2 ? 1 : a.shape(0), n_ = a.shape(r - 2), m_ = a.shape(r - 1);
        slice_size_ = (n_ + block - 1) / block * block * m_;
        std::vector<U> values(count_ * slice_size_, U(0));
        for (std::size_t s = 0; s < count_; ++s)
            for (std::size_t i = 0; i < n_; ++i)
                for (std::size_t j = 0; j < m_; ++j) values[s * slice_size_ + index(i, j)] = a.data()[(s * n_ + i) * m_ + j];
        values_ = std::make_shared<const std::vector<U>>(std::move(values));
    }

    bool empty() const noexcept { return !values_; }
    /// Which of the tables the current slice reads, and how many there are.
    std::size_t slice() const noexcept { return slice_size_ == 0 ? 0 : offset_ / slice_size_; }
    std::size_t count() const noexcept { return count_; }
    std::size_t queries() const noexcept { return n_; }
    std::size_t keys() const noexcept { return m_; }

    /// The entry of query i and key j in the current slice.
    U operator()(std::size_t i, std::size_t j) const noexcept { return values_->data()[offset_ + index(i, j)]; }
    /// The entries of key j for queries i, i + 1, ... up to the end of i's block of 64, contiguous.
    const U* run(std::size_t i, std::size_t j) const noexcept { return values_->data() + offset_ + index(i, j); }
    /// Calls f(entries, r, length) for the runs that cover queries [i0, i0 + rows) of key j:
    /// `entries[t]` is the entry of query i0 + r + t. One run when the queries lie in one block.
    template <class F>
    void for_each_run(std::size_t i0, std::size_t rows, std::size_t j, F&& f) const {
        for (std::size_t r = 0; r < rows;) {
            const std::size_t i = i0 + r, length = std::min(rows - r, block - i % block);
            f(run(i, j), r, length);
            r += length;
        }
    }

    /// The same storage, pointing at the table that serves slice `at`.
    pair_table for_slice(slice_index at) const noexcept {
        pair_table copy = *this;
        copy.offset_ = empty() ? 0 : slice_of(count_, at) * slice_size_;
        return copy;
    }
    /// Throws unless the table fits n queries and m keys.
    void check(std::string_view where, std::string_view what, extents e) const {
        require(empty() || (e.queries == n_ && e.keys == m_), where, [&] {
            return std::string(what) + " [" + std::to_string(n_) + ", " + std::to_string(m_) + "] for " +
                   std::to_string(e.queries) + " queries and " + std::to_string(e.keys) + " keys";
        });
    }
    /// Throws unless there is one table, one per batch item, or one per slice.
    void check_slices(std::string_view where, std::string_view what, std::size_t items, std::size_t heads) const {
        if (!empty()) check_slice_count(where, what, count_, items, heads);
    }

private:
    std::size_t index(std::size_t i, std::size_t j) const noexcept { return (i / block * m_ + j) * block + i % block; }

    std::shared_ptr<const std::vector<U>> values_;
    std::size_t count_ = 0, n_ = 0, m_ = 0, slice_size_ = 0, offset_ = 0;
};

}  // namespace nonlocal::detail
