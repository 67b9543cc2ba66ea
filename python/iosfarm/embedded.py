"""iosfarm.search and iosfarm.tune: the CLI's local commands from Python.

    report = iosfarm.search("squeezenet", backend="cpu")     # `iosfarm search`
    print(report.predicted_ms["ios"], report.predicted_speedup["vs_sequential"])
    tuned = iosfarm.tune("model.onnx", batch_sizes=[1, 8], save="model.iosfarm")
    session = iosfarm.Session("model.iosfarm")               # each batch its schedule

Contract:
- Both run the `iosfarm` CLI (found as iosfarm.optimize finds it: $IOSFARM_CLI,
  the one built or installed beside this package, else PATH) on this machine:
  `search MODEL ... --format json`, and `tune MODEL --batch B[,B...] --save
  FILE` (an embedded server and worker, the latency database in the user's
  cache directory unless `db` is given; see docs/cli.md). MODEL is a zoo
  model name, an .onnx file or, for tune, a tuned model file.
- A usage error of the CLI (exit 2) raises iosfarm.Error "invalid_argument";
  any other failure (exit 1) raises iosfarm.Error "unknown" with the CLI's
  own message (the `iosfarm: error: ...` line), e.g. naming a model that is
  neither a zoo model nor a file.
- progress: None (auto) draws a tqdm bar on stderr only on a terminal or in
  a notebook, True always, False never; the bar follows the CLI's progress
  lines (blocks solved, stages measured or profiled). The CLI's other stderr
  lines (notes, warnings, logs at log_level) are passed on to stderr.
- Ctrl-C sends SIGINT to the CLI, which stops cleanly (an interrupted tune
  resumes from the latency database next time, as `iosfarm tune` does; a
  search keeps nothing), and re-raises KeyboardInterrupt.
- search returns a SearchReport; every latency in it is predicted (sums of
  stage latencies, each stage measured alone), never a run of the schedule.
  tune returns the TunedModel (iosfarm.tuned_model) the CLI wrote: per
  batch its schedule, the predicted latency and the schedules measured end
  to end; `path` is `save`, or None when save was not given (the file was
  temporary).
"""
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List

from iosfarm import _cli, tuned_model
from iosfarm._cli import error
from iosfarm._progress import ProgressBar

# `iosfarm search`'s progress line (client/search_progress.cc), off a terminal.
_SEARCH_LINE = re.compile(r"^search: (\d+)/(\d+) blocks solved.*?(\d+) stages measured")
# A job's progress line (client/job_format.cc JobProgressText), off a terminal.
_JOB_LINE = re.compile(r"^job (\d+) (\w+)(?: \[[#.]*\] (\d+)/(\d+) blocks)?.*?"
                       r"(\d+) stages profiled(?: \(of ~(\d+) estimated\))?, (\d+) cache hits")


@dataclass
class SearchReport:
    """`iosfarm search --format json` (docs/cli.md); all latencies predicted."""
    model: str
    batch: int
    device_key: str
    predicted_ms: Dict[str, float]       # {"sequential", "greedy", "ios"}: sums of stages
    predicted_speedup: Dict[str, float]  # {"vs_sequential", "vs_greedy"}
    search_seconds: float
    stats: Dict[str, Any] = field(default_factory=dict)
    blocks: List[Dict[str, Any]] = field(default_factory=list, repr=False)
    schedule_json: str = field(default="", repr=False)
    report: Dict[str, Any] = field(default_factory=dict, repr=False)  # the whole JSON

    @property
    def schedule(self):
        return json.loads(self.schedule_json)

    def save_schedule(self, path):
        """Writes the schedule (for iosfarm.Session(model, schedule=path))."""
        with open(path, "w") as f:
            f.write(self.schedule_json + "\n")


class _JobProgress:
    """A farm_types.Job-like view of a job progress line, for ProgressBar.job."""

    class _P:
        pass

    def __init__(self, m):
        self.id = int(m.group(1))
        self.state = m.group(2)
        p = self.progress = self._P()
        p.phase = ""
        p.blocks_done = int(m.group(3) or 0)
        p.blocks_total = int(m.group(4) or 0)
        p.stages_profiled = int(m.group(5))
        p.estimated_stages = int(m.group(6)) if m.group(6) else None
        p.cache_hits = int(m.group(7))


