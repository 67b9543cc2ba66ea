"""The `search` step of gpu_run.py: `iosfarm search` on this GPU with the
backend's own device floor and without it (issue 15).

The cuda backend declares a floor for eagerly timed stages
(worker/backends/cuda/cuda_floor.h: stages timed back to back, three
quarters of the least empty-kernel launch measured at start, the kernels its
plans launch). The bounded search is exact only where no measured stage
beats it. Each run records what the search measured (stages, unique
signatures), the IOS latency it predicts from those measurements, and the
stages measured below their lower bound (`lower_bound_misses`,
`largest_bound_miss_ms`): how often and by how much this GPU breaks the
assumption. A run cut off by its cap keeps its last progress line (blocks
solved, stages measured so far).

Then `bound_audit_bench` measures every candidate stage of the
--audit-models' blocks (--audit-block-size ops each) and checks each against
its bound (scheduler/ios/bound_audit.h): how many concurrent stages and
merges this GPU runs faster than their bound, by how much, and whether the
cost to go stays consistent, over all stages and not only those a search
evaluates. The stages it measured come back in logs.tar.gz
(logs/bound_audit_stages.jsonl, bound_audit_bench --stages) for other
studies.

Runs are MODEL:VARIANT pairs (--search-runs), variants:
  floor       the backend's floor, as `iosfarm search` uses it by default
  no-floor    --no-device-floor: the groups' own bounds only
  exhaustive  --exhaustive: every candidate stage (the reference)
  graph       --cuda-graph-stages: stages timed as CUDA graphs (no device
              floor: the cuda backend declares none for them); cuda only
"""
import json
import os

VARIANTS = {
    "floor": [],
    "no-floor": ["--no-device-floor"],
    "exhaustive": ["--exhaustive"],
    "graph": ["--cuda-graph-stages"],
}
# inception_v3 both ways (about 5,000 stages exhaustive: the no-floor run
# ends inside a minute or two on an H200); RandWire only with the floor
# (about 1.07 M stages without one: hours of a GPU).
DEFAULT_RUNS = "inception_v3:floor,inception_v3:no-floor,randwire:floor"
# About 450 and 360 stages in 6-op blocks (the cpu backend's counts).
DEFAULT_AUDIT_MODELS = "inception_v3,randwire"


def parse_runs(spec):
    """'inception_v3:floor,randwire:floor' -> [(model, variant)].
    ValueError naming the pair that is not MODEL:VARIANT with a known
    variant."""
    runs = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        model, sep, variant = item.rpartition(":")
        if not sep or not model or variant not in VARIANTS:
            raise ValueError(f"search run {item!r}: want MODEL:VARIANT with VARIANT one of "
                             f"{', '.join(VARIANTS)}")
        runs.append((model, variant))
    return runs


def parse_audit(text):
    """bound_audit_bench's table -> {model: {endings, raised, below,
    largest_below_us, largest_below_share_pct, merge_below,
    largest_merge_us, largest_merge_share_pct, sub_below, largest_sub_us,
    largest_sub_share_pct, inconsistent, measured}}; a table without the
    sub-stage column (before 2026-11-30) gives no sub_* keys. Rows that are
    not a model's are skipped."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) not in (7, 8) or not cells[1].isdigit():
            continue
        row = {"endings": int(cells[1]), "raised": int(cells[2])}
        kinds = ("below", "merge", "sub")[:len(cells) - 5]
        for kind, cell in zip(kinds, cells[3:]):
            count, _, rest = cell.partition(" (")
            us, _, share = rest.rstrip(")").partition(", ")
            row["below" if kind == "below" else f"{kind}_below"] = int(count)
            row[f"largest_{kind}_us"] = float(us.split()[0])
            row[f"largest_{kind}_share_pct"] = float(share.split()[0])
        row["inconsistent"] = int(cells[-2])
        row["measured"] = int(cells[-1])
        out[cells[0]] = row
    return out


def last_progress(text):
    """The last `search: ...` progress line of a search's stderr, or None."""
    lines = [line.strip() for line in text.splitlines() if line.startswith("search:")]
    return lines[-1] if lines else None


def summarize_report(report):
    """The figures of one `iosfarm search --format json` report."""
    stats = report.get("stats", {})
    latency = report.get("latency_ms", {})
    keys = ("stages_measured", "unique_signatures", "candidate_stages", "blocks",
            "exhaustive_blocks", "lower_bound_misses", "largest_bound_miss_ms", "bound_groups")
    row = {k: stats.get(k) for k in keys}
    row.update({f"{k}_ms": latency.get(k) for k in ("ios", "sequential", "greedy")})
    row["latency_kind"] = report.get("latency_kind")
    row["search_seconds"] = report.get("search_seconds")
    row["device_key"] = report.get("device_key")
    row["device_floor"] = report.get("device_floor")
    return row


def compare(runs):
    """Per model with a floor run and a no-floor or exhaustive one that both
    finished: how many times fewer stages the floor measured, and its IOS
    latency against the other's (each from its own measurements)."""
    out = {}
    for model in {k.rpartition(":")[0] for k in runs}:
        floor = runs.get(f"{model}:floor", {})
        if floor.get("status") != "ok":
            continue
        for other in ("no-floor", "exhaustive"):
            row = runs.get(f"{model}:{other}", {})
            if row.get("status") != "ok" or not floor.get("stages_measured"):
                continue
            out[f"{model}: floor vs {other}"] = {
                "stages_ratio": round(row["stages_measured"] / floor["stages_measured"], 2),
                "ios_ms": [round(floor["ios_ms"], 4), round(row["ios_ms"], 4)],
            }
    return out


