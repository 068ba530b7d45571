#!/usr/bin/env python3
"""PyTorch's layers on random weights and inputs, written as .npy files into the folder given,
for tests/nn/torch_parity.cpp to compare nonlocal's with: nn.MultiheadAttention with masks of
every kind, nn.Conv2d, nn.BatchNorm2d, the pooling functions, the activations and, when
torchvision is installed, its VisionTransformer (its weights also saved under timm's names).
An inverted residual and a
small MobileViT in timm's module layout, and bilinear resizing. Exits with status 77 (a skipped test) when numpy or torch is not installed (Debian:
python3-torch, python3-torchvision)."""
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as missing:
    print(f"skipped: the Python module {missing.name} is not installed (Debian: python3-torch)")
    sys.exit(77)

from timm_layouts import InvertedResidual, MobileVit, MobileVitBlock   # beside this script

folder = sys.argv[1]
os.makedirs(folder, exist_ok=True)


def save(name, tensor, dtype=np.float32):
    np.save(os.path.join(folder, name + ".npy"), tensor.detach().numpy().astype(dtype))


def save_weights(model, state, dtype=np.float32):
    """A state_dict as nonlocal reads one: a .npy per entry, dots as underscores, in the folder
    weights/MODEL of its own (num_batches_tracked left out, as PyTorch may)."""
    os.makedirs(os.path.join(folder, "weights", model), exist_ok=True)
    for name, tensor in state.items():
        if not name.endswith("num_batches_tracked"):
            np.save(os.path.join(folder, "weights", model, name.replace(".", "_") + ".npy"),
                    tensor.detach().numpy().astype(dtype))


torch.manual_seed(0)
E, H, B, L, S = 24, 4, 3, 37, 70
layer = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
with torch.no_grad():   # the biases start at 0: make them count
    layer.in_proj_bias.normal_()
    layer.out_proj.bias.normal_()
save_weights("mha", layer.state_dict())
unbiased = torch.nn.MultiheadAttention(E, H, bias=False, batch_first=True).eval()   # no bias tensors
save_weights("unbiased", unbiased.state_dict())
# kdim and vdim of their own: q_proj_weight, k_proj_weight and v_proj_weight instead of in_proj_weight.
narrow = torch.nn.MultiheadAttention(E, H, kdim=10, vdim=7, batch_first=True).eval()
with torch.no_grad():
    narrow.in_proj_bias.normal_()
    narrow.out_proj.bias.normal_()
save_weights("narrow", narrow.state_dict())
# The first layer in double, its weights saved as float64.
wide = torch.nn.MultiheadAttention(E, H, batch_first=True).double().eval()
with torch.no_grad():
    for name, tensor in layer.state_dict().items():
        wide.state_dict()[name].copy_(tensor.double())
save_weights("double", wide.state_dict(), np.float64)

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

