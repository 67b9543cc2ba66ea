#!/usr/bin/env python3
"""GPU truth from one prepared script (issue 12): correctness, the physical
floor, the farm and the speed benchmark, in that order, under one deadline.

A session that is lent a GPU has 15 minutes of device time in all, machine
start included, so everything is built and bundled here first and the GPU
machine runs this prepared script, in two calls back to back (correctness,
then speed with what is left; docs/benchmarks.md, "How to run it"):

  here:    cmake --build build -j2 && python3 bench/gpu_bench.py bundle
  device:  command = "PYTHONUNBUFFERED=1 python3 tools/gpu_run/gpu_run.py run --out $OUT
                      --steps env,floor,tests,zoo,torchvision,farm,search,runtime,kernels
                      --deadline-s 300"
           carry = [".gpubench"], timeout_s = 330
  device:  the same with --steps env,speed and the deadline that is left

Steps (--steps, in this order; each is cut off when --deadline-s runs out and
records why):
  env          nvidia-smi's device line, driver, CUDA and cuDNN versions
  floor        bench/cuda_floor_bench: launch, event, cross-stream wait and
               CUDA-graph node costs of this GPU
  tests        the CUDA gtest suites: cuda_backend_test (all),
               backend_conformance_test (every cuda instance: ops, stages,
               fused residuals, merged convs, CUDA graphs, zoo models),
               backend_factory_test, runtime_test, runtime_device_buffers_test
               (inputs and outputs in GPU memory); counts and failure messages
  zoo          per zoo model: `iosfarm run MODEL --backend cuda --schedule
               IOS --verify` eagerly and as one CUDA graph (--cuda-graph), each
               output compared with the cpu backend's (bundle assets)
  torchvision  runtime_torchvision_test's cuda half: eight torchvision CNNs
               exported with random weights, run through the public runtime
               with the sequential and the IOS schedule, against PyTorch's
               own outputs (rtol 1e-3, atol 1e-4). Started in the background
               after `floor` (the exports are CPU work), collected in turn
  farm         iosfarm-server + one iosfarm-worker on this GPU: submit
               squeezenet, again (must profile nothing), inception_v3; the
               timeline must show no two GPU phases at once; then `iosfarm
               tune squeezenet` (embedded server and worker; on cuda with
               --cuda-graph-stages, so its worker times stages as graphs and
               its measure phase runs the schedules as one graph each)
  search       `iosfarm search MODEL --backend cuda` with the backend's device
               floor and without (--search-runs MODEL:VARIANT,...): stages
               measured, IOS ms, and the stages measured below their bound
               (how often this GPU breaks the floor; search_step.py);
               then bound_audit_bench on --audit-models: every candidate
               stage of their blocks against its bound (graph-timed with
               --audit-graph-stages; a run's variant `graph` times the
               search's stages as CUDA graphs)
  exact        schedule_bench --search exhaustive, then the bounded search on
               the same latency database (--exact-models MODEL[:graph],...):
               both searches see the very same stage latencies, so the
               difference of their IOS latencies is what the bounds' misses
               cost on this device (exact_step.py)
  runtime      bench/runtime_bench: Session::Run's cost per call beyond the
               schedule's own time on squeezenet, with host buffers and with
               the input and output in GPU memory (CUDA graph on)
  kernels      Nsight Compute (ncu --profile-from-start off, kernel time
               only) over one eager forward of torchvision googlenet, batch
               1: ours (`iosfarm run --sequential --profiler-range`) and
               PyTorch's (torch_bench.py --profiler-range): kernel count,
               summed kernel time and the kernels that take most, per side;
               both CSVs in the logs. Where our kernels, not the schedule,
               lose to PyTorch
  speed        bench/gpu_bench.py run with the time left (batch 1)

Writes to --out, after every step (so a run cut off still returns what it
did): truth.json (everything), truth.md (summary), truth.log, logs.tar.gz
(every step's output); `speed` adds gpu_bench's results.json, table.md,
gpu_bench.log and state.tar.gz. Exit 0 when every step that ran passed, 1
when a check failed, 3 when no GPU answers (with --backend cuda).

--backend cpu runs the same steps on the CPU (floor and torchvision skipped;
the gtest suites' CUDA tests then skip): the smoke test
(gpu_run_smoke_test.py) runs it so that the script itself is tested here.
"""
import argparse
import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

