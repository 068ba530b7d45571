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


def save(name, tensor):
    np.save(os.path.join(folder, name + ".npy"), tensor.detach().numpy().astype(np.float32))


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

x, memory = torch.randn(B, L, E), torch.randn(B, S, E)
padding = torch.rand(B, S) < 0.25
padding[2, -20:] = True
pairs = torch.rand(L, S) < 0.3
pairs_per_slice = torch.rand(B * H, L, S) < 0.3
bias = torch.randn(B * H, L, S)
bias[:, :, :3] = float("-inf")
causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
for name, tensor in [("x", x), ("memory", memory), ("padding", padding), ("pairs", pairs),
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
print(f"wrote nn.MultiheadAttention (torch {torch.__version__}) cases into {folder}")
