"""The `zoo` step of gpu_run.py: per zoo model, `iosfarm run MODEL
--schedule IOS --verify` on the run's backend, eagerly and (cuda) as one CUDA
graph, each output compared with what the cpu backend computed where the
bundle was made (its assets)."""
import glob
import json
import os
import shutil

# The zoo checks' tolerance against the cpu backend (both fp32; cuDNN and
# oneDNN pick different algorithms, so the last bits differ).
ZOO_RTOL, ZOO_ATOL = 1e-3, 1e-4


def run(truth):
    import numpy as np
    models = {}
    backend = truth.args.backend
    for model in truth.args.zoo_models:
        schedule = os.path.join(truth.assets, "zoo", f"{model}.ios.json")
        reference = os.path.join(truth.assets, "zoo", f"{model}.cpu")
        rows = {}
        for mode, extra in (("eager", []), ("cuda_graph", ["--cuda-graph"])):
            if mode == "cuda_graph" and backend != "cuda":
                continue
            if truth.remaining() < 15:
                rows[mode] = {"status": "not run", "reason": "deadline"}
                continue
            outputs = os.path.join(truth.work, "zoo", model, mode)
            shutil.rmtree(outputs, ignore_errors=True)
            log_name = f"zoo_{model}_{mode}.log"
            code, tail = truth.run(
                [truth.bin["iosfarm"], "run", model, "--backend", backend, "--schedule",
                 schedule, "--verify", "--output", outputs, "--iterations", "20",
                 "--warmup", "3", "--format", "json", *extra], log_name, 120)
            row = {"exit": code}
            try:
                with open(os.path.join(truth.logs, log_name)) as f:
                    text = f.read()
                run = json.loads(text[text.index("{"):text.rindex("}") + 1])
                row.update(verified=run.get("verified"), stages=run.get("stages"),
                           median_ms=run["latency_ms"]["median"], device=run.get("device"))
            except (ValueError, KeyError):
                row["output"] = tail
            worst = 0.0
            mismatches = []
            for ref in sorted(glob.glob(os.path.join(reference, "*.npy"))):
                mine = os.path.join(outputs, os.path.basename(ref))
                if not os.path.exists(mine):
                    mismatches.append(f"{os.path.basename(ref)} not written")
                    continue
                a, b = np.load(mine), np.load(ref)
                if a.shape != b.shape:
                    mismatches.append(f"{os.path.basename(ref)}: shape {a.shape} vs {b.shape}")
                    continue
                excess = np.abs(a - b) - (ZOO_ATOL + ZOO_RTOL * np.abs(b))
                worst = max(worst, float(np.max(np.abs(a - b))))
                if not np.all(excess <= 0):
                    mismatches.append(f"{os.path.basename(ref)}: {int(np.sum(excess > 0))} of "
                                      f"{b.size} elements off")
            row["max_abs_error_vs_cpu"] = worst
            row["mismatches"] = mismatches
            row["status"] = ("ok" if code == 0 and row.get("verified") is True
                             and not mismatches else "failed")
            rows[mode] = row
            truth.say(f"zoo {model} {mode}: {row['status']}, verified {row.get('verified')}, "
                      f"max |dev - cpu| {worst:.2e}, {row.get('median_ms')} ms")
        models[model] = rows
    failed = any(r.get("status") == "failed" for rows in models.values()
                 for r in rows.values())
    return {"status": "failed" if failed else "ok", "rtol": ZOO_RTOL, "atol": ZOO_ATOL,
            "models": models}
