#!/usr/bin/env python3
"""Smoke test of the GPU benchmark scripts, on the CPU (CTest gpu_bench_smoke).

Usage: gpu_bench_smoke_test.py SCHEDULE_BENCH_BINARY

Runs bench/gpu_bench.py end to end with tiny settings on the cpu backend
(squeezenet through schedule_bench --backend cpu, torch_bench.py --device cpu
on googlenet batch 1, eager only), checks that results.json and table.md parse
and hold the rows, that `gpu_bench.py report` re-reads them, and that
`schedule_bench --backend cuda` either runs (a GPU answers) or fails with the
"no CUDA device" message. Exits 77 (CTest SKIP_RETURN_CODE) only when no
python3 here can import torch and torchvision.
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def torch_python():
    """A Python interpreter that imports torch and torchvision, or None."""
    candidates = [sys.executable, "/usr/bin/python3", shutil.which("python3")]
    for python in dict.fromkeys(c for c in candidates if c and os.path.exists(c)):
        probe = subprocess.run([python, "-c", "import torch, torchvision"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            return python
    return None


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}", file=sys.stderr)
        sys.exit(1)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    python = torch_python()
    if python is None:
        print("SKIP: no python3 here imports torch and torchvision", file=sys.stderr)
        return SKIP

    # schedule_bench --backend cuda: runs where a GPU answers, else says why.
    cuda = subprocess.run([binary, "--backend", "cuda", "--models", "squeezenet", "--rounds", "1",
                           "--repeats", "1"], capture_output=True, text=True, timeout=120)
    if cuda.returncode != 0:
        check("no CUDA device" in cuda.stderr or "UNIMPLEMENTED" in cuda.stderr,
              f"--backend cuda failed without a clear reason: {cuda.stderr.strip()}")
        print(f"schedule_bench --backend cuda: {cuda.stderr.strip()}")

    with tempfile.TemporaryDirectory() as tmp:
        work, out = os.path.join(tmp, "work"), os.path.join(tmp, "out")
        run = subprocess.run(
            [python, os.path.join(HERE, "gpu_bench.py"), "run", "--backend", "cpu", "--bin",
             binary, "--models", "squeezenet", "--batches", "1", "--rounds", "1", "--repeats",
             "2", "--torch-models", "googlenet", "--torch-modes", "eager", "--torch-repeats", "3",
             "--torch-warmup", "1", "--work", work, "--out", out, "--deadline-s", "150",
             "--cpus", "0"],
            capture_output=True, text=True, timeout=170)
        print(run.stdout[-3000:])
        check(run.returncode == 0, f"gpu_bench.py run exited {run.returncode}: {run.stderr}")
        for name in ("results.json", "table.md", "gpu_bench.log", "state.tar.gz"):
            check(os.path.exists(os.path.join(out, name)), f"{name} missing from --out")
        with tarfile.open(os.path.join(out, "state.tar.gz")) as tar:
            check("latency.db" in tar.getnames(),
                  f"state.tar.gz has no latency database: {tar.getnames()}")

        with open(os.path.join(out, "results.json")) as f:
            doc = json.load(f)
        check(doc["tool"] == "gpu_bench", "results.json: tool")
        check(not doc["errors"], f"results.json has errors: {doc['errors']}")
        ios = {(r["model"], r["batch"]): r for r in doc["ios"]}
        check(("squeezenet", 1) in ios, f"no squeezenet row: {list(ios)}")
        measured = ios[("squeezenet", 1)]["measured_ms"]
        for name in ("sequential", "greedy", "ios"):
            check(measured.get(name, {}).get("median", 0) > 0, f"squeezenet {name} not measured")
        check("ios_cuda_graph" not in measured, "cpu backend must not report CUDA graph rows")
        torch = {(r["model"], r["batch"]): r for r in doc["torch"]}
        check(("googlenet", 1) in torch, f"no torch googlenet row: {list(torch)}")
        check(ios[("squeezenet", 1)].get("cpus") == "0" and
              torch[("googlenet", 1)].get("cpus") == "0", "rows record the pinned CPUs")
        check(torch[("googlenet", 1)]["measured_ms"]["eager"]["median"] > 0, "torch eager")

        with open(os.path.join(out, "table.md")) as f:
            table = f.read()
        check("| model | batch | sequential | greedy | IOS |" in table, "table header")
        check("| squeezenet | 1 |" in table, "table: squeezenet row")
        check("| googlenet.onnx | 1 |" in table, "table: googlenet row")

        # report re-reads merged results (and a raw schedule_bench file).
        raw = os.path.join(work, "results", "ios_squeezenet_b1.json")
        report = subprocess.run([python, os.path.join(HERE, "gpu_bench.py"), "report",
                                 os.path.join(out, "results.json"), raw],
                                capture_output=True, text=True, timeout=60)
        check(report.returncode == 0, f"report exited {report.returncode}: {report.stderr}")
        check("| squeezenet | 1 |" in report.stdout and "| googlenet.onnx | 1 |" in report.stdout,
              f"report table rows: {report.stdout}")
        # Rows of `run --graph-stages` (cuda only, so made here by renaming)
        # stand apart from the eager-timed ones, after them, with geomean
        # lines of their own.
        sys.path.insert(0, HERE)
        import gpu_bench
        graph_rows = [dict(row, model=row["model"] + gpu_bench.GRAPH_TIMED)
                      for row in doc["ios"]]
        both = dict(doc, ios=doc["ios"] + graph_rows)
        table = gpu_bench.markdown(both)
        check(f"| squeezenet{gpu_bench.GRAPH_TIMED} | 1 |" in table and
              "| squeezenet | 1 |" in table, f"graph-timed rows apart: {table}")
        check(table.index("| squeezenet | 1 |") <
              table.index(f"| squeezenet{gpu_bench.GRAPH_TIMED} | 1 |"),
              "graph-timed rows after the eager ones")
        check(f"Batch 1{gpu_bench.GRAPH_TIMED}: geomean" in table,
              f"graph-timed geomean line: {table}")

        # PyTorch runs by default only for the torchvision networks selected
        # (the third H200 run spent 100 of 121 s on torch figures no row
        # of its --models used).
        check(gpu_bench.default_torch_models(["squeezenet", "tv_googlenet", "resnet50",
                                              "tv_inception_v3"]) == ["googlenet", "inception_v3"]
              and gpu_bench.default_torch_models(["squeezenet", "inception_v3"]) == [],
              "default torch models follow the tv_* keys of --models")

        # `run --graph-stages` hands schedule_bench the model itself, not the
        # row's name (the H200 run of 2026-11-27 passed "squeezenet
        # (graph-timed stages)" as the model). --cuda-graph-stages is
        # cuda-only, so a wrapper records the arguments and drops the cuda
        # flags (--cuda-graph-stages, --cuda-flush-l2).
        argv_log = os.path.join(tmp, "argv.log")
        wrapper = os.path.join(tmp, "schedule_bench_wrapper")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\n"
                    f"printf '%s\\n' \"$*\" >> {argv_log}\n"
                    "for a in \"$@\"; do shift; case \"$a\" in --cuda-graph-stages|"
                    "--cuda-flush-l2) ;; *) set -- \"$@\" \"$a\";; esac; done\n"
                    f"exec {binary} \"$@\"\n")
        os.chmod(wrapper, 0o755)
        def run_wrapped(out_dir, *flags):
            """gpu_bench.py run of squeezenet through the wrapper, with `flags`."""
            run = subprocess.run(
                [python, os.path.join(HERE, "gpu_bench.py"), "run", "--backend", "cpu", "--bin",
                 wrapper, "--models", "squeezenet", "--batches", "1", "--rounds", "1",
                 "--repeats", "2", "--no-torch", *flags, "--work", work, "--out", out_dir,
                 "--deadline-s", "150"], capture_output=True, text=True, timeout=170)
            check(run.returncode == 0, f"gpu_bench.py run {' '.join(flags)} exited "
                  f"{run.returncode}: {run.stderr}{run.stdout[-2000:]}")

        graph_out = os.path.join(tmp, "graph_out")
        run_wrapped(graph_out, "--graph-stages")
        with open(argv_log) as f:
            calls = f.read().splitlines()
        check(calls and all("--models squeezenet:3x8 " in c and "--cuda-graph-stages" in c
                            for c in calls), f"schedule_bench arguments: {calls}")
        with open(os.path.join(graph_out, "results.json")) as f:
            graph_doc = json.load(f)
        check(not graph_doc["errors"], f"--graph-stages errors: {graph_doc['errors']}")
        check(any(r["model"] == "squeezenet" + gpu_bench.GRAPH_TIMED for r in graph_doc["ios"]),
              f"no graph-timed squeezenet row: {[r['model'] for r in graph_doc['ios']]}")

        # --flush-l2 (with --graph-stages): rows of their own, the flag passed.
        os.remove(argv_log)
        flushed_out = os.path.join(tmp, "flushed_out")
        run_wrapped(flushed_out, "--graph-stages", "--flush-l2")
        with open(argv_log) as f:
            calls = f.read().splitlines()
        check(calls and all("--cuda-graph-stages" in c and "--cuda-flush-l2" in c for c in calls),
              f"schedule_bench arguments with --flush-l2: {calls}")
        with open(os.path.join(flushed_out, "results.json")) as f:
            rows = [r["model"] for r in json.load(f)["ios"]]
        check("squeezenet" + gpu_bench.FLUSHED in rows and
              "squeezenet" + gpu_bench.GRAPH_TIMED in rows, f"flushed rows apart: {rows}")
        with open(os.path.join(flushed_out, "table.md")) as f:
            table = f.read()
        check(table.index(f"| squeezenet{gpu_bench.GRAPH_TIMED} | 1 |") <
              table.index(f"| squeezenet{gpu_bench.FLUSHED} | 1 |"),
              f"flushed rows after the graph-timed ones: {table}")
        alone = subprocess.run([python, os.path.join(HERE, "gpu_bench.py"), "run", "--flush-l2"],
                               capture_output=True, text=True, timeout=60)
        check(alone.returncode == 2 and "--flush-l2 needs --graph-stages" in alone.stderr,
              f"--flush-l2 alone: {alone.returncode} {alone.stderr}")
    print("gpu_bench smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
