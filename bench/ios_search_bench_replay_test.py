#!/usr/bin/env python3
"""ios_search_bench --latency-db end to end: a search replayed on another
run's measurements is that run's search.

Usage: ios_search_bench_replay_test.py SCHEDULE_BENCH IOS_SEARCH_BENCH

schedule_bench measures squeezenet's stages on the cpu backend into a latency
database, exhaustively and then with the bounded search (as tools/gpu_run's
`exact` step does on a GPU). ios_search_bench replays both searches from that
database alone and must find the very latencies schedule_bench predicted. A
model whose stages the database lacks fails naming a stage; a device key it
lacks is named with the ones it holds; the replay's flags without
--latency-db are a usage error.
"""
import json
import os
import subprocess
import sys
import tempfile

FAILED = []


def check(ok, what):
    if not ok:
        FAILED.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=300)


def replay_row(stdout):
    """ios_search_bench --markdown's one model row -> {seq, greedy, ios} ms,
    or None."""
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 17 and cells[0] == "squeezenet":
            return {"sequential": float(cells[13]), "greedy": float(cells[14]),
                    "ios": float(cells[15])}
    return None


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    schedule_bench, ios_search_bench = sys.argv[1:]
    tiny = ["--backend", "cpu", "--models", "squeezenet", "--rounds", "1", "--repeats", "1",
            "--warmup", "0", "--threads", "1", "--search-min-repeats", "1",
            "--search-max-repeats", "2"]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "latency.db")
        predicted = {}
        for kind in ("exhaustive", "bounded"):
            out = os.path.join(tmp, f"{kind}.json")
            measured = run(schedule_bench, *tiny, "--latency-db", db, "--search", kind,
                           "--json", out)
            check(measured.returncode == 0,
                  f"schedule_bench {kind} exited {measured.returncode}: {measured.stderr}")
            if measured.returncode != 0:
                return 1
            with open(out) as f:
                predicted[kind] = json.load(f)["models"][0]["predicted_ms"]
        # --threads 1: the cpu backend's one core, its core bound's setting.
        # Two search threads share the replay's database (one lookup at a
        # time) and find the same.
        for kind, extra in (("exhaustive", []), ("bounded", ["--cores", "1"]),
                            ("bounded", ["--cores", "1", "--threads", "2"])):
            replay = run(ios_search_bench, "--models", "squeezenet", "--bounds", "3x8",
                         "--search", kind, "--latency-db", db, "--markdown", *extra)
            check(replay.returncode == 0,
                  f"replay {kind} exited {replay.returncode}: {replay.stdout} {replay.stderr}")
            row = replay_row(replay.stdout)
            check(row is not None, f"replay {kind}: no squeezenet row: {replay.stdout}")
            if row:
                # Printed with 3 decimals (the baselines) and 4 (IOS).
                for key, within in (("sequential", 6e-4), ("greedy", 6e-4), ("ios", 6e-5)):
                    check(abs(row[key] - predicted[kind][key]) < within,
                          f"replay {kind} {key}: {row[key]} against schedule_bench's "
                          f"{predicted[kind][key]}")
        missing = run(ios_search_bench, "--models", "resnet50", "--bounds", "3x8",
                      "--latency-db", db, "--markdown")
        check(missing.returncode != 0 and "is not in the latency database under 'cpu|" in
              missing.stdout, f"a stage the database lacks: {missing.stdout}")
        bad_key = run(ios_search_bench, "--models", "squeezenet", "--bounds", "3x8",
                      "--latency-db", db, "--device-key", "cuda|H200|v1")
        # (v1: this build's signature version, bench_latency_cache.h)
        check(bad_key.returncode != 0 and "no device key 'cuda|H200|v1'; it holds 'cpu|" in
              bad_key.stdout, f"a device key the database lacks: {bad_key.stdout}")
        usage = run(ios_search_bench, "--cores", "2")
        check(usage.returncode == 2 and "need --latency-db" in usage.stderr,
              f"--cores without --latency-db: exit {usage.returncode}: {usage.stderr}")
    print("ios_search_bench replay: " + ("FAILED" if FAILED else "ok"))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
