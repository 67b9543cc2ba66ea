#include "server/farm_coordinator.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "common/memory.h"
#include "common/strings.h"
#include "common/text.h"
#include "server/proto_convert.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace farm = scheduler::farm;

FarmCoordinator::FarmCoordinator(CoordinatorOptions options, JobStore* jobs, LatencyDb* latencies)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock()),
      job_store_(jobs),
      latency_db_(latencies),
      import_gate_(options_.import_gate_bytes),
      scheduler_(options_.policy, options_.server_slots),
      search_places_(options_.max_searches) {
  if (!options_.synthetic_phase_seconds.empty()) {
    padding_ = std::make_unique<PhasePadding>(options_.synthetic_phase_seconds, clock_);
  }
  pool_ = std::make_unique<ServerPhasePool>(options_.server_slots);
  heartbeat_ = std::make_unique<HeartbeatMonitor>(options_.heartbeat_interval_s,
                                                  [this] { CheckHeartbeats(); });
}

FarmCoordinator::~FarmCoordinator() { Shutdown(); }

void FarmCoordinator::Shutdown() {
  std::vector<std::shared_ptr<WorkerLink>> links;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    links = workers_.Links();
    // Running search passes stop; their jobs stay unfinished (Resume).
    for (auto& [id, job] : jobs_) job->stop = true;
    // A clean stop is no crash: take back the resumes this server counted.
    for (auto& [id, job] : jobs_) {
      if (!job->resume_counted) continue;
      auto uncounted = job_store_->AddResumes(id, -1);
      if (!uncounted.ok()) {
        spdlog::error("job {}: {}", id, ToStd(uncounted.status().message()));
      }
    }
  }
  for (auto& link : links) link->Close();
  pool_->Stop();
  heartbeat_->Stop();
  if (padding_) padding_->Stop();
}

void FarmCoordinator::CheckHeartbeats() {
  std::vector<Send> sends;
  std::vector<std::shared_ptr<WorkerLink>> to_close;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    for (const std::string& id : workers_.Silent(clock_.NowUnixMs(), options_.heartbeat_timeout_s)) {
      to_close.push_back(workers_.Find(id)->link);
      WorkerLostLocked(id, StrCat("no heartbeat for ", options_.heartbeat_timeout_s, " s"), sends);
    }
  }
  for (auto& link : to_close) link->Close();
  SendAll(std::move(sends));
}

Status FarmCoordinator::Resume() {
  JobFilter filter;
  filter.unfinished_only = true;
  filter.limit = 1 << 30;
  ASSIGN_OR_RETURN(std::vector<JobRow> unfinished, job_store_->ListJobs(filter));
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    for (JobRow& row : unfinished) {
      // The crash-loop guard (farm_coordinator.h, Resume).
      const bool in_server_phase = row.phase == "enumerate" || row.phase == "update";
      if (in_server_phase) {
        ASSIGN_OR_RETURN(row.resumes, job_store_->AddResumes(row.id, 1));
        if (row.resumes > options_.max_resumes) {
          const std::string error = StrCat(
              "not resumed: the server stopped ", row.resumes,
              " times without a clean shutdown while this job's search (", row.phase,
              ") ran, with no new measurement stored in between; a server crash during its "
              "search is the likely cause (see the server log). Resubmit it with a smaller "
              "--block-size, or raise the server's --max-resumes");
          spdlog::error("job {} ({}, {}): {}", row.id, row.model_name, row.device_key, error);
          RETURN_IF_ERROR(job_store_->UpdateJobState(row.id, JobState::kFailed, error, clock_.NowUnixMs()));
          continue;
        }
      }
      spdlog::info("resuming job {} ({}, {}) from its last completed phase{}", row.id,
                   row.model_name, row.device_key,
                   row.resumes > 0 ? StrCat(" (resume ", row.resumes, " of at most ",
                                            options_.max_resumes, " without progress)")
                                   : std::string());
      auto admitted = AdmitLocked(std::move(row));
      if (!admitted.ok()) return admitted.status();
      jobs_.at(admitted->id)->resume_counted = in_server_phase;
    }
    DispatchLocked(sends);
  }
  SendAll(std::move(sends));
  return absl::OkStatus();
}