import bundle
import exact_step
import search_step
from farm_step import Farm
from kernels_step import find_ncu, parse_ncu_kernel_times, summarize_kernels

REPO = bundle.REPO
STEPS = ("env", "floor", "tests", "zoo", "torchvision", "farm", "search", "exact", "runtime",
         "kernels", "speed")
# (binary, gtest filter, cap in seconds) of the `tests` step.
SUITES = (
    ("cuda_backend_test", "*", 150),
    ("backend_conformance_test", "*cuda*", 240),
    ("backend_factory_test", "*", 30),
    ("runtime_test", "*", 60),
    ("runtime_device_buffers_test", "*", 60),
)
# The caps above times this on the cpu backend (gpu_run_smoke).
CPU_CAP_SCALE = 4
# The zoo checks' tolerance against the cpu backend (both fp32; cuDNN and
# oneDNN pick different algorithms, so the last bits differ).
ZOO_RTOL, ZOO_ATOL = 1e-3, 1e-4


class Truth:
    def __init__(self, args):
        self.args = args
        self.start = time.monotonic()
        self.work = os.path.abspath(args.work)
        self.logs = os.path.join(self.work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.out = os.path.abspath(args.out) if args.out else None
        if self.out:
            os.makedirs(self.out, exist_ok=True)
        self.log_path = os.path.join(self.out or self.work, "truth.log")
        self.log_file = open(self.log_path, "a")
        self.doc = {"tool": "gpu_truth", "backend": args.backend, "steps": {},
                    "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        self.failed = False
        self.background = None

    # -- bookkeeping --
    def elapsed(self):
        return time.monotonic() - self.start

    def remaining(self):
        return self.args.deadline_s - self.elapsed()

    def say(self, text):
        line = f"[{self.elapsed():5.0f} s] {text}"
        print(line, flush=True)
        self.log_file.write(line + "\n")
        self.log_file.flush()

    def record(self, step, result):
        self.doc["steps"][step] = result
        if result.get("status") == "failed":
            self.failed = True
        self.save()

    def save(self):
        self.doc["elapsed_s"] = round(self.elapsed(), 1)
        if not self.out:
            return
        with open(os.path.join(self.out, "truth.json"), "w") as f:
            json.dump(self.doc, f, indent=2)
            f.write("\n")
        with open(os.path.join(self.out, "truth.md"), "w") as f:
            f.write(summary(self.doc))
        with tarfile.open(os.path.join(self.out, "logs.tar.gz"), "w:gz") as tar:
            tar.add(self.logs, arcname="logs")

    def run(self, argv, log_name, timeout, stdout_path=None):
        """Runs argv with its output in logs/LOG_NAME (only its stderr there
        when stdout goes to `stdout_path`); (exit code or 'timeout', last
        lines of the log)."""
        timeout = max(1.0, min(timeout, self.remaining()))
        self.say("$ " + " ".join(argv) + f"   (at most {timeout:.0f} s)")
        path = os.path.join(self.logs, log_name)
        with open(path, "w") as out, (open(stdout_path, "w") if stdout_path
                                      else contextlib.nullcontext(out)) as stdout:
            try:
                code = subprocess.run(argv, stdout=stdout,
                                      stderr=out if stdout_path else subprocess.STDOUT,
                                      env=self.env, cwd=self.work,
                                      timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                code = "timeout"
            except OSError as e:
                out.write(f"{e}\n")
                code = f"cannot start: {e}"
        with open(path, errors="replace") as f:
            tail = f.read().splitlines()[-12:]
        return code, tail

    # -- setup --
    def setup(self):
        args = self.args
        if args.build:
            build = os.path.abspath(args.build)
            self.bin = {os.path.basename(b): os.path.join(build, b) for b in bundle.BINARIES}
            self.env = dict(os.environ)
            self.assets = os.path.join(self.work, "assets")
            models = [m for m in args.zoo_models if not os.path.exists(
                os.path.join(self.assets, "zoo", f"{m}.ios.json"))]
            if "zoo" in args.steps and models:
                bundle.make_assets(self.bin["iosfarm"], self.assets, models)
            self.doc["bundle"] = {"build": build}
        else:
            bin_dir, self.assets, manifest, self.env = bundle.unpack(
                args.bundle, self.work, sys.path)
            self.bin = {os.path.basename(b): os.path.join(bin_dir, os.path.basename(b))
                        for b in bundle.BINARIES}
            self.doc["bundle"] = manifest
            self.say(f"bundle: commit {manifest['commit'][:10]} of {manifest['date']}")
        self.env["IOSFARM_CLI"] = self.bin["iosfarm"]
        self.env["IOSFARM_SOURCE_DIR"] = REPO
        self.env["IOSFARM_BINARY_DIR"] = self.work
        self.env["IOSFARM_PYTHON"] = sys.executable
        # The suites' temporary files (gtest's TempDir) in this run's own
        # folder: runtime_test gives its schedules and latency databases
        # fixed names, and the smoke test runs it while CTest may run the
        # same tests beside it (the likely cause of both failing once,
        # docs/benchmarks.md, 2026-11-30).
        self.env["TEST_TMPDIR"] = os.path.join(self.work, "test-tmp")
        os.makedirs(self.env["TEST_TMPDIR"], exist_ok=True)
        missing = {name: bundle.missing_libraries(path, self.env)
                   for name, path in self.bin.items() if os.path.exists(path)}
        missing = {name: lines for name, lines in missing.items() if lines}
        if missing:
            self.say(f"binaries that cannot load: {missing}")
            self.record("setup", {"status": "failed", "missing_libraries": missing})
            return False
        return True

    # -- steps --
    def step_env(self):
        result = {"status": "ok"}
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                              "clocks.max.sm,pci.bus_id", "--format=csv,noheader"],
                             capture_output=True, text=True) if shutil.which("nvidia-smi") else None
        result["nvidia_smi"] = smi.stdout.strip() if smi and smi.returncode == 0 else None
        if smi is not None:
            full = subprocess.run(["nvidia-smi"], capture_output=True, text=True)
            result["nvidia_smi_header"] = "\n".join(full.stdout.splitlines()[:4])
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        if os.path.exists(nvcc):
            version = subprocess.run([nvcc, "--version"], capture_output=True, text=True)
            result["nvcc"] = version.stdout.strip().splitlines()[-1] if version.stdout else None
        result["cuda_libraries"] = bundle.find_cuda_lib_dirs(sys.path)
        cudnn = sorted({os.path.basename(p) for d in result["cuda_libraries"]
                        for p in glob.glob(os.path.join(d, "libcudnn.so.*"))})
        result["cudnn_files"] = cudnn
        try:
            import torch
            result["torch"] = torch.__version__
            result["torch_cudnn"] = torch.backends.cudnn.version()
            result["torch_cuda"] = torch.version.cuda
        except Exception as e:  # the smoke test's python may lack torch
            result["torch"] = f"not importable: {e}"
        if self.args.backend == "cuda" and not result["nvidia_smi"]:
            result["status"] = "failed"
            result["error"] = "no CUDA device: nvidia-smi gave no GPU"
        self.say(f"env: {result.get('nvidia_smi')}; {result.get('nvcc')}; cuDNN files {cudnn}; "
                 f"torch {result.get('torch')}")
        return result

    def step_floor(self):
        if self.args.backend != "cuda":
            return {"status": "skipped", "reason": "--backend cpu"}
        code, tail = self.run([self.bin["cuda_floor_bench"], "--repeats", "15"], "floor.log", 60)
        if code != 0:
            return {"status": "failed", "exit": code, "output": tail}
        with open(os.path.join(self.logs, "floor.log")) as f:
            text = f.read()
        floor = json.loads(text[text.index("{"):])
        self.say("floor: " + ", ".join(f"{k} {v}" for k, v in floor.items() if k.endswith("_us")))
        return {"status": "ok", **floor}

    def gtest(self, binary, gtest_filter, cap, log_name):
        report = os.path.join(self.logs, log_name + ".json")
        if os.path.exists(report):
            os.remove(report)
        code, tail = self.run([self.bin[binary], f"--gtest_filter={gtest_filter}",
                               f"--gtest_output=json:{report}"], log_name + ".log", cap)
        counts = (self.gtest_report(report) if os.path.exists(report) else
                  {"passed": 0, "failed": 0, "skipped": 0, "failures": [], "skip_reasons": {}})
        ok = code == 0 and counts["failed"] == 0 and self.ran_enough(counts)
        result = {"status": "ok" if ok else "failed", "exit": code, "filter": gtest_filter,
                  **counts}
        if code == "timeout" or not os.path.exists(report):
            result["output"] = tail
        self.say(f"{binary}: {counts['passed']} passed, {counts['failed']} failed, "
                 f"{counts['skipped']} skipped (exit {code})")
        return result

    def step_tests(self):
        suites = {}
        for binary, gtest_filter, cap in SUITES:
            if self.remaining() < 20:
                suites[binary] = {"status": "not run", "reason": "deadline"}
                continue
            if not os.path.exists(self.bin[binary]):
                suites[binary] = {"status": "not run", "reason": "not in this build (no CUDA)"}
                continue
            # The caps are sized for a GPU; on the cpu backend (the CTest
            # smoke on a loaded 2-core machine) runtime_test alone takes 55 s.
            scale = 1 if self.args.backend == "cuda" else CPU_CAP_SCALE
            suites[binary] = self.gtest(binary, gtest_filter, cap * scale, binary)
        failed = any(s["status"] == "failed" for s in suites.values())
        return {"status": "failed" if failed else "ok", "suites": suites}

    def step_zoo(self):
        import numpy as np
        models = {}
        backend = self.args.backend
        for model in self.args.zoo_models:
            schedule = os.path.join(self.assets, "zoo", f"{model}.ios.json")
            reference = os.path.join(self.assets, "zoo", f"{model}.cpu")
            rows = {}
            for mode, extra in (("eager", []), ("cuda_graph", ["--cuda-graph"])):
                if mode == "cuda_graph" and backend != "cuda":
                    continue
                if self.remaining() < 15:
                    rows[mode] = {"status": "not run", "reason": "deadline"}
                    continue
                outputs = os.path.join(self.work, "zoo", model, mode)
                shutil.rmtree(outputs, ignore_errors=True)
                log_name = f"zoo_{model}_{mode}.log"
                code, tail = self.run(
                    [self.bin["iosfarm"], "run", model, "--backend", backend, "--schedule",
                     schedule, "--verify", "--output", outputs, "--iterations", "20",
                     "--warmup", "3", "--format", "json", *extra], log_name, 120)
                row = {"exit": code}
                try:
                    with open(os.path.join(self.logs, log_name)) as f:
                        text = f.read()
                    run = json.loads(text[text.index("{"):text.rindex("}") + 1])
                    row.update(verified=run.get("verified"), stages=run.get("stages"),
                               median_ms=run["latency_ms"]["median"], device=run.get("device"))
                except (ValueError, KeyError):
                    row["output"] = tail
                worst = 0.0
                mismatches = []
                for ref in sorted(glob.glob(os.path.join(reference, "*.npy"))):
                    mine = os.path.join(outputs, os.path.basename(ref))
                    if not os.path.exists(mine):
                        mismatches.append(f"{os.path.basename(ref)} not written")
                        continue
                    a, b = np.load(mine), np.load(ref)
                    if a.shape != b.shape:
                        mismatches.append(f"{os.path.basename(ref)}: shape {a.shape} vs {b.shape}")
                        continue
                    excess = np.abs(a - b) - (ZOO_ATOL + ZOO_RTOL * np.abs(b))
                    worst = max(worst, float(np.max(np.abs(a - b))))
                    if not np.all(excess <= 0):
                        mismatches.append(f"{os.path.basename(ref)}: {int(np.sum(excess > 0))} of "
                                          f"{b.size} elements off")
                row["max_abs_error_vs_cpu"] = worst
                row["mismatches"] = mismatches
                row["status"] = ("ok" if code == 0 and row.get("verified") is True
                                 and not mismatches else "failed")
                rows[mode] = row
                self.say(f"zoo {model} {mode}: {row['status']}, verified {row.get('verified')}, "
                         f"max |dev - cpu| {worst:.2e}, {row.get('median_ms')} ms")
            models[model] = rows
        failed = any(r.get("status") == "failed" for rows in models.values()
                     for r in rows.values())
        return {"status": "failed" if failed else "ok", "rtol": ZOO_RTOL, "atol": ZOO_ATOL,
                "models": models}

    def start_torchvision(self):
        """Starts the cuda half of runtime_torchvision_test in the background
        (its exports take a minute or two of CPU first)."""
        report = os.path.join(self.logs, "torchvision.json")
        log = open(os.path.join(self.logs, "torchvision.log"), "w")
        argv = [self.bin["runtime_torchvision_test"], "--gtest_filter=*CudaMatchesPyTorch*",
                f"--gtest_output=json:{report}"]
        self.say("$ " + " ".join(argv) + "   (background)")
        self.background = (subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            env=self.env, cwd=self.work), log, report)

    def step_torchvision(self):
        if self.background is None:
            return {"status": "skipped", "reason": "--backend cpu"}
        process, log, report = self.background
        try:
            code = process.wait(timeout=max(1, self.remaining() - 60))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = "timeout"
        log.close()
        result = {"status": "failed", "exit": code}
        if os.path.exists(report):
            result.update(self.gtest_report(report))
            result["status"] = ("ok" if code == 0 and result["failed"] == 0
                                and self.ran_enough(result) else "failed")
        else:
            with open(os.path.join(self.logs, "torchvision.log"), errors="replace") as f:
                result["output"] = f.read().splitlines()[-15:]
        self.say(f"torchvision: {result.get('passed')} passed, {result.get('failed')} failed, "
                 f"{result.get('skipped')} skipped (exit {code})")
        return result

    def ran_enough(self, counts):
        """On a GPU a suite whose every test skipped did not check anything
        (no device found, no export): not a pass. On the cpu (smoke test)
        the CUDA tests are expected to skip."""
        if self.args.backend == "cuda":
            return counts["passed"] > 0
        return counts["passed"] + counts["skipped"] > 0

    @staticmethod
    def gtest_report(report):
        """Counts and failure messages of a --gtest_output=json report."""
        counts = {"passed": 0, "failed": 0, "skipped": 0, "failures": [], "skip_reasons": {}}
        with open(report) as f:
            doc = json.load(f)
        for suite in doc.get("testsuites", []):
            for test in suite.get("testsuite", []):
                name = f"{suite['name']}.{test['name']}"
                if test.get("failures"):
                    counts["failed"] += 1
                    counts["failures"].append({"test": name, "message": "\n".join(
                        x.get("failure", "") for x in test["failures"])[:1500]})
                elif test.get("result") == "SKIPPED":
                    counts["skipped"] += 1
                    reason = (test.get("skipped") or [{}])[0].get("message", "")[:200]
                    counts["skip_reasons"][reason] = counts["skip_reasons"].get(reason, 0) + 1
                elif test.get("result") == "COMPLETED":
                    counts["passed"] += 1
        return counts

    def step_farm(self):
        return Farm(self).run()

    def step_search(self):
        return search_step.Search(self).run()

    def step_exact(self):
        return exact_step.Exact(self).run()

    def step_runtime(self):
        cuda = self.args.backend == "cuda"
        argv = [self.bin["runtime_bench"], "--backend", self.args.backend, "--model",
                "squeezenet", "--rounds", "3" if cuda else "1", "--runs", "200" if cuda else "5"]
        code, tail = self.run(argv, "runtime_bench.log", 90)
        summary = next((line for line in tail if line.startswith("median over")), None)
        result = {"status": "ok" if code == 0 and summary else "failed", "exit": code,
                  "summary": summary, "output": tail}
        self.say(f"runtime_bench: {summary or tail[-1:]}")
        return result

    def step_kernels(self):
        if self.args.backend != "cuda":
            return {"status": "skipped", "reason": "--backend cpu"}
        ncu = find_ncu()
        if ncu is None:
            return {"status": "skipped", "reason": "ncu not found"}
        onnx_dir = os.path.join(self.work, "kernels")
        onnx = os.path.join(onnx_dir, "googlenet.onnx")
        if not os.path.exists(onnx):
            code, tail = self.run([sys.executable, os.path.join(REPO, "tests", "onnx",
                                                                "export_torchvision.py"),
                                   onnx_dir, "googlenet"], "kernels_export.log", 120)
            if code != 0 or not os.path.exists(onnx):
                return {"status": "failed", "exit": code, "output": tail}
        profile = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--metrics",
                   "gpu__time_duration.sum", "--csv", "--print-units", "base"]
        sides = {
            "iosfarm": [self.bin["iosfarm"], "run", onnx, "--backend", "cuda", "--sequential",
                        "--iterations", "3", "--warmup", "1", "--profiler-range"],
            "torch": [sys.executable, os.path.join(REPO, "bench", "torch_bench.py"), "--device",
                      "cuda", "--models", "googlenet", "--batches", "1", "--modes", "eager",
                      "--rounds", "1", "--repeats", "3", "--warmup", "2", "--profiler-range"],
        }
        result = {"status": "ok", "model": "googlenet (torchvision), batch 1, one eager forward"}
        for side, argv in sides.items():
            csv_path = os.path.join(self.logs, f"kernels_{side}.csv")
            code, tail = self.run(profile + ["--log-file", csv_path] + argv,
                                  f"kernels_{side}.log", 150)
            kernels = []
            # The CSV goes to --log-file; read the program's log too in case
            # this ncu printed it there.
            for path in (csv_path, os.path.join(self.logs, f"kernels_{side}.log")):
                if not kernels and os.path.exists(path):
                    with open(path, errors="replace") as f:
                        kernels = parse_ncu_kernel_times(f.read())
            if code != 0 or not kernels:
                result["status"] = "failed"
                result[side] = {"exit": code, "kernels": len(kernels), "output": tail}
                continue
            result[side] = summarize_kernels(kernels)
            self.say(f"kernels {side}: {result[side]['count']} kernels, "
                     f"{result[side]['total_us']:.1f} us")
        return result

    def step_speed(self):
        left = self.remaining() - 10
        if left < 60:
            return {"status": "not run", "reason": f"{left:.0f} s left"}
        argv = [sys.executable, os.path.join(REPO, "bench", "gpu_bench.py"), "run", "--bin",
                self.bin["schedule_bench"], "--backend", self.args.backend, "--models",
                self.args.speed_models, "--batches", "1", "--work",
                os.path.join(self.work, "speed"), "--deadline-s", f"{left - 15:.0f}"]
        if self.out:
            argv += ["--out", self.out]
        argv += self.args.speed_args
        code, tail = self.run(argv, "speed.log", left)
        result = {"status": "ok" if code == 0 else "failed", "exit": code}
        table = os.path.join(self.work, "speed", "table.md")
        if os.path.exists(table):
            with open(table) as f:
                result["table"] = f.read()
        else:
            result["output"] = tail
        return result


