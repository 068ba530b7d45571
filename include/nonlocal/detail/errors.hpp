#pragma once
/// @file detail/errors.hpp
/// Building the `std::invalid_argument` messages of the API boundary.

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace nonlocal::detail {

/// "[2, 3, 4]" for any range of extents.
template <class Shape>
std::string shape_string(const Shape& shape) {
    std::ostringstream s;
    s << '[';
    bool first = true;
    for (auto e : shape) {
        s << (first ? "" : ", ") << e;
        first = false;
    }
    s << ']';
    return s.str();
}

/// Throws `std::invalid_argument("nonlocal::<where>: <what>")`.
[[noreturn]] inline void fail(std::string_view where, const std::string& what) {
    throw std::invalid_argument("nonlocal::" + std::string(where) + ": " + what);
}

/// Throws unless `ok`; `what` is only built on failure.
template <class Message>
void require(bool ok, std::string_view where, Message&& what) {
    if (!ok) fail(where, std::forward<Message>(what)());
}

}  // namespace nonlocal::detail