StatusOr<JobRow> FarmCoordinator::AdmitLocked(JobRow row) {
  auto job = std::make_shared<JobContext>();
  job->row = std::move(row);
  job->lifecycle = farm::JobLifecycle(options_.max_attempts);
  job->submitted_s = job->row.submitted_unix_ms / 1000.0;
  const int64_t id = job->row.id;
  jobs_[id] = job;
  StartSearchOrWaitLocked(*job);
  return job->row;
}

void FarmCoordinator::StartSearchOrWaitLocked(JobContext& job) {
  if (search_places_.Take(job.row.id)) {
    // Registered with the scheduler only now: a policy that waits for every
    // job it knows (synchronous rounds) must not wait for jobs that cannot
    // start their search yet.
    if (Status added = scheduler_.AddJob(job.row.id, job.row.device_key); !added.ok()) {
      FinishJobLocked(job, JobState::kFailed, StrCat("cannot schedule: ", added.message()));
      return;
    }
    job.scheduled = true;
    StepLocked(job, job.lifecycle.Start(), "queued");
    return;
  }
  TouchLocked(job, StrCat("queued: ", search_places_.held(),
                          " searches hold server memory (at most ",
                          options_.max_searches, ", --max-searches); starts when one ends"));
}

void FarmCoordinator::EndSearchLocked(JobContext& job) {
  for (const int64_t next : search_places_.Release(job.row.id)) {
    auto it = jobs_.find(next);
    if (it != jobs_.end()) StartSearchOrWaitLocked(*it->second);
  }
}

Status FarmCoordinator::CheckDeviceKeyLocked(const std::string& device_key) {
  if (workers_.HasDeviceKey(device_key)) return absl::OkStatus();
  ASSIGN_OR_RETURN(bool known, latency_db_->HasDevice(device_key));
  if (known) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto devices, latency_db_->ListDevices());
  std::string names;
  for (const auto& d : devices) names += (names.empty() ? "" : ", ") + d.key;
  return absl::NotFoundError(StrCat("unknown device key '", device_key,
                                    "': no worker ever registered it (known: ",
                                    names.empty() ? "none" : names,
                                    "; start a worker with --device-key ", device_key, ")"));
}

StatusOr<JobRow> FarmCoordinator::Submit(JobRow job, const ModelRow& model) {
  std::vector<Send> sends;
  JobRow admitted;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return absl::UnavailableError("the server is shutting down");
    RETURN_IF_ERROR(CheckDeviceKeyLocked(job.device_key));
    int active = 0;
    for (const auto& [id, other] : jobs_) active += other->row.owner == job.owner;
    if (active >= options_.max_active_jobs_per_owner) {
      return absl::ResourceExhaustedError(
          StrCat("client '", job.owner, "' already has ", active,
                 " active jobs (limit ", options_.max_active_jobs_per_owner, ")"));
    }
    RETURN_IF_ERROR(job_store_->PutModel(model));
    job.state = JobState::kQueued;
    job.submitted_unix_ms = clock_.NowUnixMs();
    ASSIGN_OR_RETURN(job.id, job_store_->CreateJob(job));
    ASSIGN_OR_RETURN(admitted, AdmitLocked(std::move(job)));
    DispatchLocked(sends);
  }
  SendAll(std::move(sends));
  return admitted;
}

