#pragma once
/// @file detail/npy.hpp
/// Reading .npy arrays of any real or integer element type, as numpy writes them
/// (`numpy.save` of float64 data is as common as float32), with errors that name the file.

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"

namespace nonlocal::detail {

/// What a .npy file's header says: the element type as it spells it ("<f4", "<f8", "|u1",
/// ...), the shape, and where the data starts.
struct npy_header {
    std::string type;
    std::vector<std::size_t> shape;
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
    npy_header header;
    header.data_offset = start + length;
    const std::size_t key = text.find("'descr'");
    const std::size_t open = key == std::string::npos ? key : text.find('\'', key + 7);
    const std::size_t close = open == std::string::npos ? open : text.find('\'', open + 1);
    if (!in || close == std::string::npos) throw broken();
    header.type = text.substr(open + 1, close - open - 1);
    const std::size_t shape_key = text.find("'shape'");
    const std::size_t paren = shape_key == std::string::npos ? shape_key : text.find('(', shape_key);
    const std::size_t end = paren == std::string::npos ? paren : text.find(')', paren);
    if (end == std::string::npos) throw broken();
    std::size_t value = 0;
    bool digits = false;
    for (std::size_t c = paren + 1; c <= end; ++c) {
        if (text[c] >= '0' && text[c] <= '9') {
            if (value > (std::size_t(1) << 48)) throw broken();
            value = value * 10 + std::size_t(text[c] - '0'), digits = true;
        } else if (text[c] == ',' || text[c] == ')') {
            if (digits) header.shape.push_back(value);
            value = 0, digits = false;
        } else if (text[c] != ' ') {
            throw broken();
        }
    }
    return header;
}

/// The element type of a .npy file as its header spells it ("<f4", "<f8", "|u1", ...).
/// Throws `std::runtime_error` naming the file when it cannot be read or is not a .npy file.
inline std::string npy_element_type(const std::string& path) { return read_npy_header(path).type; }

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

/// A .npy array whose element type `type` (from `npy_element_type`) is float32 or float64, or
/// 8- to 64-bit signed or unsigned integers (in the machine's little-endian order), as T.
/// Throws `std::runtime_error` naming the file when it cannot be read, and
/// `std::invalid_argument` (from `who`) for another element type.
template <class T>
xt::xarray<T> load_npy_of_type(const std::string& path, const std::string& type, std::string_view who) {
    require_npy_data(path, read_npy_header(path));
    const auto as = [&](auto stored) -> xt::xarray<T> {
        try {
            return xt::cast<T>(xt::load_npy<decltype(stored)>(path));
        } catch (const std::runtime_error& e) {
            throw std::runtime_error(path + ": " + e.what());
        }
    };
    if (type == "<f4") return as(float{});
    if (type == "<f8") return as(double{});
    if (type == "|u1") return as(std::uint8_t{});
    if (type == "|i1") return as(std::int8_t{});
    if (type == "<u2") return as(std::uint16_t{});
    if (type == "<i2") return as(std::int16_t{});
    if (type == "<u4") return as(std::uint32_t{});
    if (type == "<i4") return as(std::int32_t{});
    if (type == "<u8") return as(std::uint64_t{});
    if (type == "<i8") return as(std::int64_t{});
    fail(who, path + " holds elements of type " + type +
                  "; expected float32 or float64 (<f4, <f8) or little-endian integers of 8 to 64 bits");
}

/// `load_npy_of_type` with the element type read from the file's header.
template <class T>
xt::xarray<T> load_npy_as(const std::string& path, std::string_view who) {
    return load_npy_of_type<T>(path, npy_element_type(path), who);
}

/// A layer's weight file as a float array of rank N (`load_npy_as`), or
/// `std::invalid_argument` (from `who`) naming the file when it holds another rank.
template <std::size_t N>
xt::xtensor<float, N> load_weights(const std::string& path, std::string_view who) {
    const xt::xarray<float> a = load_npy_as<float>(path, who);
    require(a.dimension() == N, who, [&] {
        return path + " holds a " + shape_string(a.shape()) + " array; expected " + std::to_string(N) +
               (N == 1 ? " dimension" : " dimensions");
    });
    return a;
}

}  // namespace nonlocal::detail