def _run(cmd, progress, description):
    kept = []
    with ProgressBar(progress, description) as bar:
        def on_line(line):
            search = _SEARCH_LINE.match(line)
            if search:
                bar.search(int(search.group(1)), int(search.group(2)), int(search.group(3)))
                return
            job = _JOB_LINE.match(line)
            if job:
                bar.job(_JobProgress(job))
                return
            kept.append(line)
            if not line.startswith(("iosfarm: error: ", "Run 'iosfarm")):
                _cli.write_stderr(line)  # the error is the exception's message
        code, out = _cli.run(cmd, on_stderr_line=on_line)
    if code != 0:
        raise _cli.failure(cmd, code, kept)
    return out


def _flag(cmd, name, value):
    if value is not None:
        if isinstance(value, bool) or (not isinstance(value, (int, str))):
            raise error(f"{name.lstrip('-').replace('-', '_')} must be an integer or a string, "
                        f"got {value!r}")
        cmd += [name, str(value)]


def _model_arg(model):
    name = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
    if not isinstance(name, str) or not name:
        raise error(f"model must be a zoo model name or a file's path, got {model!r}")
    return name


def search(model, *, backend="cpu", r=None, s=None, batch=None, block_size=None,
           exhaustive=False, merge=True, threads=None, search_threads=None,
           cuda_graph_stages=False, progress=None):
    """Runs the IOS search on this machine (`iosfarm search`), measuring each stage
    it needs on `backend` (cpu, cuda, sim, sim:<preset>); returns a SearchReport."""
    cmd = [_cli.find_cli("iosfarm.search runs `iosfarm search`"), "search", _model_arg(model),
           "--backend", backend, "--format", "json"]
    for name, value in (("--r", r), ("--s", s), ("--batch", batch),
                        ("--block-size", block_size), ("--threads", threads),
                        ("--search-threads", search_threads)):
        _flag(cmd, name, value)
    if exhaustive:
        cmd.append("--exhaustive")
    if not merge:
        cmd.append("--no-merge")
    if cuda_graph_stages:
        cmd.append("--cuda-graph-stages")
    doc = json.loads(_run(cmd, progress, "search"))
    schedule = doc.get("schedule")
    return SearchReport(model=doc.get("model", ""), batch=doc.get("batch", 0),
                        device_key=doc.get("device_key", ""),
                        predicted_ms=dict(doc.get("latency_ms", {})),
                        predicted_speedup=dict(doc.get("speedup", {})),
                        search_seconds=doc.get("search_seconds", 0.0),
                        stats=doc.get("stats", {}), blocks=doc.get("blocks", []),
                        schedule_json=json.dumps(schedule, indent=2), report=doc)


def tune(model, *, backend=None, batch_sizes=None, save=None, db=None, device=None, r=None,
         s=None, block_size=None, threads=None, cuda_graph_stages=False, fresh=False,
         log_level=None, progress=None):
    """Tunes `model` on this machine (`iosfarm tune`: an embedded server and a worker
    on `backend`, None: cuda if a GPU answers, else cpu) for `batch_sizes` (None:
    the model's own, a tuned model file's), storing latencies under `device` (None:
    the GPU's name or local-<backend>) in `db` (None: the user's cache). Writes the
    tuned model file `save` (None: a temporary one) and returns its TunedModel."""
    cmd = [_cli.find_cli("iosfarm.tune runs `iosfarm tune`"), "tune", _model_arg(model)]
    if batch_sizes is not None:
        batches = [batch_sizes] if isinstance(batch_sizes, int) else list(batch_sizes)
        if not batches or any(isinstance(b, bool) or not isinstance(b, int) for b in batches):
            raise error(f"batch_sizes must be a list of integers, got {batch_sizes!r}")
        cmd += ["--batch", ",".join(str(b) for b in batches)]
    for name, value in (("--backend", backend), ("--device", device), ("--r", r), ("--s", s),
                        ("--block-size", block_size), ("--threads", threads),
                        ("--log-level", log_level)):
        _flag(cmd, name, value)
    if db is not None:
        cmd += ["--db", os.fspath(db)]
    if cuda_graph_stages:
        cmd.append("--cuda-graph-stages")
    if fresh:
        cmd.append("--fresh")
    with tempfile.TemporaryDirectory(prefix="iosfarm-tune-") as tmp:
        path = os.fspath(save) if save is not None else os.path.join(tmp, "model.iosfarm")
        _run(cmd + ["--save", path], progress, "tune")
        tuned = tuned_model.read_tuned_model(path)
    if save is None:
        tuned.path = None
    return tuned