StatusOr<std::pair<std::string, std::vector<JobRow>>> FarmCoordinator::Retune(
    const std::string& device_key, const RetuneFilter& filter,
    const std::optional<JobOptions>& options, const std::string& owner) {
  ASSIGN_OR_RETURN(std::vector<RetuneTarget> targets, job_store_->RetuneTargets(filter));
  if (targets.empty()) {
    return absl::NotFoundError("no stored model matches the retune filter");
  }
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckDeviceKeyLocked(device_key));
  }
  const std::string batch_id = StrCat("retune-", clock_.NowUnixMs());
  std::vector<JobRow> jobs;
  for (const RetuneTarget& target : targets) {
    ASSIGN_OR_RETURN(std::optional<ModelRow> model, job_store_->GetModel(target.model_digest));
    if (!model) return absl::InternalError(StrCat("model ", target.model_digest, " is missing"));
    JobRow job;
    job.model_digest = model->digest;
    job.model_name = model->name;
    job.device_key = device_key;
    job.owner = owner;
    job.retune_batch = batch_id;
    job.batch = target.batch;
    job.options = options.value_or(target.options);
    // The graph is loaded by the job's first enumerate phase.
    std::vector<Send> sends;
    {
      absl::MutexLock lock(&mu_);
      job.state = JobState::kQueued;
      job.submitted_unix_ms = clock_.NowUnixMs();
      ASSIGN_OR_RETURN(job.id, job_store_->CreateJob(job));
      ASSIGN_OR_RETURN(JobRow admitted, AdmitLocked(job));
      jobs.push_back(admitted);
      DispatchLocked(sends);
    }
    SendAll(std::move(sends));
  }
  return std::make_pair(batch_id, jobs);
}

StatusOr<JobRow> FarmCoordinator::Cancel(int64_t job_id) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) {
      ASSIGN_OR_RETURN(std::optional<JobRow> row, job_store_->GetJob(job_id));
      if (!row) return absl::NotFoundError(StrCat("job ", job_id, " not found"));
      return absl::FailedPreconditionError(StrCat("job ", job_id, " already ended (",
                                                  JobStateName(row->state), ")"));
    }
    std::shared_ptr<JobContext> job = it->second;
    job->stop = true;  // a running search pass ends soon
    for (const auto& [phase, flight] : in_flight_) {
      if (flight.job != job_id || flight.worker.empty()) continue;
      const WorkerEntry* w = workers_.Find(flight.worker);
      if (w == nullptr) continue;
      // The scheduler frees the resource now; the worker drops the result.
      workers_.Released(flight.worker);
      v1::ServerMessage cancel;
      cancel.mutable_cancel()->set_phase_id(phase);
      sends.emplace_back(w->link, cancel);
    }
    FinishJobLocked(*job, JobState::kCancelled, "cancelled by the client");
    DispatchLocked(sends);
  }
  SendAll(std::move(sends));
  ASSIGN_OR_RETURN(std::optional<JobRow> row, job_store_->GetJob(job_id));
  return *row;
}

StatusOr<JobSnapshot> FarmCoordinator::Snapshot(int64_t job_id) {
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it != jobs_.end()) {
      JobSnapshot snapshot;
      snapshot.job = it->second->row;
      snapshot.version = it->second->version;
      snapshot.message = it->second->message;
      return snapshot;
    }
  }
  ASSIGN_OR_RETURN(std::optional<JobRow> row, job_store_->GetJob(job_id));
  if (!row) return absl::NotFoundError(StrCat("job ", job_id, " not found"));
  JobSnapshot snapshot;
  snapshot.job = *row;
  snapshot.final = IsFinal(row->state);
  snapshot.version = snapshot.final ? (int64_t{1} << 62) : 0;
  snapshot.message = StrCat("job ", JobStateName(row->state),
                            row->error.empty() ? "" : StrCat(": ", row->error));
  return snapshot;
}

StatusOr<JobSnapshot> FarmCoordinator::WaitForChange(int64_t job_id, int64_t seen_version,
                                                     double timeout_s) {
  {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (shutting_down_) return true;
      auto it = jobs_.find(job_id);
      return it == jobs_.end() || it->second->version > seen_version;
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(timeout_s));
  }
  return Snapshot(job_id);
}

void FarmCoordinator::TouchLocked(JobContext& job, std::string message) {
  ++job.version;
  job.message = std::move(message);
  if (job.runner) job.runner->FillProgress(job.row);
  Status status = job_store_->UpdateJobProgress(job.row);
  if (!status.ok()) spdlog::error("job {}: cannot store progress: {}", job.row.id, ToStd(status.message()));
}

