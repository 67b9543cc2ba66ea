"""The Python module over the public runtime API: sessions, runs, errors."""
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import iosfarm


def image(shape, sign=1.0):
    n = int(np.prod(shape))
    return (sign * np.sin(0.001 * np.arange(n, dtype=np.float32))).reshape(shape)


@pytest.fixture(scope="module")
def squeezenet():
    return iosfarm.Session("squeezenet", backend="cpu", threads=2)


def test_version_is_a_release_number():
    parts = iosfarm.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts)


def test_session_describes_the_model(squeezenet):
    assert squeezenet.model_name == "squeezenet"
    assert squeezenet.schedule_kind == "sequential"
    assert squeezenet.inputs == {"input": (1, 3, 224, 224)}
    assert list(squeezenet.outputs.values()) == [(1, 1000)]
    assert "cpu" in squeezenet.device
    assert "squeezenet" in repr(squeezenet)


def test_run_returns_float32_arrays_that_depend_on_the_input(squeezenet):
    x = image((1, 3, 224, 224))
    (name, y), = squeezenet.run({"input": x}).items()
    assert y.dtype == np.float32 and y.shape == (1, 1000)
    assert np.isfinite(y).all() and y.std() > 0
    np.testing.assert_array_equal(squeezenet.run({"input": x})[name], y)
    assert not np.array_equal(squeezenet.run({"input": -x})[name], y)


def test_float64_and_strided_inputs_are_converted(squeezenet):
    x = image((1, 3, 224, 224))
    (name, expected), = squeezenet.run({"input": x}).items()
    as_float64 = squeezenet.run({"input": x.astype(np.float64)})[name]
    np.testing.assert_allclose(as_float64, expected, rtol=1e-6)
    strided = np.asfortranarray(x)
    np.testing.assert_array_equal(squeezenet.run({"input": strided})[name], expected)


def test_bad_inputs_raise_named_errors(squeezenet):
    with pytest.raises(iosfarm.Error, match=r"input 'input' has shape \[1,3,32,32\], the model "
                                            r"wants \[1,3,224,224\]") as error:
        squeezenet.run({"input": np.zeros((1, 3, 32, 32), np.float32)})
    assert error.value.code == "invalid_argument"
    with pytest.raises(iosfarm.Error, match="input 'input' .* is missing"):
        squeezenet.run({})
    with pytest.raises(iosfarm.Error, match="the model has no input 'mask'"):
        squeezenet.run({"input": image((1, 3, 224, 224)), "mask": np.zeros(1)})
    with pytest.raises(TypeError, match="input 'input' cannot be converted"):
        squeezenet.run({"input": "not an array"})
    squeezenet.run({"input": image((1, 3, 224, 224))})  # still usable


