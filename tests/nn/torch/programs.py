#!/usr/bin/env python3
"""nonlocal_model_forward and nonlocal_classify on the checkpoints parity.py saved, against
PyTorch's outputs: every MODEL of nonlocal_model_forward, and nonlocal_classify's logits
against torchvision's evaluation transform (shorter side resized with antialias, centre
crop, ImageNet's mean and std) and VisionTransformer on a random picture, and against
timm's (bicubic with antialias, mean and std 0.5) for the same weights under timm's names. The
architectures come from --arch, and for MobileViT from the architecture.txt written beside its
weights. Bad runs (missing weights, no architecture, a bad option, a missing image): status 1,
an error whose first line names the prefix, option or file, nothing written.

    programs.py CASES MODEL_FORWARD CLASSIFY SCRATCH

Exits 0 when every run matches within 1e-5, 1 otherwise, 77 (skipped) without numpy, torch,
torchvision or the cases."""
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    from torchvision.models.vision_transformer import VisionTransformer
except ImportError as missing:
    print(f"skipped: the Python module {missing.name} is not installed (Debian: python3-torch, python3-torchvision)")
    sys.exit(77)

cases, forward, classify, scratch = sys.argv[1:5]
if not os.path.exists(os.path.join(cases, "vit_logits.npy")):
    print(f"skipped: {cases} holds no ViT case (torch_parity writes them)")
    sys.exit(77)
os.makedirs(scratch, exist_ok=True)
failed = 0


def case(name):
    return os.path.join(cases, name)


def compare(what, ours, theirs, tolerance=1e-5):
    global failed
    ours, theirs = np.load(ours), np.load(theirs)
    difference = np.abs(ours - theirs).max() if ours.shape == theirs.shape else float("inf")
    ok = difference <= tolerance
    failed += not ok
    print(f"{what:44s} max |nonlocal - torch|: {difference:.2g}  {'ok' if ok else 'FAILED'}")


def run(*arguments):
    return subprocess.run([str(a) for a in arguments], capture_output=True, text=True)


# parity.py's small models: its VisionTransformer, and timm_layouts.py's "small" MobileViT
# (given by the architecture.txt beside its weights).
vit_arch = ["--arch", "vit image_size=32 patch=8 hidden=16 layers=2 heads=2 mlp=32 classes=10"]
with open(case("weights/mobilevit/architecture.txt"), "w") as manifest:
    manifest.write("mobilevit stem=8 features=40 classes=10\n"
                   "stage=1,8,1,2 stage=2,12,2,2 stage=1,16,2,2,16,2 stage=1,20,2,2,24,1 stage=1,24,2,2,24,1\n")
# nonlocal_model_forward: (model, prefix, input, expected, options)
runs = [
    ("torchvision-vit", "weights/vit/", "vit_images", "vit_logits", vit_arch),
    ("torchvision-vit", "weights/vit/", "vit_images_48", "vit_logits_48", vit_arch + ["--threads", "2"]),
    ("timm-vit", "weights/timm/", "vit_images", "timm_logits", vit_arch),
    ("timm-mobilevit", "weights/mobilevit/", "mobilevit_images", "mobilevit_logits", []),
    ("timm-mobilevit-block", "weights/mvit/", "mvit_odd_input", "mvit_odd_output",
     ["--arch", "mobilevit_block transformer_dim=8 transformer_depth=2 heads=2"]),
    ("nonlocal-block-2d", "weights/nonlocal_embedded_gaussian/", "nonlocal_input", "nonlocal_embedded_gaussian_output", []),
    ("nonlocal-block-2d", "weights/nonlocal_concatenation/", "nonlocal_input", "nonlocal_concatenation_output",
     ["--similarity", "concatenation"]),
]
for model, prefix, source, expected, options in runs:
    out = os.path.join(scratch, f"{model}_{source}.npy")
    result = run(forward, model, case(prefix), case(source + ".npy"), out, *options)
    if result.returncode != 0:
        failed += 1
        print(f"{model} {source}: exit status {result.returncode}: {result.stderr.strip()}  FAILED")
        continue
    compare(f"model_forward {model} {source}", out, case(expected + ".npy"))

