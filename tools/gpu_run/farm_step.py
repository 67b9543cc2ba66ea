"""The `farm` step of gpu_run.py: a real iosfarm-server and one worker on
this machine's device, submissions through the iosfarm CLI, the timeline's
device phases checked for overlaps, and `iosfarm tune` on the same backend."""
import json
import os
import shutil
import socket
import subprocess
import time

FARM_KEY = "gpu-truth"
# Less than this left of the run's deadline and the step does not start: a
# server, a worker and one submission need about half a minute on an H200.
MIN_SECONDS = 45


class OutOfTime(TimeoutError):
    """The run's deadline, not the farm, ended a submission: the step is
    "cut off", which is no failed check (a job that ran and failed is)."""


def phase_seconds(phases):
    """Per job: its span from the first phase's queueing to the last end, and
    the seconds its phases ran, by kind (enumerate, build, profile, update,
    measure): where a farm job's time goes."""
    jobs = {}
    for p in phases:
        job = jobs.setdefault(str(p["job_id"]), {"span": [p["queued_s"], p["end_s"]],
                                                  "phases": {}})
        job["span"] = [min(job["span"][0], p["queued_s"]), max(job["span"][1], p["end_s"])]
        job["phases"][p["phase"]] = job["phases"].get(p["phase"], 0.0) + p["end_s"] - p["start_s"]
    return {job: {"span_s": round(j["span"][1] - j["span"][0], 3),
                  **{kind: round(seconds, 3) for kind, seconds in sorted(j["phases"].items())}}
            for job, j in jobs.items()}


def parse_profile_breakdown(text):
    """The last "cuda profile breakdown: N stages, ms per stage: instantiate
    A capture B ..." line a cuda backend logged at debug level
    (worker/backends/cuda/profile_breakdown.h) as {"stages": N, "instantiate":
    A, ...}, or None when there is none (a CPU worker)."""
    found = None
    for line in text.splitlines():
        at = line.find("cuda profile breakdown: ")
        if at < 0:
            continue
        head, _, parts = line[at + len("cuda profile breakdown: "):].partition(
            " stages, ms per stage:")
        words = parts.split()
        try:
            found = {"stages": int(head),
                     **{words[i]: float(words[i + 1]) for i in range(0, len(words) - 1, 2)}}
        except ValueError:
            continue
    return found


def is_device_resource(resource):
    """True for a worker's measuring device in the farm's timeline:
    "<worker>/gpu" on a GPU worker, "<worker>/device" on a CPU one (not
    "<worker>/cpu", where it builds, nor "server-cpu/<i>")."""
    return resource.endswith(("/gpu", "/device"))