void FarmCoordinator::EnqueueLocked(JobContext& job, farm::PhaseKind kind,
                                    const std::string& pinned_worker) {
  farm::PhaseRequest request;
  request.kind = kind;
  request.pinned_worker = pinned_worker;
  job.queued_kind = kind;
  Status status = scheduler_.Enqueue(job.row.id, request, clock_.NowSeconds());
  if (!status.ok()) {
    spdlog::error("job {}: cannot queue {}: {}", job.row.id, farm::PhaseKindName(kind),
                  ToStd(status.message()));
  }
}

void FarmCoordinator::FlushRecordsLocked() {
  for (const farm::PhaseRecord& record : scheduler_.TakeRecords()) {
    PhaseLogRow row;
    row.job_id = record.job;
    row.phase = std::string(farm::PhaseKindName(record.kind));
    row.resource = record.resource;
    row.worker = record.worker;
    row.outcome = std::string(farm::PhaseOutcomeName(record.outcome));
    row.queued_s = record.queued_s;
    row.start_s = record.start_s;
    row.end_s = record.end_s;
    auto it = in_flight_.find(record.phase);
    if (it != in_flight_.end()) {
      row.stages = it->second.stages;
      in_flight_.erase(it);
    }
    auto appended = job_store_->AppendPhase(row);
    if (!appended.ok()) spdlog::error("cannot log phase: {}", ToStd(appended.status().message()));
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
  if (job.runner) job.runner->FillProgress(job.row);
  Status stored = job_store_->UpdateJobProgress(job.row);
  if (stored.ok()) stored = job_store_->UpdateJobState(id, state, error, clock_.NowUnixMs());
  if (!stored.ok()) spdlog::error("job {}: cannot store its end: {}", id, ToStd(stored.message()));
  spdlog::info("job {} {}{}", id, JobStateName(state), error.empty() ? "" : ": " + error);
  ++job.version;
  job.message = StrCat("job ", JobStateName(state), error.empty() ? "" : StrCat(": ", error));
  if (options_.metrics != nullptr) {
    options_.metrics->JobFinished(std::string(JobStateName(state)),
                                  clock_.NowSeconds() - job.row.submitted_unix_ms / 1000.0);
  }
  const std::string key = job.row.device_key;
  EndSearchLocked(job);
  jobs_.erase(id);
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
      EnqueueLocked(job, step.next.kind, step.next.pinned_worker);
      if (step.retry) {
        spdlog::warn("job {}: {} (attempt {} of {})", job.row.id, message,
                     job.lifecycle.attempts(), options_.max_attempts);
        message = StrCat("retrying: ", message);
      }
      break;
    case farm::LifecycleStep::Action::kPark:
      job.parked = true;
      break;
    case farm::LifecycleStep::Action::kDone:
      FinishJobLocked(job, JobState::kSucceeded, "");
      return;
    case farm::LifecycleStep::Action::kFail:
      FinishJobLocked(job, JobState::kFailed, step.error);
      return;
  }
  if (!message.empty()) TouchLocked(job, std::move(message));
}

