// FarmCoordinator, part three: the workers' side — registration, heartbeats,
// losses, the orders sent to workers and the reports they send back.
#include <utility>

#include "common/strings.h"
#include "server/farm_coordinator.h"
#include "server/phase_steps.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace farm = scheduler::farm;

namespace {

// Workers from before max_built_batches kept 8 built batches.
constexpr int kDefaultMaxBuiltBatches = 8;

}  // namespace

Status FarmCoordinator::WorkerJoined(const WorkerRegistration& reported,
                                     std::shared_ptr<WorkerLink> link) {
  ASSIGN_OR_RETURN(const WorkerRegistration registration, WorkerRegistry::Bounded(reported));
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return absl::UnavailableError("the server is shutting down");
    // A refused worker leaves the key's row as it was (its cores would bound
    // the key's next searches; a new key would become submittable).
    RETURN_IF_ERROR(workers_.CheckIdFree(registration.worker_id));
  }
  RETURN_IF_ERROR(latency_db_->UpsertDevice(
      registration.device_key, registration.device_description, registration.backend,
      clock_.NowUnixMs(), registration.cores, registration.device_floor));
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return absl::UnavailableError("the server is shutting down");
    // AlreadyExists for a live id; taken back if the scheduler refuses it.
    RETURN_IF_ERROR(workers_.Add(registration, std::move(link), clock_.NowUnixMs()));
    const int max_batches = registration.max_built_batches > 0 ? registration.max_built_batches
                                                               : kDefaultMaxBuiltBatches;
    const farm::MeasuringDevice device = registration.backend == "cpu"
                                             ? farm::MeasuringDevice::kCpu
                                             : farm::MeasuringDevice::kGpu;
    if (Status joined = scheduler_.WorkerJoined(registration.worker_id, registration.device_key,
                                                max_batches, device);
        !joined.ok()) {
      workers_.Remove(registration.worker_id);
      return joined;
    }
    spdlog::info("worker {} joined ({} backend{}, device key {}: {})", registration.worker_id,
                 registration.backend,
                 registration.cores > 0 ? StrCat(", ", registration.cores, " cores") : "",
                 registration.device_key, registration.device_description);
    DispatchLocked(out);
  }
  Deliver(std::move(out));
  return absl::OkStatus();
}

void FarmCoordinator::WorkerHeartbeat(const std::string& worker) {
  absl::MutexLock lock(&mu_);
  workers_.Heartbeat(worker, clock_.NowUnixMs());
}

void FarmCoordinator::CheckHeartbeats() {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    for (const std::string& id : workers_.Silent(clock_.NowUnixMs(), options_.heartbeat_timeout_s)) {
      out.to_close.push_back(workers_.Find(id)->link);
      WorkerLostLocked(id, StrCat("no heartbeat for ", options_.heartbeat_timeout_s, " s"), out);
    }
    // Turns end on time also for searches with nothing to report (parked).
    RotateSearchPlacesLocked();
    DispatchLocked(out);
  }
  Deliver(std::move(out));
}

void FarmCoordinator::WorkerLost(const std::string& worker, const std::string& reason) {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    WorkerLostLocked(worker, reason, out);
  }
  Deliver(std::move(out));
}

void FarmCoordinator::WorkerLostLocked(const std::string& worker, const std::string& reason,
                                       Outbox& out) {
  if (workers_.Remove(worker) == nullptr) return;
  if (shutting_down_) {
    spdlog::info("worker {} disconnected: {}", worker, reason);
  } else {
    spdlog::warn("worker {} lost: {}", worker, reason);
  }
  std::vector<farm::LostPhase> affected = scheduler_.WorkerLost(worker, clock_.NowSeconds());
  FlushRecordsLocked();
  for (const farm::LostPhase& lost : affected) {
    auto job = jobs_.find(lost.job);
    if (job == jobs_.end()) continue;
    PhaseStep step = LostWorkerStep(lost.kind, worker, reason);
    step.end.batch = lost.batch;
    StepLocked(*job->second, job->second->lifecycle.Next(step.end), std::move(step.message));
  }
  if (!shutting_down_) DispatchLocked(out);
}

