#!/usr/bin/env python3
"""bound_fit.py: which lower bound of a concurrent stage's latency would a
device's measurements keep, and how close would it come (issue 15).

Usage: bound_fit.py STAGES.jsonl [--launch-us L] [--group-us F] [--stage-us A]

STAGES.jsonl is what `bound_audit_bench --stages FILE` writes: every distinct
stage of a model's small blocks, measured on one backend. A concurrent stage
of two or more groups is studied where each of its groups was also timed
alone (a one-group stage of the same block). For each such stage:

  slowest  its slowest group alone: the bound the search takes today
           (scheduler/ios/block_bounds.h);
  sum      the sum of its groups alone;
  K, G     the kernels it launches (as the backend's device floor counts
           them) and its groups.

Candidate bounds, each reported with how many stages it raises above the
slowest group (where it could spare a measurement), how many measured
stages fall below it (where it would mislead the search), and its mean
share of the latency over all studied stages (max(bound, slowest) / ms:
1.0 is a bound that equals every latency):

  slowest      max of the groups alone;
  host         A + K * L + G * F (microseconds; --stage-us, --launch-us,
               --group-us): the host's issue of a stage timed back to back,
               from cuda_floor_bench's figures; shown only when L or F is
               given;
  sum / P      the groups' sum over P, P the largest sum / ms seen: the
               device never runs more than P groups' worth at once;
  overlap      slowest + gamma * (sum - slowest), gamma the least
               (ms - slowest) / (sum - slowest) seen: concurrent groups never
               overlap more than that;
  ..., 99 % kept  the same two fitted so that 1 % of the stages fall below:
               what an outlier (a group timed slow once) costs the fit.

The fitted ones are fitted to the very stages they are checked on, so none of
those falls below them; each is also fitted on half of the stages and
checked on the other half ("held out"), which says how a fit carries to
stages it has not seen. No fitted bound is exact: a search that took one
would be exact only under that fitted assumption.
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict


def load(path):
    """(header, {model: {(strategy, groups): record}})."""
    with open(path) as f:
        texts = [line for line in f if line.strip()]
    lines = []
    for i, text in enumerate(texts):
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError:
            if i + 1 < len(texts):
                raise ValueError(f"{path}: line {i + 1} is not JSON") from None
            # the last line of a run cut off while it wrote: left out
    if not lines or "backend" not in lines[0]:
        raise ValueError(f"{path}: no header line (bound_audit_bench --stages writes one)")
    models = defaultdict(dict)
    for record in lines[1:]:
        groups = tuple(tuple(g) for g in record["groups"])
        models[record["model"]][(record["strategy"], groups)] = record
    return lines[0], models


def studied(stages):
    """Concurrent stages of >= 2 groups whose groups were each timed alone:
    [{ms, slowest, sum, kernels, groups}]."""
    out = []
    for (strategy, groups), record in stages.items():
        if strategy != "concurrent" or len(groups) < 2:
            continue
        alone = [stages.get(("concurrent", (g,))) for g in groups]
        if any(a is None for a in alone):
            continue
        times = [a["ms"] for a in alone]
        out.append({"ms": record["ms"], "slowest": max(times), "sum": sum(times),
                    "kernels": sum(record["kernels"]), "groups": len(groups)})
    return out


def evaluate(rows, bound):
    """(raised, below, mean share) of `bound(row)` over rows."""
    raised = sum(1 for r in rows if bound(r) > r["slowest"] * (1 + 1e-9))
    below = sum(1 for r in rows if r["ms"] < bound(r) * (1 - 1e-9))
    share = statistics.fmean(max(bound(r), r["slowest"]) / r["ms"] for r in rows)
    return raised, below, share


def fit_parallelism(rows, kept=1.0):
    """The least P with sum / P <= ms on a share `kept` of the rows (all of
    them by default)."""
    return quantile([r["sum"] / r["ms"] for r in rows], kept)


def fit_overlap(rows, kept=1.0):
    """The largest gamma with slowest + gamma (sum - slowest) <= ms on a
    share `kept` of the rows (0 where more stages than that beat their
    slowest group)."""
    gammas = [(r["ms"] - r["slowest"]) / (r["sum"] - r["slowest"]) for r in rows
              if r["sum"] > r["slowest"]]
    return max(0.0, quantile(gammas, 1 - kept)) if gammas else 0.0


def quantile(values, q):
    """The value at share q of the sorted values (q 0: the least, 1: the
    largest)."""
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def held_out(rows, fit, bound_of):
    """Stages of the odd half below the bound fitted on the even half, and
    the other way round: (below, checked)."""
    halves = rows[0::2], rows[1::2]
    below = 0
    for train, test in (halves, halves[::-1]):
        if not train or not test:
            continue
        parameter = fit(train)
        below += sum(1 for r in test if r["ms"] < bound_of(parameter)(r) * (1 - 1e-9))
    return below, len(rows)


def quantiles(values):
    return ", ".join(f"p{round(q * 100)} {quantile(values, q):.2f}" for q in (0.01, 0.5, 0.99))


def analyse(model, rows, args):
    """Markdown rows (strings) for one model."""
    lines = []
    # The stages are visited in their file's order, which follows the audit's
    # walk; the halves alternate through it.
    sum_over = lambda p: (lambda r: r["sum"] / p)  # noqa: E731
    overlap = lambda g: (lambda r: r["slowest"] + g * (r["sum"] - r["slowest"]))  # noqa: E731
    candidates = [("slowest group alone", lambda r: r["slowest"], "", "")]
    if args.launch_us or args.group_us:
        host = lambda r: (args.stage_us + r["kernels"] * args.launch_us +  # noqa: E731
                          r["groups"] * args.group_us) / 1e3
        candidates.append((f"host: {args.stage_us:g} + K x {args.launch_us:g} + G x "
                           f"{args.group_us:g} us", host, "", ""))
    for kept, label in ((1.0, ""), (0.99, ", 99 % kept")):
        p = fit_parallelism(rows, kept)
        b, n = held_out(rows, lambda train: fit_parallelism(train, kept), sum_over)
        candidates.append((f"sum / P{label}", sum_over(p), f"P = {p:.2f}", f"{b} of {n}"))
        g = fit_overlap(rows, kept)
        b, n = held_out(rows, lambda train: fit_overlap(train, kept), overlap)
        candidates.append((f"overlap{label}", overlap(g), f"gamma = {g:.3f}", f"{b} of {n}"))
    for name, bound, parameter, out in candidates:
        raised, below, share = evaluate(rows, bound)
        lines.append(f"| {model} | {name} | {parameter} | {raised} | {below} | {out} | "
                     f"{share:.3f} |")
    return lines


def report(header, models, args):
    """The two markdown tables, as lines."""
    lines = [f"{header['backend']}: {header['device']}; blocks of {header['block_size']} ops, "
             f"r={header['r']} s={header['s']}, batch {header['batch']}", "",
             "| model | stages studied | latency / slowest group | latency / sum of groups "
             "| kernels |", "| --- | --- | --- | --- | --- |"]
    tables = []
    for model, stages in models.items():
        rows = studied(stages)
        if not rows:
            lines.append(f"| {model} | 0 | | | |")
            continue
        lines.append(f"| {model} | {len(rows)} | "
                     f"{quantiles([r['ms'] / r['slowest'] for r in rows])} | "
                     f"{quantiles([r['ms'] / r['sum'] for r in rows])} | "
                     f"{quantiles([r['kernels'] for r in rows])} |")
        tables += analyse(model, rows, args)
    return lines + ["", "| model | bound | fitted | raised above the slowest group | stages below "
                    "it | held out: below the other half's fit | mean share of the latency |",
                    "| --- | --- | --- | --- | --- | --- | --- |"] + tables


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stages")
    parser.add_argument("--launch-us", type=float, default=0.0)
    parser.add_argument("--group-us", type=float, default=0.0)
    parser.add_argument("--stage-us", type=float, default=0.0)
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    try:
        header, models = load(args.stages)
    except (OSError, ValueError, KeyError) as e:
        print(f"bound_fit.py: {e}", file=sys.stderr)
        return 1
    print("\n".join(report(header, models, args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