class Search:
    def __init__(self, truth):
        self.truth = truth
        self.args = truth.args

    def run(self):
        truth = self.truth
        result = {"status": "ok", "runs": {}}
        for model, variant in self.args.search_runs:
            name = f"{model}:{variant}"
            left = truth.remaining() - 5
            if left < 20:
                result["runs"][name] = {"status": "not run", "reason": "deadline"}
                continue
            stem = f"search_{model}_{variant}"
            json_path = os.path.join(truth.logs, stem + ".json")
            if os.path.exists(json_path):
                os.remove(json_path)
            argv = [truth.bin["iosfarm"], "search", model, "--backend", self.args.backend,
                    "--batch", str(self.args.search_batch), "--format", "json"] + VARIANTS[variant]
            code, tail = truth.run(argv, stem + ".log", min(self.args.search_cap_s, left),
                                   stdout_path=json_path)
            row = {"exit": code}
            if code == 0:
                with open(json_path) as f:
                    row.update(summarize_report(json.load(f)))
                row["status"] = "ok"
                truth.say(f"search {name}: {row['stages_measured']} stages measured, IOS "
                          f"{row['ios_ms']:.4f} ms, {row['lower_bound_misses']} bound misses "
                          f"(largest {row['largest_bound_miss_ms']:.2e} ms)")
            elif code == "timeout":
                with open(os.path.join(truth.logs, stem + ".log"), errors="replace") as f:
                    row["last_progress"] = last_progress(f.read())
                row["status"] = "cut off"
                truth.say(f"search {name}: cut off at its cap: {row['last_progress']}")
            else:
                row.update({"status": "failed", "output": tail})
                result["status"] = "failed"
                truth.say(f"search {name}: exit {code}: {tail[-1:]}")
            result["runs"][name] = row
        result["compare"] = compare(result["runs"])
        if self.args.audit_models:
            result["audit"] = self.audit()
            if result["audit"].get("status") == "failed":
                result["status"] = "failed"
        return result

    def audit(self):
        """bound_audit_bench on --audit-models: every candidate stage of
        their blocks against its bound."""
        truth = self.truth
        left = truth.remaining() - 5
        if left < 20:
            return {"status": "not run", "reason": "deadline"}
        stdout_path = os.path.join(truth.logs, "bound_audit.md")
        stages_path = os.path.join(truth.logs, "bound_audit_stages.jsonl")
        argv = [truth.bin["bound_audit_bench"], "--backend", self.args.backend, "--models",
                ",".join(self.args.audit_models), "--block-size",
                str(self.args.audit_block_size), "--batch", str(self.args.search_batch),
                "--stages", stages_path]
        if self.args.audit_graph_stages and self.args.backend == "cuda":
            argv.append("--cuda-graph-stages")
        code, tail = truth.run(argv, "bound_audit.log", min(self.args.search_cap_s, left),
                               stdout_path=stdout_path)
        with open(stdout_path, errors="replace") as f:
            text = f.read()
        models = parse_audit(text)
        status = "ok" if code == 0 else "cut off" if code == "timeout" else "failed"
        for model, row in models.items():
            truth.say(f"bound audit {model}: {describe_audit_row(row)}")
        result = {"status": status, "exit": code, "models": models,
                  "header": text.splitlines()[0] if text else None}
        if status == "failed":
            result["output"] = tail
        return result


def describe_audit_row(row):
    """One parse_audit row in words, for the log and truth.md."""
    text = (f"{row['endings']} stages, {row['below']} concurrent below their bound (largest "
            f"{row['largest_below_us']} us, {row['largest_below_share_pct']} %), "
            f"{row['merge_below']} merges below (largest {row['largest_merge_us']} us)")
    if "sub_below" in row:
        text += (f", {row['sub_below']} below a stage of all but one of their groups (largest "
                 f"{row['largest_sub_us']} us, {row['largest_sub_share_pct']} %)")
    return text + f", {row['inconsistent']} inconsistent"


def summary_lines(step):
    """truth.md's lines for the step."""
    lines = [f"- search: {step.get('status')}"]
    for name, row in step.get("runs", {}).items():
        if row.get("status") == "ok":
            lines.append(f"  - {name}: {row['stages_measured']} stages measured of "
                         f"{row['candidate_stages']} candidates, IOS {row['ios_ms']:.4f} ms "
                         f"({row['latency_kind']}), {row['lower_bound_misses']} bound misses "
                         f"(largest {row['largest_bound_miss_ms']:.2e} ms), "
                         f"{row['exhaustive_blocks']}/{row['blocks']} blocks exhaustive, "
                         f"{row['search_seconds']:.0f} s")
        else:
            lines.append(f"  - {name}: {row.get('status')}" + "".join(
                f", {k} {row[k]}" for k in ("reason", "last_progress", "exit") if row.get(k)))
    for name, c in step.get("compare", {}).items():
        lines.append(f"  - {name}: {c['stages_ratio']}x the stages, IOS ms {c['ios_ms']}")
    audit = step.get("audit")
    if audit:
        lines.append(f"  - bound audit: {audit.get('status')}")
        for model, row in audit.get("models", {}).items():
            lines.append(f"    - {model}: {describe_audit_row(row)}")
    return lines
