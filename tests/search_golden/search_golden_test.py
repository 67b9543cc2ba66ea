#!/usr/bin/env python3
"""The IOS search gives the same schedules and statistics as recorded.

Runs `iosfarm search MODEL --backend sim:h100` (deterministic: the sim
backend's model) for each case and compares
  - the schedule JSON it writes (-o) with expected/<case>.schedule.json,
    exactly, and
  - its --format json report with expected/<case>.report.json, every field
    but the wall time and the counts of walks shared between threads;
and `ios_search_bench --markdown` (the analytic oracle) with
expected/analytic_<search>.md, every column but time and memory.

A change that alters a schedule or a statistic on purpose regenerates the
files with --update (and says why in its commit). `--cases all` adds the
NASNets (minutes of CPU; not run by CTest).

Usage: search_golden_test.py --iosfarm BIN --ios-search-bench BIN
           [--cases ci|all] [--update] [--expected DIR]
Exit 0 when everything matches, 1 on a difference (each one named), 2 on
bad usage.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CI_MODELS = ["squeezenet", "inception_v3", "resnet50", "randwire"]
ALL_MODELS = CI_MODELS + ["nasnet_a_mobile", "nasnet_a"]
ANALYTIC = {
    "bounded": (["squeezenet", "inception_v3", "resnet50", "randwire"], "1x3,2x4,3x8"),
    "exhaustive": (["squeezenet", "inception_v3", "resnet50", "randwire"], "1x3,2x4,3x8"),
}
# Report fields that vary from run to run or with the machine's threads.
VOLATILE_REPORT = {"search_seconds"}
VOLATILE_STATS = {"shared_walk_blocks", "shared_bound_walk_blocks"}
# Columns of ios_search_bench's table that are time or memory.
VOLATILE_COLUMNS = {"search CPU s", "search wall s", "peak RSS MiB"}
SEARCH_THREADS = "2"


def normalized_report(report):
    out = {k: v for k, v in report.items() if k not in VOLATILE_REPORT}
    out["stats"] = {k: v for k, v in report["stats"].items() if k not in VOLATILE_STATS}
    return out


def normalized_table(markdown):
    lines = [l for l in markdown.splitlines() if l.startswith("|")]
    if not lines:
        raise ValueError("no markdown table in ios_search_bench's output")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    keep = [i for i, name in enumerate(header) if name not in VOLATILE_COLUMNS]
    rows = []
    for line in [lines[0]] + lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append("| " + " | ".join(cells[i] for i in keep) + " |")
    return "\n".join(rows) + "\n"


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def differences(expected, actual, path=""):
    """Yields 'path: expected X, got Y' for every leaf that differs."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                yield f"{path}/{key}: missing"
            elif key not in expected:
                yield f"{path}/{key}: not expected (got {json.dumps(actual[key])[:80]})"
            else:
                yield from differences(expected[key], actual[key], f"{path}/{key}")
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            yield f"{path}: {len(expected)} entries expected, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from differences(e, a, f"{path}[{i}]")
    elif expected != actual:
        yield f"{path}: expected {json.dumps(expected)[:80]}, got {json.dumps(actual)[:80]}"


def check_or_update(name, expected_path, actual_text, update, failures):
    if update:
        with open(expected_path, "w") as f:
            f.write(actual_text)
        print(f"updated {expected_path}")
        return
    if not os.path.exists(expected_path):
        failures.append(f"{name}: no expected file {expected_path} (run with --update)")
        return
    with open(expected_path) as f:
        expected_text = f.read()
    if expected_text == actual_text:
        print(f"ok {name}")
        return
    if expected_path.endswith(".json"):
        diffs = list(differences(json.loads(expected_text), json.loads(actual_text)))
    else:
        e, a = expected_text.splitlines(), actual_text.splitlines()
        diffs = [f"line {i + 1}: expected {x!r}, got {y!r}"
                 for i, (x, y) in enumerate(zip(e, a)) if x != y]
        if len(e) != len(a):
            diffs.append(f"{len(e)} lines expected, got {len(a)}")
    failures.append(f"{name}: differs from {expected_path}:\n  " + "\n  ".join(diffs[:20]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iosfarm", required=True)
    parser.add_argument("--ios-search-bench", required=True)
    parser.add_argument("--cases", choices=["ci", "all"], default="ci")
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--expected",
                        default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "expected"))
    args = parser.parse_args()
    for binary in (args.iosfarm, args.ios_search_bench):
        if not os.access(binary, os.X_OK):
            print(f"search_golden_test: {binary} is not an executable", file=sys.stderr)
            return 2
    os.makedirs(args.expected, exist_ok=True)
    failures = []
    models = CI_MODELS if args.cases == "ci" else ALL_MODELS
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            name = f"{model}.sim_h100"
            schedule = os.path.join(tmp, f"{name}.schedule.json")
            try:
                report = json.loads(run([args.iosfarm, "search", model, "--backend", "sim:h100",
                                         "--search-threads", SEARCH_THREADS, "--format", "json",
                                         "-o", schedule]))
            except (RuntimeError, json.JSONDecodeError) as e:
                failures.append(f"{name}: {e}")
                continue
            with open(schedule) as f:
                schedule_text = f.read()
            check_or_update(f"{name} schedule", os.path.join(args.expected,
                                                              f"{name}.schedule.json"),
                            schedule_text, args.update, failures)
            check_or_update(f"{name} report", os.path.join(args.expected, f"{name}.report.json"),
                            json.dumps(normalized_report(report), indent=1, sort_keys=True) + "\n",
                            args.update, failures)
    for search, (analytic_models, bounds) in ANALYTIC.items():
        name = f"analytic_{search}"
        try:
            table = normalized_table(run([args.ios_search_bench, "--models",
                                          ",".join(analytic_models), "--bounds", bounds,
                                          "--search", search, "--markdown"]))
        except (RuntimeError, ValueError) as e:
            failures.append(f"{name}: {e}")
            continue
        check_or_update(name, os.path.join(args.expected, f"{name}.md"), table, args.update,
                        failures)
    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
