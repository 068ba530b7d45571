#!/usr/bin/env python3
"""nonlocal_model_forward and nonlocal_classify on the checkpoints parity.py saved, against
PyTorch's outputs: every MODEL of nonlocal_model_forward, and nonlocal_classify's logits
against torchvision's evaluation transform (shorter side resized with antialias, centre
crop, ImageNet's mean and std) and VisionTransformer on a random picture, and against
timm's (bicubic with antialias, mean and std 0.5) for the same weights under timm's names. Bad runs: a
missing weight file, a ViT without --heads, each a one-line error, status 1, nothing written.

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


# nonlocal_model_forward: (model, prefix, input, expected, options)
runs = [
    ("torchvision-vit", "vit_", "vit_images", "vit_logits", ["--heads", "2"]),
    ("torchvision-vit", "vit_", "vit_images_48", "vit_logits_48", ["--heads", "2", "--threads", "2"]),
    ("timm-vit", "timm_", "vit_images", "timm_logits", ["--heads", "2"]),
    ("timm-mobilevit", "mobilevit_", "mobilevit_images", "mobilevit_logits", []),
    ("timm-mobilevit-block", "mvit_", "mvit_odd_input", "mvit_odd_output", ["--heads", "2"]),
    ("nonlocal-block-2d", "nonlocal_embedded_gaussian_", "nonlocal_input", "nonlocal_embedded_gaussian_output", []),
    ("nonlocal-block-2d", "nonlocal_concatenation_", "nonlocal_input", "nonlocal_concatenation_output",
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

# nonlocal_classify: a 50 x 40 picture, resized to 36 on its shorter side (45 x 36), cropped to 32.
torch.manual_seed(6)
picture = torch.randint(0, 256, (50, 40, 3), dtype=torch.uint8)
np.save(os.path.join(scratch, "picture.npy"), picture.numpy())
config = dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32, num_classes=10)
vit = VisionTransformer(**config).eval()
state = {name: torch.from_numpy(np.load(case("vit_" + name.replace(".", "_") + ".npy"))) for name in vit.state_dict()}
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
for model, prefix, expected in [("torchvision-vit", "vit_", "picture_logits.npy"),
                                ("timm-vit", "timm_", "picture_timm_logits.npy")]:
    logits = os.path.join(scratch, f"classify_{model}_logits.npy")
    result = run(classify, model, case(prefix), os.path.join(scratch, "picture.npy"), "--heads", "2",
                 "--resize", "36", "--size", "32", "--logits", logits)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or len(lines) != 5:
        failed += 1
        print(f"classify {model}: exit status {result.returncode}, {len(lines)} classes printed: "
              f"{result.stderr.strip()}  FAILED")
    else:
        compare(f"classify {model} picture", logits, os.path.join(scratch, expected), 1e-4)

# Bad runs: one line naming the file or option, status 1, no output.
bad = [
    ([forward, "timm-vit", case("missing_"), case("vit_images.npy"), os.path.join(scratch, "bad.npy"), "--heads", "2"],
     "missing_"),
    ([forward, "timm-vit", case("timm_"), case("vit_images.npy"), os.path.join(scratch, "bad.npy")], "--heads"),
    ([forward, "nonlocal-block-2d", case("nonlocal_concatenation_"), case("nonlocal_input.npy"),
      os.path.join(scratch, "bad.npy"), "--similarity", "cosine"], "--similarity"),
    ([classify, "torchvision-vit", case("vit_"), os.path.join(scratch, "missing.png"), "--heads", "2"], "missing.png"),
]
for arguments, named in bad:
    result = run(*arguments)
    message = [line for line in result.stderr.strip().splitlines() if line != "Run with --help for more information."]
    ok = (result.returncode == 1 and len(message) == 1 and named in message[0]
          and not os.path.exists(os.path.join(scratch, "bad.npy")))
    failed += not ok
    print(f"refused, naming {named}: {message[0] if message else '(nothing said)'}  {'ok' if ok else 'FAILED'}")

sys.exit(1 if failed else 0)
