#pragma once
/// @file nn/io/layer_entries.hpp
/// The entries of PyTorch's common layers in a checkpoint, read with the shapes the
/// architecture gives them: `nn.Linear`, `nn.LayerNorm`, `nn.Conv2d` and timm's
/// `ConvNormAct` (a convolution without bias and its `BatchNorm2d`, folded into one).

#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "nonlocal/nn/batch_norm.hpp"
#include "nonlocal/nn/io/checkpoint.hpp"
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/layer_norm.hpp"
#include "nonlocal/nn/linear.hpp"

namespace nonlocal::nn {

/// `name.weight` [out, in] and, when `bias`, `name.bias` [out].
template <class T = float>
linear_layer<T> read_linear(checkpoint& from, const std::string& name, std::size_t in, std::size_t out, bool bias = true) {
    auto weight = from.read<T, 2>(name + "_weight", {out, in});
    return linear_layer<T>(weight, bias ? from.read<T, 1>(name + "_bias", {out}) : xt::xtensor<T, 1>());
}

/// `name.weight` and `name.bias` [features] of a layer norm of `eps`.
template <class T = float>
basic_layer_norm<T> read_layer_norm(checkpoint& from, const std::string& name, std::size_t features, double eps) {
    auto weight = from.read<T, 1>(name + "_weight", {features}, T(1));
    return basic_layer_norm<T>(std::move(weight), from.read<T, 1>(name + "_bias", {features}), eps);
}

/// `name.weight`, `name.bias`, `name.running_mean` and `name.running_var` [channels] of a
/// `BatchNorm2d` in eval mode.
template <class T = float>
batch_norm2d<T> read_batch_norm(checkpoint& from, const std::string& name, std::size_t channels) {
    // One statement each: the entries are read, and listed, in the order of the state_dict.
    const auto weight = from.read<T, 1>(name + "_weight", {channels}, T(1));
    const auto bias = from.read<T, 1>(name + "_bias", {channels});
    const auto mean = from.read<T, 1>(name + "_running_mean", {channels});
    return batch_norm2d<T>(weight, bias, mean, from.read<T, 1>(name + "_running_var", {channels}, T(1)));
}

/// The shape and the arithmetic of one convolution of a checkpoint: in and out channels, a
/// square kernel, stride, groups, padding, activation after it.
struct conv_entry {
    std::size_t in = 0, out = 0, kernel = 1, stride = 1, groups = 1, padding = 0;
    simd::activation act = simd::activation::identity;
};

/// `name.weight` [out, in / groups, k, k] and, when `bias`, `name.bias` [out].
template <class T = float>
conv2d<T> read_conv(checkpoint& from, const std::string& name, const conv_entry& c, bool bias = true) {
    const std::size_t k = c.kernel;
    auto weight = from.read<T, 4>(name + "_weight", {c.out, c.in / c.groups, k, k});
    return conv2d<T>(std::move(weight), bias ? from.read<T, 1>(name + "_bias", {c.out}) : xt::xtensor<T, 1>(),
                     {.stride = c.stride, .padding = c.padding, .groups = c.groups}, c.act);
}

/// timm's `ConvNormAct` below `name`: `conv.weight` (no bias) and `bn`, folded into one
/// convolution, padded as timm pads, ((stride - 1) + (k - 1)) / 2 on each side.
template <class T = float>
conv2d<T> read_conv_norm_act(checkpoint& from, const std::string& name, conv_entry c) {
    c.padding = (c.stride - 1 + c.kernel - 1) / 2;
    const conv2d<T> conv = read_conv<T>(from, name + "_conv", c, false);
    return fold(conv, read_batch_norm<T>(from, name + "_bn", c.out));
}

}  // namespace nonlocal::nn
