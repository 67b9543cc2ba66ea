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
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# key -> (schedule_bench display name, zoo name or torchvision model for ONNX),
# in the order `run` works through them.
MODELS = {
    "squeezenet": ("squeezenet", None),
    "inception_v3": ("inception_v3", None),
    "tv_inception_v3": ("inception_v3.onnx", "inception_v3"),
    "tv_googlenet": ("googlenet.onnx", "googlenet"),
    "randwire": ("randwire", None),
    "nasnet_a": ("nasnet_a", None),
    "resnet50": ("resnet50", None),
}
# Bounds tried in order on the cuda backend (see the module doc).
DEFAULT_BOUNDS = {
    "squeezenet": ["3x8"],
    "resnet50": ["3x8"],
    "inception_v3": ["3x8", "2x4"],
    "tv_inception_v3": ["3x8", "2x4"],
    "tv_googlenet": ["3x8", "2x4"],
    "randwire": ["2x3", "1x3"],
    "nasnet_a": ["1x3"],
}
# Seconds of stage measurement one search may take (per attempt).
DEFAULT_BUDGET = {
    "squeezenet": 60, "resnet50": 90, "inception_v3": 150, "tv_inception_v3": 150,
    "tv_googlenet": 120, "randwire": 120, "nasnet_a": 200,
}
GEOMEAN_MODELS = ("inception_v3", "randwire", "nasnet_a", "squeezenet")
# Rows of `run --graph-stages` (searched with stages timed as CUDA graphs) are
# named MODEL + this, apart from the eager-timed rows of the same model.
GRAPH_TIMED = " (graph-timed stages)"
# Rows of `run --graph-stages --flush-l2`: each replay timed after an L2 flush
# (schedule_bench --cuda-flush-l2, an experiment on composition).
FLUSHED = " (graph-timed stages, L2 flushed)"
SUFFIXES = (GRAPH_TIMED, FLUSHED)


def default_torch_models(keys):
    """torch_bench's models for --models KEYS: the torchvision networks among
    them (their rows are the ones PyTorch's figures stand beside)."""
    return [MODELS[key][1] for key in keys if key.startswith("tv_")]


def suffix_of(name):
    """The row name's stage-timing suffix, or ""."""
    return next((s for s in SUFFIXES if name.endswith(s)), "")


def base_model(name):
    """The display name without its stage-timing suffix."""
    suffix = suffix_of(name)
    return name[:-len(suffix)] if suffix else name
PAPER = {"inception_v3": (6.51, 4.03), "randwire": (8.49, 6.02), "nasnet_a": (22.95, 16.04),
         "squeezenet": (0.86, 0.73)}


def log(*parts):
    print(*parts, flush=True)


# ------------------------------------------------------------------- run ---

