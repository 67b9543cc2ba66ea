#!/usr/bin/env python3
"""GPU schedule benchmark driver (issue 4): IOS vs PyTorch on one GPU.

Two subcommands (on a GPU machine from a bundle: tools/gpu_run/README.md,
whose `speed` step runs `run`):

  run     (on the GPU machine) One command, bounded by --deadline-s:
          exports the torchvision ONNX files (tests/onnx/export_torchvision.py)
          if a tv_* model is selected, then works through its list in order,
          batch by batch (all of batch 1 first): for each batch
          schedule_bench --backend cuda for each model and then the PyTorch
          items (bench/torch_bench.py: eager, CUDA graph, torch.compile; one
          process per model, 45-50 s each on an H200 with torch.compile; by
          default only the torchvision networks among --models, the ones a
          torch figure is compared with; --torch-models names others) (the
          search uses the cuda backend as oracle; schedules cached
          in WORK/schedules, stage latencies in the SQLite latency database
          WORK/latency.db (schedule_bench --latency-db), so a
          later search never measures a stage twice). Items done by an earlier
          command (WORK/results) are skipped, and an item stopped by the
          deadline or a search budget is tried again: running the same
          command again resumes the work. Finally merges WORK/results into
          results.json, prints the markdown table and writes results.json,
          table.md, gpu_bench.log and state.tar.gz (schedules and latency
          database) to --out. --seed DIR starts from such an --out folder (a
          fresh machine then resumes where the last one stopped).

  report  (anywhere) Merges results.json files (later files win for the same
          model and batch) and prints the table; --json FILE writes the merge.

Models (--models, in this default order):
  squeezenet inception_v3 tv_inception_v3 tv_googlenet randwire nasnet_a resnet50
where tv_inception_v3 and tv_googlenet are the torchvision ONNX exports (the
others are zoo models, graph/models); tv_inception_v3 after inception_v3
costs little: the zoo model is the same network, and nearly all its stage
latencies come from the cache.

Search bounds per model (--bounds MODEL=RxS[:B][|RxS[:B]...]): alternatives
are tried in order; when a search exceeds its budget (--search-budget
MODEL=SECONDS, of stage measurement per attempt) the next one is tried. A
schedule searched by an earlier command is reused.

The table's geomean is seq/IOS over inception_v3, randwire, nasnet_a and
squeezenet (the IOS paper's four models) at each batch; the paper's V100
batch-1 figure is (6.51/4.03 * 8.49/6.02 * 22.95/16.04 * 0.86/0.73)^(1/4).
"""
import argparse
import os
import sys

from gpu_bench_models import FLUSHED, GRAPH_TIMED, MODELS, default_torch_models
from gpu_bench_report import cmd_report, markdown
from gpu_bench_runner import cmd_run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What gpu_bench_smoke_test.py reads from this module.
__all__ = ["FLUSHED", "GRAPH_TIMED", "default_torch_models", "main", "markdown"]


def parse_map(text, convert):
    out = {}
    for item in filter(None, (text or "").split(",")):
        key, _, value = item.partition("=")
        if key not in MODELS or not value:
            raise SystemExit(f"bad item {item!r} (want MODEL=VALUE, MODEL one of "
                             f"{', '.join(MODELS)})")
        out[key] = convert(value)
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the benchmark (on the GPU machine)")
    run.add_argument("--bin", default=os.path.join(REPO, "build", "bench", "schedule_bench"),
                     help="the schedule_bench binary (default build/bench/schedule_bench)")
    run.add_argument("--backend", default="cuda", choices=("cuda", "cpu"),
                     help="cpu only for smoke tests")
    run.add_argument("--models", default=",".join(MODELS),
                     help="comma-separated, in this order by default: " + ", ".join(MODELS))
    run.add_argument("--batches", default="1,16")
    run.add_argument("--no-torch", action="store_true", help="skip torch_bench")
    run.add_argument("--torch-models", help="torchvision models for torch_bench (default: "
                     "those of the tv_* keys in --models)")
    run.add_argument("--torch-modes", default="eager,cuda_graph,compile")
    run.add_argument("--torch-repeats", type=int, default=50)
    run.add_argument("--torch-warmup", type=int, default=5)
    run.add_argument("--compile-mode", default="default", help="torch.compile mode")
    run.add_argument("--rounds", type=int, default=5)
    run.add_argument("--repeats", type=int, default=50, help="schedule_bench, batch 1")
    run.add_argument("--repeats-large-batch", type=int, default=20,
                     help="schedule_bench, batch > 1")
    run.add_argument("--bounds", help="MODEL=RxS[:B][|RxS[:B]...],... (module doc)")
    run.add_argument("--search-budget", help="MODEL=SECONDS,... per search attempt")
    run.add_argument("--no-verify", dest="verify", action="store_false")
    run.add_argument("--cpus", help="run schedule_bench and torch_bench pinned to these CPUs "
                     "(taskset -c, e.g. 2-3): eager runs are bounded by the host thread, whose "
                     "moves between cores may spread them; rows record it")
    run.add_argument("--graph-stages", action="store_true",
                     help="search with stages timed as CUDA graphs (schedule_bench "
                     "--cuda-graph-stages); rows are named MODEL" + GRAPH_TIMED)
    run.add_argument("--flush-l2", action="store_true",
                     help="with --graph-stages: each replay timed after an L2 flush "
                     "(schedule_bench --cuda-flush-l2); rows are named MODEL" + FLUSHED)
    run.add_argument("--deadline-s", type=float, default=500,
                     help="end the work after this many seconds (default 500)")
    run.add_argument("--min-item-s", type=float, default=40,
                     help="do not start an item with less time left")
    run.add_argument("--measure-reserve-s", type=float, default=30,
                     help="time kept for measuring after a search")
    run.add_argument("--redo", action="store_true", help="ignore results of earlier runs")
    run.add_argument("--retry-errors", action="store_true",
                     help="try again items that failed for another reason than time")
    run.add_argument("--seed", help="an earlier --out folder to start from")
    run.add_argument("--work", default=os.path.join(REPO, ".gpubench-work"))
    run.add_argument("--out", help="copy results.json, table.md, gpu_bench.log and "
                     "state.tar.gz to this folder")

    report = sub.add_parser("report", help="merge results and print the table")
    report.add_argument("files", nargs="+")
    report.add_argument("--json", help="write the merged results here")

    args = parser.parse_args(argv)
    if args.command == "report":
        return cmd_report(args)
    args.models = [m for m in args.models.split(",") if m]
    for key in args.models:
        if key not in MODELS:
            parser.error(f"unknown model {key!r} (want {', '.join(MODELS)})")
    args.batches = [int(b) for b in args.batches.split(",")]
    args.torch_models = ([m for m in args.torch_models.split(",") if m]
                         if args.torch_models is not None
                         else default_torch_models(args.models))
    args.torch_modes = args.torch_modes.split(",")
    args.bounds = parse_map(args.bounds, lambda v: v.split("|"))
    args.budgets = parse_map(args.search_budget, float)
    if args.flush_l2 and not args.graph_stages:
        parser.error("--flush-l2 needs --graph-stages")
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
