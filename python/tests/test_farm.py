"""iosfarm.Farm against a real iosfarm-server and a real sim worker over
loopback (the binaries built beside $IOSFARM_CLI), and iosfarm.search /
iosfarm.tune running the real CLI on the sim backend (and, to be
interrupted while it measures, on the cpu backend).

A job for a device key whose only worker has left never ends (its search
starts on the server and waits for a worker to measure): the cancel and
Ctrl-C cases use one (a worker registers the key "sim-gone", then stops). Deadlines are generous: the machine may be slow and busy."""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import iosfarm

CLI = os.environ["IOSFARM_CLI"]
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(CLI)))
SERVER = os.path.join(BUILD, "server", "iosfarm-server")
WORKER = os.path.join(BUILD, "worker", "iosfarm-worker")
DEADLINE_S = 60
TOKEN = "farm-test-token-0123456789"


def free_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def eventually(what, check):
    """Polls check() until it is true; fails naming `what` after DEADLINE_S."""
    deadline = time.time() + DEADLINE_S
    while not check():
        assert time.time() < deadline, f"{what} within {DEADLINE_S} s"
        time.sleep(0.2)


class Processes:
    def __init__(self):
        self.procs = []

    def start(self, *cmd):
        proc = subprocess.Popen(list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def stop(self, proc):
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop_all(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                self.stop(proc)


@pytest.fixture
def processes():
    procs = Processes()
    yield procs
    procs.stop_all()


def start_server(processes, tmp_path, *flags, tls_ca=None):
    address = free_address()
    processes.start(SERVER, "--db", str(tmp_path / "farm.db"), "--listen", address, *flags)
    farm = None

    def connected():
        nonlocal farm
        try:
            farm = iosfarm.Farm(address, token="", tls_ca=tls_ca, connect_timeout=2)
            return True
        except iosfarm.Error:
            return False

    eventually(f"the server at {address} answers", connected)
    farm.close()
    return address


def start_worker(processes, address, device_key, worker_id, *flags):
    return processes.start(WORKER, "--server", address, "--device-key", device_key,
                           "--backend", "sim", "--worker-id", worker_id,
                           "--sim-time-scale", "0", *flags)


@pytest.fixture
def farm(processes, tmp_path, monkeypatch):
    """A Farm connected to a fresh server with one sim worker (device key sim-farm)."""
    monkeypatch.delenv("IOSFARM_TOKEN", raising=False)
    monkeypatch.delenv("IOSFARM_TLS_CA", raising=False)
    address = start_server(processes, tmp_path)
    start_worker(processes, address, "sim-farm", "w1")
    client = iosfarm.Farm(address)
    eventually("the worker registers",
               lambda: [w.device_key for w in client.workers()] == ["sim-farm"])
    yield client
    client.close()


@pytest.fixture
def departed_key(farm, processes):
    """A device key the server knows whose worker has left: its jobs never end."""
    gone = start_worker(processes, farm.address, "sim-gone", "w-gone")
    eventually("the second worker registers",
               lambda: "sim-gone" in [w.device_key for w in farm.workers()])
    processes.stop(gone)
    eventually("the second worker is gone",
               lambda: "sim-gone" not in [w.device_key for w in farm.workers()])
    return "sim-gone"


def test_submit_wait_result_of_a_zoo_model(farm):
    job = farm.submit("squeezenet", device="sim-farm", batch=2, r=2, s=4)
    assert isinstance(job, iosfarm.Job)
    assert (job.model_name, job.device_key, job.batch) == ("squeezenet", "sim-farm", 2)
    assert (job.options.r, job.options.s) == (2, 4)
    assert job.state in ("queued", "running")
    result = farm.wait(job, progress=False)
    assert isinstance(result, iosfarm.JobResult)
    assert result.job_id == job.id
    assert (result.device_key, result.backend, result.worker) == ("sim-farm", "sim", "w1")
    schedule = result.schedule
    assert schedule["format"] == "iosfarm.schedule"
    assert schedule["model"]["batch"] == 2
    assert result.predicted_ms > 0
    # Measured end to end, apart from the prediction.
    assert set(result.measured) == {"ios", "sequential", "greedy"}
    assert all(m.median_ms > 0 and m.repeats > 0 for m in result.measured.values())
    assert result.measured_ms["ios"] == result.measured["ios"].median_ms
    assert result.speedup_vs_sequential == pytest.approx(
        result.measured_ms["sequential"] / result.measured_ms["ios"])
    assert result.chosen in ("ios", "sequential", "greedy")
    assert result.stages_profiled > 0 and result.stages > 0
    assert farm.result(job.id) == result
    done = farm.status(job.id)
    assert done.state == "succeeded" and done.done
    assert done.progress.blocks_done == done.progress.blocks_total > 0
    assert json.loads(json.dumps(result.to_dict()))["job_id"] == job.id


def test_watch_yields_events_ending_in_succeeded(farm):
    job = farm.submit("squeezenet", device="sim-farm")
    events = list(farm.watch(job.id))
    assert events, "watch yielded nothing"
    assert all(isinstance(e, iosfarm.JobEvent) and e.job.id == job.id for e in events)
    assert events[-1].job.state == "succeeded"
    assert all(not e.job.done for e in events[:-1])
    # A finished job's watch yields its final state at once.
    again = list(farm.watch(job))
    assert [e.job.state for e in again] == ["succeeded"]


def test_list_and_status(farm):
    first = farm.submit("squeezenet", device="sim-farm", batch=1)
    second = farm.submit("squeezenet", device="sim-farm", batch=3, priority=2)
    farm.wait(first, progress=False)
    farm.wait(second, progress=False)
    jobs = farm.list()
    assert sorted(j.id for j in jobs) == sorted([first.id, second.id])
    assert {j.state for j in jobs} == {"succeeded"}
    assert [j.id for j in farm.list(state="succeeded", device="sim-farm", limit=1)] in (
        [first.id], [second.id])
    assert farm.list(state="failed") == []
    assert farm.list(device="sim-gone") == []
    status = farm.status(second.id)
    assert (status.id, status.batch, status.priority, status.owner) == (
        second.id, 3, 2, "anonymous")
    assert status.progress.stages_profiled + status.progress.cache_hits > 0
    with pytest.raises(iosfarm.Error, match="state") as e:
        farm.list(state="nonsense")
    assert e.value.code == "invalid_argument"


def test_cancel_queued_job(farm, departed_key):
    job = farm.submit("squeezenet", device=departed_key)
    time.sleep(2)
    assert farm.status(job.id).state in ("queued", "running")  # no worker measures it
    with pytest.raises(iosfarm.Error, match=f"job {job.id}") as e:
        farm.result(job.id)
    assert e.value.code == "failed_precondition"
    cancelled = farm.cancel(job.id)
    assert cancelled.state == "cancelled"
    assert farm.status(job).state == "cancelled"
    with pytest.raises(iosfarm.Error, match=f"job {job.id} .*was cancelled") as e:
        farm.wait(job.id, progress=False)
    assert e.value.code == "cancelled"
    assert e.value.job.state == "cancelled"


def test_bad_requests_name_what_is_wrong(farm, tmp_path):
    with pytest.raises(iosfarm.Error, match="'nosuch-model' is neither a zoo model") as e:
        farm.submit("nosuch-model", device="sim-farm")
    assert e.value.code == "not_found"
    missing = tmp_path / "missing" / "model.onnx"
    with pytest.raises(iosfarm.Error, match=str(missing)) as e:
        farm.submit(missing, device="sim-farm")
    assert e.value.code == "not_found"
    with pytest.raises(iosfarm.Error, match="unknown device key 'no-such-gpu'") as e:
        farm.submit("squeezenet", device="no-such-gpu")
    assert e.value.code == "not_found"
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"this is not an ONNX model")
    with pytest.raises(iosfarm.Error, match="garbage.onnx") as e:
        farm.submit(garbage, device="sim-farm")
    assert e.value.code == "invalid_argument"
    with pytest.raises(iosfarm.Error, match="job 999") as e:
        farm.status(999)
    assert e.value.code == "not_found"
    with pytest.raises(iosfarm.Error, match="needs device="):
        farm.submit("squeezenet", device="")
    with pytest.raises(iosfarm.Error, match="batch must be"):
        farm.submit("squeezenet", device="sim-farm", batch=0)
    with pytest.raises(iosfarm.Error, match="positive integer"):
        farm.status(0)
    with pytest.raises(iosfarm.Error, match="model must be"):
        farm.submit(42, device="sim-farm")
    assert farm.list() == []  # nothing was submitted
    farm.close()
    with pytest.raises(iosfarm.Error, match="is closed") as e:
        farm.list()
    assert e.value.code == "failed_precondition"


def test_unreachable_server_names_the_address(processes, tmp_path, monkeypatch):
    address = free_address()  # nothing listens there
    with pytest.raises(iosfarm.Error, match=f"cannot connect to the iosfarm server at "
                                            f"{address}.*IOSFARM_SERVER") as e:
        iosfarm.Farm(address)
    assert e.value.code == "unavailable"
    monkeypatch.setenv("IOSFARM_SERVER", address)
    with pytest.raises(iosfarm.Error, match=address) as e:
        iosfarm.Farm()
    assert e.value.code == "unavailable"
    # A server that goes away after the connection.
    running = start_server(processes, tmp_path)
    with iosfarm.Farm(running) as farm:
        assert farm.list() == []
        processes.stop_all()
        with pytest.raises(iosfarm.Error, match=f"cannot connect to the iosfarm server at "
                                                f"{running}") as e:
            farm.list()
        assert e.value.code == "unavailable"


def test_a_token_protected_server(processes, tmp_path, monkeypatch):
    monkeypatch.delenv("IOSFARM_TOKEN", raising=False)
    tokens = tmp_path / "client-tokens"
    tokens.write_text(f"{TOKEN} alice\n")
    address = start_server(processes, tmp_path, "--client-tokens", str(tokens))
    with iosfarm.Farm(address) as anonymous:
        with pytest.raises(iosfarm.Error, match="no token given.*IOSFARM_TOKEN") as e:
            anonymous.list()
        assert e.value.code == "unauthenticated"
    with iosfarm.Farm(address, token="wrong-token-0123456789") as wrong:
        with pytest.raises(iosfarm.Error, match="check token=") as e:
            wrong.workers()
        assert e.value.code == "unauthenticated"
    with iosfarm.Farm(address, token=f"  {TOKEN}\n") as alice:  # a file's newline is dropped
        assert alice.list() == []
        assert alice.workers() == []
    monkeypatch.setenv("IOSFARM_TOKEN", TOKEN)
    with iosfarm.Farm(address) as from_env:
        assert from_env.list() == []
    with pytest.raises(iosfarm.Error, match="space at position 4") as e:
        iosfarm.Farm(address, token="bad token")
    assert e.value.code == "invalid_argument"


def test_tls_with_a_token(processes, tmp_path, monkeypatch):
    for name in ("IOSFARM_TOKEN", "IOSFARM_TLS_CA"):
        monkeypatch.delenv(name, raising=False)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    tokens = tmp_path / "client-tokens"
    tokens.write_text(f"{TOKEN} alice\n")
    address = start_server(processes, tmp_path, "--tls-cert", str(cert), "--tls-key", str(key),
                           "--client-tokens", str(tokens), tls_ca=str(cert))
    start_worker(processes, address, "sim-tls", "t1", "--tls-ca", str(cert))
    monkeypatch.setenv("IOSFARM_TLS_CA", str(cert))
    with iosfarm.Farm(address, token=TOKEN) as farm:
        assert farm.tls_ca == str(cert)
        eventually("the worker registers over TLS",
                   lambda: [w.id for w in farm.workers()] == ["t1"])
        job = farm.submit("squeezenet", device="sim-tls")
        assert job.owner == "alice"
        assert farm.wait(job, progress=False).predicted_ms > 0
    # Plaintext to a TLS port, and a CA file that is not there.
    with pytest.raises(iosfarm.Error, match=f"cannot connect to the iosfarm server at "
                                            f"{address}") as e:
        iosfarm.Farm(address, token=TOKEN, tls_ca="", connect_timeout=5).list()
    assert e.value.code == "unavailable"
    with pytest.raises(iosfarm.Error, match="no-such-ca.pem") as e:
        iosfarm.Farm(address, tls_ca=str(tmp_path / "no-such-ca.pem"))
    assert e.value.code == "not_found"


WAIT_IN_A_CHILD = textwrap.dedent("""
    import sys
    import iosfarm
    farm = iosfarm.Farm(sys.argv[1])
    job = farm.submit("squeezenet", device=sys.argv[2])
    print(job.id, flush=True)
    farm.wait(job.id)
""")


def test_ctrl_c_during_wait_cancels_the_job(farm, departed_key):
    child = subprocess.Popen([sys.executable, "-c", WAIT_IN_A_CHILD, farm.address, departed_key],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job_id = int(child.stdout.readline())
        assert not farm.status(job_id).done
        time.sleep(2)  # the child is in wait, following the queued job
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=DEADLINE_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode in (-signal.SIGINT, 1, 130), err
    assert "KeyboardInterrupt" in err
    assert f"iosfarm: interrupted; job {job_id} cancelled on the server" in err
    assert farm.status(job_id).state == "cancelled"


WAIT_ON_A_TERMINAL = textwrap.dedent("""
    import sys
    import iosfarm
    farm = iosfarm.Farm(sys.argv[1])
    farm.wait(farm.submit("squeezenet", device="sim-farm", batch=4))
""")


def test_progress_bar_when_forced_on_a_terminal_and_not_off_one(farm, capsys):
    # On a terminal (a pseudo-terminal as stderr), auto draws the bar.
    import pty
    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", WAIT_ON_A_TERMINAL, farm.address],
                             stderr=slave)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    assert child.wait(timeout=DEADLINE_S) == 0, drawn
    assert b"succeeded" in drawn and b"blocks" in drawn and b"stages profiled" in drawn

    job = farm.submit("squeezenet", device="sim-farm")
    farm.wait(job, progress=True)
    err = capsys.readouterr().err
    assert f"job {job.id} succeeded" in err
    assert "blocks" in err and "stages profiled" in err
    # stderr is no terminal here (captured): auto shows nothing, False neither.
    second = farm.submit("squeezenet", device="sim-farm", batch=2)
    farm.wait(second)
    farm.wait(second, progress=False)
    assert capsys.readouterr().err == ""
    with pytest.raises(iosfarm.Error, match="progress must be"):
        farm.wait(second, progress="yes")


def test_search_embedded_on_the_sim_backend(capsys):
    report = iosfarm.search("squeezenet", backend="sim", r=2, s=4, progress=True)
    assert isinstance(report, iosfarm.SearchReport)
    assert (report.model, report.batch) == ("squeezenet", 1)
    assert set(report.predicted_ms) == {"sequential", "greedy", "ios"}
    assert 0 < report.predicted_ms["ios"] <= report.predicted_ms["sequential"]
    assert report.report["latency_kind"] == "predicted"
    assert report.schedule["format"] == "iosfarm.schedule"
    assert report.stats["stages_measured"] > 0
    err = capsys.readouterr().err
    assert "blocks" in err and "stages measured" in err
    quiet = iosfarm.search("squeezenet", backend="sim", batch=2)
    assert quiet.batch == 2
    assert capsys.readouterr().err == ""
    with pytest.raises(iosfarm.Error, match="'nosuch-model' is neither a zoo model") as e:
        iosfarm.search("nosuch-model", backend="sim")
    assert e.value.code == "unknown"
    with pytest.raises(iosfarm.Error, match="--r") as e:
        iosfarm.search("squeezenet", backend="sim", r=0)
    assert e.value.code == "invalid_argument"


def test_tune_embedded_writes_a_tuned_model_file_for_each_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "squeezenet.iosfarm"
    db = tmp_path / "latency.db"
    tuned = iosfarm.tune("squeezenet", backend="sim", batch_sizes=[1, 2], save=path, db=db,
                         progress=False)
    assert isinstance(tuned, iosfarm.TunedModel)
    assert tuned.path == str(path) and path.is_file() and db.is_file()
    assert (tuned.model_name, tuned.zoo_name, tuned.device_key, tuned.backend) == (
        "squeezenet", "squeezenet", "local-sim", "sim")
    assert list(tuned.batches) == [1, 2]
    for batch, entry in tuned.batches.items():
        assert json.loads(entry.schedule_json)["model"]["batch"] == batch
        assert entry.predicted_ms > 0
        assert entry.measured_ms["ios"] > 0
    session = iosfarm.Session(path, backend="cpu", device_key="local-sim")
    assert session.batches == [1, 2]
    assert iosfarm.read_tuned_model(path).batches[2].schedule_json == \
        tuned.batches[2].schedule_json
    # One batch, no file kept; the database answers what it measured before.
    once = iosfarm.tune("squeezenet", backend="sim", db=db, progress=False)
    assert once.path is None and list(once.batches) == [1]
    with pytest.raises(iosfarm.Error, match="is given twice") as e:
        iosfarm.tune("squeezenet", backend="sim", batch_sizes=[1, 1], db=db)
    assert e.value.code == "invalid_argument"
    with pytest.raises(iosfarm.Error, match="'nosuch-model' is neither a zoo model"):
        iosfarm.tune("nosuch-model", backend="sim", db=db)


def tiny_onnx(path):
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    weight = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_submit_files_an_onnx_model_and_a_tuned_model_file(farm, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = tmp_path / "tiny.onnx"
    tiny_onnx(model)
    job = farm.submit(model, device="sim-farm")
    assert job.model_name == "tiny.onnx"  # the file's name, as the CLI sends it
    assert farm.wait(job, progress=False).predicted_ms > 0
    # A tuned model file sends the model it holds.
    held = tmp_path / "tiny.iosfarm"
    iosfarm.tune(model, backend="sim", batch_sizes=[1, 2], save=held, db=tmp_path / "l.db",
                 progress=False)
    again = farm.submit(held, device="sim-farm", batch=2)
    assert again.model_name == "tiny.onnx"
    assert again.model_digest != job.model_digest  # batch 2's graph
    result = farm.wait(again, progress=False)
    assert result.schedule["model"]["batch"] == 2


def test_retune_submits_the_models_tuned_before(farm):
    first = farm.submit("squeezenet", device="sim-farm", batch=2)
    farm.wait(first, progress=False)
    retune = farm.retune("sim-farm", from_device="sim-farm", models=["squeezenet"])
    assert retune.retune_batch
    assert [(j.model_name, j.batch, j.device_key) for j in retune.jobs] == [
        ("squeezenet", 2, "sim-farm")]
    assert all(j.retune_batch == retune.retune_batch for j in retune.jobs)
    for job in retune.jobs:
        farm.wait(job, progress=False)
    assert [j.id for j in farm.list(retune_batch=retune.retune_batch)] == [
        j.id for j in retune.jobs]
    with pytest.raises(iosfarm.Error, match="needs device"):
        farm.retune("")


WITHOUT_GRPC = textwrap.dedent("""
    import sys
    sys.modules["grpc"] = None  # as if python3-grpcio were not installed
    import iosfarm
    try:
        iosfarm.Farm("127.0.0.1:1")
    except iosfarm.Error as e:
        print(e.code, e)
""")


def test_without_grpc_the_package_imports_and_farm_says_what_is_missing():
    out = subprocess.run([sys.executable, "-c", WITHOUT_GRPC], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("unimplemented iosfarm.Farm needs gRPC for Python"), out
    assert "python3-grpcio" in out


TUNE_IN_A_CHILD = textwrap.dedent("""
    import sys
    import iosfarm
    iosfarm.tune("resnet50", backend="cpu", db=sys.argv[1], progress=False)
""")


def test_ctrl_c_during_tune_stops_the_cli(tmp_path):
    # A cpu tune of resnet50 measures for minutes on this machine: it is
    # interrupted while it runs.
    db = tmp_path / "latency.db"
    child = subprocess.Popen([sys.executable, "-c", TUNE_IN_A_CHILD, str(db)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        children = f"/proc/{child.pid}/task/{child.pid}/children"
        cli = []

        def cli_started():
            cli[:] = open(children).read().split() if os.path.exists(children) else []
            return bool(cli) and db.exists()

        eventually("the child starts `iosfarm tune`", cli_started)
        time.sleep(3)
        assert child.poll() is None, child.communicate()
        child.send_signal(signal.SIGINT)  # to the Python process only: it passes it on
        _, err = child.communicate(timeout=DEADLINE_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "KeyboardInterrupt" in err
    # The CLI's own notice, passed on: the job stays in the database to resume.
    assert "iosfarm: interrupted; job 1 (resnet50) stays unfinished in the latency database" \
        in err
    assert not os.path.exists(f"/proc/{cli[0]}"), "the CLI still runs"