class Farm:
    """The `farm` step: a real server and one worker on this machine's GPU."""

    def __init__(self, truth):
        self.t = truth
        self.dir = os.path.join(truth.work, "farm")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.env = dict(truth.env, IOSFARM_SERVER=self.address)
        self.procs = []

    def start(self, argv, name):
        log = open(os.path.join(self.t.logs, f"farm_{name}.log"), "w")
        self.t.say("$ " + " ".join(argv) + "   (daemon)")
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                           env=self.env, cwd=self.dir))

    def cli(self, *args, timeout=60):
        r = subprocess.run([self.t.bin["iosfarm"], *args, "--format", "json"], env=self.env,
                           capture_output=True, text=True, timeout=max(1, timeout),
                           cwd=self.dir)
        with open(os.path.join(self.t.logs, "farm_cli.log"), "a") as f:
            f.write(f"$ iosfarm {' '.join(args)}\n{r.stdout[-4000:]}{r.stderr[-4000:]}\n")
        if r.returncode != 0:
            raise RuntimeError(f"iosfarm {' '.join(args)} exited {r.returncode}: "
                               f"{r.stderr.strip()[-500:]}")
        return json.loads(r.stdout)

    def submit_and_wait(self, model):
        left = self.t.remaining() - 20
        if left < 20:
            raise OutOfTime(f"{left:.0f} s left before {model}")
        job = self.cli("submit", model, "--device", FARM_KEY, "--batch",
                       str(self.t.args.farm_batch))["job"]["id"]
        deadline = time.monotonic() + left
        while time.monotonic() < deadline:
            status = self.cli("status", str(job))["job"]
            if status["state"] in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(0.5)
        else:
            self.cli("cancel", str(job))
            raise OutOfTime(f"{model} did not finish in {left:.0f} s (cancelled)")
        phases = self.cli("timeline", str(job))["phases"]
        profiled = sum(p.get("stages", 0) for p in phases
                       if p["phase"] == "profile" and p.get("outcome") == "ok")
        row = {"job": job, "state": status["state"], "batch": status.get("batch"),
               "profiled_stages": profiled, "phases": len(phases)}
        if status["state"] == "succeeded":
            result = self.cli("result", str(job))["result"]
            # Measured end to end on the worker; the prediction is the sum of
            # the chosen schedule's stage latencies (issue 12: within 10 %).
            row["measured_ms"] = {m.get("name"): m.get("median_ms")
                                  for m in result.get("measured", [])}
            row["predicted_ms"] = result.get("predicted_ms")
        else:
            row["error"] = status.get("error")
        self.t.say(f"farm {model}: {row}")
        return row

    def run(self):
        t = self.t
        backend = t.args.backend
        if t.remaining() < MIN_SECONDS:
            return {"status": "not run", "reason": f"{t.remaining():.0f} s left"}
        result = {"status": "ok", "jobs": {}}
        try:
            self.start([t.bin["iosfarm-server"], "--db", os.path.join(self.dir, "farm.db"),
                        "--listen", self.address], "server")
            # Debug level: the cuda backend logs where each stage's host time
            # goes (profile_breakdown.h), collected below.
            self.start([t.bin["iosfarm-worker"], "--server", self.address, "--device-key",
                        FARM_KEY, "--backend", backend, "--worker-id", "truth-gpu0",
                        "--log-level", "debug"], "worker")
            deadline = time.monotonic() + 30
            while True:
                try:
                    if self.cli("workers", timeout=5)["workers"]:
                        break
                except (RuntimeError, ValueError, subprocess.TimeoutExpired):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the worker did not register in 30 s")
                time.sleep(0.3)
            models = t.args.farm_models
            runs = [(models[0], "first")] + [(models[0], "again")] + [(m, "first")
                                                                       for m in models[1:]]
            for model, which in runs:
                row = self.submit_and_wait(model)
                result["jobs"][f"{model} ({which})"] = row
                if row["state"] != "succeeded":
                    result["status"] = "failed"
                if which == "again" and row["profiled_stages"] != 0:
                    result["status"] = "failed"
                    row["error"] = "the second submission profiled stages again"
            # No GPU ever runs two phases at once: the worker's device phases
            # (profile, and the end-to-end measurements of the update) never
            # overlap in the server's timeline. Their resource is
            # "<worker>/gpu" on a GPU worker, "<worker>/device" on a CPU one
            # (scheduler/farm/phase.h).
            phases = self.cli("timeline")["phases"]
            with open(os.path.join(self.t.logs, "farm_timeline.json"), "w") as f:
                json.dump(phases, f, indent=1)
            result["phase_seconds"] = phase_seconds(phases)
            device = sorted((p for p in phases if is_device_resource(p.get("resource", ""))),
                            key=lambda p: p["start_s"])
            # Timeline phases have no id: name each by job, phase and batch.
            overlaps = [[f"job {p['job_id']} {p['phase']} batch {p['batch']}" for p in (a, b)]
                        for a, b in zip(device, device[1:]) if b["start_s"] < a["end_s"] - 1e-6]
            result["gpu_phases"] = len(device)
            result["gpu_overlaps"] = overlaps
            if overlaps or not device:
                result["status"] = "failed"
        except OutOfTime as e:  # a failed check before it stays failed
            if result["status"] != "failed":
                result["status"] = "cut off"
            result["error"] = f"deadline: {e}"
        except Exception as e:  # record and go on to the next step
            result["status"] = "failed"
            result["error"] = f"{type(e).__name__}: {e}"
        finally:
            for p in self.procs:
                if p.poll() is None:
                    p.terminate()
            for p in self.procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        worker_log = os.path.join(self.t.logs, "farm_worker.log")
        if os.path.exists(worker_log):
            with open(worker_log, errors="replace") as f:
                result["profile_breakdown"] = parse_profile_breakdown(f.read())
        if t.remaining() > 40:
            # The submissions above used eager stage timing; the tune covers
            # the graph-timed worker (docs/farm.md).
            graph_stages = ["--cuda-graph-stages"] if backend == "cuda" else []
            code, tail = t.run([t.bin["iosfarm"], "tune", t.args.farm_models[0], "--backend",
                                backend, "--batch", str(t.args.farm_batch), "--db",
                                os.path.join(self.dir, "tune.db")] + graph_stages,
                               "farm_tune.log", t.remaining() - 20)
            result["tune"] = {"exit": code, "output": tail}
            if code != 0:
                result["status"] = "failed"
        else:  # say so: a silent absence reads as "not part of the step"
            result["tune"] = {"exit": "skipped",
                              "output": [f"not run: {t.remaining():.0f} s left of the deadline"]}
        return result
