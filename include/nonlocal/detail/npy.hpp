#pragma once
/// @file detail/npy.hpp
/// Reading .npy arrays of any real or integer element type, as numpy writes them
/// (`numpy.save` of float64 data is as common as float32), with errors that name the file.

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xtensor.hpp>

#include "nonlocal/detail/errors.hpp"

namespace nonlocal::detail {

/// The element type of a .npy file as its header spells it ("<f4", "<f8", "|u1", ...).
/// Throws `std::runtime_error` naming the file when it cannot be read or is not a .npy file.
inline std::string npy_element_type(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::array<unsigned char, 10> lead{};
    in.read(reinterpret_cast<char*>(lead.data()), lead.size());
    const auto broken = [&] { return std::runtime_error(path + " is not a .npy file"); };
    if (!in || std::string_view(reinterpret_cast<const char*>(lead.data()), 6) != "\x93NUMPY") throw broken();
    // Version 1 has a 2-byte header length, versions 2 and 3 a 4-byte one (little-endian).
    std::size_t length = lead[8] | std::size_t(lead[9]) << 8;
    if (lead[6] >= 2) {
        unsigned char more[2] = {};
        in.read(reinterpret_cast<char*>(more), 2);
        length |= std::size_t(more[0]) << 16 | std::size_t(more[1]) << 24;
    }
    std::string header(std::min<std::size_t>(length, 1 << 16), '\0');
    in.read(header.data(), std::streamsize(header.size()));
    const std::size_t key = header.find("'descr'");
    const std::size_t open = key == std::string::npos ? key : header.find('\'', key + 7);
    const std::size_t close = open == std::string::npos ? open : header.find('\'', open + 1);
    if (!in || close == std::string::npos) throw broken();
    return header.substr(open + 1, close - open - 1);
}

/// A .npy array whose element type `type` (from `npy_element_type`) is float32 or float64, or
/// 8- to 64-bit signed or unsigned integers (in the machine's little-endian order), as T.
/// Throws `std::runtime_error` naming the file when it cannot be read, and
/// `std::invalid_argument` (from `who`) for another element type.
template <class T>
xt::xarray<T> load_npy_of_type(const std::string& path, const std::string& type, std::string_view who) {
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
