// FarmCoordinator, part one: the engine that moves jobs — dispatch,
// lifecycle steps, server phases, ends — and its start and stop. The jobs'
// side (submit, retune, resume, cancel, watch) is in
// farm_coordinator_jobs.cc, the workers' side in farm_coordinator_workers.cc.
#include "server/farm_coordinator.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "server/phase_steps.h"
#include "server/server_phases.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace farm = scheduler::farm;

namespace {

farm::AdmissionRules AdmissionRulesOf(const CoordinatorOptions& options) {
  farm::AdmissionRules rules;
  const int searches = std::max(1, options.max_searches);
  rules.first_turn_places = std::clamp(options.search_first_turns, 0, searches - 1);
  rules.places = searches - rules.first_turn_places;
  rules.min_turn_s = options.search_min_turn_s;
  rules.max_wait_s = options.search_max_wait_s;
  return rules;
}

}  // namespace

FarmCoordinator::FarmCoordinator(CoordinatorOptions options, JobStore* jobs, LatencyDb* latencies)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock()),
      job_store_(jobs),
      latency_db_(latencies),
      recorder_(jobs),
      import_gate_(options_.import_gate_bytes),
      scheduler_(options_.policy, options_.server_slots),
      admission_(AdmissionRulesOf(options_)) {
  phase_env_.jobs = job_store_;
  phase_env_.latencies = latency_db_;
  phase_env_.claims = &claims_;
  phase_env_.import_gate = &import_gate_;
  phase_env_.metrics = options_.metrics;
  phase_env_.clock = &clock_;
  phase_env_.search_budget = options_.search_budget;
  phase_env_.enumerate_slice_s = options_.enumerate_slice_s;
  pool_ = std::make_unique<ServerPhasePool>(options_.server_slots);
  heartbeat_ = std::make_unique<HeartbeatMonitor>(options_.heartbeat_interval_s,
                                                  [this] { CheckHeartbeats(); });
}

FarmCoordinator::~FarmCoordinator() { Shutdown(); }

void FarmCoordinator::Shutdown() {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    out.to_close = workers_.Links();
    for (auto& [id, job] : jobs_) {
      job->stop = true;  // running search passes stop; the job stays unfinished (Resume)
      // A clean stop is no crash: take back the resume this server counted.
      if (job->resume_counted) recorder_.QueueResumes(id, -1);
    }
  }
  Deliver(std::move(out));
  pool_->Stop();
  heartbeat_->Stop();
  recorder_.Flush();  // what the stopped phases queued
}

void FarmCoordinator::Deliver(Outbox outbox) {
  recorder_.Flush();
  for (auto& [link, command] : outbox.sends) {
    if (!link->Send(command)) link->Close();  // the stream handler reports the loss
  }
  for (auto& link : outbox.to_close) link->Close();
}

JobContext& FarmCoordinator::AdmitLocked(JobRow row) {
  auto job = std::make_shared<JobContext>();
  job->row = std::move(row);
  job->lifecycle = farm::JobLifecycle(options_.max_attempts);
  jobs_[job->row.id] = job;
  StartSearchOrWaitLocked(*job);
  return *job;
}

farm::SearchCandidate FarmCoordinator::CandidateOf(const JobContext& job) const {
  farm::SearchCandidate candidate;
  candidate.priority = job.row.options.priority;
  candidate.owner = job.row.owner;
  candidate.expected_stages =
      static_cast<double>(std::max<int64_t>(0, job.row.estimated_stages - job.row.stages_profiled));
  return candidate;
}

void FarmCoordinator::StartSearchOrWaitLocked(JobContext& job) {
  const double now = clock_.NowSeconds();
  if (admission_.Request(job.row.id, CandidateOf(job), now)) {
    // Registered with the scheduler only now: a policy that waits for every
    // job it knows (synchronous rounds) must not wait for jobs that cannot
    // start their search yet.
    // Batches on workers at once: the job's option, else as many as its key
    // has idle GPUs now, at least 1 (the synchronous policy's rounds take
    // one per job).
    int parallel = job.row.options.max_parallel_batches;
    if (parallel <= 0) parallel = std::max(1, scheduler_.num_idle_devices(job.row.device_key));
    if (options_.policy == farm::Policy::kSynchronous) parallel = 1;
    job.lifecycle = farm::JobLifecycle(options_.max_attempts, parallel, job.lifecycle.attempts());
    if (Status added =
            scheduler_.AddJob(job.row.id, job.row.device_key, parallel == 1 ? 1 : parallel + 1);
        !added.ok()) {
      FinishJobLocked(job, JobState::kFailed, StrCat("cannot schedule: ", added.message()));
      return;
    }
    job.scheduled = true;
    StepLocked(job, job.lifecycle.Start(), "queued");
    return;
  }
  TouchLocked(
      job,
      StrCat("waiting for a search place: ", admission_.QueuePosition(job.row.id, now).value_or(0),
             " of ", admission_.waiting(), " in line, ", admission_.held(),
             " searches hold one (at most ", options_.max_searches, ", --max-searches, ",
             admission_.first_turn_places(), " of them for first turns)"));
}

