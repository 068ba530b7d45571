#pragma once
/// @file nn.hpp
/// The network module: the layers (linear, convolutions, normalisations, pooling, multi-head
/// attention, transformer layers, the non-local block), the networks (`vision_transformer`,
/// `mobilevit`) and their checkpoint loaders (`nn/io/`). Include this rather than `nonlocal.hpp` in
/// programs that only run networks.

#include "nonlocal/nn/batch_norm.hpp"
#include "nonlocal/nn/conv2d.hpp"
#include "nonlocal/nn/inverted_residual.hpp"
#include "nonlocal/nn/io/checkpoint.hpp"
#include "nonlocal/nn/io/layer_entries.hpp"
#include "nonlocal/nn/io/mobilevit.hpp"
#include "nonlocal/nn/io/nonlocal_block.hpp"
#include "nonlocal/nn/io/transformer.hpp"
#include "nonlocal/nn/io/vision_transformer.hpp"
#include "nonlocal/nn/layer_norm.hpp"
#include "nonlocal/nn/linear.hpp"
#include "nonlocal/nn/mobilevit.hpp"
#include "nonlocal/nn/mobilevit_block.hpp"
#include "nonlocal/nn/multi_head_attention.hpp"
#include "nonlocal/nn/nonlocal_block.hpp"
#include "nonlocal/nn/pooling.hpp"
#include "nonlocal/nn/position_encoding.hpp"
#include "nonlocal/nn/resize.hpp"
#include "nonlocal/nn/transformer.hpp"
#include "nonlocal/nn/vision_transformer.hpp"
