"""The `kernels` step of gpu_run.py: Nsight Compute (kernel time only) over
one eager forward of torchvision googlenet at batch 1, ours and PyTorch's:
kernel count, summed kernel time and the kernels that take most, per side."""
import csv
import glob
import os
import shutil
import sys

import bundle

REPO = bundle.REPO


def find_ncu():
    """Nsight Compute's command line, or None."""
    found = shutil.which("ncu") or next(
        iter(sorted(glob.glob("/usr/local/cuda/bin/ncu") +
                    glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)), None)
    return found


def parse_ncu_kernel_times(text):
    """[(kernel name, ns)] from `ncu --csv --metrics gpu__time_duration.sum`
    output, in launch order; lines before the CSV header (==PROF== and the
    program's own) are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    scale = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
             "s": 1e9, "second": 1e9}
    kernels = []
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = (row.get("Metric Unit") or "ns").strip()
        try:
            value = float((row.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            continue
        kernels.append((row.get("Kernel Name", "?"), value * scale.get(unit, 1)))
    return kernels


def summarize_kernels(kernels, top=12):
    """Count, summed time and the kernels (by name) that take most."""
    by_name = {}
    for name, ns in kernels:
        count, total = by_name.get(name, (0, 0.0))
        by_name[name] = (count + 1, total + ns)
    ranked = sorted(by_name.items(), key=lambda item: -item[1][1])[:top]
    return {"count": len(kernels), "total_us": round(sum(ns for _, ns in kernels) / 1e3, 2),
            "top": [{"kernel": name[:120], "count": count, "total_us": round(total / 1e3, 2)}
                    for name, (count, total) in ranked]}


def run(truth):
    if truth.args.backend != "cuda":
        return {"status": "skipped", "reason": "--backend cpu"}
    ncu = find_ncu()
    if ncu is None:
        return {"status": "skipped", "reason": "ncu not found"}
    onnx_dir = os.path.join(truth.work, "kernels")
    onnx = os.path.join(onnx_dir, "googlenet.onnx")
    if not os.path.exists(onnx):
        code, tail = truth.run([sys.executable, os.path.join(REPO, "tests", "onnx",
                                                             "export_torchvision.py"),
                                onnx_dir, "googlenet"], "kernels_export.log", 120)
        if code != 0 or not os.path.exists(onnx):
            return {"status": "failed", "exit": code, "output": tail}
    profile = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--metrics",
               "gpu__time_duration.sum", "--csv", "--print-units", "base"]
    sides = {
        "iosfarm": [truth.bin["iosfarm"], "run", onnx, "--backend", "cuda", "--sequential",
                    "--iterations", "3", "--warmup", "1", "--profiler-range"],
        "torch": [sys.executable, os.path.join(REPO, "bench", "torch_bench.py"), "--device",
                  "cuda", "--models", "googlenet", "--batches", "1", "--modes", "eager",
                  "--rounds", "1", "--repeats", "3", "--warmup", "2", "--profiler-range"],
    }
    result = {"status": "ok", "model": "googlenet (torchvision), batch 1, one eager forward"}
    for side, argv in sides.items():
        csv_path = os.path.join(truth.logs, f"kernels_{side}.csv")
        code, tail = truth.run(profile + ["--log-file", csv_path] + argv,
                               f"kernels_{side}.log", 150)
        kernels = []
        # The CSV goes to --log-file; read the program's log too in case
        # this ncu printed it there.
        for path in (csv_path, os.path.join(truth.logs, f"kernels_{side}.log")):
            if not kernels and os.path.exists(path):
                with open(path, errors="replace") as f:
                    kernels = parse_ncu_kernel_times(f.read())
        if code != 0 or not kernels:
            result["status"] = "failed"
            result[side] = {"exit": code, "kernels": len(kernels), "output": tail}
            continue
        result[side] = summarize_kernels(kernels)
        truth.say(f"kernels {side}: {result[side]['count']} kernels, "
                  f"{result[side]['total_us']:.1f} us")
    return result
