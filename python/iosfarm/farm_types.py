"""What iosfarm.Farm returns: plain dataclasses with the field names of the
CLI's JSON (client/job_format.cc, docs/cli.md), made from the wire messages
of proto/iosfarm/v1/farm.proto.

Latencies are milliseconds. A result keeps predicted and measured figures
apart: `predicted_ms` is the sum of the schedule's stage latencies (each
stage measured alone), never a run; `measured` holds whole schedules timed
end to end on the worker, by schedule name ("ios", "sequential",
"greedy"), and `speedup_vs_*` are ratios of those measured medians.
Every class has to_dict() (dataclasses.asdict) for JSON.
"""
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional

# JobState numbers of farm.proto, as the CLI names them.
_STATES = {0: "unspecified", 1: "queued", 2: "running", 3: "succeeded", 4: "failed",
           5: "cancelled"}
FINAL_STATES = ("succeeded", "failed", "cancelled")
NOISY_CV = 0.5  # client/job_format.h kNoisyCv: above it a measurement's median is uncertain


class _Dict:
    def to_dict(self):
        return dataclasses.asdict(self)


@dataclass
class SearchOptions(_Dict):
    """The job's search bounds; 0: the server's default."""
    r: int = 0
    s: int = 0
    block_size: int = 0
    batch_size: int = 0
    max_parallel_batches: int = 0


@dataclass
class JobProgress(_Dict):
    phase: str = ""
    blocks_total: int = 0
    blocks_done: int = 0
    stages_profiled: int = 0
    cache_hits: int = 0
    candidates: int = 0
    unique_signatures: int = 0
    stages_measured: int = 0
    estimated_stages: Optional[int] = None  # estimated at submit; None: not estimated
    elapsed_s: float = 0.0
    eta_s: Optional[float] = None           # None: unknown
    batches_out: int = 0
    max_parallel_batches: int = 0
    workers: List[str] = field(default_factory=list)


@dataclass
class Job(_Dict):
    id: int
    model_name: str = ""
    model_digest: str = ""
    device_key: str = ""
    batch: int = 0
    options: SearchOptions = field(default_factory=SearchOptions)
    priority: int = 0
    owner: str = ""
    state: str = "unspecified"  # queued, running, succeeded, failed, cancelled
    error: str = ""
    submitted_unix_ms: int = 0
    started_unix_ms: int = 0
    finished_unix_ms: int = 0
    progress: JobProgress = field(default_factory=JobProgress)
    retune_batch: str = ""

    @property
    def done(self):
        """Whether the job has ended (succeeded, failed or cancelled)."""
        return self.state in FINAL_STATES


@dataclass
class JobEvent(_Dict):
    """One message of Farm.watch: the job after a change, and what changed."""
    job: Job
    message: str = ""


@dataclass
class ScheduleLatency(_Dict):
    """A whole schedule timed end to end (measured)."""
    name: str
    median_ms: float = 0.0
    p10_ms: float = 0.0
    p90_ms: float = 0.0
    cv: float = 0.0
    repeats: int = 0


@dataclass
class JobResult(_Dict):
    job_id: int
    device_key: str = ""
    backend: str = ""
    worker: str = ""          # that measured the schedules
    chosen: str = "ios"       # which schedule schedule_json holds
    stages: int = 0
    measured: Dict[str, ScheduleLatency] = field(default_factory=dict)
    speedup_vs_sequential: Optional[float] = None  # measured; None: not measured
    speedup_vs_greedy: Optional[float] = None
    predicted_ms: float = 0.0  # sum of the schedule's stage latencies, not a run
    search_s: float = 0.0
    stages_profiled: int = 0
    cache_hits: int = 0
    candidates: int = 0
    unique_signatures: int = 0
    stages_measured: int = 0
    lower_bound_misses: int = 0
    largest_bound_miss_ms: float = 0.0
    search_cores: int = 0
    noisy: List[str] = field(default_factory=list)  # measured with cv > 0.5
    schedule_json: str = field(default="", repr=False)  # docs/schedule-format.md

    @property
    def choice_uncertain(self):
        """Whether a measurement behind the choice of schedule is noisy."""
        return bool(self.noisy)

    @property
    def measured_ms(self):
        """{schedule name: measured median ms}."""
        return {name: latency.median_ms for name, latency in self.measured.items()}

    @property
    def schedule(self):
        """schedule_json parsed."""
        return json.loads(self.schedule_json)

    def save_schedule(self, path):
        """Writes schedule_json to `path` (for iosfarm.Session(model, schedule=path))."""
        with open(path, "w") as f:
            f.write(self.schedule_json if self.schedule_json.endswith("\n")
                    else self.schedule_json + "\n")


