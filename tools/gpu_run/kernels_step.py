"""The `kernels` step's helpers for gpu_run.py: Nsight Compute's command
line and its per-kernel times, summed by kernel name."""
import csv
import glob
import shutil


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
