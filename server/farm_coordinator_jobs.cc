// FarmCoordinator, part two: the jobs' side — submit, retune, resume,
// cancel and watch. The engine that moves jobs is in farm_coordinator.cc,
// the workers' side in farm_coordinator_workers.cc.
#include <set>
#include <utility>

#include "common/strings.h"
#include "server/farm_coordinator.h"
#include "server/phase_steps.h"
#include "server/search_estimate.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

Status FarmCoordinator::Resume() {
  JobFilter filter;
  filter.unfinished_only = true;
  filter.limit = 1 << 30;
  ASSIGN_OR_RETURN(std::vector<JobRow> unfinished, job_store_->ListJobs(filter));
  std::vector<JobRow> resumed;
  for (JobRow& row : unfinished) {
    // The crash-loop guard (farm_coordinator.h, Resume).
    if (CountsAsResume(row)) {
      ASSIGN_OR_RETURN(row.resumes, job_store_->AddResumes(row.id, 1));
    }
    if (std::optional<std::string> refusal = ResumeRefusal(row, options_.max_resumes)) {
      spdlog::error("job {} ({}, {}): {}", row.id, row.model_name, row.device_key, *refusal);
      RETURN_IF_ERROR(job_store_->UpdateJobState(row.id, JobState::kFailed, *refusal, clock_.NowUnixMs()));
      continue;
    }
    if (row.estimated_stages < 0) {  // stored before jobs were estimated
      ASSIGN_OR_RETURN(std::optional<ModelRow> model, job_store_->GetModel(row.model_digest));
      if (model) RETURN_IF_ERROR(EstimateStages(row, model->ops));
    }
    spdlog::info("resuming job {} ({}, {}) from its last completed phase{}", row.id,
                 row.model_name, row.device_key,
                 row.resumes > 0 ? StrCat(" (resume ", row.resumes, " of at most ",
                                          options_.max_resumes, " without progress)")
                                 : std::string());
    resumed.push_back(std::move(row));
  }
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    for (JobRow& row : resumed) {
      const bool counted = CountsAsResume(row);
      AdmitLocked(std::move(row)).resume_counted = counted;
    }
    DispatchLocked(out);
  }
  Deliver(std::move(out));
  return absl::OkStatus();
}

Status FarmCoordinator::CheckDeviceKey(const std::string& device_key) {
  {
    absl::MutexLock lock(&mu_);
    if (workers_.HasDeviceKey(device_key)) return absl::OkStatus();
  }
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

Status FarmCoordinator::ReserveLocked(const std::string& owner) {
  if (shutting_down_) return absl::UnavailableError("the server is shutting down");
  auto reserved = reserved_.find(owner);
  int active = reserved == reserved_.end() ? 0 : reserved->second;
  for (const auto& [id, other] : jobs_) active += other->row.owner == owner;
  if (active >= options_.max_active_jobs_per_owner) {
    return absl::ResourceExhaustedError(
        StrCat("client '", owner, "' already has ", active, " active jobs (limit ",
               options_.max_active_jobs_per_owner, ")"));
  }
  ++reserved_[owner];
  return absl::OkStatus();
}

void FarmCoordinator::UnreserveLocked(const std::string& owner) {
  if (--reserved_[owner] == 0) reserved_.erase(owner);
}

Status FarmCoordinator::EstimateStages(JobRow& job, int64_t model_ops) {
  if (job.estimated_stages >= 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(SearchHistory history, job_store_->SearchHistoryOf(job));
  job.estimated_stages = EstimateSearchStages(model_ops, history);
  return absl::OkStatus();
}

StatusOr<JobRow> FarmCoordinator::CreateAndAdmit(JobRow job) {
  job.state = JobState::kQueued;
  job.submitted_unix_ms = clock_.NowUnixMs();
  StatusOr<int64_t> id = job_store_->CreateJob(job);
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    UnreserveLocked(job.owner);
    if (!id.ok()) return id.status();
    job.id = *id;
    // Shutting down: admitted but not dispatched; stored queued, it resumes
    // after a restart.
    AdmitLocked(job);
    DispatchLocked(out);
  }
  Deliver(std::move(out));
  return job;
}

StatusOr<JobRow> FarmCoordinator::Submit(JobRow job, const ModelRow& model) {
  RETURN_IF_ERROR(CheckDeviceKey(job.device_key));
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(ReserveLocked(job.owner));
  }
  Status stored = job_store_->PutModel(model);
  if (stored.ok()) stored = EstimateStages(job, model.ops);
  if (!stored.ok()) {
    absl::MutexLock lock(&mu_);
    UnreserveLocked(job.owner);
    return stored;
  }
  return CreateAndAdmit(std::move(job));
}

StatusOr<std::pair<std::string, std::vector<JobRow>>> FarmCoordinator::Retune(
    const std::string& device_key, const RetuneFilter& filter,
    const std::optional<JobOptions>& options, const std::string& owner) {
  ASSIGN_OR_RETURN(std::vector<RetuneTarget> targets, job_store_->RetuneTargets(filter));
  if (targets.empty()) {
    return absl::NotFoundError("no stored model matches the retune filter");
  }
  RETURN_IF_ERROR(CheckDeviceKey(device_key));
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
    RETURN_IF_ERROR(EstimateStages(job, model->ops));
    {
      // Held for CreateAndAdmit; a retune batch is not bound by the owner's
      // active-job limit (an operator re-tunes a whole model set).
      absl::MutexLock lock(&mu_);
      ++reserved_[owner];
    }
    ASSIGN_OR_RETURN(JobRow admitted, CreateAndAdmit(std::move(job)));
    jobs.push_back(std::move(admitted));
  }
  return std::make_pair(batch_id, jobs);
}

StatusOr<JobRow> FarmCoordinator::Cancel(int64_t job_id) {
  Outbox out;
  bool active = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it != jobs_.end()) {
      active = true;
      std::shared_ptr<JobContext> job = it->second;
      job->stop = true;  // a running search pass ends soon
      for (const auto& [phase, flight] : in_flight_) {
        if (flight.job != job_id || flight.worker.empty()) continue;
        const WorkerEntry* w = workers_.Find(flight.worker);
        if (w == nullptr) continue;
        // The scheduler frees the resource now; the worker drops the result.
        workers_.Released(flight.worker, flight.kind);
        out.sends.emplace_back(w->link, WorkerCommand::Cancel(phase));
      }
      FinishJobLocked(*job, JobState::kCancelled, "cancelled by the client");
      DispatchLocked(out);
    }
  }
  Deliver(std::move(out));
  ASSIGN_OR_RETURN(std::optional<JobRow> row, job_store_->GetJob(job_id));
  if (!row) return absl::NotFoundError(StrCat("job ", job_id, " not found"));
  if (!active) {
    return absl::FailedPreconditionError(
        StrCat("job ", job_id, " already ended (", JobStateName(row->state), ")"));
  }
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
      snapshot.yields = it->second->yields;
      if (it->second->scheduled) {
        snapshot.batches_out = it->second->lifecycle.batches_out();
        snapshot.max_parallel_batches = it->second->lifecycle.max_batches();
      }
      std::set<std::string> workers;
      for (const auto& [phase, flight] : in_flight_) {
        if (flight.job == job_id && !flight.worker.empty()) workers.insert(flight.worker);
      }
      snapshot.workers.assign(workers.begin(), workers.end());
      return snapshot;
    }
  }
  recorder_.Flush();  // a job that just ended: its final state is stored first
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

}  // namespace iosfarm::server
