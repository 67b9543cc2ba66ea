#!/usr/bin/env python3
"""iosfarm's cpu backend against ONNX Runtime on the same CPU, side by side.

For each ONNX model and batch size, in one run on one machine:

  iosfarm IOS   `iosfarm run MODEL --backend cpu --threads T --schedule S
                --iterations N --warmup W --format json`, S the IOS schedule
                that `iosfarm search MODEL --backend cpu --threads T -o S`
                tuned on this machine (kept in --work-dir and reused; --retune
                searches again). The figure is the backend's end-to-end run of
                the whole schedule (every stage's compiled oneDNN primitives,
                inputs already in place, outputs left in place): what
                iosfarm::Session::TimeSchedule times (docs/runtime.md).
  iosfarm seq   the same with `--sequential` (one operator a stage, every
                operator on all T threads).
  ONNX Runtime  onnxruntime-node's InferenceSession.run on the same file
                (bench/onnxruntime/ort_time.mjs): CPU execution provider,
                intraOpNumThreads T, interOpNumThreads 1, sequential execution
                mode, graph optimizations at their default (all). One node
                process keeps its sessions for the whole run.

Protocol: per model and batch, --rounds rounds; each round runs the three
contenders one after the other, the order rotating each round (ORT, IOS, seq;
IOS, seq, ORT; ...), so machine noise hits all of them. Each contender's call
is --warmup untimed then --runs timed inferences. Reported per contender:
median over rounds of the round medians, and [p10-p90] the medians over rounds
of the round p10 and p90 (ms). ratio = ORT ms / iosfarm IOS ms (above 1:
iosfarm is faster), with the range of the per-round ratios. Each round and
search also records the CPU that other processes took meanwhile (/proc/stat
less this benchmark's own), and --wait-quiet S waits up to S seconds for them
to drop under --quiet-cores before each: on a 2-core machine one busy core
elsewhere slows iosfarm's OpenMP threads far more than ORT's pool, so rounds
at or above --quiet-cores are counted in the report and best rerun.

Models: torchvision's, exported offline with random weights by Debian's torch
(tests/onnx/export_torchvision.py, fp32, opset 13, one file per batch size in
WORK_DIR/models/bB/), or your own files with --onnx (one input; its batch is
the file's).

Usage:
  cd bench/onnxruntime && npm ci --onnxruntime-node-install=skip   # once
  bench/onnxruntime_cpu_bench.py --iosfarm build/client/iosfarm \\
      [--models squeezenet1_0,resnet50,googlenet,inception_v3] [--batches 1,8]
      [--onnx FILE.onnx ...] [--threads 2] [--rounds 5] [--runs 30]
      [--warmup 5] [--work-dir .ortbench] [--retune] [--wait-quiet 300]
      [--quiet-cores 0.25] [--json FILE]
  bench/onnxruntime_cpu_bench.py --iosfarm build/client/iosfarm --smoke

--smoke builds a tiny two-branch CNN with the `onnx` Python package (no
torch) and runs the whole protocol on it briefly (CTest:
onnxruntime_cpu_bench_smoke). Exit status: 0 done, 1 an error, 2 a usage
error, 77 skipped because node, onnxruntime-node (not installed in
bench/onnxruntime), torch/torchvision or (--smoke) the onnx module is missing:
the reason is printed.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
EXPORTER = os.path.join(REPO, "tests", "onnx", "export_torchvision.py")
DEFAULT_MODELS = "squeezenet1_0,resnet50,googlenet,inception_v3"
SKIP = 77
CONTENDERS = ("ort", "ios", "seq")


class Skip(Exception):
    """A prerequisite is missing: the run is skipped (exit 77), saying why."""


class BenchError(Exception):
    """A step failed (exit 1)."""


def quantile(values, q):
    """Linear-interpolated quantile (0..1), as worker/backends/profiling.cc."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values):
    return quantile(values, 0.5)


