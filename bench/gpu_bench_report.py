"""gpu_bench.py's results: the merge of schedule_bench's, torch_bench's and
earlier merged result files into one document, and its markdown table."""
import json
import statistics

from gpu_bench_models import GEOMEAN_MODELS, MODELS, PAPER, SUFFIXES, base_model, suffix_of


def merge_files(paths):
    """One results document from schedule_bench, torch_bench, error and merged files.

    A later file wins for the same (model, batch); an error is dropped where a
    result exists."""
    doc = {"tool": "gpu_bench", "ios": {}, "torch": {}, "errors": {}, "torch_errors": {},
           "devices": []}

    def add_device(text):
        if text and text not in doc["devices"]:
            doc["devices"].append(text)

    for path in paths:
        with open(path) as f:
            part = json.load(f)
        tool = part.get("tool")
        if tool == "gpu_bench":  # an earlier merge
            for section in ("ios", "torch", "errors", "torch_errors"):
                for row in part.get(section, []):
                    doc[section][(row["model"], row["batch"])] = row
            for device in part.get("devices", []):
                add_device(device)
        elif tool == "schedule_bench":
            add_device(f"{part['backend']}: {part['device']}")
            for row in part["models"]:
                row = dict(row, backend=part["backend"], device=part["device"],
                           date=part["date"], rounds=part["rounds"], repeats=part["repeats"])
                doc["ios"][(row["model"], row["batch"])] = row
                doc["errors"].pop((row["model"], row["batch"]), None)
        elif tool == "torch_bench":
            add_device(f"torch: {part['device']}")
            for row in part["models"]:
                row = dict(row, device=part["device"], date=part["date"],
                           compile_mode=part["compile_mode"], tf32=part.get("tf32", False))
                doc["torch"][(row["model"], row["batch"])] = row
                doc["torch_errors"].pop((row["model"], row["batch"]), None)
        elif tool == "torch_bench_error":
            key = (part["model"], part["batch"])
            if key not in doc["torch"]:
                doc["torch_errors"][key] = part
        elif "what" in part and "model" in part:  # a schedule_bench error record
            key = (part["model"], part["batch"])
            if key not in doc["ios"]:
                doc["errors"][key] = part
        else:
            raise SystemExit(f"{path}: not a result file of schedule_bench, torch_bench or "
                             "gpu_bench")
    for key in [k for k in doc["errors"] if k in doc["ios"]]:
        del doc["errors"][key]
    for key in [k for k in doc["torch_errors"] if k in doc["torch"]]:
        del doc["torch_errors"][key]
    for section in ("ios", "torch", "errors", "torch_errors"):
        doc[section] = [row for key, row in sorted(doc[section].items(),
                                                   key=lambda item: row_order(item[0]))]
    return doc


def row_order(key):
    """Sort key of a (display name, batch) pair: batch, then the MODELS order."""
    names = [name for name, _ in MODELS.values()]
    name, batch = key
    base = base_model(name)
    order = ("",) + SUFFIXES
    return (batch, order.index(suffix_of(name)), names.index(base) if base in names else len(names),
            name)


def fmt(value):
    return "-" if value is None else f"{value:.3f}"


