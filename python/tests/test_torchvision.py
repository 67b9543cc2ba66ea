"""Numerical truth from Python: a torchvision CNN with random weights,
exported to ONNX by PyTorch, runs through iosfarm (cpu backend; sequential,
greedy and IOS schedules, the IOS one from `iosfarm search` with sim
latencies, $IOSFARM_CLI) and must compute what PyTorch's forward computes on
the same input: numpy.allclose with rtol 1e-4 and atol 1e-5 times the largest
|output| (at least 1). The atol is scaled because fp32 forwards that sum in
other orders differ by about 1e-6 of the output's scale: on an AMD EPYC
without AVX-512, PyTorch's own fp32 resnet50 forward misses a plain atol of
1e-5 against its float64 forward (|difference| 1.9e-5 at -0.048, outputs up to
112), and the runtime's (oneDNN) misses it against PyTorch's by 9.2e-5 at 0.2
(docs/runtime.md)."""
import inspect
import os
import subprocess

import numpy as np
import pytest

import iosfarm

# convnext_tiny: LayerNorm (exported at opset 13 as ReduceMean, Sub, Pow,
# Sqrt, Div, Mul, Add) and GELU (as Erf) on channels-last MatMuls.
MODELS = ["resnet50", "inception_v3", "googlenet", "squeezenet1_1", "densenet121",
          "mobilenet_v2", "efficientnet_b0", "shufflenet_v2_x1_0", "convnext_tiny"]


# Segmentation networks (static shapes): their heads upsample with Resize
# (bilinear, half_pixel) and run parallel branches (DeepLabV3's ASPP).
SEGMENTATION = ["fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large",
                "lraspp_mobilenet_v3_large"]


def check_against_pytorch(name, model, x, tmp_path, torch, opset=13):
    """Exports `model` (one output) at `opset`, searches it and runs every
    schedule against PyTorch's forward on `x`."""
    with torch.no_grad():
        expected = model(x).numpy()
    path = tmp_path / f"{name}.onnx"
    export_kwargs = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        export_kwargs["dynamo"] = False
    with torch.no_grad():
        torch.onnx.export(model, x, str(path), opset_version=opset, input_names=["input"],
                          output_names=["output"], do_constant_folding=True, **export_kwargs)
    ios = tmp_path / f"{name}.schedule.json"
    subprocess.run([os.environ["IOSFARM_CLI"], "search", str(path), "--backend", "sim:h100",
                    "-o", str(ios)], check=True, stdout=subprocess.DEVNULL)
    for schedule in ("sequential", "greedy", str(ios)):
        session = iosfarm.Session(path, schedule=schedule, backend="cpu")
        assert session.inputs == {"input": tuple(x.shape)}
        actual = session.run({"input": x.numpy()})["output"]
        assert actual.shape == expected.shape
        scale = max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * scale,
                                   err_msg=f"{name}, {schedule} schedule")


@pytest.mark.parametrize("name", MODELS)
def test_matches_pytorch(name, tmp_path):
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if name in ("inception_v3", "googlenet"):
        kwargs.update(aux_logits=False, init_weights=False)
    model = getattr(torchvision.models, name)(**kwargs).eval()
    size = 299 if name == "inception_v3" else 224
    check_against_pytorch(name, model, torch.randn(1, 3, size, size), tmp_path, torch)


@pytest.mark.parametrize("name", SEGMENTATION)
def test_segmentation_matches_pytorch(name, tmp_path):
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    network = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None,
                                                             aux_loss=False).eval()

    class Out(torch.nn.Module):  # the "out" entry of the network's dict
        def __init__(self, network):
            super().__init__()
            self.network = network

        def forward(self, x):
            return self.network(x)["out"]

    check_against_pytorch(name, Out(network).eval(), torch.randn(1, 3, 224, 224), tmp_path,
                          torch)