void FarmCoordinator::DispatchLocked(std::vector<Send>& sends) {
  if (shutting_down_) return;
  for (const farm::Assignment& assignment : scheduler_.Dispatch(clock_.NowSeconds())) {
    auto it = jobs_.find(assignment.job);
    if (it == jobs_.end()) {
      spdlog::error("dispatch of phase {} for unknown job {}", assignment.phase, assignment.job);
      continue;
    }
    std::shared_ptr<JobContext> job = it->second;
    if (options_.metrics != nullptr) options_.metrics->PhaseStarted(assignment.kind);
    InFlight flight;
    flight.dispatched_s = clock_.NowSeconds();
    flight.job = assignment.job;
    flight.kind = assignment.kind;
    flight.worker = assignment.worker;
    if (job->row.state == JobState::kQueued) {
      job->row.state = JobState::kRunning;
      Status s = job_store_->UpdateJobState(job->row.id, JobState::kRunning, "", clock_.NowUnixMs());
      if (!s.ok()) spdlog::error("job {}: {}", job->row.id, ToStd(s.message()));
      job->row.started_unix_ms = clock_.NowUnixMs();
    }
    job->row.phase = std::string(farm::PhaseKindName(assignment.kind));
    if (assignment.worker.empty()) {
      in_flight_[assignment.phase] = flight;
      pool_->Post([this, assignment] { RunServerPhase(assignment); });
      TouchLocked(*job, StrCat(job->row.phase, " started"));
      continue;
    }
    const WorkerEntry* w = workers_.Find(assignment.worker);
    Status error;
    v1::ServerMessage message = WorkerPhaseMessageLocked(assignment, *job, error);
    if (assignment.kind == farm::PhaseKind::kBuild) flight.stages = job->runner->batch_size();
    if (assignment.kind == farm::PhaseKind::kProfile) flight.stages = job->runner->batch_size();
    in_flight_[assignment.phase] = flight;
    if (!error.ok() || w == nullptr) {
      Status finished = scheduler_.Finished(assignment.phase, farm::PhaseOutcome::kFailed,
                                            clock_.NowSeconds());
      (void)finished;
      FlushRecordsLocked();
      FinishJobLocked(*job, JobState::kFailed,
                      error.ok() ? StrCat("worker ", assignment.worker, " vanished")
                                 : std::string(error.message()));
      continue;
    }
    workers_.Started(assignment.worker, assignment.kind, assignment.job);
    sends.emplace_back(w->link, std::move(message));
    TouchLocked(*job, StrCat(job->row.phase, " started on ", assignment.worker));
  }
  ReportGaugesLocked();
}

v1::ServerMessage FarmCoordinator::WorkerPhaseMessageLocked(const farm::Assignment& assignment,
                                                            JobContext& job, Status& error) {
  v1::ServerMessage message;
  v1::PhaseAssignment* phase = message.mutable_assign();
  phase->set_phase_id(assignment.phase);
  phase->set_job_id(assignment.job);
  phase->set_batch_id(StrCat(assignment.job, "/", job.row.stages_profiled));
  if (!job.runner) {
    error = absl::InternalError(StrCat("job ", assignment.job, " has no search state"));
    return message;
  }
  switch (assignment.kind) {
    case farm::PhaseKind::kBuild:
      *phase->mutable_build() = job.runner->MakeBuild();
      break;
    case farm::PhaseKind::kProfile:
      *phase->mutable_profile()->mutable_options() = options_.profile;
      break;
    case farm::PhaseKind::kMeasure: {
      auto measure = job.runner->MakeMeasure();
      if (!measure.ok()) {
        error = measure.status();
        break;
      }
      *phase->mutable_measure() = std::move(*measure);
      *phase->mutable_measure()->mutable_options() = options_.measure;
      break;
    }
    default:
      error = absl::InternalError("a server phase was dispatched to a worker");
  }
  return message;
}

void FarmCoordinator::SendAll(std::vector<Send> sends) {
  for (auto& [link, message] : sends) {
    if (!link->Send(message)) link->Close();  // the stream handler reports the loss
  }
}