void FarmCoordinator::EndSearchLocked(JobContext& job) {
  for (const int64_t next : admission_.Release(job.row.id, clock_.NowSeconds())) {
    auto it = jobs_.find(next);
    if (it != jobs_.end()) StartSearchOrWaitLocked(*it->second);
  }
}

void FarmCoordinator::RotateSearchPlacesLocked() {
  if (admission_.waiting() == 0) return;
  const double now = clock_.NowSeconds();
  std::vector<std::shared_ptr<JobContext>> holders;
  for (auto& [id, job] : jobs_) {
    if (job->scheduled && admission_.holds(id) && !job->lifecycle.yielding()) {
      holders.push_back(job);
    }
  }
  for (const std::shared_ptr<JobContext>& job : holders) {
    if (!jobs_.contains(job->row.id) || !TurnOverLocked(*job, now)) continue;
    const farm::LifecycleStep step = job->lifecycle.Yield();
    if (step.action == farm::LifecycleStep::Action::kYield) {
      YieldSearchLocked(*job);
    } else if (job->lifecycle.yielding()) {
      TouchLocked(*job, "turn over: finishing the batches out, then yielding its search place");
    }
  }
}

bool FarmCoordinator::TurnOverLocked(JobContext& job, double now_s) {
  const int64_t id = job.row.id;
  // A server phase in flight owns the runner: its end asks again (ServerPhaseDone).
  if (job.server_phase_running) return false;
  if (!admission_.ShouldYield(id, CandidateOf(job), now_s)) return false;
  if (job.runner != nullptr && job.runner->walking() && !admission_.holds_first_turn(id)) {
    job.runner->StopAfterTheWalk();  // its next enumerate ends with the walk; then it yields
    return false;
  }
  return true;
}

void FarmCoordinator::YieldSearchLocked(JobContext& job) {
  const int64_t id = job.row.id;
  const double now = clock_.NowSeconds();
  if (job.scheduled) {
    Status removed = scheduler_.RemoveJob(id, now);
    if (!removed.ok()) spdlog::warn("job {}: {}", id, ToStd(removed.message()));
    job.scheduled = false;
  }
  FlushRecordsLocked();
  claims_.Release(id);  // a batch being filled: enumerated again on resume
  job.parked = false;
  job.runner.reset();  // the search's memory; its measurements are stored
  job.row.phase = "yielded";
  ++job.yields;
  spdlog::info("job {}: yielded its search place ({} measured so far)", id,
               job.row.stages_profiled);
  const std::vector<int64_t> started = admission_.Yielded(id, CandidateOf(job), now);
  TouchLocked(job, StrCat("turn over: search paused (its measurements are stored); waits for a "
                          "search place again, ",
                          admission_.QueuePosition(id, now).value_or(0), " of ",
                          admission_.waiting(), " in line"));
  for (const int64_t next : started) {
    auto it = jobs_.find(next);
    if (it != jobs_.end()) StartSearchOrWaitLocked(*it->second);
  }
}

void FarmCoordinator::TouchLocked(JobContext& job, std::string message) {
  ++job.version;
  job.message = std::move(message);
  if (job.runner && !job.server_phase_running) job.runner->FillProgress(job.row);
  recorder_.QueueProgress(job.row);
}

void FarmCoordinator::EnqueueLocked(JobContext& job, const farm::PhaseRequest& request) {
  if (options_.policy == farm::Policy::kCriticalPath) {
    const double urgency = farm::EstimateUrgencySeconds(
        job.busy_s, job.row.blocks_done, job.row.blocks_total, job.row.options.priority);
    if (Status set = scheduler_.SetJobUrgency(job.row.id, urgency); !set.ok()) {
      spdlog::error("job {}: {}", job.row.id, ToStd(set.message()));
    }
  }
  Status status = scheduler_.Enqueue(job.row.id, request, clock_.NowSeconds());
  if (!status.ok()) {
    spdlog::error("job {}: cannot queue {}: {}", job.row.id, farm::PhaseKindName(request.kind),
                  ToStd(status.message()));
  }
}