def darknet_block(torch):
    """YOLO-style backbone blocks: Conv + BN + LeakyReLU (YOLOv3) and Mish
    (YOLOv4), a residual, and a nearest-neighbour upsample to a concat."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16),
                                      nn.LeakyReLU(0.1))
            self.down = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1),
                                      nn.BatchNorm2d(32), nn.Mish())
            self.res = nn.Sequential(nn.Conv2d(32, 16, 1), nn.LeakyReLU(0.1),
                                     nn.Conv2d(16, 32, 3, padding=1), nn.Mish())
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.head = nn.Conv2d(48, 8, 1)

        def forward(self, x):
            s = self.stem(x)
            d = self.down(s)
            d = d + self.res(d)
            return self.head(torch.cat([self.up(d), s], 1))

    return Block()


def elementwise_functions(torch):
    """Element-wise functions on branches of one net: ELU,
    SELU, Softplus, GELU (exported as Erf), and sqrt, exp, log, abs, neg,
    reciprocal and pow of tensors."""
    nn = torch.nn

    class Functions(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.acts = nn.ModuleList([nn.ELU(0.7), nn.SELU(), nn.Softplus(), nn.GELU()])

        def forward(self, x):
            y = self.conv(x)
            outs = [act(y) for act in self.acts]
            positive = y.abs() + 0.5
            outs.append(torch.sqrt(positive) + torch.log(positive))
            outs.append(torch.exp(-positive) - torch.reciprocal(positive))
            outs.append(torch.pow(y, 2) + torch.pow(positive, 0.5))
            return torch.cat(outs, 1)

    return Functions()


def norms_and_prelu(torch):
    """PReLU (per channel and shared), InstanceNorm (affine and not), GroupNorm
    (exported as InstanceNormalization of the input reshaped to its groups)
    and LayerNorm over channels last (LayerNormalization at opset 17)."""
    nn = torch.nn

    class Norms(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1)
            self.prelu, self.shared = nn.PReLU(16), nn.PReLU()
            self.instance = nn.InstanceNorm2d(16, affine=True)
            self.plain = nn.InstanceNorm2d(16)
            self.group = nn.GroupNorm(4, 16)
            self.layer = nn.LayerNorm(16)
            for norm in (self.instance, self.group, self.layer):  # not the default 1 and 0
                nn.init.normal_(norm.weight)
                nn.init.normal_(norm.bias)

        def forward(self, x):
            y = self.conv(x)
            y = self.prelu(y) + self.shared(-y)
            y = self.instance(y) + self.plain(y) + self.group(y)
            return self.layer(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    return Norms()


def unet_decoder(torch):
    """A U-Net-style decoder: transposed convolutions (4x4 stride 2, 3x3
    stride 2 with output padding, grouped and dilated) up to a skip
    connection's concat."""
    nn = torch.nn

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
            self.up1 = nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1)
            self.up2 = nn.ConvTranspose2d(32, 8, 3, stride=2, padding=1, output_padding=1)
            self.mix = nn.ConvTranspose2d(8, 8, 3, padding=2, dilation=2, groups=2, bias=False)
            self.skip = nn.Conv2d(3, 8, 1)

        def forward(self, x):
            d = self.down(x)
            u = torch.relu(self.up1(d))
            u = self.up2(torch.cat([u, self.down[0](x)], 1))
            return self.mix(u) + self.skip(x)

    return Decoder()


def cbam_block(torch):
    """CBAM-style attention: channel attention from the mean and the max over
    H and W, spatial attention from the mean and the max over the channels
    (ReduceMean, ReduceMax), and a head with a channel sum and minimum
    (ReduceSum, ReduceMin)."""
    nn = torch.nn

    class Cbam(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1)
            self.mlp = nn.Sequential(nn.Conv2d(16, 4, 1), nn.ReLU(), nn.Conv2d(4, 16, 1))
            self.spatial = nn.Conv2d(2, 1, 7, padding=3)

        def forward(self, x):
            y = self.conv(x)
            pooled = self.mlp(y.mean(dim=(2, 3), keepdim=True)) + self.mlp(
                y.amax(dim=(2, 3), keepdim=True))
            y = y * torch.sigmoid(pooled)
            s = torch.cat([y.mean(dim=1, keepdim=True), y.amax(dim=1, keepdim=True)], 1)
            y = y * torch.sigmoid(self.spatial(s))
            return y + 0.1 * y.sum(dim=1, keepdim=True) - y.amin(dim=1, keepdim=True)

    return Cbam()


# Exported at opset 17 (LayerNormalization).
@pytest.mark.parametrize("name", ["darknet_block", "elementwise_functions", "norms_and_prelu",
                                  "unet_decoder", "cbam_block"])
def test_functions_match_pytorch(name, tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = globals()[name](torch).eval()
    check_against_pytorch(name, model, torch.randn(1, 3, 32, 32), tmp_path, torch, opset=17)


def test_layer_norm_export_matches_pytorch(tmp_path):
    """ConvNeXt-tiny at opset 17: its LayerNorms as LayerNormalization."""
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.convnext_tiny(weights=None).eval()
    check_against_pytorch("convnext_tiny_ln", model, torch.randn(1, 3, 224, 224), tmp_path, torch,
                          opset=17)
