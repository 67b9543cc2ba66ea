#!/usr/bin/env python3
"""schedule_bench end to end on the cpu backend with tiny settings.

Usage: schedule_bench_test.py SCHEDULE_BENCH

A second run answers every stage from the first run's latency database
(--latency-db, a SQLite file) and measures none; the old flag name
--latency-cache still works; bad arguments exit 2, failures exit 1 with one
line naming what failed.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

FAILED = []


def check(ok, what):
    if not ok:
        FAILED.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def run(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    tiny = ["--models", "squeezenet:1x2", "--rounds", "1", "--repeats", "1", "--warmup", "0",
            "--threads", "1", "--search-min-repeats", "1", "--search-max-repeats", "2"]
    search = re.compile(r"search [0-9.]+ s wall, (\d+) stages measured, (\d+) from the latency "
                        r"database")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "latency.db")
        result = os.path.join(tmp, "result.json")
        first = run(binary, *tiny, "--latency-db", db, "--json", result)
        check(first.returncode == 0, f"first run exited {first.returncode}: {first.stderr}")
        counts = search.search(first.stdout)
        check(counts is not None, f"first run: no search line: {first.stdout}")
        if counts:
            check(int(counts.group(1)) > 0 and int(counts.group(2)) == 0,
                  f"first run must measure every stage: {counts.group(0)}")
        with open(result) as f:
            doc = json.load(f)
        check(doc["models"][0]["search"]["stages_measured"] > 0, "JSON: stages_measured")
        # How often real measurements broke the bounded search's assumption.
        misses = doc["models"][0]["search"].get("lower_bound_misses")
        check(isinstance(misses, int) and misses >= 0 and
              doc["models"][0]["search"].get("largest_bound_miss_ms", -1) >= 0,
              f"JSON: bound misses: {doc['models'][0]['search']}")
        check(re.search(r"\d+ below their lower bound, by at most [0-9.]+ ms", first.stdout),
              f"search line names the bound misses: {first.stdout}")

        second = run(binary, *tiny, "--latency-cache", db)
        check(second.returncode == 0, f"second run exited {second.returncode}: {second.stderr}")
        again = search.search(second.stdout)
        check(again is not None, f"second run: no search line: {second.stdout}")
        if counts and again:
            check(int(again.group(1)) == 0 and again.group(2) == counts.group(1),
                  f"second run must answer every stage from the database: {again.group(0)}")

        unknown = run(binary, "--models", "no_such_model")
        check(unknown.returncode == 2, f"unknown model exited {unknown.returncode}")
        check("model 'no_such_model' is neither a zoo model" in unknown.stderr,
              f"unknown model message: {unknown.stderr}")
        check(run(binary, "--rounds", "zero").returncode == 2, "bad --rounds must exit 2")

        text = os.path.join(tmp, "latency_cache.txt")
        with open(text, "w") as f:
            f.write("cpu|x|v1\t000000000000002a\t1.5\n")
        old = run(binary, *tiny, "--latency-db", text)
        check(old.returncode == 1, f"a text cache file exited {old.returncode}")
        check(old.stderr.count("\n") == 1 and "--latency-db" in old.stderr and text in old.stderr,
              f"a text cache file: one line naming the flag and the file: {old.stderr}")
    if FAILED:
        return 1
    print("schedule_bench test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
