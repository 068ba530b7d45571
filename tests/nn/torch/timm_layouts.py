"""The module layouts of timm's MobileViT (v1) in plain PyTorch, with the state_dict names timm
gives them: ConvNormAct, the transformer Block, MobileVitBlock, the inverted residual
(BottleneckBlock as MobileViT builds it) and the whole network. tests/nn/torch/parity.py saves
their weights and outputs for nonlocal to compare with; benchmarks/peers times them."""
import torch
import torch.nn.functional as F


class ConvNormAct(torch.nn.Module):
    """timm's ConvNormAct as MobileViT uses it: conv (no bias, padding ((s - 1) + (k - 1)) // 2),
    bn, SiLU (or none)."""

    def __init__(self, cin, cout, k, stride=1, groups=1, act=True):
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, k, stride=stride, padding=(stride - 1 + k - 1) // 2, groups=groups,
                                    bias=False)
        self.bn = torch.nn.BatchNorm2d(cout)
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.silu(x) if self.act else x


class Attention(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attention = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        return self.proj((attention @ v).transpose(1, 2).reshape(b, n, d))


class Mlp(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(dim, 2 * dim), torch.nn.Linear(2 * dim, dim)

    def forward(self, x):
        return self.fc2(F.silu(self.fc1(x)))


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.attn = torch.nn.LayerNorm(dim), Attention(dim, heads)
        self.norm2, self.mlp = torch.nn.LayerNorm(dim), Mlp(dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class MobileVitBlock(torch.nn.Module):
    """timm's MobileVitBlock (v1) in its module layout, 2 x 2 patches; a map the patch does not
    divide is resized bilinearly to the next multiples and back, as timm does."""

    def __init__(self, channels, dim, out, depth, heads):
        super().__init__()
        self.conv_kxk = ConvNormAct(channels, channels, 3)
        self.conv_1x1 = torch.nn.Conv2d(channels, dim, 1, bias=False)
        self.transformer = torch.nn.Sequential(*[Block(dim, heads) for _ in range(depth)])
        self.norm = torch.nn.LayerNorm(dim)
        self.conv_proj = ConvNormAct(dim, out, 1)
        self.conv_fusion = ConvNormAct(channels + out, out, 3)

    def forward(self, x):
        shortcut, y = x, self.conv_1x1(self.conv_kxk(x))
        b, c, H, W = y.shape
        h, w = (H + 1) // 2 * 2, (W + 1) // 2 * 2
        if (h, w) != (H, W):
            y = F.interpolate(y, size=(h, w), mode="bilinear", align_corners=False)
        nh, nw = h // 2, w // 2
        y = y.reshape(b * c * nh, 2, nw, 2).transpose(1, 2)
        y = y.reshape(b, c, nh * nw, 4).transpose(1, 3).reshape(b * 4, nh * nw, -1)
        y = self.norm(self.transformer(y))
        y = y.contiguous().view(b, 4, nh * nw, -1).transpose(1, 3).reshape(b * c * nh, nw, 2, 2)
        y = y.transpose(1, 2).reshape(b, c, h, w)
        if (h, w) != (H, W):
            y = F.interpolate(y, size=(H, W), mode="bilinear", align_corners=False)
        return self.conv_fusion(torch.cat((shortcut, self.conv_proj(y)), dim=1))


class InvertedResidual(torch.nn.Module):
    """timm's BottleneckBlock as MobileViT builds it (bottle_in, linear_out, depthwise kxk): conv1_1x1,
    conv2_kxk, conv3_1x1, the input added when the channels and the size stay."""

    def __init__(self, cin, cout, stride, ratio):
        super().__init__()
        mid = cin * ratio
        self.conv1_1x1 = ConvNormAct(cin, mid, 1)
        self.conv2_kxk = ConvNormAct(mid, mid, 3, stride=stride, groups=mid)
        self.conv3_1x1 = ConvNormAct(mid, cout, 1, act=False)
        self.residual = cin == cout and stride == 1

    def forward(self, x):
        y = self.conv3_1x1(self.conv2_kxk(self.conv1_1x1(x)))
        return x + y if self.residual else y


class ClassifierHead(torch.nn.Module):
    def __init__(self, features, classes):
        super().__init__()
        self.fc = torch.nn.Linear(features, classes)

    def forward(self, x):
        return self.fc(x.mean((2, 3)))


# MobileViT's configurations as timm's ByoModelCfg gives them: stem channels, stages (blocks of
# ("mv2", in, out, stride, expansion) and ("mvit", channels, transformer width, depth)),
# final_conv's channels. "small" is a narrow one for the tests.
CONFIGS = {
    "small": (8, [[("mv2", 8, 8, 1, 2)],
                  [("mv2", 8, 12, 2, 2), ("mv2", 12, 12, 1, 2)],
                  [("mv2", 12, 16, 2, 2), ("mvit", 16, 16, 2)],
                  [("mv2", 16, 20, 2, 2), ("mvit", 20, 24, 1)],
                  [("mv2", 20, 24, 2, 2), ("mvit", 24, 24, 1)]], 40),
    "mobilevit_s": (16, [[("mv2", 16, 32, 1, 4)],
                         [("mv2", 32, 64, 2, 4), ("mv2", 64, 64, 1, 4), ("mv2", 64, 64, 1, 4)],
                         [("mv2", 64, 96, 2, 4), ("mvit", 96, 144, 2)],
                         [("mv2", 96, 128, 2, 4), ("mvit", 128, 192, 4)],
                         [("mv2", 128, 160, 2, 4), ("mvit", 160, 240, 3)]], 640),
}


class MobileVit(torch.nn.Module):
    """timm's ByobNet as mobilevit_xxs / _xs / _s configure it (CONFIGS): stem, stages of MV2 and
    MobileViT blocks (4 heads, as timm's), final_conv, head."""

    def __init__(self, config="small", classes=10):
        super().__init__()
        stem, stages, features = CONFIGS[config]
        self.stem = ConvNormAct(3, stem, 3, stride=2)

        def block(kind, *a):
            return InvertedResidual(*a) if kind == "mv2" else MobileVitBlock(a[0], a[1], a[0], a[2], 4)

        self.stages = torch.nn.Sequential(*[torch.nn.Sequential(*[block(*b) for b in stage]) for stage in stages])
        self.final_conv = ConvNormAct(stages[-1][-1][1], features, 1)
        self.head = ClassifierHead(features, classes)

    def forward(self, x):
        return self.head(self.final_conv(self.stages(self.stem(x))))