def say(message):
    print(message, file=sys.stderr, flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="iosfarm's cpu backend (IOS and sequential schedules) against ONNX "
                    "Runtime (onnxruntime-node, CPU EP) on the same ONNX files, measured "
                    "alternately; prints a Markdown table.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="See the header of this file for the protocol and what each figure times.")
    parser.add_argument("--iosfarm", required=True, help="the iosfarm CLI binary")
    parser.add_argument("--models", default=DEFAULT_MODELS,
                        help=f"torchvision models to export and time (default {DEFAULT_MODELS}; "
                             "'' for none, with --onnx)")
    parser.add_argument("--batches", default="1", help="batch sizes of the exports (default 1)")
    parser.add_argument("--onnx", action="append", default=[], metavar="FILE",
                        help="an ONNX file of your own (repeatable)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads of both sides: iosfarm --threads, ORT intra-op "
                             "(default: the machine's cores)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=30, help="timed inferences per call")
    parser.add_argument("--warmup", type=int, default=5, help="untimed inferences per call")
    parser.add_argument("--work-dir", default=os.path.join(REPO, ".ortbench"),
                        help="exports and schedules (default: .ortbench in the repository)")
    parser.add_argument("--ort-dir", default=os.path.join(HERE, "onnxruntime"),
                        help="where onnxruntime-node is installed (default bench/onnxruntime)")
    parser.add_argument("--node", default="node", help="the node binary")
    parser.add_argument("--python", default="/usr/bin/python3" if os.path.exists(
        "/usr/bin/python3") else sys.executable, help="python with torch for the exports")
    parser.add_argument("--retune", action="store_true", help="search again even if a "
                        "schedule is kept")
    parser.add_argument("--search-args", default="", help="more arguments for iosfarm search")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds one iosfarm search or run may take")
    parser.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                        help="before each search and round wait up to S seconds for other "
                             "processes to use under --quiet-cores (default 0: don't wait)")
    parser.add_argument("--quiet-cores", type=float, default=0.25, metavar="C",
                        help="other processes' load (cores) that makes a round noisy "
                             "(default 0.25)")
    parser.add_argument("--json", help="also write the results as JSON")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny generated model, 2 rounds of 5 runs (the CTest)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.models, args.batches, args.onnx = "", "1", []
        args.rounds, args.runs, args.warmup = 2, 5, 1
    for name in ("threads", "rounds", "runs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be >= 0")
    try:
        args.batch_list = [int(b) for b in args.batches.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--batches: not a list of integers: {args.batches!r}")
    if any(b < 1 for b in args.batch_list):
        parser.error("--batches: each batch size must be at least 1")
    args.model_list = [m.strip() for m in args.models.split(",") if m.strip()]
    if not args.smoke and not args.model_list and not args.onnx:
        parser.error("nothing to time: give --models or --onnx")
    return args


# --- the machine -------------------------------------------------------------

def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    fields = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    name = fields.get("Model name") or platform.processor() or "unknown CPU"
    virt = fields.get("Hypervisor vendor")
    return f"{name}, {os.cpu_count()} cores" + (f", {virt} guest" if virt else "")


def other_builds():
    """Names of compiler or build processes running now (they make the figures noisy)."""
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm in ("ninja", "make", "cc1plus", "cc1", "ld", "nvcc", "cmake"):
            found.add(comm)
    return sorted(found)


class OtherLoad:
    """The CPU that processes other than this benchmark's used, in cores.

    The machine's busy time (/proc/stat: user, nice, system, irq, softirq)
    less this process's, its waited children's (the iosfarm runs) and the ORT
    helper's; steal (time the hypervisor gave to other guests) apart."""

    HZ = os.sysconf("SC_CLK_TCK")

    def __init__(self):
        self.helper_pid = None

    def sample(self):
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        t = os.times()
        own = t.user + t.system + t.children_user + t.children_system
        if self.helper_pid:
            try:
                with open(f"/proc/{self.helper_pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                own += (int(fields[11]) + int(fields[12])) / self.HZ
            except (OSError, IndexError, ValueError):
                pass
        busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / self.HZ
        return time.monotonic(), busy, (v[7] if len(v) > 7 else 0) / self.HZ, own

    @staticmethod
    def cores(a, b):
        """(other processes' cores, steal cores) between two samples."""
        wall = max(b[0] - a[0], 1e-6)
        return max(0.0, (b[1] - a[1]) - (b[3] - a[3])) / wall, (b[2] - a[2]) / wall


LOAD = OtherLoad()


def wait_quiet(args):
    """Waits up to --wait-quiet seconds until other processes use under
    --quiet-cores (measured over 2 s)."""
    deadline = time.monotonic() + args.wait_quiet
    while time.monotonic() < deadline:
        start = LOAD.sample()
        time.sleep(2)
        if OtherLoad.cores(start, LOAD.sample())[0] < args.quiet_cores:
            return


def iosfarm_commit(binary):
    """`<commit> (<source dir>)` of the source tree the binary was built from, if known."""
    directory = os.path.dirname(os.path.abspath(binary))
    while directory != os.path.dirname(directory):
        cache = os.path.join(directory, "CMakeCache.txt")
        if os.path.exists(cache):
            with open(cache, errors="replace") as f:
                for line in f:
                    if line.startswith("CMAKE_HOME_DIRECTORY:"):
                        source = line.split("=", 1)[1].strip()
                        try:
                            commit = subprocess.run(
                                ["git", "-C", source, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
                        except (OSError, subprocess.SubprocessError):
                            commit = ""
                        return f"{commit or 'unknown commit'} ({source})"
            break
        directory = os.path.dirname(directory)
    return "unknown (no CMakeCache.txt above the binary)"


# --- models ------------------------------------------------------------------

def export_models(args):
    """[(name, batch, path)] of the torchvision exports, exported where missing."""
    models = []
    for batch in args.batch_list:
        out_dir = os.path.join(args.work_dir, "models", f"b{batch}")
        missing = [m for m in args.model_list
                   if not os.path.exists(os.path.join(out_dir, f"{m}.onnx"))]
        if missing:
            say(f"exporting {', '.join(missing)} (batch {batch}) with {args.python}")
            proc = subprocess.run([args.python, EXPORTER, out_dir, *missing, "--batch", str(batch)],
                                  capture_output=True, text=True)
            if proc.returncode == 3:
                raise Skip(f"the exports need torch and torchvision: {proc.stderr.strip()}")
            if proc.returncode != 0:
                raise BenchError(f"export failed ({proc.returncode}): {proc.stderr.strip()}")
        models += [(m, batch, os.path.join(out_dir, f"{m}.onnx")) for m in args.model_list]
    return models


def write_smoke_model(path):
    """A tiny CNN with two parallel branches (something for IOS to schedule)."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError as error:
        raise Skip(f"--smoke builds its model with the onnx Python package: {error}")
    import random
    rng = random.Random(0)

    def weight(name, dims):
        count = 1
        for d in dims:
            count *= d
        return helper.make_tensor(name, TensorProto.FLOAT, dims,
                                  [rng.uniform(-0.2, 0.2) for _ in range(count)])

    inits = [weight("w0", [16, 8, 3, 3]), weight("w1", [16, 16, 1, 1]),
             weight("w2", [16, 16, 3, 3]), weight("w3", [16, 16, 5, 5]),
             weight("fc", [10, 48]), weight("fcb", [10])]
    nodes = [
        helper.make_node("Conv", ["input", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1"], ["b1"]),
        helper.make_node("Conv", ["r0", "w2"], ["b2"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["r0", "w3"], ["b3"], pads=[2, 2, 2, 2]),
        helper.make_node("Concat", ["b1", "b2", "b3"], ["cat"], axis=1),
        helper.make_node("Relu", ["cat"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["pool"]),
        helper.make_node("Flatten", ["pool"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["output"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "ortbench_smoke",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8, 32, 32])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)


# --- ONNX Runtime ------------------------------------------------------------

class OrtServer:
    """One `node ort_time.mjs --serve` process, asked one request at a time."""

    def __init__(self, args):
        node = shutil.which(args.node)
        if node is None:
            raise Skip(f"node ({args.node}) is not installed: ONNX Runtime runs under "
                       "onnxruntime-node")
        package = os.path.join(args.ort_dir, "node_modules", "onnxruntime-node")
        if not os.path.isdir(package):
            raise Skip(f"onnxruntime-node is not installed in {args.ort_dir} "
                       f"(cd {args.ort_dir} && npm ci --onnxruntime-node-install=skip; "
                       "it needs the npm registry)")
        script = os.path.join(args.ort_dir, "ort_time.mjs")
        if not os.path.exists(script):
            script = os.path.join(HERE, "onnxruntime", "ort_time.mjs")
        self.proc = subprocess.Popen(
            [node, script, "--serve", "--intra", str(args.threads), "--inter", "1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        LOAD.helper_pid = self.proc.pid
        self.info = self.ask({"op": "info"})

    def ask(self, request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise BenchError(f"ort_time.mjs ended (exit {self.proc.wait()}); see its stderr")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise BenchError(f"ONNX Runtime: {answer.get('error')}")
        return answer

    def time(self, model, runs, warmup):
        answer = self.ask({"op": "time", "model": os.path.abspath(model), "runs": runs,
                           "warmup": warmup})
        times = answer["times_ms"]
        return {"median": median(times), "p10": quantile(times, 0.1),
                "p90": quantile(times, 0.9), "repeats": len(times),
                "input_shape": answer["input"]["shape"]}

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


# --- iosfarm -----------------------------------------------------------------

def run_iosfarm(args, argv):
    try:
        proc = subprocess.run([args.iosfarm, *argv], capture_output=True, text=True,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"iosfarm {' '.join(argv)}: no answer in {args.timeout:.0f} s")
    if proc.returncode != 0:
        raise BenchError(f"iosfarm {shlex.join(argv)} failed ({proc.returncode}): "
                         f"{proc.stderr.strip()[-2000:]}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as error:
        raise BenchError(f"iosfarm {shlex.join(argv)}: not JSON ({error}): {proc.stdout[:500]}")


def ensure_schedule(args, name, batch, model):
    """The IOS schedule tuned here (searched unless kept): (path, search report)."""
    directory = os.path.join(args.work_dir, "schedules", f"t{args.threads}")
    os.makedirs(directory, exist_ok=True)
    # An --onnx file's batch is its own: its schedules are keyed by its path.
    key = f"b{batch}" if batch else hashlib.sha1(os.path.abspath(model).encode()).hexdigest()[:10]
    stem = os.path.join(directory, f"{name}.{key}")
    path, report_path = f"{stem}.schedule.json", f"{stem}.search.json"
    if not args.retune and os.path.exists(path) and os.path.exists(report_path):
        with open(report_path) as f:
            report = json.load(f)
        report["reused"] = True
        return path, report
    wait_quiet(args)
    load = LOAD.sample()
    say(f"searching {name} batch {batch or '(file)'} on the cpu backend ({args.threads} threads)")
    start = time.monotonic()
    report = run_iosfarm(args, ["search", model, "--backend", "cpu", "--threads",
                                str(args.threads), "-o", path, "--format", "json",
                                *shlex.split(args.search_args)])
    report.pop("schedule", None)  # in the schedule file already
    report["wall_seconds"] = time.monotonic() - start
    report["searched_on"] = datetime.datetime.now().isoformat(timespec="seconds")
    report["other_cores"], report["steal_cores"] = OtherLoad.cores(load, LOAD.sample())
    with open(report_path, "w") as f:
        json.dump(report, f, indent=1)
    report["reused"] = False
    return path, report


def time_iosfarm(args, model, schedule):
    argv = ["run", model, "--backend", "cpu", "--threads", str(args.threads),
            "--iterations", str(args.runs), "--warmup", str(args.warmup), "--format", "json"]
    argv += ["--schedule", schedule] if schedule else ["--sequential"]
    answer = run_iosfarm(args, argv)
    latency = answer["latency_ms"]
    return {"median": latency["median"], "p10": latency["p10"], "p90": latency["p90"],
            "repeats": latency["repeats"], "device": answer.get("device", ""),
            "stages": answer.get("stages")}


# --- the protocol ------------------------------------------------------------

def bench_model(args, ort, name, batch, model):
    schedule, search = ensure_schedule(args, name, batch, model)
    rounds = []
    for r in range(args.rounds):
        order = CONTENDERS[r % 3:] + CONTENDERS[:r % 3]
        wait_quiet(args)
        load = LOAD.sample()
        figures = {}
        for contender in order:
            if contender == "ort":
                figures["ort"] = ort.time(model, args.runs, args.warmup)
            else:
                figures[contender] = time_iosfarm(args, model,
                                                  schedule if contender == "ios" else None)
        figures["other_cores"], figures["steal_cores"] = OtherLoad.cores(load, LOAD.sample())
        rounds.append(figures)
        say(f"  {name} b{batch or '(file)'} round {r + 1}/{args.rounds} ({', '.join(order)}): " +
            ", ".join(f"{c} {figures[c]['median']:.3f} ms" for c in CONTENDERS) +
            f" [other processes {figures['other_cores']:.2f} cores, steal "
            f"{figures['steal_cores']:.2f}]")
    summary = {c: {key: median([f[c][key] for f in rounds]) for key in ("median", "p10", "p90")}
               for c in CONTENDERS}
    ratios = [f["ort"]["median"] / f["ios"]["median"] for f in rounds]
    shape = rounds[0]["ort"]["input_shape"]
    return {"model": name, "batch": shape[0] if shape else batch, "file": model,
            "input_shape": shape, "schedule": schedule, "summary": summary,
            "ratio": summary["ort"]["median"] / summary["ios"]["median"],
            "ratio_rounds": [min(ratios), max(ratios)],
            "ratio_vs_sequential": summary["ort"]["median"] / summary["seq"]["median"],
            "ios_stages": rounds[0]["ios"]["stages"], "seq_stages": rounds[0]["seq"]["stages"],
            "iosfarm_device": rounds[0]["ios"]["device"], "search": search, "rounds": rounds,
            "noisy_rounds": sum(1 for f in rounds if f["other_cores"] >= args.quiet_cores)}


def cell(stats):
    return f"{stats['median']:.2f} [{stats['p10']:.2f}-{stats['p90']:.2f}]"


def print_report(args, header, results):
    for line in header:
        print(line)
    print()
    print("| model | batch | iosfarm cpu ms (IOS schedule) | iosfarm sequential ms "
          "| ONNX Runtime ms | ratio | threads |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    threads = f"iosfarm {args.threads}; ORT intra {args.threads}, inter 1"
    for r in results:
        s = r["summary"]
        ratio = f"{r['ratio']:.2f} ({r['ratio_rounds'][0]:.2f}-{r['ratio_rounds'][1]:.2f})"
        print(f"| {r['model']} | {r['batch']} | {cell(s['ios'])} | {cell(s['seq'])} "
              f"| {cell(s['ort'])} | {ratio} | {threads} |")
    print()
    print("ms: median over rounds of each call's median [p10-p90]; ratio: ONNX Runtime ms / "
          "iosfarm IOS ms (> 1: iosfarm faster), in brackets the per-round range.")
    loads = [f"{r['model']} b{r['batch']} {median([f['other_cores'] for f in r['rounds']]):.2f}"
             f"/{max(f['other_cores'] for f in r['rounds']):.2f}"
             f" ({r['noisy_rounds']} of {len(r['rounds'])} rounds at {args.quiet_cores} or more)"
             for r in results]
    print("other processes' load during the rounds, cores (median/max): " + "; ".join(loads))
    print()
    print("| model | batch | IOS stages | sequential stages | predicted IOS / seq ms "
          "| search s | ORT / sequential |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        search = r["search"]
        predicted = search.get("latency_ms", {})
        seconds = search.get("search_seconds")
        when = "kept from " + search.get("searched_on", "an earlier run") if search["reused"] \
            else "this run"
        if search.get("other_cores", 0) >= args.quiet_cores:
            when += f", other processes {search['other_cores']:.2f} cores"
        print(f"| {r['model']} | {r['batch']} | {r['ios_stages']} | {r['seq_stages']} "
              f"| {predicted.get('ios', float('nan')):.2f} / "
              f"{predicted.get('sequential', float('nan')):.2f} "
              f"| {seconds if seconds is None else round(seconds, 1)} ({when}) "
              f"| {r['ratio_vs_sequential']:.2f} |")


def main(argv):
    args = parse_args(argv)
    if not os.access(args.iosfarm, os.X_OK):
        say(f"onnxruntime_cpu_bench: --iosfarm {args.iosfarm} is not an executable")
        return 2
    command = shlex.join([os.path.relpath(sys.argv[0]) if os.path.isabs(sys.argv[0])
                          else sys.argv[0], *argv])
    builds_before = other_builds()
    load_before = os.getloadavg()
    ort = None
    try:
        ort = OrtServer(args)
        models = []
        if args.smoke:
            path = os.path.join(args.work_dir, "models", "smoke", "ortbench_smoke.onnx")
            if not os.path.exists(path):
                write_smoke_model(path)
            models.append(("ortbench_smoke", 1, path))
        models += export_models(args) if args.model_list else []
        for path in args.onnx:
            if not os.path.exists(path):
                say(f"onnxruntime_cpu_bench: --onnx {path}: no such file")
                return 2
            models.append((os.path.splitext(os.path.basename(path))[0], None, path))
        started = datetime.datetime.now()
        results = []
        for name, batch, path in models:
            results.append(bench_model(args, ort, name, batch, path))
    except Skip as reason:
        say(f"onnxruntime_cpu_bench: skipped: {reason}")
        return SKIP
    except BenchError as error:
        say(f"onnxruntime_cpu_bench: {error}")
        return 1
    finally:
        if ort is not None:
            ort.close()
    builds_after = other_builds()
    info = ort.info
    omp = os.environ.get("OMP_NUM_THREADS")
    header = [
        f"machine: {cpu_model()}; {platform.system()} {platform.release()}",
        f"date: {started.isoformat(timespec='seconds')} to "
        f"{datetime.datetime.now().isoformat(timespec='seconds')}",
        f"iosfarm: {args.iosfarm}, built from {iosfarm_commit(args.iosfarm)}; cpu backend: "
        f"{results[0]['iosfarm_device'] if results else '?'}",
        f"ONNX Runtime: onnxruntime-node {info['onnxruntime_node']} on node {info['node']}, "
        f"{info['execution_provider']} execution provider, intra-op {info['intra_op_threads']} "
        f"threads, inter-op {info['inter_op_threads']}, {info['execution_mode']} mode, graph "
        f"optimizations {info['graph_optimization_level']}",
        f"protocol: {args.rounds} rounds, contenders in rotating order; each call "
        f"{args.warmup} untimed + {args.runs} timed inferences"
        + (f"; OMP_NUM_THREADS={omp} in the environment" if omp else ""),
        f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; other "
        f"builds running: {', '.join(builds_before) or 'none'} before, "
        f"{', '.join(builds_after) or 'none'} after",
        f"command: {command}",
    ]
    print_report(args, header, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "command": command, "threads": args.threads,
                       "ort": info, "results": results}, f, indent=1)
    if args.smoke:
        bad = [r["model"] for r in results
               if not all(r["summary"][c]["median"] > 0 for c in CONTENDERS)]
        if bad or not results:
            say(f"onnxruntime_cpu_bench: smoke: no positive figures for {bad or 'any model'}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