# Convolutions (groups, stride, dilation, depthwise), batch norm, pooling, activations.
torch.manual_seed(1)
images = torch.randn(2, 6, 11, 9)
grouped = torch.nn.Conv2d(6, 8, 3, stride=2, padding=1, groups=2).eval()
depthwise = torch.nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8, bias=False).eval()
norm = torch.nn.BatchNorm2d(8).eval()
with torch.no_grad():
    norm.weight.uniform_(0.5, 2)
    norm.bias.normal_()
    norm.running_mean.normal_()
    norm.running_var.uniform_(0.2, 2)
    for name, module in [("grouped", grouped), ("depthwise", depthwise), ("norm", norm)]:
        for key, value in module.state_dict().items():
            if key != "num_batches_tracked":
                save(name + "_" + key, value)
    features = grouped(images)
    F = torch.nn.functional
    cases = {
        "images": images,
        "grouped_output": features,
        "depthwise_output": depthwise(features),
        "norm_output": norm(depthwise(features)),
        "max_pool": F.max_pool2d(features, 3, stride=2, padding=1, ceil_mode=True),
        "avg_pool": F.avg_pool2d(features, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        "adaptive_pool": F.adaptive_avg_pool2d(features, (3, 2)),
        "silu": F.silu(features * 4),
        "relu6": F.relu6(features * 4),
        "gelu_tanh": F.gelu(features * 4, approximate="tanh"),
    }
    for name, tensor in cases.items():
        save(name, tensor)



class NonLocal2D(torch.nn.Module):
    """The non-local block in the module layout of the widely used PyTorch re-implementation
    (NONLocalBlock2D: g, theta, phi, W = [conv, BatchNorm], concat_project), embedded
    Gaussian or concatenation, sub-sampled."""

    def __init__(self, channels, mode):
        super().__init__()
        e = channels // 2
        self.mode = mode
        self.g = torch.nn.Sequential(torch.nn.Conv2d(channels, e, 1), torch.nn.MaxPool2d(2))
        self.theta = torch.nn.Conv2d(channels, e, 1)
        self.phi = torch.nn.Sequential(torch.nn.Conv2d(channels, e, 1), torch.nn.MaxPool2d(2))
        self.W = torch.nn.Sequential(torch.nn.Conv2d(e, channels, 1), torch.nn.BatchNorm2d(channels))
        if mode == "concatenation":
            self.concat_project = torch.nn.Sequential(torch.nn.Conv2d(2 * e, 1, 1, bias=False), torch.nn.ReLU())

    def forward(self, x):
        b, e = x.size(0), self.theta.out_channels
        g_x = self.g(x).view(b, e, -1).permute(0, 2, 1)
        theta_x = self.theta(x).view(b, e, -1)
        phi_x = self.phi(x).view(b, e, -1)
        if self.mode == "embedded_gaussian":
            f = torch.softmax(torch.matmul(theta_x.permute(0, 2, 1), phi_x), dim=-1)
        else:
            n, m = theta_x.size(2), phi_x.size(2)
            pairs = torch.cat([theta_x.unsqueeze(3).repeat(1, 1, 1, m), phi_x.unsqueeze(2).repeat(1, 1, n, 1)], dim=1)
            f = self.concat_project(pairs).view(b, n, m) / m
        y = torch.matmul(f, g_x).permute(0, 2, 1).contiguous().view(b, e, *x.size()[2:])
        return self.W(y) + x


torch.manual_seed(3)
with torch.no_grad():
    maps = torch.randn(2, 8, 7, 6)
    save("nonlocal_input", maps)
    for mode in ("embedded_gaussian", "concatenation"):
        block = NonLocal2D(8, mode).eval()
        for parameter in block.parameters():
            parameter.normal_(0, 0.5)
        block.W[1].running_mean.normal_()
        block.W[1].running_var.uniform_(0.2, 2)
        save_weights(f"nonlocal_{mode}", block.state_dict())
        save(f"nonlocal_{mode}_output", block(maps))
        block = block.double()   # the same block in double
        save_weights(f"nonlocal_double_{mode}", block.state_dict(), np.float64)
        save(f"nonlocal_double_{mode}_output", block(maps.double()), np.float64)



def randomise(module, scale=0.4):
    """Weights of every size (the defaults leave biases and batch norms at the identity)."""
    for parameter in module.parameters():
        parameter.normal_(0, scale)
    for part in module.modules():
        if isinstance(part, torch.nn.BatchNorm2d):
            part.running_mean.normal_()
            part.running_var.uniform_(0.2, 2)


torch.manual_seed(4)
with torch.no_grad():
    mvit = MobileVitBlock(channels=6, dim=8, out=6, depth=2, heads=2).eval()
    randomise(mvit)
    save_weights("mvit", mvit.state_dict())
    feature_map = torch.randn(2, 6, 8, 6)
    save("mvit_input", feature_map)
    save("mvit_output", mvit(feature_map))
    odd_map = torch.randn(1, 6, 5, 7)   # resized to 6 x 8 for the patches, and back
    save("mvit_odd_input", odd_map)
    save("mvit_odd_output", mvit(odd_map))
    for name, block in [("mv2", InvertedResidual(6, 6, 1, 4)), ("mv2_strided", InvertedResidual(6, 10, 2, 2))]:
        block.eval()
        randomise(block)
        save_weights(name, block.state_dict())
        save(name + "_output", block(feature_map))
    model = MobileVit().eval()
    randomise(model, 0.3)
    save_weights("mobilevit", model.state_dict())
    pictures = torch.randn(2, 3, 72, 72)   # maps of 9 x 9, 5 x 5 and 3 x 3 at the MobileViT blocks
    save("mobilevit_images", pictures)
    save("mobilevit_logits", model(pictures))
    # The same network in double.
    model = model.double()
    save_weights("mobilevit_double", model.state_dict(), np.float64)
    save("mobilevit_double_logits", model(pictures.double()), np.float64)

# Resizing as F.interpolate computes it: bilinear and bicubic, with and without antialias, the
# cells' centres or the corners aligned.
torch.manual_seed(5)
with torch.no_grad():
    planes = torch.randn(2, 3, 13, 10)
    save("resize_input", planes)
    for mode in ("bilinear", "bicubic"):
        for size in [(5, 4), (29, 17), (13, 3), (1, 1)]:
            for antialias in (False, True):
                for align_corners in (False, True):
                    name = f"resize_{mode}_{size[0]}x{size[1]}" + ("_antialias" if antialias else "") + (
                        "_corners" if align_corners else "")
                    save(name, F.interpolate(planes, size=size, mode=mode, align_corners=align_corners,
                                             antialias=antialias))

try:
    from torchvision.models.vision_transformer import VisionTransformer, interpolate_embeddings
except ImportError:
    print("the ViT cases are skipped: torchvision is not installed (Debian: python3-torchvision)")
else:
    torch.manual_seed(2)
    config = dict(patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32, num_classes=10)
    vit = VisionTransformer(image_size=32, **config).eval()
    with torch.no_grad():
        for parameter in vit.parameters():   # the head and the class token start at 0
            parameter.normal_(0, 0.3)
        state = vit.state_dict()
        save_weights("vit", state)
        # The same weights under timm's names.
        timm = {"cls_token": "class_token", "pos_embed": "encoder.pos_embedding",
                "patch_embed.proj.weight": "conv_proj.weight", "patch_embed.proj.bias": "conv_proj.bias",
                "norm.weight": "encoder.ln.weight", "norm.bias": "encoder.ln.bias",
                "head.weight": "heads.head.weight", "head.bias": "heads.head.bias"}
        for i in range(config["num_layers"]):
            ours, theirs = f"blocks.{i}.", f"encoder.layers.encoder_layer_{i}."
            for a, b in [("norm1", "ln_1"), ("norm2", "ln_2"), ("mlp.fc1", "mlp.0"), ("mlp.fc2", "mlp.3"),
                         ("attn.proj", "self_attention.out_proj")]:
                for w in ("weight", "bias"):
                    timm[f"{ours}{a}.{w}"] = f"{theirs}{b}.{w}"
            timm[f"{ours}attn.qkv.weight"] = f"{theirs}self_attention.in_proj_weight"
            timm[f"{ours}attn.qkv.bias"] = f"{theirs}self_attention.in_proj_bias"
        save_weights("timm", {name: state[source] for name, source in timm.items()})
        pictures = torch.randn(2, 3, 32, 32)
        save("vit_images", pictures)
        save("vit_logits", vit(pictures))
        # The same model in double.
        wide_vit = VisionTransformer(image_size=32, **config).double().eval()
        wide_vit.load_state_dict({name: tensor.double() for name, tensor in state.items()})
        save_weights("vit_double", wide_vit.state_dict(), np.float64)
        save("vit_double_logits", wide_vit(pictures.double()), np.float64)
        save("timm_logits", vit(pictures))
        # A 48 x 48 image: the position embedding resampled to a 6 x 6 grid, as torchvision does.
        larger = VisionTransformer(image_size=48, **config).eval()
        larger.load_state_dict(interpolate_embeddings(48, 8, state))
        bigger_pictures = torch.randn(1, 3, 48, 48)
        save("vit_images_48", bigger_pictures)
        save("vit_logits_48", larger(bigger_pictures))
        # timm resamples the grid bicubically with antialias and the cells' centres aligned
        # (resample_abs_pos_embed, timm 0.9 and later).
        # (interpolate_embeddings replaced the state's entry: the model holds the 4 x 4 grid.)
        original = vit.encoder.pos_embedding
        grid = original[:, 1:].reshape(1, 4, 4, -1).permute(0, 3, 1, 2)
        grid = torch.nn.functional.interpolate(grid, size=(6, 6), mode="bicubic", antialias=True)
        timm_state = dict(larger.state_dict())
        timm_state["encoder.pos_embedding"] = torch.cat(
            [original[:, :1], grid.permute(0, 2, 3, 1).reshape(1, 36, -1)], dim=1)
        larger.load_state_dict(timm_state)
        save("timm_logits_48", larger(bigger_pictures))
print(f"wrote the cases of torch {torch.__version__} into {folder}")
