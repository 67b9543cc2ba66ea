#!/usr/bin/env python3
"""optimize_bench: what iosfarm.optimize costs a PyTorch user (issue 64).

For each torchvision model (random weights, batch 1, 224x224; Debian's torch
and torchvision), on the cpu backend, with a fresh cache and latency database
under a temp XDG_CACHE_HOME:
  - the first optimize (export + `iosfarm tune` here) and the second one (the
    cache: export for the key, open the entry; no tuning), in seconds;
  - the overhead of calling the OptimizedModule against calling its
    Session.run directly with numpy: medians over --runs calls of each,
    measured alternately in one process, as a ratio (goal: within 5 %).

Usage: PYTHONPATH=build/python IOSFARM_CLI=build/client/iosfarm \\
         /usr/bin/python3 bench/optimize_bench.py [--models squeezenet1_1,resnet18] [--runs 200]
Figures: docs/results.md.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="squeezenet1_1,mobilenet_v2,resnet18")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="optimize_bench.")
    import torch
    import torchvision
    import iosfarm

    torch.manual_seed(0)
    print("| model | first optimize s | second optimize s | module call ms | Session.run ms "
          "| overhead |")
    print("| --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    for name in args.models.split(","):
        model = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        start = time.perf_counter()
        fast = iosfarm.optimize(model, x, backend="cpu")
        first_s = time.perf_counter() - start
        start = time.perf_counter()
        again = iosfarm.optimize(model, x, backend="cpu")
        second_s = time.perf_counter() - start
        if not again.from_cache:
            print(f"{name}: the second optimize did not come from the cache", file=sys.stderr)
            return 1
        feed = {"input0": x.numpy()}
        session = fast.session
        for _ in range(5):  # warm both paths
            fast(x)
            session.run(feed)
        module_ms, run_ms = [], []
        for _ in range(args.runs):  # call by call, alternately: drift hits both alike
            for fn, times in ((lambda: fast(x), module_ms), (lambda: session.run(feed), run_ms)):
                start = time.perf_counter()
                fn()
                times.append((time.perf_counter() - start) * 1000)
        m, r = statistics.median(module_ms), statistics.median(run_ms)
        overhead = m / r - 1
        worst = max(worst, overhead)
        print(f"| {name} | {first_s:.1f} | {second_s:.2f} | {m:.3f} | {r:.3f} | "
              f"{100 * overhead:+.1f} % |", flush=True)
    print(f"\nworst overhead {100 * worst:+.1f} % -> {'met' if worst <= 0.05 else 'NOT met'} "
          "(goal: within 5 % of Session.run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
