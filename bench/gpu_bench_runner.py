"""gpu_bench.py's `run`: works through the models and batches, one
schedule_bench or torch_bench process per item under the run's deadline,
skipping what an earlier run finished, and writes the merged results."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

from gpu_bench_models import DEFAULT_BOUNDS, DEFAULT_BUDGET, FLUSHED, GRAPH_TIMED, MODELS
from gpu_bench_report import markdown, merge_files

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Runner:
    """One `gpu_bench.py run`: its work folder, log, deadline and the items
    it has done. Single-threaded."""

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
