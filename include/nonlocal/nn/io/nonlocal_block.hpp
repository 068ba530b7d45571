#pragma once
/// @file nn/io/nonlocal_block.hpp
/// The non-local block from a checkpoint of the PyTorch re-implementation of Wang et al.
/// (`load_npy`), read strictly against the architecture (nn/io/checkpoint.hpp).

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "nonlocal/nn/io/checkpoint.hpp"
#include "nonlocal/nn/io/layer_entries.hpp"
#include "nonlocal/nn/nonlocal_block.hpp"

namespace nonlocal::nn {

/// Loads the PyTorch re-implementation's `NONLocalBlock2D` (`NONLocalBlock3D` when
/// `c.dimensions` is 3) of architecture `c` from the entries below `at` of `from` (see
/// nn/io/checkpoint.hpp): `g`, `theta`, `phi` (`g.0`, `phi.0` when sub-sampled; no theta and
/// phi in the Gaussian form), `W.0` and `W.1` (the convolution and its BatchNorm, folded;
/// `W` alone without the norm), `concat_project.0` for concatenation; each a 1 x 1 (x 1)
/// convolution with a bias but concat_project's, a 1 x 1 `Conv2d` in both blocks.
template <class T = float>
basic_nonlocal_feature_block<T> load_npy(checkpoint& from, const nonlocal_block_config& c,
                                             const std::string& at = "") {
    const std::size_t C = c.in_channels, e = c.inter_channels ? c.inter_channels : std::max<std::size_t>(1, C / 2);
    const auto conv = [&](const std::string& name, std::size_t in, std::size_t out, bool bias = true, bool planar = false) {
        if (c.dimensions == 2 || planar) return read_conv<T>(from, at + name, {.in = in, .out = out}, bias);
        xt::xtensor<T, 4> weight = xt::reshape_view(from.read<T, 5>(at + name + "_weight", {out, in, 1, 1, 1}), {out, in, std::size_t(1), std::size_t(1)});
        return conv2d<T>(std::move(weight), bias ? from.read<T, 1>(at + name + "_bias", {out}) : xt::xtensor<T, 1>());
    };
    const std::string pooled = c.sub_sample ? "_0" : "";
    conv2d<T> g = conv("g" + pooled, C, e);
    std::optional<conv2d<T>> theta, phi;
    if (c.form != nonlocal_form::gaussian) theta = conv("theta", C, e), phi = conv("phi" + pooled, C, e);
    conv2d<T> w_z = conv(c.batch_norm ? "W_0" : "W", e, C);
    if (c.batch_norm) w_z = fold(w_z, read_batch_norm<T>(from, at + "W_1", C));
    xt::xtensor<T, 1> concat;
    if (c.form == nonlocal_form::concatenation) concat = xt::flatten(conv("concat_project_0", 2 * e, 1, false, true).weight());
    return {c.form, std::move(g), std::move(theta), std::move(phi), std::move(w_z), c.sub_sample, std::move(concat)};
}

}  // namespace nonlocal::nn