void FarmCoordinator::RunServerPhase(farm::Assignment assignment) {
  std::shared_ptr<JobContext> job;
  double dispatched_s = clock_.NowSeconds();
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(assignment.job);
    if (it == jobs_.end()) return;  // cancelled meanwhile
    job = it->second;
    auto flight = in_flight_.find(assignment.phase);
    if (flight != in_flight_.end()) dispatched_s = flight->second.dispatched_s;
  }
  // The job has this one phase in flight: its runner is ours until we report.
  Status status;
  std::optional<JobRunner::Next> next;
  if (assignment.kind == farm::PhaseKind::kEnumerate) {
    if (!job->runner) {
      auto runner = JobRunner::Load(*job_store_, job->row, options_.search_budget, &job->stop,
                                    &import_gate_);
      if (runner.ok()) {
        job->runner = std::move(*runner);
      } else {
        status = runner.status();
      }
    }
    if (status.ok()) {
      const int64_t lookups = job->runner->lookups(), hits = job->runner->cache_hits();
      auto result = job->runner->Enumerate(*latency_db_, claims_, options_.enumerate_slice_s);
      if (result.ok()) {
        next = *result;
      } else {
        status = result.status();
      }
      if (options_.metrics != nullptr) {
        const int64_t new_hits = job->runner->cache_hits() - hits;
        options_.metrics->SignatureLookups(new_hits, job->runner->lookups() - lookups - new_hits);
      }
    }
  } else if (assignment.kind == farm::PhaseKind::kUpdate) {
    status = job->runner->ApplyProfile(job->pending_profile, job->pending_worker,
                                       job->pending_backend, *latency_db_, claims_, clock_.NowUnixMs());
    if (status.ok() && options_.metrics != nullptr) {
      options_.metrics->StagesProfiled(job->pending_profile.latencies_size());
    }
    job->pending_profile.Clear();
  } else {
    status = absl::InternalError("a worker phase ran on the server");
  }
  // A pass frees what it built in this thread's arena; give it back now.
  if (assignment.kind == farm::PhaseKind::kEnumerate) ReturnFreeMemory();
  // Benchmark padding (off unless synthetic_phase_seconds is set): the slot
  // stays busy until the phase's minimum time has passed.
  if (padding_) {
    if (const double left = padding_->Left(assignment.kind, dispatched_s); left > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(left));
    }
  }
  ServerPhaseDone(assignment, job, status, next);
}

void FarmCoordinator::ServerPhaseDone(const farm::Assignment& assignment,
                                      const std::shared_ptr<JobContext>& job,
                                      const Status& status, std::optional<JobRunner::Next> next) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    // Shutting down: the phase (stopped or finished) is not recorded; the
    // job resumes from its last stored state after a restart.
    if (shutting_down_) return;
    if (!jobs_.contains(assignment.job)) {
      // Cancelled meanwhile. The cancel released the job's claims, but this
      // enumerate may have claimed signatures since: release them again, or
      // jobs waiting for them would wait forever.
      claims_.Release(assignment.job);
      WakeParkedLocked(job->row.device_key);
    } else if (!in_flight_.contains(assignment.phase)) {
      return;
    } else {
      const bool update = assignment.kind == farm::PhaseKind::kUpdate;
      Status finished = scheduler_.Finished(
          assignment.phase, status.ok() ? farm::PhaseOutcome::kOk : farm::PhaseOutcome::kFailed,
          clock_.NowSeconds());
      if (!finished.ok()) spdlog::error("job {}: {}", assignment.job, ToStd(finished.message()));
      FlushRecordsLocked();
      farm::PhaseEnd end;
      end.kind = assignment.kind;
      end.outcome = status.ok() ? farm::PhaseOutcome::kOk : farm::PhaseOutcome::kFailed;
      end.error = std::string(status.message());
      // A worker's bad answer fails the update phase but is the worker's fault.
      end.rejected_answer = update && absl::IsInvalidArgument(status);
      std::string message = end.error;
      if (status.ok() && update) {
        // New measurements: the job got further than before any crash.
        if (job->row.resumes > 0 || job->resume_counted) {
          if (Status cleared = job_store_->ClearResumes(job->row.id); !cleared.ok()) {
            spdlog::error("job {}: {}", job->row.id, ToStd(cleared.message()));
          }
          job->row.resumes = 0;
          job->resume_counted = false;
        }
        message = StrCat("stored ", job->row.stages_profiled, " measured stages");
      } else if (status.ok()) {
        switch (*next) {
          case JobRunner::Next::kBuild:
            end.enumerated = farm::Enumerated::kBatch;
            message = StrCat("enumerated a batch of ", job->runner->batch_size(),
                             " stages to measure");
            break;
          case JobRunner::Next::kMeasure:
            end.enumerated = farm::Enumerated::kSearchDone;
            EndSearchLocked(*job);  // the runner released its search
            message = "search done; measuring the schedules end to end";
            break;
          case JobRunner::Next::kWait:
            end.enumerated = farm::Enumerated::kWait;
            message = "waiting for stages another job is measuring";
            break;
          case JobRunner::Next::kContinue: {
            // The time slice ran out: behind the other jobs' server phases.
            end.enumerated = farm::Enumerated::kSliceOver;
            JobRow progress;
            job->runner->FillProgress(progress);
            message = StrCat("searching: ", progress.blocks_done, " of ", progress.blocks_total,
                             " blocks solved");
            break;
          }
        }
      }
      const std::string key = job->row.device_key;
      StepLocked(*job, job->lifecycle.Next(end), std::move(message));
      if (status.ok() && update) WakeParkedLocked(key);
    }
    DispatchLocked(sends);
  }
  SendAll(std::move(sends));
}

