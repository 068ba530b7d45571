"""PyTorch's side of benchmarks/peers/networks: whole vision networks, timed.

    torch_vision.py MODEL THREADS RUNS [ONNX_PATH]

MODEL is vit_b_16 (torchvision's, on [1, 3, 224, 224]) or mobilevit_s (timm's layout from
tests/nn/torch/timm_layouts.py, on [1, 3, 256, 256]), random weights, in inference mode; with
`:bf16` after it (vit_b_16:bf16) the model and its input cast to bfloat16, PyTorch's way of
running a model in bfloat16 on the CPU (autocast stops at the fused attention of inference).
Times RUNS forward passes on THREADS threads and prints the median in milliseconds as
`torch_ms VALUE`. With ONNX_PATH it first writes the float model there as ONNX (opset 14),
input `x`, for ONNX Runtime. Exit status 77 when PyTorch or torchvision is not installed.
"""
import os
import statistics
import sys
import time

try:
    import torch
    from torchvision.models import vit_b_16
except ImportError as missing:
    print(f"{missing.name} is not installed (python3-torch, python3-torchvision; scripts/setup --peers)")
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "torch"))
from timm_layouts import MobileVit  # noqa: E402

name, _, precision = sys.argv[1].partition(":")
threads, runs = int(sys.argv[2]), int(sys.argv[3])
onnx_path = sys.argv[4] if len(sys.argv) > 4 else None
torch.manual_seed(0)
torch.set_num_threads(threads)
if name == "vit_b_16":
    model, size = vit_b_16(), 224
else:
    model, size = MobileVit("mobilevit_s", 1000), 256
model = model.eval()
x = torch.randn(1, 3, size, size)
if onnx_path:   # with gradients on: the fused attention kernel of inference has no ONNX export
    torch.onnx.export(model, (x,), onnx_path, opset_version=14, input_names=["x"], output_names=["y"])
if precision == "bf16":
    model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
with torch.inference_mode():
    for _ in range(3):
        model(x)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model(x)
        times.append((time.perf_counter() - start) * 1e3)
print(f"torch_ms {statistics.median(times):.3f}")
