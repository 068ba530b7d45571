#!/usr/bin/env python3
"""PyTorch's nn.MultiheadAttention on random weights, inputs and masks of every kind, written
as .npy files into the folder given, for tests/torch_parity.cpp to compare
nonlocal::nn::multi_head_attention with. Exits with status 77 (a skipped test) when numpy or
torch is not installed (Debian: python3-torch)."""
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as missing:
    print(f"skipped: the Python module {missing.name} is not installed (Debian: python3-torch)")
    sys.exit(77)

folder = sys.argv[1]
os.makedirs(folder, exist_ok=True)


def save(name, tensor, dtype=np.float32):
    np.save(os.path.join(folder, name + ".npy"), tensor.detach().numpy().astype(dtype))


torch.manual_seed(0)
E, H, B, L, S = 24, 4, 3, 37, 70
layer = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
with torch.no_grad():   # the biases start at 0: make them count
    layer.in_proj_bias.normal_()
    layer.out_proj.bias.normal_()
for name, tensor in layer.state_dict().items():
    save(name.replace(".", "_"), tensor)
unbiased = torch.nn.MultiheadAttention(E, H, bias=False, batch_first=True).eval()   # no bias tensors
for name, tensor in unbiased.state_dict().items():
    save("unbiased_" + name.replace(".", "_"), tensor)
# kdim and vdim of their own: q_proj_weight, k_proj_weight and v_proj_weight instead of in_proj_weight.
narrow = torch.nn.MultiheadAttention(E, H, kdim=10, vdim=7, batch_first=True).eval()
with torch.no_grad():
    narrow.in_proj_bias.normal_()
    narrow.out_proj.bias.normal_()
for name, tensor in narrow.state_dict().items():
    save("narrow_" + name.replace(".", "_"), tensor)
# The first layer in double, its weights saved as float64.
wide = torch.nn.MultiheadAttention(E, H, batch_first=True).double().eval()
with torch.no_grad():
    for name, tensor in layer.state_dict().items():
        wide.state_dict()[name].copy_(tensor.double())
for name, tensor in wide.state_dict().items():
    save("double_" + name.replace(".", "_"), tensor, np.float64)

x, memory = torch.randn(B, L, E), torch.randn(B, S, E)
narrow_keys, narrow_values = torch.randn(B, S, 10), torch.randn(B, S, 7)
padding = torch.rand(B, S) < 0.25
padding[2, -20:] = True
pairs = torch.rand(L, S) < 0.3
pairs_per_slice = torch.rand(B * H, L, S) < 0.3
bias = torch.randn(B * H, L, S)
bias[:, :, :3] = float("-inf")
causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
for name, tensor in [("x", x), ("memory", memory), ("narrow_keys", narrow_keys), ("narrow_values", narrow_values), ("padding", padding), ("pairs", pairs),
                     ("pairs_per_slice", pairs_per_slice), ("bias", bias), ("causal", causal)]:
    save(name, tensor.float())

# case: (query, key and value, key_padding_mask, attn_mask, average_attn_weights)
cases = {
    "padding": (x, memory, padding, None, True),
    "pairs": (x, memory, None, pairs, False),
    "pairs_per_slice_and_padding": (x, memory, padding, pairs_per_slice, True),
    "bias": (x, memory, None, bias, False),
    "causal": (x, x, None, causal, False),
}
with torch.no_grad():
    for name, (query, keys, key_padding_mask, attn_mask, average) in cases.items():
        output, weights = layer(query, keys, keys, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                                need_weights=True, average_attn_weights=average)
        save(name + "_output", output)
        save(name + "_weights", weights)
    output, weights = unbiased(x, memory, memory, key_padding_mask=padding, need_weights=True)
    save("unbiased_output", output)
    save("unbiased_weights", weights)
    output, weights = narrow(x, narrow_keys, narrow_values, key_padding_mask=padding, need_weights=True,
                             average_attn_weights=False)
    save("narrow_output", output)
    save("narrow_weights", weights)
    output, weights = wide(x.double(), memory.double(), memory.double(), key_padding_mask=padding,
                           attn_mask=bias.double(), need_weights=True)
    save("double_output", output, np.float64)
    save("double_weights", weights, np.float64)
print(f"wrote nn.MultiheadAttention (torch {torch.__version__}) cases into {folder}")