Status FarmCoordinator::WorkerJoined(const v1::RegisterWorker& reported,
                                     std::shared_ptr<WorkerLink> link) {
  ASSIGN_OR_RETURN(const v1::RegisterWorker registration, WorkerRegistry::Bounded(reported));
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return absl::UnavailableError("the server is shutting down");
    // AlreadyExists for a live id; taken back if the worker cannot join.
    RETURN_IF_ERROR(workers_.Add(registration, std::move(link), clock_.NowUnixMs()));
    // Workers from before max_built_batches kept 8.
    const int max_batches =
        registration.max_built_batches() > 0 ? registration.max_built_batches() : 8;
    const farm::MeasuringDevice device = registration.backend() == "cpu"
                                             ? farm::MeasuringDevice::kCpu
                                             : farm::MeasuringDevice::kGpu;
    Status joined = latency_db_->UpsertDevice(registration.device_key(),
                                         registration.device_description(),
                                         registration.backend(), clock_.NowUnixMs());
    if (joined.ok()) {
      joined = scheduler_.WorkerJoined(registration.worker_id(), registration.device_key(),
                                       max_batches, device);
    }
    if (!joined.ok()) {
      workers_.Remove(registration.worker_id());
      return joined;
    }
    spdlog::info("worker {} joined ({} backend, device key {}: {})", registration.worker_id(),
                 registration.backend(), registration.device_key(),
                 registration.device_description());
    DispatchLocked(sends);
  }
  SendAll(std::move(sends));
  return absl::OkStatus();
}

void FarmCoordinator::WorkerHeartbeat(const std::string& worker) {
  absl::MutexLock lock(&mu_);
  workers_.Heartbeat(worker, clock_.NowUnixMs());
}

void FarmCoordinator::WorkerLost(const std::string& worker, const std::string& reason) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    WorkerLostLocked(worker, reason, sends);
  }
  SendAll(std::move(sends));
}

void FarmCoordinator::WorkerLostLocked(const std::string& worker, const std::string& reason,
                                       std::vector<Send>& sends) {
  if (workers_.Remove(worker) == nullptr) return;
  if (shutting_down_) {
    spdlog::info("worker {} disconnected: {}", worker, reason);
  } else {
    spdlog::warn("worker {} lost: {}", worker, reason);
  }
  std::vector<farm::JobId> affected = scheduler_.WorkerLost(worker, clock_.NowSeconds());
  FlushRecordsLocked();
  for (farm::JobId id : affected) {
    auto job = jobs_.find(id);
    if (job == jobs_.end()) continue;
    // Nothing it measured is lost: measurements reach the store in the
    // update phase, which runs on the server. Re-measure the batch elsewhere.
    farm::PhaseEnd end;
    end.kind = job->second->queued_kind;
    end.outcome = farm::PhaseOutcome::kWorkerLost;
    end.worker = worker;
    StepLocked(*job->second, job->second->lifecycle.Next(end),
               StrCat("worker ", worker, " lost (", reason, "); re-queued"));
  }
  if (!shutting_down_) DispatchLocked(sends);
}

