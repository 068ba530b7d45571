#pragma once
/// @file detail/npy.hpp
/// Reading .npy arrays of any real or integer element type, as numpy writes them
/// (`numpy.save` of float64 data is as common as float32), with errors that name the file.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"

namespace nonlocal::detail {

/// What a .npy file's header says: the element type as it spells it ("<f4", "<f8", "|u1",
/// ...), the shape, whether the data is stored column by column, and where it starts.
struct npy_header {
    std::string type;
    std::vector<std::size_t> shape;
    bool fortran_order = false;
    std::size_t data_offset = 0;

    /// Bytes of one element (the digits after the type's letter), 0 if it names none.
    std::size_t element_size() const {
        std::size_t size = 0;
        for (std::size_t c = 2; c < type.size() && type[c] >= '0' && type[c] <= '9'; ++c) size = size * 10 + std::size_t(type[c] - '0');
        return size;
    }
};

/// The header of a .npy file. Throws `std::runtime_error` naming the file when it cannot be
/// read or is not a .npy file.
inline npy_header read_npy_header(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::array<unsigned char, 10> lead{};
    in.read(reinterpret_cast<char*>(lead.data()), lead.size());
    const auto broken = [&] { return std::runtime_error(path + " is not a .npy file"); };
    if (!in || std::string_view(reinterpret_cast<const char*>(lead.data()), 6) != "\x93NUMPY") throw broken();
    // Version 1 has a 2-byte header length, versions 2 and 3 a 4-byte one (little-endian).
    std::size_t length = lead[8] | std::size_t(lead[9]) << 8, start = 10;
    if (lead[6] >= 2) {
        unsigned char more[2] = {};
        in.read(reinterpret_cast<char*>(more), 2);
        length |= std::size_t(more[0]) << 16 | std::size_t(more[1]) << 24;
        start = 12;
    }
    if (length > (1 << 16)) throw broken();
    std::string text(length, '\0');
    in.read(text.data(), std::streamsize(text.size()));
    if (!in) throw broken();
    // The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
    const auto value_of = [&](std::string_view key) {   // where the value of `key` starts
        const std::size_t at = text.find(key);
        if (at == std::string::npos) throw broken();
        std::size_t c = text.find_first_not_of(' ', at + key.size());
        if (c == std::string::npos || text[c] != ':') throw broken();
        c = text.find_first_not_of(' ', c + 1);
        if (c == std::string::npos) throw broken();
        return c;
    };
    npy_header header;
    header.data_offset = start + length;
    const std::size_t open = value_of("'descr'");
    const std::size_t close = text[open] == '\'' ? text.find('\'', open + 1) : std::string::npos;
    if (close == std::string::npos) throw broken();
    header.type = text.substr(open + 1, close - open - 1);
    const std::size_t order = value_of("'fortran_order'");
    if (text.compare(order, 4, "True") == 0)
        header.fortran_order = true;
    else if (text.compare(order, 5, "False") != 0)
        throw broken();
    const std::size_t paren = value_of("'shape'");
    const std::size_t end = text[paren] == '(' ? text.find(')', paren) : std::string::npos;
    if (end == std::string::npos) throw broken();
    std::size_t value = 0;
    bool digits = false;
    for (std::size_t c = paren + 1; c <= end; ++c) {
        if (text[c] >= '0' && text[c] <= '9') {
            if (value > (std::size_t(1) << 48)) throw broken();
            value = value * 10 + std::size_t(text[c] - '0'), digits = true;
        } else if (text[c] == ',' || text[c] == ')') {
            if (digits) header.shape.push_back(value);
            else if (text[c] == ',') throw broken();   // "(,)" or "(3,,4)"
            value = 0, digits = false;
        } else if (text[c] != ' ') {
            throw broken();
        }
    }
    return header;
}

/// Throws `std::runtime_error` naming the file unless it holds the bytes its header declares,
/// so that neither a truncated file nor a header that declares an enormous shape gets its
/// array allocated.
inline void require_npy_data(const std::string& path, const npy_header& header) {
    std::size_t bytes = header.element_size();
    for (const std::size_t extent : header.shape) {
        if (extent != 0 && bytes > std::numeric_limits<std::size_t>::max() / extent)
            throw std::runtime_error(path + ": its header declares more data than a file can hold");
        bytes *= extent;
    }
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error || size < header.data_offset || size - header.data_offset < bytes)
        throw std::runtime_error(path + ": the header declares shape " + shape_string(header.shape) + " (" +
                                 std::to_string(bytes) + " bytes of data), the file holds " +
                                 std::to_string(error || size < header.data_offset ? 0 : size - header.data_offset));
}

/// The data of a .npy file whose header is `header` and whose elements are `Stored` (in this
/// machine's byte order), as T in row-major order.
template <class T, class Stored>
xt::xarray<T> read_npy_data(const std::string& path, const npy_header& header) {
    std::size_t count = 1;
    for (const std::size_t extent : header.shape) count *= extent;   // bounded by require_npy_data
    std::vector<Stored> stored(count);
    std::ifstream in(path, std::ios::binary);
    in.seekg(std::streamoff(header.data_offset));
    in.read(reinterpret_cast<char*>(stored.data()), std::streamsize(count * sizeof(Stored)));
    if (!in) throw std::runtime_error("cannot read " + path);
    const auto fill = [&](auto& array) {
        std::transform(stored.begin(), stored.end(), array.data(), [](Stored v) { return static_cast<T>(v); });
    };
    if (!header.fortran_order) {
        xt::xarray<T> out = xt::empty<T>(header.shape);
        fill(out);
        return out;
    }
    xt::xarray<T, xt::layout_type::column_major> columns = xt::empty<T, xt::layout_type::column_major>(header.shape);
    fill(columns);
    return xt::xarray<T>(columns);
}

/// The array of the .npy file at `path`, whose header (`read_npy_header`) is `header`, of
/// float32 or float64, or 8- to 64-bit signed or unsigned integers (little-endian, as this
/// machine stores them), as T. Throws `std::runtime_error` naming the file when it cannot be
/// read or holds less data than its header declares, and `std::invalid_argument` (from
/// `who`) for another element type.
template <class T>
xt::xarray<T> read_npy(const std::string& path, const npy_header& header, std::string_view who) {
    static_assert(std::endian::native == std::endian::little, "the .npy reader reads little-endian data as it is");
    require_npy_data(path, header);
    const std::string& type = header.type;
    if (type == "<f4") return read_npy_data<T, float>(path, header);
    if (type == "<f8") return read_npy_data<T, double>(path, header);
    if (type == "|u1") return read_npy_data<T, std::uint8_t>(path, header);
    if (type == "|i1") return read_npy_data<T, std::int8_t>(path, header);
    if (type == "<u2") return read_npy_data<T, std::uint16_t>(path, header);
    if (type == "<i2") return read_npy_data<T, std::int16_t>(path, header);
    if (type == "<u4") return read_npy_data<T, std::uint32_t>(path, header);
    if (type == "<i4") return read_npy_data<T, std::int32_t>(path, header);
    if (type == "<u8") return read_npy_data<T, std::uint64_t>(path, header);
    if (type == "<i8") return read_npy_data<T, std::int64_t>(path, header);
    fail(who, path + " holds elements of type " + type +
                  "; expected float32 or float64 (<f4, <f8) or little-endian integers of 8 to 64 bits");
}

/// `read_npy` of the file's own header.
template <class T>
xt::xarray<T> load_npy_as(const std::string& path, std::string_view who) {
    return read_npy<T>(path, read_npy_header(path), who);
}

}  // namespace nonlocal::detail
