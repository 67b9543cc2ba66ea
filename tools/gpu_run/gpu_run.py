#!/usr/bin/env python3
"""gpu_run: iosfarm's checks and figures on a machine with an NVIDIA GPU,
from one command under one deadline: correctness, the physical floor, the
farm, the search's bounds and the speed benchmark (tools/gpu_run/README.md).

Subcommands:
  bundle  (where the project builds, with the CUDA backend) Writes one
          tarball (default .gpu-run/bundle.tar.xz) holding the binaries, the
          shared libraries they need beyond the system's and CUDA's, the zoo
          checks' assets and the scripts a run calls (layout: bundle.py).
          Copy it to the GPU machine by any means.
  run     (on the GPU machine) Runs --steps from the bundle (--bundle FILE or
          an extracted bundle folder; by default the bundle this script lies
          in, else .gpu-run/bundle.tar.xz) or from a build folder as it is
          (--build DIR), and writes everything to --out DIR.

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

`run` writes to --out after every step (so a run cut off still leaves what
it did): truth.json (everything), truth.md (summary), truth.log and
logs.tar.gz (every step's output); `speed` adds gpu_bench's results.json,
table.md, gpu_bench.log and state.tar.gz. Work files (the extracted bundle,
schedules, latencies) stay in --work, which a later run reuses. Exit 0 when
every step that ran passed, 1 when a check failed, 3 when no GPU answers
(with --backend cuda).

--backend cpu runs the same steps on the CPU (floor and torchvision skipped;
the gtest suites' CUDA tests then skip): the smoke test
(gpu_run_smoke_test.py) runs it so that the tool itself is tested without a
GPU.
"""
import argparse
import os
import shutil
import sys
import time

import bundle
import exact_step
import search_step
import steps
from report import summary
from truth import Truth

REPO = bundle.REPO
STEPS = tuple(steps.STEPS)
DEFAULT_BUNDLE = os.path.join(REPO, ".gpu-run", "bundle.tar.xz")


def cmd_bundle(args):
    bundle.make(args.build, args.output)
    return 0


def cmd_run(args):
    truth = Truth(args)
    truth.say(f"gpu_run run: backend {args.backend}, steps {','.join(args.steps)}, "
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
            steps.start_torchvision(truth)
        if truth.remaining() < 5:
            truth.record(step, {"status": "not run", "reason": "deadline"})
            continue
        started = time.monotonic()
        try:
            result = steps.STEPS[step](truth)
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
    make = sub.add_parser("bundle", help="write the bundle to copy to the GPU machine")
    make.add_argument("--build", default=os.path.join(REPO, "build"),
                      help="the build folder (configured with the CUDA backend)")
    make.add_argument("-o", "--output", default=DEFAULT_BUNDLE,
                      help="the tarball to write (default .gpu-run/bundle.tar.xz)")
    run = sub.add_parser("run", help="run the checks (on the GPU machine)")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--bundle", help="the tarball of `bundle`, or an extracted bundle folder "
                       "(default: the bundle this script lies in, else "
                       ".gpu-run/bundle.tar.xz)")
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
    run.add_argument("--work", default=os.path.join(REPO, ".gpu-run", "work"),
                     help="work files, reused by a later run (default .gpu-run/work)")
    run.add_argument("--out", required=True,
                     help="the folder truth.json and the rest are written to")
    args = parser.parse_args(argv)
    if args.command == "bundle":
        return cmd_bundle(args)
    if not args.build and not args.bundle:
        args.bundle = REPO if bundle.is_bundle_dir(REPO) else DEFAULT_BUNDLE
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