# --precision bf16: the linear maps' weights and inputs rounded to bfloat16, summed in float,
# against PyTorch's float outputs within 2e-2 (relative L2), and further from them than float is.
for model, prefix, source, expected, options in [runs[0], runs[3], runs[4]]:
    out = os.path.join(scratch, f"{model}_{source}_bf16.npy")
    result = run(forward, model, case(prefix), case(source + ".npy"), out, *options, "--precision", "bf16")
    if result.returncode != 0:
        failed += 1
        print(f"{model} {source} bf16: exit status {result.returncode}: {result.stderr.strip()}  FAILED")
        continue
    ours, theirs = np.load(out), np.load(case(expected + ".npy"))
    relative = np.linalg.norm(ours - theirs) / np.linalg.norm(theirs) if ours.shape == theirs.shape else float("inf")
    ok = 1e-6 < relative <= 2e-2
    failed += not ok
    print(f"{'model_forward ' + model + ' ' + source + ' bf16':44s} relative L2 to torch's float: {relative:.2g}  "
          f"{'ok' if ok else 'FAILED'}")

# nonlocal_classify: a 50 x 40 picture, resized to 36 on its shorter side (45 x 36), cropped to 32.
torch.manual_seed(6)
picture = torch.randint(0, 256, (50, 40, 3), dtype=torch.uint8)
np.save(os.path.join(scratch, "picture.npy"), picture.numpy())
config = dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32, num_classes=10)
vit = VisionTransformer(**config).eval()
state = {name: torch.from_numpy(np.load(case("weights/vit/" + name.replace(".", "_") + ".npy"))) for name in vit.state_dict()}
vit.load_state_dict(state)
with torch.no_grad():
    x = picture.permute(2, 0, 1).float().unsqueeze(0) / 255
    x = torch.nn.functional.interpolate(x, size=(45, 36), mode="bilinear", align_corners=False, antialias=True)
    top, left = int(round((45 - 32) / 2.0)), int(round((36 - 32) / 2.0))
    x = x[:, :, top:top + 32, left:left + 32]
    mean, std = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1), torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    np.save(os.path.join(scratch, "picture_logits.npy"), vit((x - mean) / std).numpy())
    # timm's transform of the same picture: bicubic with antialias, mean and std 0.5.
    x = picture.permute(2, 0, 1).float().unsqueeze(0) / 255
    x = torch.nn.functional.interpolate(x, size=(45, 36), mode="bicubic", align_corners=False, antialias=True)
    x = x[:, :, top:top + 32, left:left + 32]
    np.save(os.path.join(scratch, "picture_timm_logits.npy"), vit((x - 0.5) / 0.5).numpy())
for model, prefix, expected in [("torchvision-vit", "weights/vit/", "picture_logits.npy"),
                                ("timm-vit", "weights/timm/", "picture_timm_logits.npy")]:
    logits = os.path.join(scratch, f"classify_{model}_logits.npy")
    result = run(classify, model, case(prefix), os.path.join(scratch, "picture.npy"), *vit_arch,
                 "--resize", "36", "--size", "32", "--logits", logits)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or len(lines) != 5:
        failed += 1
        print(f"classify {model}: exit status {result.returncode}, {len(lines)} classes printed: "
              f"{result.stderr.strip()}  FAILED")
    else:
        compare(f"classify {model} picture", logits, os.path.join(scratch, expected), 1e-4)

# Bad runs: status 1, the first line naming the prefix, file or option, no output.
bad = [
    ([forward, "timm-vit", case("missing_"), case("vit_images.npy"), os.path.join(scratch, "bad.npy"), *vit_arch],
     "missing_"),
    ([forward, "timm-vit", case("weights/timm/"), case("vit_images.npy"), os.path.join(scratch, "bad.npy")], "--arch"),
    ([forward, "nonlocal-block-2d", case("weights/nonlocal_concatenation/"), case("nonlocal_input.npy"),
      os.path.join(scratch, "bad.npy"), "--similarity", "cosine"], "--similarity"),
    ([classify, "torchvision-vit", case("weights/vit/"), os.path.join(scratch, "missing.png"), *vit_arch], "missing.png"),
    ([forward, "nonlocal-block-2d", case("weights/nonlocal_concatenation/"), case("nonlocal_input.npy"),
      os.path.join(scratch, "bad.npy"), "--similarity", "concatenation", "--precision", "bf16"], "--precision"),
]
for arguments, named in bad:
    result = run(*arguments)
    message = [line for line in result.stderr.strip().splitlines() if line != "Run with --help for more information."]
    ok = (result.returncode == 1 and len(message) >= 1 and named in message[0]
          and not os.path.exists(os.path.join(scratch, "bad.npy")))
    failed += not ok
    print(f"refused, naming {named}: {message[0] if message else '(nothing said)'}  {'ok' if ok else 'FAILED'}")

sys.exit(1 if failed else 0)