void FarmCoordinator::FlushRecordsLocked() {
  for (const farm::PhaseRecord& record : scheduler_.TakeRecords()) {
    if (auto job = jobs_.find(record.job); job != jobs_.end()) {
      job->second->busy_s += record.end_s - record.start_s;
    }
    int64_t stages = 0;
    if (auto it = in_flight_.find(record.phase); it != in_flight_.end()) {
      stages = it->second.stages;
      in_flight_.erase(it);
    }
    recorder_.QueuePhase(record, stages);
    if (options_.metrics != nullptr) options_.metrics->PhaseFinished(record);
  }
}

void FarmCoordinator::ReportGaugesLocked() {
  if (options_.metrics == nullptr) return;
  options_.metrics->QueueLengths(scheduler_.queue_lengths());
  options_.metrics->ActiveJobs(static_cast<int>(jobs_.size()));
  options_.metrics->Workers(static_cast<int>(workers_.size()));
}

void FarmCoordinator::FinishJobLocked(JobContext& job, JobState state, const std::string& error) {
  const int64_t id = job.row.id;
  if (job.scheduled) {
    Status removed = scheduler_.RemoveJob(id, clock_.NowSeconds());
    if (!removed.ok()) spdlog::warn("job {}: {}", id, ToStd(removed.message()));
  }
  FlushRecordsLocked();
  claims_.Release(id);
  job.row.state = state;
  job.row.error = error;
  if (job.runner && !job.server_phase_running) job.runner->FillProgress(job.row);
  recorder_.QueueProgress(job.row);
  recorder_.QueueState(id, state, error, clock_.NowUnixMs());
  spdlog::info("job {} {}{}", id, JobStateName(state), error.empty() ? "" : ": " + error);
  ++job.version;
  job.message = StrCat("job ", JobStateName(state), error.empty() ? "" : StrCat(": ", error));
  if (options_.metrics != nullptr) {
    options_.metrics->JobFinished(std::string(JobStateName(state)),
                                  clock_.NowSeconds() - job.row.submitted_unix_ms / 1000.0);
  }
  const std::string key = job.row.device_key;
  EndSearchLocked(job);
  jobs_.erase(id);  // `job` is gone from here on
  WakeParkedLocked(key);
}

void FarmCoordinator::WakeParkedLocked(const std::string& device_key) {
  for (auto& [id, job] : jobs_) {
    if (!job->parked || job->row.device_key != device_key) continue;
    job->parked = false;
    StepLocked(*job, job->lifecycle.Woken(), "");
  }
}

void FarmCoordinator::StepLocked(JobContext& job, const farm::LifecycleStep& step,
                                 std::string message) {
  switch (step.action) {
    case farm::LifecycleStep::Action::kEnqueue:
      for (const farm::PhaseRequest& request : step.enqueue) EnqueueLocked(job, request);
      if (step.retry) {
        spdlog::warn("job {}: {} (attempt {} of {})", job.row.id, message,
                     job.lifecycle.attempts(), options_.max_attempts);
        message = StrCat("retrying: ", message);
      }
      break;
    case farm::LifecycleStep::Action::kWait:  // not with one batch per job
      break;
    case farm::LifecycleStep::Action::kPark:
      job.parked = true;
      break;
    case farm::LifecycleStep::Action::kYield:
      YieldSearchLocked(job);
      return;
    case farm::LifecycleStep::Action::kDone:
      FinishJobLocked(job, JobState::kSucceeded, "");
      return;
    case farm::LifecycleStep::Action::kFail:
      FinishJobLocked(job, JobState::kFailed, step.error);
      return;
  }
  if (!message.empty()) TouchLocked(job, std::move(message));
}

void FarmCoordinator::HandOutBatchesLocked(JobContext& job, farm::LifecycleStep& step) {
  if (step.action != farm::LifecycleStep::Action::kEnqueue || !job.runner) return;
  for (const farm::PhaseRequest& request : step.enqueue) {
    if (request.kind != farm::PhaseKind::kBuild || job.batches.contains(request.batch)) continue;
    StatusOr<BuildRequest> build = job.runner->TakeBatch(request.batch);
    if (!build.ok()) {
      step = farm::LifecycleStep{};
      step.action = farm::LifecycleStep::Action::kFail;
      step.error = std::string(build.status().message());
      return;
    }
    job.batches[request.batch] = *std::move(build);
  }
}

