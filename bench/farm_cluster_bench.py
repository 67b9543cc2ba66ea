#!/usr/bin/env python3
"""farm_cluster_bench: the farm benchmarks that need a real run (issue 5).

Starts real processes on loopback: one `iosfarm-server` with a fresh temp
--db per run and N `iosfarm-worker --backend sim` processes; submits jobs with
the `iosfarm` CLI and reads `iosfarm list/timeline/result --format json`.
Python 3 standard library only. Figures: docs/results.md.

  policy   makespan of 1, 2, 4, 8 identical jobs and a mixed set under the
           interleaved, sequential and synchronous policies, next to a lower
           bound from the run's own timeline and the GPU idle fraction. Phase
           times are the thesis's (build 8.3 s, profile 39.5 s, update 44.0 s;
           enumerate 1.0 s and measure 10.0 s as in bench/farm_policy_bench)
           times --scale, imposed by the server's benchmark-only
           --synthetic-phase-seconds padding (the sim worker runs at time
           scale 0). With --sim-bench, farm_policy_bench's simulated makespans
           of the same job shape are printed beside the real ones.
  memory   the server's peak resident memory (VmHWM) per job: each zoo model
           (and optional ONNX files; --wide N writes the hostile wide graph of
           issue 13) on a fresh server with one sim worker at time scale 0,
           for at most --time-cap seconds each; says whether the job finished
           in that time. --together N submits all of them N times at once to
           one server instead.
  parallel one job of many small batches (--parallel-model, --batch-size
           stages each) on 1, 2, 4 and 8 sim workers: one batch at a time
           (--max-parallel-batches 1) against as many as there are workers,
           with profile-bound padding (enumerate 0.5 s, build 8.3 s, profile
           39.5 s, update 2.0 s, measure 10.0 s, times --scale).
  busy     a busy farm: --busy-workers sim workers at --sim-time-scale (profile
           phases as long as the sim's device model says, times the scale), and
           --busy-jobs jobs submitted over 10 s (squeezenet, resnet50,
           inception_v3 and nasnet_a_mobile in turn, batches 1-8); after
           --busy-seconds: per model the jobs done and the time from
           submission to result (p50, p99), the longest wait for a first
           enumerate, where the finished small jobs' time went (waiting for
           a search place, a server slot, a worker; in server and worker
           phases), the workers' devices' busy fraction, server CPU per
           profiled stage, the server's peak memory and which resource
           bounds the farm; --busy-dump writes the jobs and phases as JSON.
  cache    latency-database reuse with the sim backend at time scale 0
           (counts matter, not times): the same model twice, zoo inception_v3
           then the torchvision inception_v3 ONNX export, and candidates vs
           unique signatures vs stages profiled within one model.

Usage:
  bench/farm_cluster_bench.py policy --server-bin build-bench/manual/iosfarm-server \\
      --sim-bench build-farm/bench/farm_policy_bench
  bench/farm_cluster_bench.py cache --onnx-dir /tmp/onnx   # export_torchvision.py output
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Thesis phase times, seconds (enumerate and measure: farm_policy_bench's choice).
THESIS = {"enumerate": 1.0, "build": 8.3, "profile": 39.5, "update": 44.0, "measure": 10.0}
GPU_PHASES = ("profile", "measure")
FINAL = ("succeeded", "failed", "cancelled")


class Farm:
    """One server (fresh database) and `workers` sim workers on loopback."""

    def __init__(self, args, policy="interleaved", workers=1, padding="", device="sim-v100",
                 extra_server_args=(), sim_time_scale=0.0):
        self.args = args
        self.device = device
        self.dir = tempfile.mkdtemp(prefix="farm_cluster_bench.")
        self.procs = []
        cmd = [args.server_bin, "--listen", "127.0.0.1:0", "--db", os.path.join(self.dir, "farm.db"),
               "--policy", policy, "--server-slots", str(args.slots), "--log-level", "warn"]
        if padding:
            cmd += ["--synthetic-phase-seconds", padding]
        cmd += list(extra_server_args)
        self.server_log = open(os.path.join(self.dir, "server.log"), "w+")
        server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.server_log, text=True)
        self.procs.append(server)
        line = server.stdout.readline()
        m = re.search(r"listening on (\S+)", line)
        if not m:
            self.close()
            raise RuntimeError(f"server did not start: {line!r}; see {self.dir}/server.log")
        self.address = m.group(1)
        for i in range(workers):
            log = open(os.path.join(self.dir, f"worker{i}.log"), "w")
            self.procs.append(subprocess.Popen(
                [args.worker_bin, "--server", self.address, "--device-key", device,
                 "--backend", "sim", "--sim-time-scale", f"{sim_time_scale:g}",
                 "--worker-id", f"w{i}",
                 "--log-level", "warn"], stdout=log, stderr=subprocess.STDOUT))
        deadline = time.time() + 30 + workers * 0.2
        while len(self.cli("workers").get("workers", [])) < workers:
            if time.time() > deadline:
                raise RuntimeError("workers did not register")
            time.sleep(0.05)

    def cli(self, *argv):
        out = subprocess.run([self.args.cli_bin, *argv, "--server", self.address, "--format", "json"],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    def submit_all(self, jobs):
        """jobs: [(delay_s, [cli args])]; submits each at its delay (in parallel)."""
        t0 = time.time()
        procs = []
        for delay, argv in sorted(jobs, key=lambda j: j[0]):
            while time.time() < t0 + delay:
                time.sleep(0.005)
            procs.append(subprocess.Popen(
                [self.args.cli_bin, "submit", *argv, "--device", self.device, "--server",
                 self.address, "--format", "json"], stdout=subprocess.PIPE, text=True))
        ids = []
        for p in procs:
            out, _ = p.communicate()
            if p.returncode != 0:
                raise RuntimeError("submit failed")
            ids.append(json.loads(out)["job"]["id"])
        return ids

    def wait(self, ids, timeout=900):
        deadline = time.time() + timeout
        while True:
            jobs = {j["id"]: j for j in self.cli("list").get("jobs", [])}
            if all(jobs.get(i, {}).get("state") in FINAL for i in ids):
                return [jobs[i] for i in ids]
            if time.time() > deadline:
                raise RuntimeError("jobs did not finish in time")
            time.sleep(0.1)

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def analyse(jobs, phases, slots):
    """Makespan, lower bound and GPU idle fraction from the timeline."""
    t0 = min(j["submitted_unix_ms"] / 1000.0 for j in jobs)
    ids = {j["id"] for j in jobs}
    phases = [p for p in phases if p["job_id"] in ids and p["outcome"] == "ok"]
    end = max(p["end_s"] for p in phases)
    makespan = end - t0
    work = {"server": 0.0, "worker-cpu": 0.0}
    gpu_work = {}
    chain = {}
    for p in phases:
        d = p["end_s"] - p["start_s"]
        chain[p["job_id"]] = chain.get(p["job_id"], 0.0) + d
        if not p["worker"]:
            work["server"] += d
        elif p["phase"] in GPU_PHASES:
            gpu_work[p["resource"]] = gpu_work.get(p["resource"], 0.0) + d
        else:
            work["worker-cpu"] += d
    gpus = max(1, len(gpu_work))
    gpu_total = sum(gpu_work.values())
    arrival = {j["id"]: j["submitted_unix_ms"] / 1000.0 - t0 for j in jobs}
    bound = max(gpu_total / gpus, work["worker-cpu"] / gpus, work["server"] / slots,
                max(arrival[i] + c for i, c in chain.items()))
    counts = {}
    for p in phases:
        if p["phase"] == "profile":
            counts[p["job_id"]] = counts.get(p["job_id"], 0) + 1
    return {"makespan": makespan, "bound": bound, "gpu_idle": 1 - gpu_total / (gpus * makespan),
            "profiles": sorted(counts.values())}


def run_scenario(args, policy, jobs, padding):
    farm = Farm(args, policy=policy, padding=padding)
    try:
        ids = farm.submit_all(jobs)
        rows = farm.wait(ids)
        bad = [j for j in rows if j["state"] != "succeeded"]
        if bad:
            raise RuntimeError(f"job failed: {bad[0]['error']}")
        phases = farm.cli("timeline")["phases"]
        return analyse(rows, phases, args.slots)
    finally:
        farm.close()


def sim_rows(args):
    """farm_policy_bench's table for the same job shape, keyed by scenario name."""
    out = subprocess.run([args.sim_bench, "--iterations", str(args.iterations), "--measure",
                          str(THESIS["measure"]), "--slots", str(args.slots), "--scale-jobs", "10"],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 11 and cells[1] == "1" and cells[0] not in rows and cells[2][0].isdigit():
            rows[cells[0]] = {"simple": float(cells[2]), "tight": float(cells[3]),
                              "interleaved": float(cells[4]), "sequential": float(cells[5]),
                              "synchronous": float(cells[6])}
    return rows


def policy_bench(args):
    s = args.scale
    padding = ",".join(f"{k}={v * s:.6g}" for k, v in THESIS.items())
    identical = "resnet50"  # r=3, s=8, 64-stage batches: 101 signatures, 2 profile batches
    scenarios = []
    for n in (1, 2, 4, 8):
        # Batch sizes 1..n: same structure and phase count, no shared signatures.
        scenarios.append((f"{n} identical", [(0.0, [identical, "--batch", str(b + 1)]) for b in range(n)]))
    scenarios.append(("mixed 4 (1-10 it, staggered)", [
        (0.0, ["resnet50", "--batch", "1"]),
        (0.0, ["squeezenet", "--batch", "1"]),
        (60 * s, ["resnet50", "--batch", "2"]),
        (120 * s, ["inception_v3", "--r", "1", "--s", "3"]),
    ]))
    policies = ("interleaved", "sequential", "synchronous")
    sim = sim_rows(args) if args.sim_bench else {}
    print(f"padding: --synthetic-phase-seconds {padding}; server slots {args.slots}; 1 sim worker\n")
    print("| jobs | profile batches per job | bound real (s) | interleaved real (s) | sequential real (s) "
          "| synchronous real (s) | int / bound | seq / int | GPU idle int / seq / sync "
          "| sim tight bound x scale (s) | sim int / seq / sync x scale (s) | sim seq / int |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, jobs in scenarios:
        r = {p: run_scenario(args, p, jobs, padding) for p in policies}
        bound = min(r[p]["bound"] for p in policies)
        m = {p: r[p]["makespan"] for p in policies}
        idle = " / ".join(f"{100 * r[p]['gpu_idle']:.0f} %" for p in policies)
        si = sim.get(name)
        sim_cells = "— | — | —"
        if si:
            sim_cells = (f"{si['tight'] * s:.2f} | " +
                         " / ".join(f"{si[p] * s:.2f}" for p in policies) +
                         f" | {si['sequential'] / si['interleaved']:.2f}x")
        print(f"| {name} | {','.join(map(str, r['interleaved']['profiles']))} | {bound:.2f} | "
              f"{m['interleaved']:.2f} | {m['sequential']:.2f} | {m['synchronous']:.2f} | "
              f"{m['interleaved'] / bound:.3f} | {m['sequential'] / m['interleaved']:.2f}x | {idle} | "
              f"{sim_cells} |", flush=True)


def parallel_bench(args):
    s = args.scale
    times = {"enumerate": 0.5, "build": 8.3, "profile": 39.5, "update": 2.0, "measure": 10.0}
    padding = ",".join(f"{k}={v * s:.6g}" for k, v in times.items())
    print(f"padding: --synthetic-phase-seconds {padding}; server slots {args.slots}; "
          f"{args.parallel_model}, --batch-size {args.parallel_batch_size}\n")
    print("| workers | batches | one at a time (s) | parallel (s) | parallel / one at a time "
          "| speed-up over 1 worker | most profiles at once |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    one_worker = None
    for workers in (1, 2, 4, 8):
        row = {}
        for cap in ("1", "0"):
            farm = Farm(args, workers=workers, padding=padding)
            try:
                ids = farm.submit_all([(0.0, [args.parallel_model, "--batch-size",
                                              str(args.parallel_batch_size),
                                              "--max-parallel-batches", cap])])
                jobs = farm.wait(ids)
                if jobs[0]["state"] != "succeeded":
                    raise RuntimeError(f"job failed: {jobs[0]['error']}")
                phases = [p for p in farm.cli("timeline")["phases"] if p["outcome"] == "ok"]
                t0 = jobs[0]["submitted_unix_ms"] / 1000.0
                profiles = [p for p in phases if p["phase"] == "profile"]
                events = sorted([(p["start_s"], 1) for p in profiles] +
                                [(p["end_s"] - 1e-9, -1) for p in profiles])
                running = most = 0
                for _, change in events:
                    running += change
                    most = max(most, running)
                row[cap] = {"makespan": max(p["end_s"] for p in phases) - t0,
                            "batches": len(profiles), "most": most}
            finally:
                farm.close()
        if one_worker is None:
            one_worker = row["0"]["makespan"]
        print(f"| {workers} | {row['0']['batches']} | {row['1']['makespan']:.2f} | "
              f"{row['0']['makespan']:.2f} | {row['0']['makespan'] / row['1']['makespan']:.3f} | "
              f"{one_worker / row['0']['makespan']:.2f}x | {row['0']['most']} |", flush=True)


def percentile(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def busy_bench(args):
    models = ["squeezenet", "resnet50", "inception_v3", "nasnet_a_mobile"]
    jobs = [(10.0 * i / args.busy_jobs, [models[i % 4], "--batch", str(1 + i % 8)])
            for i in range(args.busy_jobs)]
    farm = Farm(args, policy=args.busy_policy, workers=args.busy_workers,
                sim_time_scale=args.sim_time_scale, extra_server_args=args.server_arg or ())
    try:
        t0 = time.time()
        ids = farm.submit_all(jobs)
        model_of = dict(zip(ids, (argv[0] for _, argv in jobs)))
        while time.time() < t0 + args.busy_seconds:
            listed = {j["id"]: j for j in farm.cli("list", "--limit", "1000").get("jobs", [])}
            if all(listed.get(i, {}).get("state") in FINAL for i in ids):
                break
            time.sleep(1.0)
        window_s = time.time() - t0
        listed = {j["id"]: j for j in farm.cli("list", "--limit", "1000").get("jobs", [])}
        phases = [p for p in farm.cli("timeline").get("phases", []) if p["outcome"] == "ok"]
        peak_kib = server_memory_kib(farm.procs[0].pid)[1]
    finally:
        farm.close()
    if args.busy_dump:
        with open(args.busy_dump, "w") as out:
            json.dump({"models": {str(i): model_of[i] for i in ids}, "jobs": listed,
                       "phases": phases}, out)
    print(f"{args.busy_workers} sim workers at --sim-time-scale {args.sim_time_scale:g}, "
          f"{len(ids)} jobs submitted over 10 s, {window_s:.0f} s observed, policy "
          f"{args.busy_policy}, server slots "
          f"{args.slots}{' ' + ' '.join(args.server_arg) if args.server_arg else ''}\n")
    print("| model | jobs | done | queued | submission to result p50 / p99 (s) "
          "| longest wait for a first enumerate (s) | stages profiled |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    first = {}
    for p in phases:
        if p["phase"] == "enumerate":
            first[p["job_id"]] = min(first.get(p["job_id"], 1e300), p["start_s"])
    for model in models:
        mine = [listed[i] for i in ids if model_of[i] == model and i in listed]
        done = [j for j in mine if j["state"] == "succeeded"]
        queued = [j for j in mine if j["state"] == "queued"]
        turnaround = [(j["finished_unix_ms"] - j["submitted_unix_ms"]) / 1000.0 for j in done]
        waits = [first.get(j["id"], time.time()) - j["submitted_unix_ms"] / 1000.0 for j in mine]
        profiled = sum(j["progress"]["stages_profiled"] for j in mine)
        print(f"| {model} | {len(mine)} | {len(done)} | {len(queued)} | "
              f"{percentile(turnaround, 0.5):.1f} / {percentile(turnaround, 0.99):.1f} | "
              f"{max(waits) if waits else float('nan'):.1f} | {profiled} |")
    print_small_job_breakdown(ids, model_of, listed, phases, first)
    gpu_s = sum(p["end_s"] - p["start_s"] for p in phases if p["phase"] in GPU_PHASES)
    server_s = sum(p["end_s"] - p["start_s"] for p in phases if not p["worker"])
    profiled = sum(j["progress"]["stages_profiled"] for j in listed.values())
    enumerates = sum(1 for p in phases if p["phase"] == "enumerate")
    profiles = [p for p in phases if p["phase"] == "profile"]
    print(f"\n- workers' devices busy {100 * gpu_s / (args.busy_workers * window_s):.1f} % of "
          f"{args.busy_workers} x {window_s:.0f} s")
    print(f"- server phases {server_s:.0f} s over {enumerates} enumerates: "
          f"{1000 * server_s / max(1, profiled):.2f} ms of server CPU per profiled stage, "
          f"{sum(p['stages'] for p in profiles) / max(1, len(profiles)):.1f} stages per profile "
          f"phase")
    print(f"- server peak resident memory {peak_kib / 1024:.0f} MiB")
    server_busy = server_s / (args.slots * window_s)
    device_busy = gpu_s / (args.busy_workers * window_s)
    bound = ("the server's CPU slots" if server_busy >= 0.8 and device_busy < 0.8 else
             "the workers' devices" if device_busy >= 0.8 else "neither (jobs lacked work)")
    print(f"- bounding resource: {bound} (server slots busy {100 * server_busy:.0f} %, "
          f"devices {100 * device_busy:.1f} %)")


def print_small_job_breakdown(ids, model_of, listed, phases, first):
    """Where a finished squeezenet or resnet50 job's time went, medians in seconds."""
    small = [i for i in ids if model_of[i] in ("squeezenet", "resnet50")
             and listed.get(i, {}).get("state") == "succeeded" and i in first]
    if not small:
        return
    parts = {"waiting for a search place": [], "waiting for a server slot": [],
             "in server phases": [], "waiting for a worker": [], "in worker phases": [],
             "submission to result": []}
    for i in small:
        job = listed[i]
        mine = [p for p in phases if p["job_id"] == i]
        enum = min((p for p in mine if p["phase"] == "enumerate"), key=lambda p: p["start_s"])
        server = [p for p in mine if not p["worker"]]
        worker = [p for p in mine if p["worker"]]
        parts["waiting for a search place"].append(enum["queued_s"] - job["submitted_unix_ms"] / 1000)
        parts["waiting for a server slot"].append(sum(p["start_s"] - p["queued_s"] for p in server))
        parts["in server phases"].append(sum(p["end_s"] - p["start_s"] for p in server))
        parts["waiting for a worker"].append(sum(p["start_s"] - p["queued_s"] for p in worker))
        parts["in worker phases"].append(sum(p["end_s"] - p["start_s"] for p in worker))
        parts["submission to result"].append(
            (job["finished_unix_ms"] - job["submitted_unix_ms"]) / 1000.0)
    print(f"\n- {len(small)} squeezenet and resnet50 jobs done, p50 / max seconds summed over each job's phases: " +
          "; ".join(f"{name} {percentile(v, 0.5):.1f} / {max(v):.1f}" for name, v in parts.items()))


def job_stats(farm, job):
    result = farm.cli("result", str(job["id"]))
    p = job["progress"]
    return {"profiled": p["stages_profiled"], "hits": p["cache_hits"], "unique": p["unique_signatures"],
            "candidates": p["candidates"], "search_s": find_number(result, "search_s"),
            "elapsed_s": p["elapsed_s"]}


def find_number(obj, key):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key and isinstance(v, (int, float)):
                return v
            found = find_number(v, key)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = find_number(v, key)
            if found is not None:
                return found
    return None


def cache_bench(args):
    print("| experiment | job | candidates | unique signatures | cache hits | stages profiled "
          "| search time (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")

    def sequence(title, submissions):
        farm = Farm(args)
        try:
            for label, argv in submissions:
                (job_id,) = farm.submit_all([(0.0, argv)])
                (job,) = farm.wait([job_id])
                if job["state"] != "succeeded":
                    raise RuntimeError(f"{label}: {job['state']}: {job['error']}")
                st = job_stats(farm, job)
                search = st["search_s"] if st["search_s"] is not None else st["elapsed_s"]
                print(f"| {title} | {label} | {st['candidates']} | {st['unique']} | {st['hits']} | "
                      f"{st['profiled']} | {search:.2f} |", flush=True)
        finally:
            farm.close()

    sequence("(a) same model twice", [("resnet50 #1", ["resnet50"]), ("resnet50 #2", ["resnet50"]),
                                       ("inception_v3 #1", ["inception_v3"]),
                                       ("inception_v3 #2", ["inception_v3"])])
    onnx = os.path.join(args.onnx_dir, "inception_v3.onnx") if args.onnx_dir else ""
    if onnx and os.path.exists(onnx):
        sequence("(b) zoo then torchvision ONNX", [("zoo inception_v3", ["inception_v3"]),
                                                   ("torchvision inception_v3.onnx", [onnx])])
        sequence("(b') torchvision ONNX alone", [("torchvision inception_v3.onnx", [onnx])])
    else:
        print(f"| (b) skipped: no {onnx or '--onnx-dir'} | | | | | | |")
    sequence("(c) repeated cells", [("resnet50 (r=3, s=8)", ["resnet50"])])
    sequence("(c) repeated cells", [("nasnet_a (r=1, s=3)", ["nasnet_a", "--r", "1", "--s", "3"])])


ZOO = ["squeezenet", "resnet50", "inception_v3", "nasnet_a_mobile", "randwire", "nasnet_a"]


def server_memory_kib(pid):
    """(VmRSS, VmHWM) of a process in KiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, payload):
    """A protobuf field: bytes payloads are length-delimited, ints are varints."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def write_wide_onnx(path, branches):
    """The hostile model of issue 13: one input [1, 8, 8, 8] feeding `branches`
    parallel Relu, joined by one Concat (written with the protobuf wire format,
    so no onnx package is needed)."""
    def value_info(name, dims):
        shape = b"".join(_field(1, _field(1, d)) for d in dims)
        tensor = _field(1, 1) + _field(2, shape)  # elem_type FLOAT, shape
        return _field(1, name) + _field(2, _field(1, tensor))
    nodes = b""
    for i in range(branches):
        nodes += _field(1, _field(1, "x") + _field(2, f"r{i}") + _field(3, f"relu{i}") + _field(4, "Relu"))
    axis = _field(1, "axis") + _field(3, 1) + _field(20, 2)  # name, i, type INT
    concat = b"".join(_field(1, f"r{i}") for i in range(branches))
    nodes += _field(1, concat + _field(2, "y") + _field(3, "concat") + _field(4, "Concat") + _field(5, axis))
    graph = (nodes + _field(2, f"wide{branches}") + _field(11, value_info("x", [1, 8, 8, 8]))
             + _field(12, value_info("y", [1, 8 * branches, 8, 8])))
    model = _field(1, 8) + _field(2, "farm_cluster_bench") + _field(7, graph) + _field(8, _field(2, 13))
    with open(path, "wb") as f:
        f.write(model)


def memory_models(args, work_dir):
    models = [(m, ["submit", m]) for m in (args.models.split(",") if args.models else ZOO)]
    for path in args.onnx or []:
        models.append((os.path.basename(path), ["submit", path]))
    if args.wide:
        path = os.path.join(work_dir, f"wide{args.wide}.onnx")
        write_wide_onnx(path, args.wide)
        models.append((os.path.basename(path), ["submit", path]))
    return models


def memory_together(args, models):
    """All models at once on one server: its peak memory while they run."""
    farm = Farm(args, extra_server_args=args.server_arg or [])
    try:
        pid = farm.procs[0].pid
        ids = {farm.cli(*argv, "--device", farm.device)["job"]["id"]: name for name, argv in models}
        t0 = time.time()
        rows = {}
        while time.time() < t0 + args.time_cap:
            rows = {j["id"]: j for j in farm.cli("list").get("jobs", []) if j["id"] in ids}
            if all(r["state"] in FINAL for r in rows.values()) and len(rows) == len(ids):
                break
            time.sleep(1)
        wall = time.time() - t0
        _, peak = server_memory_kib(pid)
        rss, _ = server_memory_kib(pid)
        print(f"{len(ids)} jobs together, {wall:.0f} s (cap {args.time_cap:.0f} s): "
              f"server peak RSS {peak / 1024:.0f} MiB, RSS at the end {rss / 1024:.0f} MiB")
        print("| job | model | state | phase | blocks |")
        print("| --- | --- | --- | --- | --- |")
        for job, name in sorted(ids.items()):
            row = rows.get(job, {})
            progress = row.get("progress", {})
            error = f" ({row.get('error', '')[:60]})" if row.get("state") == "failed" else ""
            print(f"| {job} | {name} | {row.get('state', '?')}{error} | {progress.get('phase', '')} "
                  f"| {progress.get('blocks_done', 0)}/{progress.get('blocks_total', 0)} |", flush=True)
    finally:
        farm.close()


def memory_bench(args):
    """Peak server memory per model, each on a fresh server (or all together)."""
    work_dir = tempfile.mkdtemp(prefix="farm_cluster_bench.models.")
    models = memory_models(args, work_dir)
    if args.together:
        memory_together(args, models * args.together)
        return
    print(f"| model | state after <= {args.time_cap:.0f} s | phase | blocks | wall s "
          f"| server peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, argv in models:
        farm = Farm(args, extra_server_args=args.server_arg or [])
        try:
            pid = farm.procs[0].pid
            job = farm.cli(*argv, "--device", farm.device)["job"]["id"]
            t0 = time.time()
            state, job_row = "running", {}
            while time.time() < t0 + args.time_cap:
                job_row = farm.cli("status", str(job))["job"]
                state = job_row["state"]
                if state in FINAL:
                    break
                time.sleep(0.5)
            wall = time.time() - t0
            _, peak = server_memory_kib(pid)
            progress = job_row.get("progress", {})
            blocks = f"{progress.get('blocks_done', 0)}/{progress.get('blocks_total', 0)}"
            error = f" ({job_row.get('error', '')[:60]})" if state == "failed" else ""
            print(f"| {name} | {state}{error} | {progress.get('phase', '')} | {blocks} "
                  f"| {wall:.0f} | {peak / 1024:.0f} |", flush=True)
        finally:
            farm.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=["policy", "cache", "memory", "parallel", "busy"])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--server-bin", help="default: BUILD/server/iosfarm-server")
    parser.add_argument("--worker-bin", help="default: BUILD/worker/iosfarm-worker")
    parser.add_argument("--cli-bin", help="default: BUILD/client/iosfarm")
    parser.add_argument("--scale", type=float, default=0.01, help="wall seconds per thesis second")
    parser.add_argument("--slots", type=int, default=2, help="server CPU slots")
    parser.add_argument("--iterations", type=int, default=2,
                        help="profile batches per identical job (resnet50 r=3,s=8 has 2), for --sim-bench")
    parser.add_argument("--sim-bench", help="farm_policy_bench binary, for the simulated columns")
    parser.add_argument("--parallel-model", default="resnet50", help="parallel: the job's model")
    parser.add_argument("--parallel-batch-size", type=int, default=3,
                        help="parallel: stages per batch (small: many batches)")
    parser.add_argument("--onnx-dir", help="directory with inception_v3.onnx (tests/onnx/export_torchvision.py)")
    parser.add_argument("--models", help="memory: comma-separated zoo models (default: all)")
    parser.add_argument("--onnx", action="append", help="memory: an ONNX file to submit too")
    parser.add_argument("--time-cap", type=float, default=120, help="memory: seconds per job")
    parser.add_argument("--wide", type=int, default=0,
                        help="memory: also submit a generated ONNX model of N parallel Relu")
    parser.add_argument("--together", type=int, default=0,
                        help="memory: submit every model N times at once to one server")
    parser.add_argument("--busy-workers", type=int, default=100, help="busy: sim workers")
    parser.add_argument("--busy-jobs", type=int, default=40, help="busy: jobs submitted over 10 s")
    parser.add_argument("--busy-seconds", type=float, default=900,
                        help="busy: seconds to observe at most (ends when every job has)")
    parser.add_argument("--busy-dump", help="busy: write the jobs and phases as JSON here")
    parser.add_argument("--busy-policy", default="interleaved", help="busy: the server's --policy")
    parser.add_argument("--sim-time-scale", type=float, default=1.0,
                        help="busy: the sim workers' --sim-time-scale")
    parser.add_argument("--server-arg", action="append",
                        help="memory: an extra iosfarm-server argument (repeat), e.g. --max-searches=2")
    args = parser.parse_args()
    args.server_bin = args.server_bin or os.path.join(args.build_dir, "server", "iosfarm-server")
    args.worker_bin = args.worker_bin or os.path.join(args.build_dir, "worker", "iosfarm-worker")
    args.cli_bin = args.cli_bin or os.path.join(args.build_dir, "client", "iosfarm")
    if args.part == "policy":
        policy_bench(args)
    elif args.part == "memory":
        memory_bench(args)
    elif args.part == "parallel":
        parallel_bench(args)
    elif args.part == "busy":
        busy_bench(args)
    else:
        cache_bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
