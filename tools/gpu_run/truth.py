"""One GPU run's bookkeeping for gpu_run.py: its deadline, its log, the
binaries and their environment (a bundle's or a build folder's), the
subprocesses of its steps and what it writes to --out after every step
(truth.json, truth.md, truth.log, logs.tar.gz)."""
import contextlib
import json
import os
import subprocess
import sys
import tarfile
import time

import bundle
from report import summary

REPO = bundle.REPO


class Truth:
    """The run of `gpu_run.py run` ARGS. Single-threaded; the steps call
    run() for their programs and record() for their results."""

    def __init__(self, args):
        self.args = args
        self.start = time.monotonic()
        self.work = os.path.abspath(args.work)
        self.logs = os.path.join(self.work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.log_path = os.path.join(self.out, "truth.log")
        self.log_file = open(self.log_path, "a")
        self.doc = {"tool": "gpu_truth", "backend": args.backend, "steps": {},
                    "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        self.failed = False
        self.background = None

    # -- bookkeeping --
    def elapsed(self):
        return time.monotonic() - self.start

    def remaining(self):
        return self.args.deadline_s - self.elapsed()

    def say(self, text):
        line = f"[{self.elapsed():5.0f} s] {text}"
        print(line, flush=True)
        self.log_file.write(line + "\n")
        self.log_file.flush()

    def record(self, step, result):
        self.doc["steps"][step] = result
        if result.get("status") == "failed":
            self.failed = True
        self.save()

    def save(self):
        self.doc["elapsed_s"] = round(self.elapsed(), 1)
        with open(os.path.join(self.out, "truth.json"), "w") as f:
            json.dump(self.doc, f, indent=2)
            f.write("\n")
        with open(os.path.join(self.out, "truth.md"), "w") as f:
            f.write(summary(self.doc))
        with tarfile.open(os.path.join(self.out, "logs.tar.gz"), "w:gz") as tar:
            tar.add(self.logs, arcname="logs")

    def run(self, argv, log_name, timeout, stdout_path=None):
        """Runs argv with its output in logs/LOG_NAME (only its stderr there
        when stdout goes to `stdout_path`); (exit code or 'timeout', last
        lines of the log)."""
        timeout = max(1.0, min(timeout, self.remaining()))
        self.say("$ " + " ".join(argv) + f"   (at most {timeout:.0f} s)")
        path = os.path.join(self.logs, log_name)
        with open(path, "w") as out, (open(stdout_path, "w") if stdout_path
                                      else contextlib.nullcontext(out)) as stdout:
            try:
                code = subprocess.run(argv, stdout=stdout,
                                      stderr=out if stdout_path else subprocess.STDOUT,
                                      env=self.env, cwd=self.work,
                                      timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                code = "timeout"
            except OSError as e:
                out.write(f"{e}\n")
                code = f"cannot start: {e}"
        with open(path, errors="replace") as f:
            tail = f.read().splitlines()[-12:]
        return code, tail

    # -- setup --
    def setup(self):
        """The binaries (self.bin), zoo assets and environment of the run;
        False (recorded) when a binary cannot load its libraries."""
        args = self.args
        if args.build:
            build = os.path.abspath(args.build)
            self.bin = {os.path.basename(b): os.path.join(build, b) for b in bundle.BINARIES}
            self.env = dict(os.environ)
            self.assets = os.path.join(self.work, "assets")
            models = [m for m in args.zoo_models if not os.path.exists(
                os.path.join(self.assets, "zoo", f"{m}.ios.json"))]
            if "zoo" in args.steps and models:
                bundle.make_assets(self.bin["iosfarm"], self.assets, models)
            self.doc["bundle"] = {"build": build}
        else:
            bin_dir, self.assets, manifest, self.env = bundle.unpack(
                args.bundle, self.work, sys.path)
            self.bin = {os.path.basename(b): os.path.join(bin_dir, os.path.basename(b))
                        for b in bundle.BINARIES}
            self.doc["bundle"] = manifest
            self.say(f"bundle: commit {manifest['commit'][:10]} of {manifest['date']}")
        self.env["IOSFARM_CLI"] = self.bin["iosfarm"]
        self.env["IOSFARM_SOURCE_DIR"] = REPO
        self.env["IOSFARM_BINARY_DIR"] = self.work
        self.env["IOSFARM_PYTHON"] = sys.executable
        # The suites' temporary files (gtest's TempDir) in this run's own
        # folder: runtime_test gives its schedules and latency databases
        # fixed names, and the smoke test runs it while CTest may run the
        # same tests beside it.
        self.env["TEST_TMPDIR"] = os.path.join(self.work, "test-tmp")
        os.makedirs(self.env["TEST_TMPDIR"], exist_ok=True)
        missing = {name: bundle.missing_libraries(path, self.env)
                   for name, path in self.bin.items() if os.path.exists(path)}
        missing = {name: lines for name, lines in missing.items() if lines}
        if missing:
            self.say(f"binaries that cannot load: {missing}")
            self.record("setup", {"status": "failed", "missing_libraries": missing})
            return False
        return True

    # -- the test suites' reports --
    def gtest(self, binary, gtest_filter, cap, log_name):
        report = os.path.join(self.logs, log_name + ".json")
        if os.path.exists(report):
            os.remove(report)
        code, tail = self.run([self.bin[binary], f"--gtest_filter={gtest_filter}",
                               f"--gtest_output=json:{report}"], log_name + ".log", cap)
        counts = (self.gtest_report(report) if os.path.exists(report) else
                  {"passed": 0, "failed": 0, "skipped": 0, "failures": [], "skip_reasons": {}})
        ok = code == 0 and counts["failed"] == 0 and self.ran_enough(counts)
        result = {"status": "ok" if ok else "failed", "exit": code, "filter": gtest_filter,
                  **counts}
        if code == "timeout" or not os.path.exists(report):
            result["output"] = tail
        self.say(f"{binary}: {counts['passed']} passed, {counts['failed']} failed, "
                 f"{counts['skipped']} skipped (exit {code})")
        return result

    def ran_enough(self, counts):
        """On a GPU a suite whose every test skipped did not check anything
        (no device found, no export): not a pass. On the cpu (smoke test)
        the CUDA tests are expected to skip."""
        if self.args.backend == "cuda":
            return counts["passed"] > 0
        return counts["passed"] + counts["skipped"] > 0

    @staticmethod
    def gtest_report(report):
        """Counts and failure messages of a --gtest_output=json report."""
        counts = {"passed": 0, "failed": 0, "skipped": 0, "failures": [], "skip_reasons": {}}
        with open(report) as f:
            doc = json.load(f)
        for suite in doc.get("testsuites", []):
            for test in suite.get("testsuite", []):
                name = f"{suite['name']}.{test['name']}"
                if test.get("failures"):
                    counts["failed"] += 1
                    counts["failures"].append({"test": name, "message": "\n".join(
                        x.get("failure", "") for x in test["failures"])[:1500]})
                elif test.get("result") == "SKIPPED":
                    counts["skipped"] += 1
                    reason = (test.get("skipped") or [{}])[0].get("message", "")[:200]
                    counts["skip_reasons"][reason] = counts["skip_reasons"].get(reason, 0) + 1
                elif test.get("result") == "COMPLETED":
                    counts["passed"] += 1
        return counts
