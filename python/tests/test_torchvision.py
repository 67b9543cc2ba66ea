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

MODELS = ["resnet50", "inception_v3", "googlenet", "squeezenet1_1", "densenet121",
          "mobilenet_v2", "efficientnet_b0", "shufflenet_v2_x1_0"]


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
    x = torch.randn(1, 3, size, size)
    with torch.no_grad():
        expected = model(x).numpy()
    path = tmp_path / f"{name}.onnx"
    export_kwargs = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        export_kwargs["dynamo"] = False
    with torch.no_grad():
        torch.onnx.export(model, x, str(path), opset_version=13, input_names=["input"],
                          output_names=["output"], do_constant_folding=True, **export_kwargs)
    ios = tmp_path / f"{name}.schedule.json"
    subprocess.run([os.environ["IOSFARM_CLI"], "search", str(path), "--backend", "sim:h100",
                    "-o", str(ios)], check=True, stdout=subprocess.DEVNULL)
    for schedule in ("sequential", "greedy", str(ios)):
        session = iosfarm.Session(path, schedule=schedule, backend="cpu")
        assert session.inputs == {"input": (1, 3, size, size)}
        actual = session.run({"input": x.numpy()})["output"]
        assert actual.shape == expected.shape
        scale = max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * scale,
                                   err_msg=f"{name}, {schedule} schedule")
