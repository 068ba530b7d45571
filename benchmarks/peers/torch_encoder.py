"""PyTorch's side of benchmarks/peers/networks: ViT encoder layers, timed.

    torch_encoder.py LAYERS L E HEADS THREADS RUNS [ONNX_PATH]

Builds LAYERS nn.TransformerEncoderLayer(E, HEADS, 4 E, GELU, batch first, norm first) as
ViT's (one layer alone, or an nn.TransformerEncoder of them), in inference mode, times RUNS
forward passes of a [1, L, E] batch on THREADS threads and prints the median in
milliseconds as `torch_ms VALUE`. With ONNX_PATH it first writes the model there as ONNX
(opset 14), for ONNX Runtime. Exit status 77 when PyTorch is not installed.
"""
import statistics
import sys
import time

try:
    import torch
except ImportError:
    print("PyTorch is not installed (python3-torch; scripts/setup --peers)")
    sys.exit(77)

layers, L, E, heads, threads, runs = (int(a) for a in sys.argv[1:7])
onnx_path = sys.argv[7] if len(sys.argv) > 7 else None
torch.manual_seed(0)
torch.set_num_threads(threads)
layer = torch.nn.TransformerEncoderLayer(E, heads, 4 * E, activation="gelu", batch_first=True, norm_first=True)
if layers > 1:
    layer = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
layer = layer.eval()
x = torch.randn(1, L, E)
if onnx_path:   # outside inference mode, whose fused kernel has no ONNX export
    torch.onnx.export(layer, (x,), onnx_path, opset_version=14, input_names=["x"], output_names=["y"])
with torch.inference_mode():
    for _ in range(3):
        layer(x)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        layer(x)
        times.append((time.perf_counter() - start) * 1e3)
print(f"torch_ms {statistics.median(times):.3f}")