void FarmCoordinator::DispatchToWorkerLocked(const farm::Assignment& assignment, JobContext& job,
                                             PhaseInFlight flight, Outbox& out) {
  const WorkerEntry* w = workers_.Find(assignment.worker);
  auto batch = job.batches.find(assignment.batch);
  const BuildRequest* build = batch == job.batches.end() ? nullptr : &batch->second;
  StatusOr<PhaseOrder> order =
      job.runner ? MakePhaseOrder(assignment, build, *job.runner,
                                  StrCat(assignment.job, "/", assignment.batch), options_.profile,
                                  options_.measure)
                 : absl::InternalError(StrCat("job ", assignment.job, " has no search state"));
  if (build != nullptr) flight.stages = static_cast<int64_t>(build->stages.size());
  in_flight_[assignment.phase] = flight;
  if (!order.ok() || w == nullptr) {
    (void)scheduler_.Finished(assignment.phase, farm::PhaseOutcome::kFailed, clock_.NowSeconds());
    FlushRecordsLocked();
    FinishJobLocked(job, JobState::kFailed,
                    order.ok() ? StrCat("worker ", assignment.worker, " vanished")
                               : std::string(order.status().message()));
    return;
  }
  workers_.Started(assignment.worker, assignment.kind, assignment.job);
  out.sends.emplace_back(w->link, WorkerCommand::Assign(std::move(*order)));
  TouchLocked(job, StrCat(job.row.phase, " started on ", assignment.worker));
}

std::pair<Status, Status> FarmCoordinator::StoreMeasure(JobContext& job, const PhaseReport& report,
                                                        const std::string& worker,
                                                        const std::string& backend) {
  const double search_s = clock_.NowSeconds() - job.row.submitted_unix_ms / 1000.0;
  StatusOr<ResultRow> row = job.runner ? job.runner->ApplyMeasure(report, worker, backend, search_s)
                                       : absl::InternalError("the job has no search state");
  if (!row.ok()) return {row.status(), absl::OkStatus()};
  return {absl::OkStatus(), job_store_->PutResult(*row)};
}

void FarmCoordinator::PhaseResult(const std::string& worker, const PhaseReport& reported) {
  const PhaseReport report = WorkerRegistry::BoundedReport(reported);
  std::shared_ptr<JobContext> job;
  std::string backend;
  PhaseInFlight flight;
  {
    absl::MutexLock lock(&mu_);
    auto flight_it = in_flight_.find(report.phase_id);
    if (flight_it == in_flight_.end() || flight_it->second.worker != worker) {
      spdlog::info("ignoring a result for phase {} from {} (cancelled or unknown)",
                   report.phase_id, worker);
      return;
    }
    flight = flight_it->second;
    if (auto it = jobs_.find(flight.job); it != jobs_.end()) job = it->second;
    if (const WorkerEntry* w = workers_.Find(worker); w != nullptr) {
      backend = w->registration.backend;
    }
  }
  // A measure's result reaches the store before the job moves on (outside
  // the lock: the job's one phase in flight owns its runner).
  Status rejected, store_failure;
  if (job && flight.kind == farm::PhaseKind::kMeasure && report.ok) {
    std::tie(rejected, store_failure) = StoreMeasure(*job, report, worker, backend);
  }
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    auto flight_it = in_flight_.find(report.phase_id);
    if (flight_it == in_flight_.end() || flight_it->second.worker != worker) {
      spdlog::info("phase {} from {} ended meanwhile (cancelled or its worker lost)",
                   report.phase_id, worker);
      return;
    }
    if (workers_.Find(worker) != nullptr) workers_.Finished(worker, flight.kind);
    Status finished = scheduler_.Finished(
        report.phase_id, report.ok ? farm::PhaseOutcome::kOk : farm::PhaseOutcome::kFailed,
        clock_.NowSeconds());
    if (!finished.ok()) spdlog::error("phase {}: {}", report.phase_id, ToStd(finished.message()));
    FlushRecordsLocked();
    if (job && jobs_.contains(flight.job)) {
      PhaseStep step = WorkerPhaseStep(flight.kind, worker, report, rejected);
      step.end.batch = flight.batch;
      if (flight.kind == farm::PhaseKind::kProfile && report.ok) {
        job->profiled[flight.batch] = ProfiledBatch{report, worker, backend};
      }
      farm::LifecycleStep next = job->lifecycle.Next(step.end);
      if (!store_failure.ok()) {  // a server reason, not the worker's: no retry
        next = farm::LifecycleStep{};
        next.action = farm::LifecycleStep::Action::kFail;
        next.error = StrCat("cannot store the result: ", store_failure.message());
      }
      StepLocked(*job, next, std::move(step.message));
    }
    DispatchLocked(out);
  }
  Deliver(std::move(out));
}

std::vector<WorkerSnapshot> FarmCoordinator::Workers() {
  absl::MutexLock lock(&mu_);
  return workers_.Snapshot();
}

}  // namespace iosfarm::server
