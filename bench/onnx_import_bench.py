#!/usr/bin/python3
"""ONNX import cost: wall time and peak memory of `iosfarm inspect FILE` per
model file, for one or more iosfarm binaries side by side (alternating rounds,
medians). Peak memory is the child's peak RSS (getrusage); "import x file" is
(peak RSS - the same binary's peak RSS on a zoo model, i.e. the process
without a file) / file size.

Usage: onnx_import_bench.py --binary NAME=PATH [--binary NAME=PATH ...]
                            [--rounds 3] FILE.onnx [FILE.onnx ...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def run(binary, model):
    """(wall seconds, peak RSS bytes) of `binary inspect model`."""
    start = time.monotonic()
    child = subprocess.Popen([binary, "inspect", model, "--format", "json"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    stderr = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{binary} inspect {model} failed: {stderr.strip()}")
    return wall, usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    binaries = [b.split("=", 1) for b in args.binary]
    baseline = {name: statistics.median(run(path, "squeezenet")[1] for _ in range(3))
                for name, path in binaries}
    print(f"{'model':28} {'file MB':>8} {'binary':>8} {'wall s':>8} {'peak MB':>8} "
          f"{'import x file':>14}")
    for model in args.files:
        size = os.path.getsize(model)
        walls = {name: [] for name, _ in binaries}
        peaks = {name: [] for name, _ in binaries}
        for _ in range(args.rounds):
            for name, path in binaries:
                wall, peak = run(path, model)
                walls[name].append(wall)
                peaks[name].append(peak)
        for name, _ in binaries:
            peak = statistics.median(peaks[name])
            print(f"{os.path.basename(model):28} {size / 1e6:8.1f} {name:>8} "
                  f"{statistics.median(walls[name]):8.2f} {peak / 1e6:8.1f} "
                  f"{(peak - baseline[name]) / size:14.2f}")


if __name__ == "__main__":
    main()
