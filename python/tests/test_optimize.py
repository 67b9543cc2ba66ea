"""iosfarm.optimize with real torchvision modules (Debian's torch and
torchvision, random weights) on the cpu backend: the module is exported,
tuned by `iosfarm tune` on this machine (embedded server and cpu worker,
$IOSFARM_CLI) and run by the runtime; its outputs must equal the module's own
(rtol 1e-4, atol 1e-5 times the largest |output|, as test_torchvision.py
explains). The second call must answer from the cache without tuning (a
tune then fails the test). XDG_CACHE_HOME points into
the test's directory, so the latency database and the cache start empty."""
import json
import os
import socket
import sqlite3
import subprocess
import time

import numpy as np
import pytest

import iosfarm
from iosfarm import torch_optimize

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

MODELS = ["squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "resnet18", "googlenet"]


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def tuned_model_report(path):
    """`iosfarm inspect FILE --format json`: what a tuned model file holds."""
    out = subprocess.run([os.environ["IOSFARM_CLI"], "inspect", str(path), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def close(actual, expected, what):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * scale, err_msg=what)


@pytest.mark.parametrize("name", MODELS)
def test_optimized_module_matches_pytorch_and_the_second_call_is_cached(name, fresh_cache,
                                                                        monkeypatch):
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=False)
    model = getattr(torchvision.models, name)(**kwargs).eval()
    x = torch.randn(1, 3, 224, 224)
    fast = iosfarm.optimize(model, x, backend="cpu")
    assert isinstance(fast, torch.nn.Module)
    assert not fast.from_cache
    # `iosfarm tune` measured here: its schedule (the fastest of the IOS,
    # sequential and greedy schedules end to end) is for this machine's key,
    # and the fresh latency database holds what it measured.
    report = tuned_model_report(fast.tuned_path)
    assert report["device_key"] == "local-cpu"
    assert [b["batch"] for b in report["batches"]] == [1]
    db = sqlite3.connect(fresh_cache / "cache" / "iosfarm" / "latency.db")
    measured = db.execute("SELECT COUNT(*) FROM latencies WHERE device_key='local-cpu'")
    assert measured.fetchone()[0] > 0
    with torch.no_grad():
        expected = model(x).numpy()
    actual = fast(x)
    assert isinstance(actual, torch.Tensor)
    close(actual.numpy(), expected, f"{name}, tuned")
    # Another input gives the module's answer too.
    y = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        close(fast(y).numpy(), model(y).numpy(), f"{name}, a second input")

    def no_tuning(*args):
        raise AssertionError("the cached call tuned again")

    monkeypatch.setattr(torch_optimize, "_tune", no_tuning)
    again = iosfarm.optimize(model, x, backend="cpu")
    assert again.from_cache
    close(again(x).numpy(), expected, f"{name}, from the cache")
    # Another shape is another tuning.
    with pytest.raises(AssertionError, match="tuned again"):
        iosfarm.optimize(model, torch.randn(2, 3, 224, 224), backend="cpu")


def test_batch_sizes_tune_one_file_that_takes_each_batch(fresh_cache):
    torch.manual_seed(0)
    model = torchvision.models.squeezenet1_1(weights=None).eval()
    fast = iosfarm.optimize(model, torch.randn(1, 3, 224, 224), backend="cpu",
                            batch_sizes=[2, 1])
    assert fast.batch_sizes == (1, 2)
    for batch in (1, 2):
        x = torch.randn(batch, 3, 224, 224)
        with torch.no_grad():
            expected = model(x).numpy()
        actual = fast(x)
        assert tuple(actual.shape) == (batch, 1000)
        close(actual.numpy(), expected, f"squeezenet1_1, batch {batch}")
    with pytest.raises(iosfarm.Error, match=r"batch 3 is not one the model was tuned for "
                                            r"\(1, 2\)") as e:
        fast(torch.randn(3, 3, 224, 224))
    assert e.value.code == "failed_precondition"
    # The tuned model file, saved and opened as a plain Session.
    saved = fresh_cache / "squeezenet.iosfarm"
    fast.save(saved)
    session = iosfarm.Session(saved, backend="cpu")
    assert session.batches == [1, 2]
    assert session.schedule_kind in ("ios", "sequential", "greedy")
    assert session.outputs_at(2) == {"output0": (2, 1000)}
    with pytest.raises(iosfarm.Error, match="holds schedules for batches 1, 2, not 4") as e:
        session.outputs_at(4)
    assert e.value.code == "failed_precondition"
    fallback = iosfarm.Session(saved, backend="cpu", sequential_fallback=True)
    x = np.random.rand(4, 3, 224, 224).astype(np.float32)
    with torch.no_grad():
        close(fallback.run({"input0": x})["output0"], model(torch.from_numpy(x)).numpy(),
              "squeezenet1_1, batch 4 sequentially")
    assert fallback.fallback == ""
    with pytest.raises(iosfarm.Error, match="batch_sizes repeats"):
        iosfarm.optimize(model, torch.randn(1, 3, 224, 224), backend="cpu", batch_sizes=[1, 1])
    with pytest.raises(iosfarm.Error, match="batch_sizes must be"):
        iosfarm.optimize(model, torch.randn(1, 3, 224, 224), backend="cpu", batch_sizes=[0])


class RunningSum(torch.nn.Module):
    def forward(self, x):
        return x.cumsum(dim=1)  # CumSum: not supported


class WithRunningSum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3)
        self.head = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 1), RunningSum())

    def forward(self, x):
        return self.head(self.stem(x))