def summary(doc):
    """truth.md: one line per check."""
    lines = [f"# gpu_truth ({doc['backend']}, started {doc['started']}, "
             f"{doc.get('elapsed_s', 0):.0f} s)", ""]
    bundle = doc.get("bundle", {})
    if "commit" in bundle:
        lines.append(f"bundle: commit {bundle['commit'][:10]} of {bundle['date']}"
                     f"{' (dirty)' if bundle.get('dirty') else ''}")
    for name, step in doc["steps"].items():
        status = step.get("status")
        if "error" in step and name != "farm":
            lines.append(f"- {name}: {status}: {step['error']}")
            continue
        if name == "env":
            lines.append(f"- env: {step.get('nvidia_smi')}; {step.get('nvcc')}; "
                         f"cuDNN {step.get('cudnn_files')}; torch {step.get('torch')}")
        elif name == "floor" and status == "ok":
            lines.append("- floor (us): " + ", ".join(
                f"{k[:-3]} {v:.2f}" for k, v in step.items() if k.endswith("_us")))
        elif name == "tests":
            for binary, s in step.get("suites", {}).items():
                if "reason" in s:
                    lines.append(f"- {binary}: {s.get('status')}: {s['reason']}")
                    continue
                lines.append(f"- {binary}: {s.get('status')}, {s.get('passed')} passed, "
                             f"{s.get('failed')} failed, {s.get('skipped')} skipped")
                for failure in s.get("failures", [])[:10]:
                    lines.append(f"  - FAILED {failure['test']}: "
                                 f"{failure['message'].splitlines()[0] if failure['message'] else ''}")
        elif name == "zoo":
            for model, rows in step.get("models", {}).items():
                for mode, r in rows.items():
                    lines.append(f"- zoo {model} {mode}: {r.get('status')}, verified "
                                 f"{r.get('verified')}, max |dev - cpu| "
                                 f"{r.get('max_abs_error_vs_cpu', float('nan')):.2e}, "
                                 f"{r.get('median_ms')} ms, {r.get('stages')} stages"
                                 + (f", {r['mismatches']}" if r.get("mismatches") else ""))
        elif name == "search":
            lines.extend(search_step.summary_lines(step))
        elif name == "exact":
            lines.extend(exact_step.summary_lines(step))
        elif name == "runtime":
            lines.append(f"- runtime: {status}, {step.get('summary')}")
        elif name == "kernels" and status in ("ok", "failed"):
            lines.append(f"- kernels: {status}, {step.get('model')}")
            for side in ("iosfarm", "torch"):
                s = step.get(side, {})
                if "total_us" not in s:
                    lines.append(f"  - {side}: exit {s.get('exit')}, {s.get('kernels')} kernels")
                    continue
                lines.append(f"  - {side}: {s['count']} kernels, {s['total_us']:.1f} us; most: "
                             + "; ".join(f"{k['total_us']:.1f} us x{k['count']} {k['kernel'][:60]}"
                                         for k in s["top"][:5]))
        elif name == "farm":
            lines.append(f"- farm: {status}, GPU phases {step.get('gpu_phases')}, overlaps "
                         f"{step.get('gpu_overlaps')}" + (f", {step['error']}"
                                                         if step.get("error") else ""))
            if step.get("profile_breakdown"):
                lines.append(f"  - worker's ms per profiled stage: {step['profile_breakdown']}")
            for job, seconds in step.get("phase_seconds", {}).items():
                lines.append(f"  - job {job} seconds: " +
                             ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()))
            for job, row in step.get("jobs", {}).items():
                lines.append(f"  - {job}: {row.get('state')}, profiled {row.get('profiled_stages')}"
                             f" stages, measured {row.get('measured_ms')}, predicted "
                             f"{row.get('predicted_ms')}" + (f", {row['error']}"
                                                             if row.get("error") else ""))
            if "tune" in step:
                lines.append(f"  - tune: exit {step['tune']['exit']}: "
                             + " | ".join(step["tune"]["output"][-4:]))
        else:
            lines.append(f"- {name}: {status}" + "".join(
                f", {k} {step[k]}" for k in ("passed", "failed", "skipped", "reason", "exit")
                if k in step))
    return "\n".join(lines) + "\n"