void FarmCoordinator::DispatchLocked(Outbox& out) {
  if (shutting_down_) return;
  for (const farm::Assignment& assignment : scheduler_.Dispatch(clock_.NowSeconds())) {
    auto it = jobs_.find(assignment.job);
    if (it == jobs_.end()) {
      spdlog::error("dispatch of phase {} for unknown job {}", assignment.phase, assignment.job);
      continue;
    }
    std::shared_ptr<JobContext> job = it->second;
    if (options_.metrics != nullptr) options_.metrics->PhaseStarted(assignment.kind);
    PhaseInFlight flight;
    flight.job = assignment.job;
    flight.kind = assignment.kind;
    flight.worker = assignment.worker;
    flight.batch = assignment.batch;
    if (job->row.state == JobState::kQueued) {
      job->row.state = JobState::kRunning;
      job->row.started_unix_ms = clock_.NowUnixMs();
      recorder_.QueueState(job->row.id, JobState::kRunning, "", job->row.started_unix_ms);
    }
    job->row.phase = std::string(farm::PhaseKindName(assignment.kind));
    if (!assignment.worker.empty()) {
      DispatchToWorkerLocked(assignment, *job, flight, out);
      continue;
    }
    in_flight_[assignment.phase] = flight;
    TouchLocked(*job, StrCat(job->row.phase, " started"));
    auto task = std::make_shared<ServerPhaseTask>();
    task->kind = assignment.kind;
    task->batch = assignment.batch;
    if (auto profiled = job->profiled.find(assignment.batch);
        assignment.kind == farm::PhaseKind::kUpdate && profiled != job->profiled.end()) {
      task->profiled = std::move(profiled->second);  // the pool thread's now
      job->profiled.erase(profiled);
    }
    job->server_phase_running = true;  // the runner belongs to the pool thread now
    pool_->Post([this, assignment, task] { RunServerPhase(assignment, task); });
  }
  ReportGaugesLocked();
}

void FarmCoordinator::RunServerPhase(farm::Assignment assignment,
                                     std::shared_ptr<const ServerPhaseTask> task) {
  std::shared_ptr<JobContext> job;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(assignment.job);
    if (it == jobs_.end()) return;  // cancelled meanwhile
    job = it->second;
  }
  // The job has this one phase in flight: its runner is ours until we report.
  const ServerPhaseOutcome outcome = options_.server_phase_work
                                         ? options_.server_phase_work(*task, *job, phase_env_)
                                         : RunServerPhaseWork(*task, *job, phase_env_);
  ServerPhaseDone(assignment, job, outcome.status, outcome.next, outcome.stored_stages);
}

void FarmCoordinator::ServerPhaseDone(const farm::Assignment& assignment,
                                      const std::shared_ptr<JobContext>& job,
                                      const Status& status, std::optional<JobRunner::Next> next,
                                      int64_t stored_stages) {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    job->server_phase_running = false;
    // Shutting down: the phase (stopped or finished) is not recorded; the
    // job resumes from its last stored state after a restart.
    if (shutting_down_) return;
    if (!jobs_.contains(assignment.job)) {
      // Cancelled meanwhile. The cancel released the job's claims, but this
      // enumerate may have claimed signatures since: release them again, or
      // jobs waiting for them would wait forever.
      claims_.Release(assignment.job);
      WakeParkedLocked(job->row.device_key);
    } else if (in_flight_.contains(assignment.phase)) {
      const bool update = assignment.kind == farm::PhaseKind::kUpdate;
      Status finished = scheduler_.Finished(
          assignment.phase, status.ok() ? farm::PhaseOutcome::kOk : farm::PhaseOutcome::kFailed,
          clock_.NowSeconds());
      if (!finished.ok()) spdlog::error("job {}: {}", assignment.job, ToStd(finished.message()));
      FlushRecordsLocked();
      if (status.ok() && update && (job->row.resumes > 0 || job->resume_counted)) {
        // New measurements: the job got further than before any crash.
        recorder_.QueueResumes(job->row.id, 0);
        job->row.resumes = 0;
        job->resume_counted = false;
      }
      JobRow progress;
      if (job->runner) job->runner->FillProgress(progress);
      PhaseStep step = ServerPhaseStep(assignment.kind, status, next, progress,
                                       job->runner ? job->runner->batch_size() : 0, stored_stages);
      step.end.batch = assignment.batch;
      if (next == JobRunner::Next::kMeasure) EndSearchLocked(*job);  // the runner freed its search
      if (status.ok() && update) job->batches.erase(assignment.batch);  // stored
      const std::string key = job->row.device_key;
      if (next != JobRunner::Next::kMeasure && TurnOverLocked(*job, clock_.NowSeconds())) {
        job->lifecycle.Yield();  // its turn is over: Next says kYield once nothing is out
      }
      farm::LifecycleStep lifecycle_step = job->lifecycle.Next(step.end);
      HandOutBatchesLocked(*job, lifecycle_step);
      StepLocked(*job, lifecycle_step, std::move(step.message));
      if (status.ok() && update) WakeParkedLocked(key);
    }
    RotateSearchPlacesLocked();
    DispatchLocked(out);
  }
  Deliver(std::move(out));
}

farm::QueueLengths FarmCoordinator::QueueLengths() {
  absl::MutexLock lock(&mu_);
  return scheduler_.queue_lengths();
}

}  // namespace iosfarm::server
