#!/usr/bin/env python3
"""Smoke test of the one-call GPU run, on the CPU (CTest gpu_run_smoke).

Usage: gpu_run_smoke_test.py BUILD_DIR

The GPU machine is lent rarely and for 15 minutes, so the script it runs
(tools/gpu_run/gpu_run.py) and the bundle it runs from (tools/gpu_run/bundle.py) are
tested here, on the cpu backend:
  - `bundle.make` packs the binaries, their libraries and one zoo model's
    assets; unpacked, every library the binaries need beyond the system's
    resolves inside the bundle (what the GPU image lacks must travel);
  - `gpu_run.py run --bundle ... --backend cpu` runs env, tests, zoo, farm,
    runtime and speed on squeezenet: every step passes, the test suites ran tests,
    the zoo outputs match the cpu reference, the second farm submission
    profiled nothing, the speed step wrote gpu_bench's results;
  - `chain.sh` chains runs and tars each into $OUT/runs.tar.gz as it ends;
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
import bound_fit  # noqa: E402
import bundle  # noqa: E402
import exact_step  # noqa: E402
import farm_step  # noqa: E402
import kernels_step  # noqa: E402
import search_step  # noqa: E402


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}", file=sys.stderr)
        sys.exit(1)


def check_bound_fit():
    """bound_fit.py on stages whose fits are known: groups a (1 ms) and b
    (3 ms) alone, a|b in 3.5 ms, c (2 ms) alone, a|c in 2.5 ms: P = the
    largest sum / ms = 3 / 2.5 (a|c), gamma = the least (ms - slowest) /
    (sum - slowest) = 0.5 (a|b: 0.5 / 1, a|c: 0.5 / 1)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "stages.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps({"backend": "sim", "device": "d", "floor": "", "batch": 1,
                                "r": 3, "s": 8, "block_size": 4}) + "\n")
            for groups, ms in (([[0]], 1.0), ([[1]], 3.0), ([[0], [1]], 3.5), ([[2]], 2.0),
                               ([[0], [2]], 2.5), ([[0, 1]], 9.0)):
                f.write(json.dumps({"model": "m", "strategy": "concurrent", "groups": groups,
                                    "ms": ms, "kernels": [1] * len(groups)}) + "\n")
            f.write('{"model": "m", "strat')  # a run cut off mid-line
        header, models = bound_fit.load(path)
        rows = sorted(bound_fit.studied(models["m"]), key=lambda r: r["ms"])
        check([(r["slowest"], r["sum"], r["kernels"]) for r in rows] == [(2.0, 3.0, 2),
                                                                        (3.0, 4.0, 2)],
              f"bound_fit studied: {rows}")
        check(abs(bound_fit.fit_parallelism(rows) - 3 / 2.5) < 1e-12, "bound_fit P")
        check(abs(bound_fit.fit_overlap(rows) - 0.5) < 1e-12, "bound_fit gamma")
        # A host bound of 1.2 ms a kernel: 2.4 ms raises a|c above its
        # slowest group (2 ms) and stays under its 2.5 ms, and stays under
        # a|b's slowest group (3 ms); mean share (3 / 3.5 + 2.4 / 2.5) / 2.
        # At 2 ms a kernel: 4 ms, above both groups and both latencies.
        args = bound_fit.parse_args([path, "--launch-us", "1200"])
        lines = bound_fit.report(header, models, args)
        check("| m | host: 0 + K x 1200 + G x 0 us |  | 1 | 0 |  | 0.909 |" in lines,
              f"bound_fit host row: {lines}")
        args = bound_fit.parse_args([path, "--launch-us", "2000"])
        check(any(line.startswith("| m | host: 0 + K x 2000 + G x 0 us |  | 2 | 2 |")
                  for line in bound_fit.report(header, models, args)),
              "bound_fit: a host bound above every latency is counted below")
        # gpu_truth's audit takes the host bound from its floor step, where
        # it ran.
        fitted = search_step.fit_bounds(path, {"status": "ok", "launch_host_us": 1200.0,
                                                    "fork_join_host_per_group_us": -0.5})
        check("| m | host: 0 + K x 1200 + G x 0 us |  | 1 | 0 |  | 0.909 |" in fitted,
              f"fit_bounds with a floor step: {fitted}")
        check(not any("host:" in line for line in search_step.fit_bounds(path, {})),
              "fit_bounds without a floor step has no host row")


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
    # A farm step with too little of the deadline left does not start (the
    # fifth H200 run's call 1 started one with 32 s left and called the
    # deadline a failure).
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
    check_bound_fit()
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
        bundle_dir, work, out = (os.path.join(tmp, d) for d in ("bundle", "work", "out"))
        manifest = bundle.make(build, bundle_dir, require_cuda=False, models=("squeezenet",))
        check("iosfarm" in manifest["binaries"], f"manifest: {manifest}")
        bin_dir, assets, _, env = bundle.unpack(bundle_dir, work)
        lib_dir = os.path.join(work, "bundle", "lib")
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
            [sys.executable, os.path.join(HERE, "gpu_run.py"), "run", "--bundle", bundle_dir,
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
        check(any(line.startswith("| squeezenet | slowest group alone |")
                  for line in audited.get("fit", [])), f"bound_fit on the audit: {audited}")
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

        # chain.sh: two runs, each tarred into $OUT/runs.tar.gz as it ends;
        # a malformed run spec is refused before anything runs.
        chain_out, scratch = os.path.join(tmp, "chain-out"), os.path.join(tmp, "scratch")
        os.makedirs(chain_out)
        chain_env = dict(os.environ, OUT=chain_out, GPU_CHAIN_SCRATCH=scratch)
        spec = f"--bundle|{bundle_dir}|--backend|cpu|--steps|env|--work|{work}"
        chain = subprocess.run(
            [os.path.join(HERE, "chain.sh"), f"one:60:{spec}", f"two:60:{spec}"],
            capture_output=True, text=True, timeout=180, env=chain_env)
        check(chain.returncode == 0, f"chain.sh exited {chain.returncode}: "
              f"{chain.stdout[-1000:]} {chain.stderr[-1000:]}")
        with tarfile.open(os.path.join(chain_out, "runs.tar.gz")) as tar:
            names = set(tar.getnames())
        for name in ("./one.log", "./one/truth.json", "./two.log", "./two/truth.json"):
            check(name in names, f"{name} missing from runs.tar.gz: {sorted(names)}")
        bad = subprocess.run([os.path.join(HERE, "chain.sh"), "three:soon:--steps|env"],
                             capture_output=True, text=True, timeout=30, env=chain_env)
        check(bad.returncode == 2 and "NAME:DEADLINE_S:FLAGS" in bad.stderr,
              f"chain.sh with a bad spec: exit {bad.returncode}: {bad.stderr}")

        cuda = subprocess.run(
            [sys.executable, os.path.join(HERE, "gpu_run.py"), "run", "--bundle", bundle_dir,
             "--steps", "env", "--work", work, "--out", os.path.join(tmp, "out-cuda")],
            capture_output=True, text=True, timeout=120)
        if cuda.returncode != 0:  # a GPU answers: the env step passes and exits 0
            check(cuda.returncode == 3 and "no CUDA device" in cuda.stdout,
                  f"--backend cuda without a GPU: exit {cuda.returncode}: {cuda.stdout[-1000:]}")
    print("gpu_truth smoke: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