def markdown(doc):
    ios = {(r["model"], r["batch"]): r for r in doc["ios"]}
    torch = {(r["model"], r["batch"]): r for r in doc["torch"]}
    errors = {(r["model"], r["batch"]): r for r in doc["errors"]}
    torch_errors = {(r["model"], r["batch"]): r for r in doc.get("torch_errors", [])}
    keys = sorted(set(ios) | set(errors) | {(f"{m}.onnx", b) for m, b in set(torch) |
                                             set(torch_errors)}, key=row_order)
    lines = [f"Devices: {'; '.join(doc['devices']) or 'none'}. Medians in ms (p10-p90 and "
             "search details in results.json); speedup = sequential / IOS.", "",
             "| model | batch | sequential | greedy | IOS | seq CUDA graph | IOS CUDA graph "
             "| torch eager | torch CUDA graph | torch.compile | IOS/sequential speedup "
             "| IOS graph vs torch eager | IOS predicted / measured |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    speedups, graph_speedups = {}, {}
    for model, batch in keys:
        row = ios.get((model, batch))
        measured = row["measured_ms"] if row else {}
        med = lambda name: measured[name]["median"] if name in measured else None
        cells = [med("sequential"), med("greedy"), med("ios"), med("sequential_cuda_graph"),
                 med("ios_cuda_graph")]
        base = base_model(model)
        trow = torch.get((base[:-5], batch)) if base.endswith(".onnx") else None
        tcells = []
        terror = torch_errors.get((base[:-5], batch)) if base.endswith(".onnx") else None
        for mode in ("eager", "cuda_graph", "compile"):
            if trow is None:
                tcells.append(f"error ({terror['what']})" if terror else "-")
            elif mode in trow["measured_ms"]:
                tcells.append(fmt(trow["measured_ms"][mode]["median"]))
            else:
                tcells.append("skipped")
        speedup = cells[0] / cells[2] if cells[0] and cells[2] else None
        if speedup:
            speedups[(model, batch)] = speedup
        if cells[3] and cells[4]:
            graph_speedups[(model, batch)] = cells[3] / cells[4]
        # Stage latencies compose when the IOS schedule's predicted latency
        # (the sum of its stages) matches the run it was timed for: eager
        # stages against the eager run, graph-timed ones against the graph.
        composed = "-"
        predicted = (row or {}).get("predicted_ms", {}).get("ios")
        against = cells[4] if suffix_of(model) else cells[2]
        if predicted and against:
            composed = f"{predicted / against:.2f}"
        vs_eager = "-"
        if trow and cells[4] and "eager" in trow["measured_ms"]:
            vs_eager = f"{trow['measured_ms']['eager']['median'] / cells[4]:.2f}x"
        if row is None:
            error = errors.get((model, batch))
            text = (f"{error['what']}: {error['message'][-160:]}".replace("|", "/")
                    if error else "not run")
            lines.append(f"| {model} | {batch} | {text} | | | | | " + " | ".join(tcells) +
                         " | - | - | - |")
            continue
        lines.append(f"| {model} | {batch} | " + " | ".join(fmt(c) for c in cells) + " | " +
                     " | ".join(tcells) + f" | {fmt(speedup) if speedup else '-'} | {vs_eager} "
                     f"| {composed} |")
    lines.append("")
    paper = statistics.geometric_mean(s / i for s, i in PAPER.values())
    for batch in sorted({b for _, b in keys}):
        for suffix in ("",) + SUFFIXES:
            if suffix and not any(m.endswith(suffix) for m, b in keys if b == batch):
                continue
            got = [speedups.get((m + suffix, batch)) for m in GEOMEAN_MODELS]
            got_graph = [graph_speedups.get((m + suffix, batch)) for m in GEOMEAN_MODELS]
            what = f"Batch {batch}{suffix}"
            if all(got):
                geo = statistics.geometric_mean(got)
                graph = ""
                if all(got_graph):
                    geo_graph = statistics.geometric_mean(got_graph)
                    graph = f", **{geo_graph:.3f}x** with both as one CUDA graph"
                lines.append(f"{what}: geomean IOS/sequential speedup over "
                             f"{', '.join(GEOMEAN_MODELS)}: **{geo:.3f}x**{graph} (paper, V100 "
                             f"batch 1: {paper:.3f}x; goal >= 1.4x).")
            else:
                missing = [m for m, g in zip(GEOMEAN_MODELS, got) if not g]
                lines.append(f"{what}: geomean not available (missing: {', '.join(missing)}).")
    for (model, batch), error in sorted(torch_errors.items()):
        lines.append(f"torch {model} batch {batch}: {error['what']}: {error['message'][-200:]}")
    for row in doc["torch"]:
        for mode, reason in row.get("skipped", {}).items():
            lines.append(f"torch {row['model']} batch {row['batch']}: {mode} skipped: {reason}")
    if doc["torch"]:
        modes = sorted({row.get("compile_mode", "?") for row in doc["torch"]})
        tf32 = any(row.get("tf32") for row in doc["torch"])
        lines.append(f"torch.compile mode: {', '.join(modes)}; torch "
                     f"{'with TF32 (unlike' if tf32 else 'in fp32, TF32 off (like'} the iosfarm "
                     "cuda backend's default); cudnn.benchmark on.")
    return "\n".join(lines)


def cmd_report(args):
    doc = merge_files(args.files)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    print(markdown(doc))
    return 0
