#!/usr/bin/env python3
"""PyTorch baselines for the GPU schedule benchmark (issue 4).

Times torchvision inception_v3 and googlenet -- the very architectures that
tests/onnx/export_torchvision.py exports to ONNX (random weights, eval mode,
aux_logits off, init_weights off, 299x299 resp. 224x224 input) -- three ways:

  eager       the module as is, torch.backends.cudnn.benchmark = True
  cuda_graph  one forward pass captured with torch.cuda.graph on static input
              and output tensors, timed as CUDAGraph.replay() (cuda only)
  compile     torch.compile(model, mode=--compile-mode, dynamic=False); the
              default mode is 'default' (Inductor fusions, convolutions left
              to cuDNN, no CUDA graphs), chosen because 'max-autotune*'
              spends minutes per model and batch on autotuning, which a run
              bounded to minutes cannot afford. Compile time is
              reported separately and never timed as inference.

Protocol (the same as bench/schedule_bench's): per model and batch, the
modes run round-robin for --rounds rounds (the order rotates each round);
each call is --warmup untimed runs then --repeats timed runs. On cuda each run
is timed with a pair of CUDA events on the current stream (synchronised once
per call); on cpu with time.perf_counter. Reported per mode: median over
rounds of the round medians, and of the round p10 / p90 (ms).

Precision: fp32 with TF32 off (cuDNN and cuBLAS), like the iosfarm cuda
backend's default; --tf32 turns it on. Inference under torch.no_grad().

Usage:
  torch_bench.py [--device cuda|cpu] [--models googlenet,inception_v3]
                 [--batches 1,16] [--modes eager,cuda_graph,compile]
                 [--rounds 5] [--repeats 50] [--warmup 5]
                 [--compile-mode default] [--tf32] [--threads N] [--json FILE]

Skipped modes are reported with a reason, never silently: cuda_graph on cpu,
compile where torch.compile is missing (torch < 2.0) or fails. Exit status:
0 when every requested model ran (skips included), 1 on an error, 3 when
torch or torchvision cannot be imported (message on stderr).
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time
import traceback

MODES = ("eager", "cuda_graph", "compile")
IMAGE_SIZE = {"inception_v3": 299, "googlenet": 224}


def percentile(values, q):
    """Linear-interpolated percentile (0..100) of a non-empty list."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def set_tf32(torch, enabled):
    """TF32 for cuDNN convolutions and cuBLAS matmuls on or off.

    Only the legacy flags, and only those that differ from the default: torch
    2.9-2.11 raise "mix of the legacy and new APIs" inside torch.compile when
    the new fp32_precision API was used (pytorch issue 166387). The defaults
    are cuDNN TF32 on, matmul TF32 off, so fp32 needs one assignment."""
    if torch.backends.cudnn.allow_tf32 != enabled:
        torch.backends.cudnn.allow_tf32 = enabled
    if enabled and not torch.backends.cuda.matmul.allow_tf32:
        torch.backends.cuda.matmul.allow_tf32 = True


def build_model(torchvision, name):
    """The same module tests/onnx/export_torchvision.py exports."""
    builder = getattr(torchvision.models, name)
    kwargs = {"weights": None}
    if name in ("inception_v3", "googlenet"):
        kwargs["aux_logits"] = False
        kwargs["init_weights"] = False
    return builder(**kwargs).eval()