def test_outputs_are_written_into_caller_arrays(squeezenet):
    x = image((1, 3, 224, 224))
    (name, expected), = squeezenet.run({"input": x}).items()
    out = np.full((1, 1000), -1, np.float32)
    buffers = {name: out}
    assert squeezenet.run({"input": x}, outputs=buffers) is buffers
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(TypeError, match=f"output '{name}' must be a writable, C-contiguous "
                                        "float32 array"):
        squeezenet.run({"input": x}, outputs={name: np.zeros((1, 1000), np.float64)})
    read_only = np.zeros((1, 1000), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(TypeError, match="writable"):
        squeezenet.run({"input": x}, outputs={name: read_only})
    with pytest.raises(iosfarm.Error, match="needs 1000 values, its buffer has 10"):
        squeezenet.run({"input": x}, outputs={name: np.zeros(10, np.float32)})


class FakeCudaArray:
    """Says it is device memory (__cuda_array_interface__, version 3) without
    being any: a cpu session must refuse it before it reads the pointer."""

    def __init__(self, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (0xDEAD0000, False),
            "strides": strides, "version": 3, "stream": None}


def test_cpu_sessions_refuse_cuda_arrays_by_name(squeezenet):
    x = image((1, 3, 224, 224))
    (name, _), = squeezenet.outputs.items()
    with pytest.raises(iosfarm.Error, match="input 'input' is device memory, but the cpu "
                                            "backend reads and writes host memory only") as error:
        squeezenet.run({"input": FakeCudaArray((1, 3, 224, 224))})
    assert error.value.code == "invalid_argument"
    with pytest.raises(iosfarm.Error, match=f"output '{name}' is device memory"):
        squeezenet.run({"input": x}, outputs={name: FakeCudaArray((1, 1000))})
    with pytest.raises(TypeError, match="input 'input' is a CUDA array of type '<f8'"):
        squeezenet.run({"input": FakeCudaArray((1, 3, 224, 224), typestr="<f8")})
    with pytest.raises(TypeError, match="not C-contiguous"):
        squeezenet.run({"input": FakeCudaArray((1, 3, 224, 224), strides=(4, 4, 4, 4))})


def cuda_torch():
    """torch with a CUDA device, or None (then the GPU tests skip)."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@pytest.mark.skipif(cuda_torch() is None, reason="no CUDA device answers to torch here")
def test_torch_cuda_tensors_in_and_out():
    torch = cuda_torch()
    try:
        s = iosfarm.Session("squeezenet", backend="cuda", schedule="greedy")
    except iosfarm.Error as e:  # a build without the CUDA backend
        pytest.skip(str(e))
    x = image((1, 3, 224, 224))
    (name, expected), = s.run({"input": x}).items()
    x_gpu = torch.from_numpy(x).cuda()
    out = torch.full((1, 1000), -1.0, device="cuda")
    s.run({"input": x_gpu}, outputs={name: out})
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-6)
    host = s.run({"input": x_gpu})[name]
    np.testing.assert_allclose(host, expected, rtol=1e-5, atol=1e-6)


def test_bad_options_raise_named_errors(tmp_path):
    with pytest.raises(iosfarm.Error, match="neither a zoo model") as error:
        iosfarm.Session("no_such_model")
    assert error.value.code == "not_found"
    with pytest.raises(iosfarm.Error, match="the runtime runs on cpu, cuda or cuda:N"):
        iosfarm.Session("squeezenet", backend="tpu")
    with pytest.raises(iosfarm.Error, match="does not exist") as error:
        iosfarm.Session("squeezenet", schedule=str(tmp_path / "absent.json"))
    assert error.value.code == "not_found"


def test_tuning_reuses_the_latency_database(tmp_path):
    schedule, db = tmp_path / "squeezenet.schedule.json", tmp_path / "latency.db"
    first = iosfarm.Session("squeezenet", schedule=schedule, tune_if_missing=True,
                            latency_db=db, threads=2)
    assert first.schedule_kind == "ios"
    assert first.tuning["tuned"] and first.tuning["stages_from_database"] == 0
    assert first.tuning["stages_measured"] > 40
    assert first.tuning["latency_db"] == str(db)
    assert first.tuning["device_key"] == "local-cpu"
    schedule.unlink()
    second = iosfarm.Session("squeezenet", schedule=schedule, tune_if_missing=True,
                             latency_db=db, threads=2)
    assert second.tuning["stages_measured"] == 0
    assert second.tuning["stages_from_database"] == first.tuning["stages_measured"]
    assert second.num_stages == first.num_stages
    reread = iosfarm.Session("squeezenet", schedule=schedule, latency_db=db, threads=2)
    assert not reread.tuning["tuned"]


def stored_latencies(db):
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as connection:
            return connection.execute("SELECT COUNT(*) FROM latencies").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_a_killed_tuning_keeps_what_it_measured(tmp_path):
    schedule, db = tmp_path / "resnet50.schedule.json", tmp_path / "latency.db"
    script = ("import iosfarm; iosfarm.Session('resnet50', schedule=%r, tune_if_missing=True, "
              "latency_db=%r, threads=2)" % (str(schedule), str(db)))
    child = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
    try:
        deadline = time.monotonic() + 120
        while stored_latencies(db) == 0 and child.poll() is None:
            assert time.monotonic() < deadline, "no latency stored within 120 s"
            time.sleep(0.05)
        assert child.poll() is None, "the tuning ended before it could be killed"
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    kept = stored_latencies(db)
    assert kept > 0 and not schedule.exists()
    resumed = iosfarm.Session("resnet50", schedule=schedule, tune_if_missing=True,
                              latency_db=db, threads=2)
    assert resumed.tuning["stages_from_database"] >= kept
    assert stored_latencies(db) == kept + resumed.tuning["stages_measured"]


def test_schedules_compute_the_same_function(tmp_path):
    sequential = iosfarm.Session("squeezenet", threads=2)
    greedy = iosfarm.Session("squeezenet", schedule="greedy", threads=2)
    assert greedy.num_stages < sequential.num_stages
    x = image((1, 3, 224, 224))
    (name, expected), = sequential.run({"input": x}).items()
    np.testing.assert_allclose(greedy.run({"input": x})[name], expected, rtol=1e-4, atol=1e-5)


def test_paths_and_batches(tmp_path):
    import pathlib
    with pytest.raises(iosfarm.Error, match="absent.json' does not exist"):
        iosfarm.Session("squeezenet", schedule=pathlib.Path(tmp_path) / "absent.json")
    session = iosfarm.Session("squeezenet", batch=2, threads=2)
    assert session.inputs == {"input": (2, 3, 224, 224)}
    y, = session.run({"input": image((2, 3, 224, 224))}).values()
    assert y.shape == (2, 1000)


def test_threads_share_a_session(squeezenet):
    x = image((1, 3, 224, 224))
    (name, expected), = squeezenet.run({"input": x}).items()
    results = []

    def worker():
        for _ in range(3):
            results.append(np.array_equal(squeezenet.run({"input": x})[name], expected))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 9


def test_type_stubs_name_what_the_native_module_has():
    # python/iosfarm/_native.pyi against the module itself: every public
    # member of Session in one is in the other, and the constructor's
    # keywords are the same.
    import ast
    import inspect
    stub_path = os.path.join(os.path.dirname(iosfarm.__file__), "_native.pyi")
    assert os.path.isfile(stub_path), f"{stub_path} is not installed beside the module"
    tree = ast.parse(open(stub_path).read())
    session = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Session")
    stubbed = {n.name for n in session.body if isinstance(n, ast.FunctionDef)}
    native = {name for name in dir(iosfarm.Session) if not name.startswith("_")}
    assert stubbed - {"__init__"} == native
    init = next(n for n in session.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    keywords = {a.arg for a in init.args.kwonlyargs}
    doc = inspect.getdoc(iosfarm.Session.__init__)
    bound = set(doc.split("(", 1)[1].split(")", 1)[0].replace(" ", "").split(","))
    bound = {b.split(":")[0].split("=")[0] for b in bound} - {"self", "model", "*"}
    assert keywords == bound, (keywords, bound)
    assert os.path.isfile(os.path.join(os.path.dirname(iosfarm.__file__), "py.typed"))