class Runner:
    def __init__(self, args):
        self.args = args
        self.start = time.monotonic()
        self.work = os.path.abspath(args.work)
        self.results = os.path.join(self.work, "results")
        self.logs = os.path.join(self.work, "logs")
        for d in (self.results, self.logs, os.path.join(self.work, "schedules")):
            os.makedirs(d, exist_ok=True)
        self.log_file = open(os.path.join(self.work, "gpu_bench.log"), "a")
        self.env = dict(os.environ)
        self.latency_db = os.path.join(self.work, "latency.db")

    def seed(self, folder):
        """Starts from an earlier --out folder: its results, schedules, latencies."""
        results = os.path.join(folder, "results.json")
        if os.path.exists(results):
            shutil.copy(results, os.path.join(self.results, "seed_results.json"))
        state = os.path.join(folder, "state.tar.gz")
        if os.path.exists(state):
            with tarfile.open(state) as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(self.work, filter="data")
                else:
                    tar.extractall(self.work)
        self.say(f"seeded from {folder}")

    def load_done(self):
        """What earlier commands finished, and which errors are final."""
        doc = merge_files(self.result_files())
        self.done = {("ios", r["model"], r["batch"]) for r in doc["ios"]}
        self.done |= {("torch", r["model"], r["batch"]) for r in doc["torch"]}
        self.final_errors = {("ios", r["model"], r["batch"]) for r in doc["errors"]
                             if not r.get("retry", True)}
        self.final_errors |= {("torch", r["model"], r["batch"]) for r in doc["torch_errors"]
                              if not r.get("retry", True)}

    def result_files(self):
        """WORK/results/*.json, a seeded merge first so that newer files win."""
        paths = glob.glob(os.path.join(self.results, "*.json"))
        return sorted(paths, key=lambda p: (os.path.basename(p) != "seed_results.json", p))

    def skip(self, kind, name, batch):
        key = (kind, name, batch)
        if self.args.redo:
            return False
        if key in self.done:
            self.say(f"{kind} {name} b{batch}: done earlier")
            return True
        if key in self.final_errors and not self.args.retry_errors:
            self.say(f"{kind} {name} b{batch}: failed earlier (--retry-errors to try again)")
            return True
        return False

    def say(self, text):
        stamp = f"[{time.monotonic() - self.start:6.0f} s]"
        print(f"{stamp} {text}", flush=True)
        self.log_file.write(f"{stamp} {text}\n")
        self.log_file.flush()

    def remaining(self):
        return self.args.deadline_s - (time.monotonic() - self.start)

    def run_logged(self, argv, log_name, timeout, env=None):
        """Runs argv, streaming its output to stdout and WORK/logs/LOG_NAME.

        Returns (exit code or 'timeout', last lines of the output)."""
        if self.args.cpus:  # pinned: eager runs are bounded by the host thread
            argv = ["taskset", "-c", self.args.cpus] + list(argv)
        self.say("$ " + " ".join(argv))
        tail = []
        with open(os.path.join(self.logs, log_name), "w") as log_out:
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, env=env or self.env, cwd=REPO, bufsize=1)
            deadline = time.monotonic() + max(timeout, 1)
            timed_out = False
            try:
                import selectors
                selector = selectors.DefaultSelector()
                selector.register(process.stdout, selectors.EVENT_READ)
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        timed_out = True
                        break
                    if not selector.select(timeout=min(left, 5)):
                        continue
                    line = process.stdout.readline()
                    if not line:
                        break
                    sys.stdout.write(line)
                    sys.stdout.flush()
                    log_out.write(line)
                    self.log_file.write(line)
                    tail = (tail + [line.rstrip()])[-15:]
            finally:
                if timed_out:
                    process.kill()
                process.wait()
        if timed_out:
            self.say(f"killed after {timeout:.0f} s (deadline)")
            return "timeout", tail
        return process.returncode, tail

    # -- setup --
    def setup_binary(self):
        self.binary = os.path.abspath(self.args.bin)
        if not os.path.isfile(self.binary):
            sys.exit(f"{self.binary} not found (build schedule_bench, or name it with --bin)")
        ldd = subprocess.run(["ldd", self.binary], capture_output=True, text=True, env=self.env)
        missing = [line.strip() for line in ldd.stdout.splitlines() if "not found" in line]
        if missing:
            self.say("schedule_bench cannot load: " + "; ".join(missing))
            sys.exit(1)

    def export_onnx(self, keys):
        wanted = [MODELS[k][1] for k in keys if MODELS[k][1]]
        self.onnx_dir = os.path.join(self.work, "onnx")
        if not wanted:
            return
        code, tail = self.run_logged(
            [sys.executable, os.path.join(REPO, "tests", "onnx", "export_torchvision.py"),
             self.onnx_dir] + wanted, "export_onnx.log", timeout=min(300, self.remaining()))
        if code != 0:
            self.say(f"ONNX export failed ({code}): {' | '.join(tail[-3:])}")

    # -- one schedule_bench item --
    def row_name(self, key):
        if not self.args.graph_stages:
            return MODELS[key][0]
        return MODELS[key][0] + (FLUSHED if self.args.flush_l2 else GRAPH_TIMED)

    def bench_item(self, key, batch):
        _, tv = MODELS[key]
        name = self.row_name(key)
        tag = (f"{key}_b{batch}" + ("_graphstages" if self.args.graph_stages else "") +
               ("_flushl2" if self.args.flush_l2 else ""))
        result = os.path.join(self.results, f"ios_{tag}.json")
        error_file = os.path.join(self.results, f"ios_{tag}.error.json")
        if self.skip("ios", name, batch):
            return
        model_arg = MODELS[key][0]  # the row name may carry a stage-timing suffix
        if tv:
            model_arg = os.path.join(self.onnx_dir, f"{tv}.onnx")
            if not os.path.exists(model_arg):
                self.record_error(error_file, key, batch, "ONNX export missing", model_arg,
                                  retry=True)
                return
        bounds = self.args.bounds.get(key, DEFAULT_BOUNDS[key])
        budget = self.args.budgets.get(key, DEFAULT_BUDGET[key])
        repeats = self.args.repeats if batch == 1 else self.args.repeats_large_batch
        last = ("not run", [])
        for attempt, bound in enumerate(bounds):
            left = self.remaining()
            if left < self.args.min_item_s:
                self.record_error(error_file, key, batch, "not run: deadline",
                                  f"{left:.0f} s left of --deadline-s {self.args.deadline_s}",
                                  retry=True)
                return
            search_budget = max(10, min(budget, left - self.args.measure_reserve_s))
            argv = [self.binary, "--backend", self.args.backend, "--models",
                    f"{model_arg}:{bound}", "--batch", str(batch),
                    "--schedule-dir", os.path.join(self.work, "schedules"),
                    "--latency-db", self.latency_db, "--json", result + ".part", "--rounds", str(self.args.rounds),
                    "--repeats", str(repeats), "--search-budget-s", f"{search_budget:.0f}"]
            if self.args.verify:
                argv.append("--verify")
            if self.args.graph_stages:
                argv.append("--cuda-graph-stages")
            if self.args.flush_l2:
                argv.append("--cuda-flush-l2")
            code, tail = self.run_logged(argv, f"ios_{tag}_{attempt}.log",
                                         timeout=left - 5)
            text = "\n".join(tail)
            if code != 0 and self.args.verify and " verify: " in text:
                self.say(f"{key} b{batch}: verification failed; measuring without it")
                verify_error = next((l for l in tail if " verify: " in l), "")
                argv.remove("--verify")
                code, tail = self.run_logged(argv, f"ios_{tag}_{attempt}_noverify.log",
                                             timeout=self.remaining() - 5)
                if code == 0:
                    self.patch_verified(result + ".part", "FAILED: " + verify_error)
            if code == 0 and os.path.exists(result + ".part"):
                self.patch_rows(result + ".part",
                                lambda row: row.update(model=name, cpus=self.args.cpus or "all"))
                os.replace(result + ".part", result)
                if os.path.exists(error_file):
                    os.remove(error_file)
                self.done.add(("ios", name, batch))
                return
            last = (code, tail)
            if "search budget" in "\n".join(tail) and attempt + 1 < len(bounds):
                self.say(f"{key} b{batch}: search over budget at {bound}; trying {bounds[attempt + 1]}")
                continue
            break
        code, tail = last
        # Worth another try: a deadline, or a search budget (the stages it
        # measured are cached, so the next search gets further).
        retry = code == "timeout" or "search budget" in "\n".join(tail)
        self.record_error(error_file, key, batch, f"schedule_bench exit {code}",
                          " / ".join(l for l in tail[-2:] if l), retry=retry)

    def patch_verified(self, path, text):
        self.patch_rows(path, lambda row: row.update(verified=text[:300]))

    @staticmethod
    def patch_rows(path, change):
        with open(path) as f:
            doc = json.load(f)
        for row in doc["models"]:
            change(row)
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)

    def record_error(self, path, key, batch, what, message, retry):
        self.say(f"{key} b{batch}: {what}: {message}")
        with open(path, "w") as f:
            json.dump({"key": key, "model": self.row_name(key), "batch": batch, "what": what,
                       "message": message, "retry": retry}, f, indent=2)

    # -- torch: one torch_bench process per model and batch, so that a
    # deadline loses one item --
    def torch_item(self, model, batch):
        result = os.path.join(self.results, f"torch_{model}_b{batch}.json")
        error_file = os.path.join(self.results, f"torch_{model}_b{batch}.error.json")
        if self.skip("torch", model, batch):
            return
        left = self.remaining()
        if left < self.args.min_item_s:
            self.record_torch_error(error_file, model, batch, "not run: deadline",
                                    f"{left:.0f} s left of --deadline-s {self.args.deadline_s}",
                                    retry=True)
            return
        device = "cuda" if self.args.backend == "cuda" else "cpu"
        argv = [sys.executable, os.path.join(REPO, "bench", "torch_bench.py"), "--device", device,
                "--models", model, "--batches", str(batch), "--modes",
                ",".join(self.args.torch_modes), "--rounds", str(self.args.rounds),
                "--repeats", str(self.args.torch_repeats), "--warmup", str(self.args.torch_warmup),
                "--compile-mode", self.args.compile_mode, "--json", result + ".part"]
        code, tail = self.run_logged(argv, f"torch_{model}_b{batch}.log", timeout=left - 5)
        if code == 0 and os.path.exists(result + ".part"):
            self.patch_rows(result + ".part", lambda row: row.update(cpus=self.args.cpus or "all"))
            os.replace(result + ".part", result)
            if os.path.exists(error_file):
                os.remove(error_file)
            self.done.add(("torch", model, batch))
        else:
            self.record_torch_error(error_file, model, batch, f"torch_bench exit {code}",
                                    " / ".join(l for l in tail[-2:] if l),
                                    retry=code == "timeout")

    def record_torch_error(self, path, model, batch, what, message, retry):
        self.say(f"torch {model} b{batch}: {what}: {message}")
        with open(path, "w") as f:
            json.dump({"tool": "torch_bench_error", "model": model, "batch": batch,
                       "what": what, "message": message, "retry": retry}, f, indent=2)