class Timer:
    """Times one call of fn (ms): CUDA events on cuda, perf_counter on cpu."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"

    def run(self, fn, warmup, repeats):
        torch = self.torch
        for _ in range(warmup):
            fn()
        if not self.cuda:
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn()
                times.append((time.perf_counter() - start) * 1e3)
            return times
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(repeats)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in events]


def make_runners(torch, model, example, device, modes, compile_mode):
    """Returns ({mode: callable}, {mode: reason skipped}, {mode: setup seconds})."""
    runners, skipped, setup = {}, {}, {}
    if "eager" in modes:
        runners["eager"] = lambda: model(example)
    if "cuda_graph" in modes:
        if device.type != "cuda":
            skipped["cuda_graph"] = "needs a CUDA device (--device cpu)"
        else:
            start = time.perf_counter()
            static_input = example.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):  # cudnn.benchmark picks algorithms outside the capture
                    model(static_input)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_output = model(static_input)
            # The runner keeps the static tensors alive with the graph.
            runners["cuda_graph"] = (
                lambda keep=(graph, static_input, static_output): keep[0].replay())
            setup["cuda_graph"] = time.perf_counter() - start
    if "compile" in modes:
        if not hasattr(torch, "compile"):
            skipped["compile"] = f"torch.compile needs torch >= 2.0 (this is {torch.__version__})"
        else:
            start = time.perf_counter()
            try:
                compiled = torch.compile(model, mode=compile_mode, dynamic=False)
                compiled(example)  # compiles
                if device.type == "cuda":
                    torch.cuda.synchronize()
                runners["compile"] = lambda: compiled(example)
                setup["compile"] = time.perf_counter() - start
            except Exception as error:  # report, keep the other modes
                message = str(error).strip().splitlines()
                skipped["compile"] = (f"torch.compile failed: {type(error).__name__}: "
                                      f"{message[0] if message else ''}")[:300]
                traceback.print_exc()
    return runners, skipped, setup


def bench_one(torch, torchvision, name, batch, args, device):
    model = build_model(torchvision, name).to(device)
    size = IMAGE_SIZE[name]
    generator = torch.Generator().manual_seed(0)
    example = torch.randn(batch, 3, size, size, generator=generator).to(device)
    timer = Timer(torch, device)
    row = {"model": name, "batch": batch, "input": [batch, 3, size, size]}
    with torch.no_grad():
        runners, skipped, setup = make_runners(torch, model, example, device, args.modes,
                                               args.compile_mode)
        order = [m for m in args.modes if m in runners]
        rounds = {m: {"medians": [], "p10s": [], "p90s": []} for m in order}
        for r in range(args.rounds):
            line = []
            for k in range(len(order)):
                mode = order[(k + r) % len(order)]
                times = timer.run(runners[mode], args.warmup, args.repeats)
                rounds[mode]["medians"].append(statistics.median(times))
                rounds[mode]["p10s"].append(percentile(times, 10))
                rounds[mode]["p90s"].append(percentile(times, 90))
                line.append(f"{mode} {rounds[mode]['medians'][-1]:.3f}")
            print(f"  {name} b{batch} round {r + 1}: {'  '.join(line)} ms", flush=True)
        if args.profiler_range and device.type == "cuda":
            # One eager forward between cudaProfilerStart and cudaProfilerStop:
            # `ncu --profile-from-start off` sees exactly its kernels.
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            model(example)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
    row["measured_ms"] = {
        mode: {"median": statistics.median(v["medians"]),
               "p10": statistics.median(v["p10s"]),
               "p90": statistics.median(v["p90s"]),
               "round_medians": v["medians"]}
        for mode, v in rounds.items()}
    row["skipped"] = skipped
    row["setup_seconds"] = setup
    del runners, model, example
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return row


def markdown(doc):
    lines = ["| model | batch | " + " | ".join(f"torch {m} ms (p10-p90)" for m in MODES) + " |",
             "| --- | --- | " + " | ".join("---" for _ in MODES) + " |"]
    for row in doc["models"]:
        cells = []
        for mode in MODES:
            m = row["measured_ms"].get(mode)
            if m:
                cells.append(f"{m['median']:.3f} ({m['p10']:.3f}-{m['p90']:.3f})")
            else:
                cells.append("skipped: " + row["skipped"].get(mode, "not requested"))
        lines.append(f"| {row['model']} | {row['batch']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--models", default="googlenet,inception_v3")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--compile-mode", default="default",
                        help="torch.compile mode (default: 'default'; see the module doc)")
    parser.add_argument("--tf32", action="store_true", help="allow TF32 (default: fp32)")
    parser.add_argument("--threads", type=int, default=0, help="cpu: torch threads (0: as is)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--profiler-range", action="store_true",
                        help="cuda: after timing, one eager forward per model and batch between "
                        "cudaProfilerStart and cudaProfilerStop (ncu --profile-from-start off)")
    args = parser.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    args.batches = [int(b) for b in args.batches.split(",") if b]
    args.modes = [m for m in args.modes.split(",") if m]
    for model in args.models:
        if model not in IMAGE_SIZE:
            parser.error(f"unknown model {model!r} (want {', '.join(IMAGE_SIZE)})")
    for mode in args.modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r} (want {', '.join(MODES)})")
    if args.rounds < 1 or args.repeats < 1 or args.warmup < 0 or not args.batches or \
            min(args.batches) < 1 or not args.models or not args.modes:
        parser.error("rounds, repeats and batches must be >= 1, warmup >= 0, lists non-empty")
    return args


def main(argv):
    args = parse_args(argv)
    try:
        import torch
        import torchvision
    except ImportError as error:
        print(f"torch/torchvision not available: {error}", file=sys.stderr)
        return 3
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: torch.cuda.is_available() is False", file=sys.stderr)
        return 1
    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = True
    set_tf32(torch, args.tf32)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if device.type == "cuda":
        description = (f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
                       f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
    else:
        description = f"CPU, torch {torch.__version__}, {torch.get_num_threads()} threads"
    description += ", TF32" if args.tf32 else ", fp32"
    doc = {"tool": "torch_bench", "device": description, "device_type": args.device,
           "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
           "torch": torch.__version__, "torchvision": torchvision.__version__,
           "rounds": args.rounds, "repeats": args.repeats, "warmup": args.warmup,
           "compile_mode": args.compile_mode, "tf32": args.tf32, "models": []}
    print(f"torch_bench: {description}; {args.rounds} rounds x {args.repeats} timed runs "
          f"({args.warmup} warm-up) per mode; {doc['date']}", flush=True)

    def write():
        if args.json:
            tmp = f"{args.json}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump(doc, f, indent=2)
                f.write("\n")
            os.replace(tmp, args.json)

    for name in args.models:
        for batch in args.batches:
            try:
                row = bench_one(torch, torchvision, name, batch, args, device)
            except Exception as error:
                traceback.print_exc()
                print(f"{name} batch {batch}: {type(error).__name__}: {error}", file=sys.stderr)
                return 1
            doc["models"].append(row)
            for mode, reason in row["skipped"].items():
                print(f"  {name} b{batch}: {mode} skipped: {reason}", flush=True)
            write()
    write()
    print()
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