void FarmCoordinator::PhaseResult(const std::string& worker, const v1::PhaseResult& reported) {
  const v1::PhaseResult result = WorkerRegistry::BoundedResult(reported);
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    auto flight_it = in_flight_.find(result.phase_id());
    if (flight_it == in_flight_.end() || flight_it->second.worker != worker) {
      spdlog::info("ignoring a result for phase {} from {} (cancelled or unknown)",
                   result.phase_id(), worker);
      return;
    }
    const InFlight flight = flight_it->second;
    // Benchmark padding (off unless synthetic_phase_seconds is set): hold the
    // result back until the phase's minimum time has passed.
    if (padding_) {
      if (const double left = padding_->Left(flight.kind, flight.dispatched_s); left > 1e-4) {
        padding_->RunAt(clock_.NowSeconds() + left,
                        [this, worker, result] { PhaseResult(worker, result); });
        return;
      }
    }
    std::string backend;
    if (const WorkerEntry* w = workers_.Find(worker); w != nullptr) {
      backend = w->registration.backend();
      workers_.Finished(worker);
    }
    Status finished = scheduler_.Finished(
        result.phase_id(), result.ok() ? farm::PhaseOutcome::kOk : farm::PhaseOutcome::kFailed,
        clock_.NowSeconds());
    if (!finished.ok()) spdlog::error("phase {}: {}", result.phase_id(), ToStd(finished.message()));
    FlushRecordsLocked();
    auto job_it = jobs_.find(flight.job);
    if (job_it == jobs_.end()) {
      DispatchLocked(sends);
    } else {
      std::shared_ptr<JobContext> job = job_it->second;
      farm::PhaseEnd end;
      end.kind = flight.kind;
      end.worker = worker;
      std::string message;
      Status stored;  // the measure's result row
      if (!result.ok()) {
        end.outcome = farm::PhaseOutcome::kFailed;
        message = end.error = StrCat(farm::PhaseKindName(flight.kind), " on ", worker,
                                     " failed: ", result.error());
      } else if (flight.kind == farm::PhaseKind::kBuild) {
        message = StrCat("built ", result.plans_built(), " plans on ", worker);
      } else if (flight.kind == farm::PhaseKind::kProfile) {
        job->pending_profile = result;
        job->pending_worker = worker;
        job->pending_backend = backend;
        message = StrCat("profiled ", result.latencies_size(), " stages on ", worker);
      } else if (flight.kind == farm::PhaseKind::kMeasure) {
        const double search_s = clock_.NowSeconds() - job->submitted_s;
        auto row = job->runner->ApplyMeasure(result, worker, backend, search_s);
        // A result row that cannot be read back is never written.
        if (row.ok()) {
          if (auto readable = ResultToProto(*row); !readable.ok()) {
            row = absl::InvalidArgumentError(
                StrCat("the result from ", worker, " cannot be read back: ", readable.status().message()));
          }
        }
        if (!row.ok()) {
          end.outcome = farm::PhaseOutcome::kFailed;  // the worker's answer: retried
          message = end.error = std::string(row.status().message());
        } else {
          stored = job_store_->PutResult(*row);
        }
      }
      farm::LifecycleStep step = job->lifecycle.Next(end);
      if (!stored.ok()) {  // a server reason, not the worker's: no retry
        step = farm::LifecycleStep{};
        step.action = farm::LifecycleStep::Action::kFail;
        step.error = StrCat("cannot store the result: ", stored.message());
      }
      StepLocked(*job, step, std::move(message));
      DispatchLocked(sends);
    }
  }
  SendAll(std::move(sends));
}

std::vector<WorkerSnapshot> FarmCoordinator::Workers() {
  absl::MutexLock lock(&mu_);
  return workers_.Snapshot();
}

farm::QueueLengths FarmCoordinator::QueueLengths() {
  absl::MutexLock lock(&mu_);
  return scheduler_.queue_lengths();
}

}  // namespace iosfarm::server
