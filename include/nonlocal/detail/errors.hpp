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

/// What is wrong with the fields of an options struct, each named as a user spells it
/// ("depth_options::sigma_r must be finite and positive, got -1"), thrown all at once by `check`.
class field_checks {
public:
    explicit field_checks(std::string_view type) : type_(type) {}

    /// Records `field` unless `ok`: it "must be <rule>, got <value>".
    template <class Value>
    field_checks& need(bool ok, std::string_view field, std::string_view rule, const Value& value) {
        if (ok) return *this;
        std::ostringstream got;
        got << value;
        wrong_ += (wrong_.empty() ? "" : "; ") + type_ + "::" + std::string(field) + " must be " + std::string(rule) +
                  ", got " + got.str();
        return *this;
    }
    /// Throws `std::invalid_argument` from `where` naming every field recorded.
    void check(std::string_view where) const {
        require(wrong_.empty(), where, [&] { return wrong_; });
    }

private:
    std::string type_, wrong_;
};

}  // namespace nonlocal::detail
