#include "server/server_phases.h"

#include "common/memory.h"
#include "common/strings.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace farm = scheduler::farm;

namespace {

ServerPhaseOutcome Enumerate(JobContext& job, const ServerPhaseEnv& env) {
  ServerPhaseOutcome outcome;
  if (!job.runner) {
    // The core bound over the cores the key's latest worker stated (stored
    // with the key, so a search resumed after a restart takes the same).
    StatusOr<int> cores = env.latencies->DeviceCores(job.row.device_key);
    if (!cores.ok()) {
      outcome.status = cores.status();
      return outcome;
    }
    // The floor the key's latest worker declared, likewise.
    StatusOr<scheduler::ios::DeviceFloor> floor = env.latencies->DeviceFloorOf(job.row.device_key);
    if (!floor.ok()) {
      outcome.status = floor.status();
      return outcome;
    }
    auto runner = JobRunner::Load(*env.jobs, job.row, env.search_budget, *cores, *floor, &job.stop,
                                  env.import_gate);
    if (!runner.ok()) {
      outcome.status = runner.status();
      return outcome;
    }
    job.runner = std::move(*runner);
    if (job.runner->search_cores() > 0) {
      spdlog::info("job {}: the search bounds stages by their work over {} cores (device key {})",
                   job.row.id, job.runner->search_cores(), job.row.device_key);
    }
    if (floor->bounds_anything()) {
      spdlog::info("job {}: the search bounds stages by the device floor of key {} ({})",
                   job.row.id, job.row.device_key, scheduler::ios::DescribeDeviceFloor(*floor));
    }
  }
  const int64_t lookups = job.runner->lookups(), hits = job.runner->cache_hits();
  auto next = job.runner->Enumerate(*env.latencies, *env.claims, env.enumerate_slice_s);
  if (next.ok()) {
    outcome.next = *next;
  } else {
    outcome.status = next.status();
  }
  if (env.metrics != nullptr) {
    const int64_t new_hits = job.runner->cache_hits() - hits;
    env.metrics->SignatureLookups(new_hits, job.runner->lookups() - lookups - new_hits);
  }
  return outcome;
}

ServerPhaseOutcome Update(const ServerPhaseTask& task, JobContext& job, const ServerPhaseEnv& env) {
  ServerPhaseOutcome outcome;
  const ProfiledBatch& profiled = task.profiled;
  outcome.stored_stages = static_cast<int64_t>(profiled.report.latencies.size());
  outcome.status =
      job.runner->ApplyProfile(task.batch, profiled.report, profiled.worker, profiled.backend,
                               *env.latencies, *env.claims, env.clock->NowUnixMs());
  if (outcome.status.ok() && env.metrics != nullptr) {
    env.metrics->StagesProfiled(outcome.stored_stages);
  }
  if (!outcome.status.ok()) outcome.stored_stages = 0;
  return outcome;
}

}  // namespace

ServerPhaseOutcome RunServerPhaseWork(const ServerPhaseTask& task, JobContext& job,
                                      const ServerPhaseEnv& env) {
  const farm::PhaseKind kind = task.kind;
  if (kind == farm::PhaseKind::kEnumerate) {
    ServerPhaseOutcome outcome = Enumerate(job, env);
    // A pass frees what it built in this thread's arena; give it back now.
    ReturnFreeMemory();
    return outcome;
  }
  if (kind == farm::PhaseKind::kUpdate && job.runner) return Update(task, job, env);
  ServerPhaseOutcome outcome;
  outcome.status = absl::InternalError(StrCat("job ", job.row.id, ": ", farm::PhaseKindName(kind),
                                              " cannot run on the server now"));
  return outcome;
}

}  // namespace iosfarm::server