@dataclass
class Worker(_Dict):
    id: str
    device_key: str = ""
    backend: str = ""
    description: str = ""
    state: str = ""     # profile, measure, build or idle
    job_id: int = 0
    connected_unix_ms: int = 0
    last_heartbeat_unix_ms: int = 0
    phases_done: int = 0
    build_job_id: int = 0


@dataclass
class Retune(_Dict):
    """What Farm.retune submitted: one job per model, under one retune batch id."""
    retune_batch: str
    jobs: List[Job] = field(default_factory=list)


def state_name(number):
    return _STATES.get(number, "unspecified")


def job_from_proto(m):
    p = m.progress
    o = m.options
    return Job(
        id=m.id, model_name=m.model_name, model_digest=m.model_digest, device_key=m.device_key,
        batch=m.batch,
        options=SearchOptions(r=o.r, s=o.s, block_size=o.block_size, batch_size=o.batch_size,
                              max_parallel_batches=o.max_parallel_batches),
        priority=m.priority, owner=m.owner, state=state_name(m.state), error=m.error,
        submitted_unix_ms=m.submitted_unix_ms, started_unix_ms=m.started_unix_ms,
        finished_unix_ms=m.finished_unix_ms,
        progress=JobProgress(
            phase=p.phase, blocks_total=p.blocks_total, blocks_done=p.blocks_done,
            stages_profiled=p.stages_profiled, cache_hits=p.cache_hits, candidates=p.candidates,
            unique_signatures=p.unique_signatures, stages_measured=p.stages_measured,
            estimated_stages=p.estimated_stages if p.HasField("estimated_stages") else None,
            elapsed_s=p.elapsed_s, eta_s=None if p.eta_s < 0 else p.eta_s,
            batches_out=p.batches_out, max_parallel_batches=p.max_parallel_batches,
            workers=list(p.workers)),
        retune_batch=m.retune_batch)


def result_from_proto(m):
    measured = {l.name: ScheduleLatency(name=l.name, median_ms=l.median_ms, p10_ms=l.p10_ms,
                                        p90_ms=l.p90_ms, cv=l.cv, repeats=l.repeats)
                for l in m.measured}

    def ratio(a, b):
        a = measured[a].median_ms if a in measured else 0.0
        b = measured[b].median_ms if b in measured else 0.0
        return a / b if a > 0 and b > 0 else None

    return JobResult(
        job_id=m.job_id, device_key=m.device_key, backend=m.backend, worker=m.worker,
        chosen=m.chosen or "ios", stages=m.stages, measured=measured,
        speedup_vs_sequential=ratio("sequential", "ios"),
        speedup_vs_greedy=ratio("greedy", "ios"),
        predicted_ms=m.predicted_ms, search_s=m.search_s, stages_profiled=m.stages_profiled,
        cache_hits=m.cache_hits, candidates=m.candidates,
        unique_signatures=m.unique_signatures, stages_measured=m.stages_measured,
        lower_bound_misses=m.lower_bound_misses, largest_bound_miss_ms=m.largest_bound_miss_ms,
        search_cores=m.search_cores,
        noisy=[l.name for l in m.measured if l.cv > NOISY_CV],
        schedule_json=m.schedule_json)


def worker_from_proto(m):
    return Worker(id=m.id, device_key=m.device_key, backend=m.backend,
                  description=m.description, state=m.state, job_id=m.job_id,
                  connected_unix_ms=m.connected_unix_ms,
                  last_heartbeat_unix_ms=m.last_heartbeat_unix_ms, phases_done=m.phases_done,
                  build_job_id=m.build_job_id)
