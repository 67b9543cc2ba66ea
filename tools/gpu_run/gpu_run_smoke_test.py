#!/usr/bin/env python3
"""Smoke test of the GPU run tool, on the CPU (CTest gpu_run_smoke).

Usage: gpu_run_smoke_test.py BUILD_DIR

The tool (tools/gpu_run/gpu_run.py) and the bundle it runs from
(bundle.py) are tested here, without a GPU, on the cpu backend:
  - `bundle.make` writes the tarball of the binaries, their libraries, one
    zoo model's assets and the scripts; extracted, every library the
    binaries need beyond the system's resolves inside the bundle (what the
    GPU machine lacks must travel);
  - `gpu_run.py run --bundle TARBALL --backend cpu` runs env, tests, zoo,
    farm, search, exact, runtime and speed on squeezenet: every step
    passes, the test suites ran tests, the zoo outputs match the cpu
    reference, the second farm submission profiled nothing, the speed step
    wrote gpu_bench's results;
  - the extracted bundle's own gpu_run.py runs from it with no --bundle;
  - with --backend cuda where no GPU answers it exits 3 saying why.
"""
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bundle  # noqa: E402
import exact_step  # noqa: E402
import farm_step  # noqa: E402
import kernels_step  # noqa: E402
import search_step  # noqa: E402


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}", file=sys.stderr)
        sys.exit(1)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    # The farm check names a GPU worker's phases by "/gpu" (the first H200 run
    # looked for "/device" only, a CPU worker's, and found none).
    check([r for r in ("w/gpu", "w/device", "w/cpu", "server-cpu/0")
           if farm_step.is_device_resource(r)] == ["w/gpu", "w/device"],
          "is_device_resource tells measuring devices from CPUs")
    # The cuda backend's debug line (profile_breakdown.h), the last one wins.
    log = ("[debug] cuda profile breakdown: 256 stages, ms per stage: instantiate 2.000 "
           "capture 0.000 sizing 0.200 samples 1.500 release 0.500 total 4.200\n"
           "[info] something else\n"
           "[2026-11-26 07:00:00.000] [debug] cuda profile breakdown: 300 stages, ms per stage: "
           "instantiate 1.000 capture 0.000 sizing 0.100 samples 1.000 release 0.250 "
           "total 2.350\n")
    breakdown = farm_step.parse_profile_breakdown(log)
    check(breakdown == {"stages": 300, "instantiate": 1.0, "capture": 0.0, "sizing": 0.1,
                        "samples": 1.0, "release": 0.25, "total": 2.35}, f"breakdown {breakdown}")
    check(farm_step.parse_profile_breakdown("[info] no such line\n") is None,
          "no breakdown without the line")
    # A farm step with too little of the deadline left does not start (one
    # started with 32 s left would end at the deadline, not at a check).
    with tempfile.TemporaryDirectory() as work:
        short = types.SimpleNamespace(work=work, env={}, remaining=lambda: 30.0,
                                      args=types.SimpleNamespace(backend="cpu"))
        row = farm_step.Farm(short).run()
        check(row == {"status": "not run", "reason": "30 s left"}, f"farm with 30 s left: {row}")
    # The kernels step's parser, on ncu's CSV layout (--csv --print-units
    # base), after the lines a profiled program prints first.
    ncu_csv = "\n".join([
        "==PROF== Connected to process 1 (/bin/iosfarm)",
        "latency   median 2.3 ms",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"',
        '"0","1","iosfarm","h","sm90_xmma_fprop","1","13","(128, 1, 1)","(8, 1, 1)","0","9.0",'
        '"Command line profiler metrics","gpu__time_duration.sum","nsecond","4,128"',
        '"1","1","iosfarm","h","pool_kernel","1","13","(256, 1, 1)","(4, 1, 1)","0","9.0",'
        '"Command line profiler metrics","gpu__time_duration.sum","usecond","2.5"',
        '"2","1","iosfarm","h","sm90_xmma_fprop","1","13","(128, 1, 1)","(8, 1, 1)","0","9.0",'
        '"Command line profiler metrics","gpu__time_duration.sum","nsecond","3872"'])
    kernels = kernels_step.parse_ncu_kernel_times(ncu_csv)
    check(kernels == [("sm90_xmma_fprop", 4128.0), ("pool_kernel", 2500.0),
                      ("sm90_xmma_fprop", 3872.0)], f"ncu CSV parsed: {kernels}")
    summary = kernels_step.summarize_kernels(kernels)
    check(summary["count"] == 3 and summary["total_us"] == 10.5 and
          summary["top"][0] == {"kernel": "sm90_xmma_fprop", "count": 2, "total_us": 8.0},
          f"kernel summary: {summary}")
    check(kernels_step.parse_ncu_kernel_times("no profile here") == [], "no CSV, no kernels")
    # The search step's run list and the progress a run cut off leaves.
    check(search_step.parse_runs(search_step.DEFAULT_RUNS) ==
          [("inception_v3", "floor"), ("inception_v3", "no-floor"), ("randwire", "floor")],
          "default search runs")
    for bad in ("randwire", "randwire:fast", ":floor"):
        try:
            search_step.parse_runs(bad)
            check(False, f"search run {bad!r} accepted")
        except ValueError as e:
            check(repr(bad) in str(e), f"the error names {bad!r}: {e}")
    check(search_step.last_progress(
        "search: 0/20 blocks solved, 0 stages measured, 1ms\n[warn] x\n"
        "search: 2/20 blocks solved, 7927 stages measured, 1m40s\n") ==
        "search: 2/20 blocks solved, 7927 stages measured, 1m40s", "last progress line")
    check(search_step.last_progress("nothing\n") is None, "no progress line")
    check(exact_step.parse_entries("inception_v3, randwire:graph,") ==
          [("inception_v3", False), ("randwire", True)], "exact entries")
    try:
        exact_step.parse_entries("inception_v3:eager")
        check(False, "exact entry with an unknown mode accepted")
    except ValueError as e:
        check("inception_v3:eager" in str(e), f"exact entry error: {e}")
    row = exact_step.compare_rows(
        {"predicted_ms": {"ios": 10.0}, "search": {"stages_measured": 1000}},
        {"predicted_ms": {"ios": 10.05}, "search": {"stages_measured": 20, "stages_cached": 230,
                                                     "lower_bound_misses": 3,
                                                     "largest_bound_miss_ms": 0.01}})
    check(row["ratio"] == 4.0 and row["difference_pct"] == 0.5 and row["bounded_cached"] == 230,
          f"exact row: {row}")
    audit = search_step.parse_audit(
        "backend cpu: CPU; floor: none\n| model | endings | raised | below | merges | "
        "inconsistent | measured |\n| --- | --- | --- | --- | --- | --- | --- |\n"
        "| inception_v3 | 667 | 194 | 7 (94.129 us, 7.9 %) | 0 (0.000 us, 0.0 %) | 1 | 458 |\n")
    check(audit == {"inception_v3": {
        "endings": 667, "raised": 194, "below": 7, "largest_below_us": 94.129,
        "largest_below_share_pct": 7.9, "merge_below": 0, "largest_merge_us": 0.0,
        "largest_merge_share_pct": 0.0, "inconsistent": 1, "measured": 458}},
        f"bound audit parsed: {audit}")
    audit = search_step.parse_audit(
        "| model | endings | raised | below | merges | sub-stages | inconsistent | measured |\n"
        "| randwire | 1401 | 0 | 0 (0.000 us, 0.0 %) | 2 (1.500 us, 3.0 %) | "
        "5 (12.250 us, 20.5 %) | 0 | 225 |\n")
    check(audit == {"randwire": {
        "endings": 1401, "raised": 0, "below": 0, "largest_below_us": 0.0,
        "largest_below_share_pct": 0.0, "merge_below": 2, "largest_merge_us": 1.5,
        "largest_merge_share_pct": 3.0, "sub_below": 5, "largest_sub_us": 12.25,
        "largest_sub_share_pct": 20.5, "inconsistent": 0, "measured": 225}},
        f"bound audit with sub-stages parsed: {audit}")
    with tempfile.TemporaryDirectory() as tmp:
        tarball, work, out = (os.path.join(tmp, d) for d in ("bundle.tar.xz", "work", "out"))
        manifest = bundle.make(build, tarball, require_cuda=False, models=("squeezenet",))
        check("iosfarm" in manifest["binaries"], f"manifest: {manifest}")
        for script in ("tools/gpu_run/gpu_run.py", "tools/gpu_run/steps.py",
                       "bench/gpu_bench.py", "bench/gpu_bench_runner.py", "bench/torch_bench.py",
                       "tests/onnx/export_torchvision.py"):
            check(script in manifest["scripts"], f"{script} not in the bundle: {manifest}")
        check(not any(s.endswith("_test.py") for s in manifest["scripts"]),
              f"tests in the bundle: {manifest['scripts']}")
        bin_dir, assets, _, env = bundle.unpack(tarball, work)
        root = os.path.join(work, "bundle", bundle.BUNDLE_DIR)
        lib_dir = os.path.join(root, "lib")
        for name in manifest["binaries"]:
            ldd = subprocess.run(["ldd", os.path.join(bin_dir, name)], capture_output=True,
                                 text=True, env=env).stdout
            for line in ldd.splitlines():
                parts = line.split()
                if not parts or parts[0].startswith(bundle.SYSTEM_LIBS) or "=>" not in parts:
                    continue
                check(line.split("=>")[1].strip().startswith(lib_dir),
                      f"{name}: {line.strip()} does not resolve inside the bundle")
        check(os.path.exists(os.path.join(assets, "zoo", "squeezenet.ios.json")),
              "no squeezenet schedule in the assets")

        run = subprocess.run(
            [sys.executable, os.path.join(HERE, "gpu_run.py"), "run", "--bundle", tarball,
             "--backend", "cpu", "--steps",
             "env,tests,zoo,farm,search,exact,runtime,kernels,speed",
             "--exact-models", "squeezenet,squeezenet:graph",
             "--zoo-models", "squeezenet", "--search-runs", "squeezenet:floor,squeezenet:no-floor",
             "--audit-models", "squeezenet", "--farm-models", "squeezenet", "--farm-batch", "2",
             "--speed-models", "squeezenet",
             "--speed-args", "--rounds 1 --repeats 2 --no-torch", "--work", work, "--out", out,
             "--deadline-s", "400"], capture_output=True, text=True, timeout=450)
        print(run.stdout[-4000:])
        check(run.returncode == 0, f"gpu_run.py run exited {run.returncode}: "
              f"{run.stderr[-2000:]}")
        for name in ("truth.json", "truth.md", "truth.log", "logs.tar.gz", "results.json",
                     "table.md"):
            check(os.path.exists(os.path.join(out, name)), f"{name} missing from --out")
        with open(os.path.join(out, "truth.json")) as f:
            steps = json.load(f)["steps"]
        for step in ("env", "tests", "zoo", "farm", "search", "exact", "runtime", "speed"):
            check(steps[step]["status"] == "ok", f"step {step}: {steps[step]}")
        check(steps["kernels"]["status"] == "skipped", f"kernels on the cpu: {steps['kernels']}")
        suites = steps["tests"]["suites"]
        check(suites["runtime_test"]["passed"] > 0, f"runtime_test ran nothing: {suites}")
        eager = steps["zoo"]["models"]["squeezenet"]["eager"]
        check(eager["verified"] is True and eager["max_abs_error_vs_cpu"] <= 1e-3,
              f"zoo squeezenet: {eager}")
        searches = steps["search"]["runs"]
        for name in ("squeezenet:floor", "squeezenet:no-floor"):
            row = searches[name]
            check(row["status"] == "ok" and row["stages_measured"] > 0 and row["ios_ms"] > 0
                  and row["lower_bound_misses"] >= 0 and row["device_key"] == "cpu",
                  f"search {name}: {row}")
        check("squeezenet: floor vs no-floor" in steps["search"]["compare"],
              f"search comparison: {steps['search']}")
        audited = steps["search"]["audit"]
        check(audited["status"] == "ok" and audited["models"]["squeezenet"]["endings"] > 0 and
              audited["models"]["squeezenet"]["measured"] > 0, f"bound audit: {audited}")
        # The measurements come back for offline studies: the audit's stages
        # and the exact step's latency database.
        with tarfile.open(os.path.join(out, "logs.tar.gz")) as tar:
            names = set(tar.getnames())
        for name in ("logs/bound_audit_stages.jsonl", "logs/exact_squeezenet.db"):
            check(name in names, f"{name} missing from logs.tar.gz")
        # The exact step: the bounded search on the exhaustive one's latency
        # database finds its stages there (the cpu's one-core group runs
        # aside) and the exhaustive latency within the misses' cost.
        exact = steps["exact"]["models"]
        row = exact["squeezenet"]
        check(row["status"] == "ok" and row["exhaustive_stages"] > 0 and
              0 < row["bounded_cached"] <= row["exhaustive_stages"] and
              row["bounded_ios_ms"] > 0 and abs(row["difference_pct"]) < 5, f"exact: {row}")
        check(exact["squeezenet:graph"]["status"] == "skipped", f"exact graph on cpu: {exact}")
        with open(os.path.join(out, "truth.md")) as f:
            text = f.read()
        check("squeezenet:no-floor:" in text, "truth.md lacks the search runs")
        check("bounded on the same latencies" in text, "truth.md lacks the exact step")
        jobs = steps["farm"]["jobs"]
        check(jobs["squeezenet (first)"]["profiled_stages"] > 0, f"farm: {jobs}")
        check(jobs["squeezenet (again)"]["profiled_stages"] == 0, f"farm: {jobs}")
        check(all(job["batch"] == 2 for job in jobs.values()), f"farm jobs at batch 2: {jobs}")
        check(steps["farm"]["tune"]["exit"] == 0, f"farm tune at batch 2: {steps['farm']['tune']}")
        check(steps["farm"]["gpu_phases"] > 0 and not steps["farm"]["gpu_overlaps"],
              f"farm timeline: {steps['farm']}")
        seconds = steps["farm"]["phase_seconds"]
        check(len(seconds) >= 2 and all(s["span_s"] > 0 and s.get("measure", 0) > 0
                                        for s in seconds.values()),
              f"farm phase seconds per job: {seconds}")

        # The extracted bundle runs itself: its own gpu_run.py, no --bundle,
        # no checkout.
        own = os.path.join(root, "tools", "gpu_run", "gpu_run.py")
        alone = subprocess.run(
            [sys.executable, own, "run", "--backend", "cpu", "--steps", "env,runtime", "--work",
             os.path.join(tmp, "work-alone"), "--out", os.path.join(tmp, "out-alone")],
            capture_output=True, text=True, timeout=120, cwd=tmp)
        check(alone.returncode == 0, f"the extracted bundle's gpu_run.py exited "
              f"{alone.returncode}: {alone.stdout[-1000:]} {alone.stderr[-1000:]}")
        with open(os.path.join(tmp, "out-alone", "truth.json")) as f:
            doc = json.load(f)
        check(doc["bundle"].get("commit") == manifest["commit"] and
              doc["steps"]["runtime"]["status"] == "ok", f"run from the extracted bundle: {doc}")

        cuda = subprocess.run(
            [sys.executable, os.path.join(HERE, "gpu_run.py"), "run", "--bundle", tarball,
             "--steps", "env", "--work", work, "--out", os.path.join(tmp, "out-cuda")],
            capture_output=True, text=True, timeout=120)
        if cuda.returncode != 0:  # a GPU answers: the env step passes and exits 0
            check(cuda.returncode == 3 and "no CUDA device" in cuda.stdout,
                  f"--backend cuda without a GPU: exit {cuda.returncode}: {cuda.stdout[-1000:]}")
    print("gpu_run smoke: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