def test_an_unsupported_operator_is_named_with_its_module_path_before_tuning(fresh_cache,
                                                                            monkeypatch):
    monkeypatch.setenv("IOSFARM_CLI", "/nonexistent/iosfarm")  # a tune would fail otherwise
    with pytest.raises(iosfarm.Error,
                       match=r"unsupported op type 'CumSum'.*from head\.1") as e:
        iosfarm.optimize(WithRunningSum().eval(), torch.randn(1, 3, 16, 16), backend="cpu")
    assert "nothing was tuned" in str(e.value)
    assert not (fresh_cache / "cache" / "iosfarm" / "optimized").exists()


def test_bad_inputs_are_refused_by_name(fresh_cache):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(1, 3, 12, 12)
    with pytest.raises(iosfarm.Error, match="example input 0 is torch.float64"):
        iosfarm.optimize(model, x.double(), backend="cpu")
    with pytest.raises(iosfarm.Error, match="backend must be"):
        iosfarm.optimize(model, x, backend="tpu")
    fast = iosfarm.optimize(model, x, backend="cpu")
    with torch.no_grad():
        close(fast(x).numpy(), model(x).numpy(), "conv relu")
    with pytest.raises(iosfarm.Error, match=r"input0: expected shape \(1, 3, 12, 12\)"):
        fast(torch.randn(1, 3, 13, 12))
    with pytest.raises(iosfarm.Error, match="input0: expected float32"):
        fast(x.double())
    with pytest.raises(iosfarm.Error, match="takes 1 input"):
        fast(x, x)
    assert model.training is False


def test_optimize_on_a_farm_tunes_there_and_runs_here(fresh_cache):
    # A real server and one sim worker over loopback: optimize(server=...)
    # submits the export to the farm under the worker's key, waits, and runs
    # the farm's schedule on this machine's cpu backend.
    cli = os.environ["IOSFARM_CLI"]
    build = os.path.dirname(os.path.dirname(cli))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    procs = [subprocess.Popen([os.path.join(build, "server", "iosfarm-server"), "--db",
                               str(fresh_cache / "farm.db"), "--listen", address],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen(
            [os.path.join(build, "worker", "iosfarm-worker"), "--server", address,
             "--device-key", "sim-farm", "--backend", "sim", "--worker-id", "w1",
             "--sim-time-scale", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 30
        while subprocess.run([cli, "workers", "--server", address], capture_output=True,
                             text=True).stdout.count("sim-farm") < 1:
            assert time.time() < deadline, "the worker did not register"
            time.sleep(0.2)
        model = torchvision.models.squeezenet1_1(weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        fast = iosfarm.optimize(model, x, backend="cpu", server=address, device="sim-farm")
        assert tuned_model_report(fast.tuned_path)["device_key"] == "sim-farm"
        with torch.no_grad():
            close(fast(x).numpy(), model(x).numpy(), "squeezenet1_1 tuned on a farm")
        jobs = subprocess.run([cli, "list", "--server", address, "--format", "json"],
                              capture_output=True, text=True, check=True).stdout
        assert [j["state"] for j in json.loads(jobs)["jobs"]] == ["succeeded"]
        # Nothing was measured on this machine.
        assert not (fresh_cache / "cache" / "iosfarm" / "latency.db").exists()
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
