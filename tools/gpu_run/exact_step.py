"""The `exact` step of gpu_run.py: what the bounded search's misses cost on
this device, free of measurement noise (issue 15).

Two `iosfarm search` runs measure their stages anew, so their IOS latencies
differ by the device's noise (on the H200's eager timing: 10 % between two
runs a minute apart, 2026-11-30). Here `schedule_bench --search exhaustive`
measures every candidate stage into a latency database, then `schedule_bench`
with the bounded search on the same database finds every stage latency of
the blocks there (it measures only the core bound's one-core group runs, on
the cpu backend, and the odd stage across a block cut that its boundary
windows ask for) and searches the very same latencies. Its predicted IOS
latency against the exhaustive one's is what the bounds' misses cost; the
difference is 0 where no latency breaks them (bounded_block_search.h).

The database (logs/exact_MODEL[_graph].db) comes back in logs.tar.gz:
`ios_search_bench --latency-db DB` replays either search on its latencies
without the GPU, with other bounds.

Entries are MODEL or MODEL:graph (--exact-models; graph: stages timed as
CUDA graphs, --cuda-graph-stages). Each row: stages the exhaustive DP
measured, what the bounded search asked for and measured anew, both IOS
latencies and their difference, the bounded search's misses. One round of
end-to-end timing each (schedule_bench's own), not the figures to quote.
"""
import json
import os


def parse_entries(spec):
    """'inception_v3,inception_v3:graph' -> [(model, graph_stages)].
    ValueError naming an entry whose mode is not 'graph'."""
    entries = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        model, sep, mode = item.partition(":")
        if not model or (sep and mode != "graph"):
            raise ValueError(f"exact entry {item!r}: want MODEL or MODEL:graph")
        entries.append((model, bool(sep)))
    return entries


def compare_rows(exhaustive, bounded):
    """Two schedule_bench --json model rows -> the exact step's row."""
    ex_ms = exhaustive["predicted_ms"]["ios"]
    bd_ms = bounded["predicted_ms"]["ios"]
    search = bounded["search"]
    asked = search["stages_measured"] + search["stages_cached"]
    return {
        "exhaustive_stages": exhaustive["search"]["stages_measured"],
        "bounded_cached": search["stages_cached"],
        "bounded_measured": search["stages_measured"],
        "ratio": round(exhaustive["search"]["stages_measured"] / asked, 2) if asked else None,
        "exhaustive_ios_ms": ex_ms,
        "bounded_ios_ms": bd_ms,
        "difference_pct": round((bd_ms - ex_ms) / ex_ms * 100, 4),
        "lower_bound_misses": search["lower_bound_misses"],
        "largest_bound_miss_ms": search["largest_bound_miss_ms"],
    }


class Exact:
    def __init__(self, truth):
        self.truth = truth
        self.args = truth.args

    def run(self):
        truth = self.truth
        result = {"status": "ok", "models": {}}
        for model, graph_stages in self.args.exact_models:
            name = model + (":graph" if graph_stages else "")
            if graph_stages and self.args.backend != "cuda":
                result["models"][name] = {"status": "skipped", "reason": "graph: cuda only"}
                continue
            stem = f"exact_{model}{'_graph' if graph_stages else ''}"
            # In logs/, so that the measurements come back (logs.tar.gz) for
            # studying other bounds on them without a GPU.
            db = os.path.join(truth.logs, stem + ".db")
            if os.path.exists(db):
                os.remove(db)
            argv = [truth.bin["schedule_bench"], "--backend", self.args.backend, "--models",
                    model, "--batch", str(self.args.search_batch), "--rounds", "1",
                    "--latency-db", db] + (["--cuda-graph-stages"] if graph_stages else [])
            rows, row = {}, {"status": "ok"}
            for kind in ("exhaustive", "bounded"):
                left = truth.remaining() - 5
                if left < 20:
                    row = {"status": "not run", "reason": f"deadline before the {kind} search"}
                    break
                json_path = os.path.join(truth.logs, f"{stem}_{kind}.json")
                code, tail = truth.run(argv + ["--search", kind, "--json", json_path],
                                       f"{stem}_{kind}.log", left)
                if code == "timeout":
                    row = {"status": "cut off", "reason": f"the {kind} search at the deadline",
                           "output": tail}
                    break
                if code != 0:
                    row = {"status": "failed", "exit": code, "output": tail}
                    result["status"] = "failed"
                    break
                with open(json_path) as f:
                    rows[kind] = json.load(f)["models"][0]
            if len(rows) == 2:
                row.update(compare_rows(rows["exhaustive"], rows["bounded"]))
                truth.say(f"exact {name}: {describe_row(row)}")
            result["models"][name] = row
        return result


def describe_row(row):
    """One exact row in words, for the log and truth.md."""
    if "exhaustive_ios_ms" not in row:
        return f"{row.get('status')}: {row.get('reason', row.get('exit', ''))}"
    return (f"exhaustive {row['exhaustive_stages']} stages, IOS {row['exhaustive_ios_ms']:.4f} "
            f"ms; bounded on the same latencies {row['bounded_cached']} stages from the "
            f"database and {row['bounded_measured']} measured anew (exhaustive / bounded "
            f"{row['ratio']}), IOS "
            f"{row['bounded_ios_ms']:.4f} ms ({row['difference_pct']:+.4f} %), "
            f"{row['lower_bound_misses']} misses (largest {row['largest_bound_miss_ms']:.2e} ms)")


def summary_lines(step):
    return [f"  - {name}: {describe_row(row)}" for name, row in step.get("models", {}).items()]