def cmd_run(args):
    truth = Truth(args)
    truth.say(f"gpu_truth run: backend {args.backend}, steps {','.join(args.steps)}, "
              f"deadline {args.deadline_s:.0f} s")
    if not truth.setup():
        return 1
    if args.backend == "cuda" and not shutil.which("nvidia-smi"):
        truth.say("no CUDA device: nvidia-smi not found (--backend cpu runs the script on the CPU)")
        truth.record("env", {"status": "failed", "error": "no nvidia-smi"})
        return 3
    for step in args.steps:
        # The torchvision check starts in the background once the floor is
        # measured (its exports load the CPU, which the floor's launch
        # figures must not see) and is collected at its own turn.
        if (step not in ("env", "floor") and "torchvision" in args.steps
                and args.backend == "cuda" and truth.background is None):
            truth.start_torchvision()
        if truth.remaining() < 5:
            truth.record(step, {"status": "not run", "reason": "deadline"})
            continue
        started = time.monotonic()
        try:
            result = getattr(truth, f"step_{step}")()
        except Exception as e:  # one step's bug must not cost the others
            result = {"status": "failed", "error": f"{type(e).__name__}: {e}"}
        result["seconds"] = round(time.monotonic() - started, 1)
        truth.record(step, result)
        if step == "env" and result["status"] == "failed" and args.backend == "cuda":
            truth.say(result.get("error", "env failed"))
            return 3
    if truth.background and truth.background[0].poll() is None:
        truth.background[0].kill()
    truth.say(f"done: {'some checks FAILED' if truth.failed else 'every check that ran passed'}")
    truth.save()
    print(summary(truth.doc))
    return 1 if truth.failed else 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the checks (on the GPU machine)")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--bundle", default=os.path.join(REPO, ".gpubench"),
                       help="folder made by `gpu_bench.py bundle` (default .gpubench)")
    where.add_argument("--build", help="use a build folder's binaries as they are (no bundle)")
    run.add_argument("--backend", default="cuda", choices=("cuda", "cpu"),
                     help="cpu only for the smoke test")
    run.add_argument("--steps", default=",".join(STEPS), help="comma-separated, of: "
                     + ", ".join(STEPS))
    run.add_argument("--zoo-models", default=",".join(bundle.ZOO))
    run.add_argument("--farm-models", default="squeezenet,inception_v3",
                     help="the first is submitted twice")
    run.add_argument("--farm-batch", type=int, default=1,
                     help="batch size of the farm step's jobs and tune (the worker's profile "
                     "breakdown at that batch)")
    run.add_argument("--search-runs", default=search_step.DEFAULT_RUNS,
                     help="the search step's MODEL:VARIANT runs, VARIANT one of "
                     + ", ".join(search_step.VARIANTS))
    run.add_argument("--search-cap-s", type=float, default=150,
                     help="the longest one search run may take (cut off: its last progress)")
    run.add_argument("--search-batch", type=int, default=1)
    run.add_argument("--audit-models", default=search_step.DEFAULT_AUDIT_MODELS,
                     help="the search step's bound audit: every candidate stage of these "
                     "models' blocks against its bound (empty: none)")
    run.add_argument("--audit-block-size", type=int, default=6)
    run.add_argument("--audit-graph-stages", action="store_true",
                     help="the audit times stages as CUDA graphs (cuda only)")
    run.add_argument("--exact-models", default="inception_v3",
                     help="the exact step's MODEL or MODEL:graph entries (graph: stages timed "
                     "as CUDA graphs)")
    run.add_argument("--speed-models", default="squeezenet,inception_v3,tv_googlenet,randwire,"
                     "nasnet_a,tv_inception_v3,resnet50")
    run.add_argument("--speed-args", default="", help="more gpu_bench.py run flags, one string")
    run.add_argument("--deadline-s", type=float, default=500)
    run.add_argument("--work", default=os.path.join(REPO, ".gpubench-work"))
    run.add_argument("--out", help="where truth.json and the rest go (e.g. $OUT)")
    args = parser.parse_args(argv)
    args.steps = [s for s in args.steps.split(",") if s]
    for step in args.steps:
        if step not in STEPS:
            parser.error(f"unknown step {step!r} (want {', '.join(STEPS)})")
    args.zoo_models = [m for m in args.zoo_models.split(",") if m]
    args.farm_models = [m for m in args.farm_models.split(",") if m]
    args.audit_models = [m for m in args.audit_models.split(",") if m]
    try:
        args.search_runs = search_step.parse_runs(args.search_runs)
    except ValueError as e:
        parser.error(str(e))
    try:
        args.exact_models = exact_step.parse_entries(args.exact_models)
    except ValueError as e:
        parser.error(str(e))
    args.speed_args = args.speed_args.split()
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