def cmd_run(args):
    runner = Runner(args)
    runner.say(f"gpu_bench run: backend {args.backend}, models {','.join(args.models)}, "
               f"batches {args.batches}, torch {'off' if args.no_torch else 'on'}, "
               f"deadline {args.deadline_s} s, work {runner.work}")
    if args.backend == "cuda":
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm",
                                  "--format=csv,noheader"], capture_output=True, text=True)
            answer = smi.stdout.strip() if smi.returncode == 0 else ""
            reason = smi.stderr.strip() or smi.stdout.strip()
        except FileNotFoundError:
            answer, reason = "", "nvidia-smi not found"
        if not answer:
            runner.say(f"no CUDA device: {reason} (--backend cpu runs the scripts on the CPU)")
            return 1
        runner.say(f"nvidia-smi: {answer}")
    if args.seed:
        runner.seed(args.seed)
    runner.load_done()
    runner.setup_binary()
    runner.export_onnx(args.models)
    for batch in args.batches:
        # Ours first: under a deadline, PyTorch's reference figures (slow to
        # take, with torch.compile) are the ones to lose.
        for key in args.models:
            runner.bench_item(key, batch)
        if not args.no_torch:
            for model in args.torch_models:
                runner.torch_item(model, batch)
    doc = merge_files(runner.result_files())
    table = markdown(doc)
    with open(os.path.join(runner.work, "results.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    with open(os.path.join(runner.work, "table.md"), "w") as f:
        f.write(table + "\n")
    runner.say(f"done in {time.monotonic() - runner.start:.0f} s")
    print()
    print(table)
    runner.log_file.close()
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name in ("results.json", "table.md", "gpu_bench.log"):
            shutil.copy(os.path.join(runner.work, name), args.out)
        with tarfile.open(os.path.join(args.out, "state.tar.gz"), "w:gz") as tar:
            tar.add(os.path.join(runner.work, "schedules"), arcname="schedules")
            # With its write-ahead log when a killed run left one.
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(runner.latency_db + suffix):
                    tar.add(runner.latency_db + suffix, arcname="latency.db" + suffix)
    return 0


# ----------------------------------------------------------- merge/report ---

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


# ------------------------------------------------------------------ main ---

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
