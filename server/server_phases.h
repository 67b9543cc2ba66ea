// The work of a job's server phases (enumerate, update), run on a server
// slot outside the coordinator's lock: the job has this one phase in flight,
// which owns its JobRunner until the phase reports.
#ifndef IOSFARM_SERVER_SERVER_PHASES_H_
#define IOSFARM_SERVER_SERVER_PHASES_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "common/clock.h"
#include "common/status.h"
#include "scheduler/farm/phase.h"
#include "scheduler/ios/search_options.h"
#include "server/farm_metrics.h"
#include "server/job_store.h"
#include "server/latency_db.h"
#include "server/import_gate.h"
#include "server/job_context.h"
#include "server/job_runner.h"

namespace iosfarm::server {

// What server phases read and write; every pointer outlives the calls.
struct ServerPhaseEnv {
  JobStore* jobs = nullptr;
  LatencyDb* latencies = nullptr;
  SignatureClaims* claims = nullptr;
  ImportGate* import_gate = nullptr;
  FarmMetrics* metrics = nullptr;  // may be null
  const Clock* clock = nullptr;
  scheduler::ios::SearchBudget search_budget;
  double enumerate_slice_s = 0;
};

// One server phase to run: its kind and, for an update, its batch and the
// profile to store (moved out of the job under the coordinator's lock).
struct ServerPhaseTask {
  scheduler::farm::PhaseKind kind = scheduler::farm::PhaseKind::kEnumerate;
  int64_t batch = 0;
  ProfiledBatch profiled;
};

struct ServerPhaseOutcome {
  Status status;
  std::optional<JobRunner::Next> next;  // an ok enumerate's answer
  int64_t stored_stages = 0;            // an update's measurements written
};

// Enumerate: the first one loads the job's model (JobRunner::Load) and
// creates its runner; then one time slice of the search (JobRunner::
// Enumerate); freed heap is returned to the system afterwards.
// Update: stores the task's profile of its batch (JobRunner::ApplyProfile).
// Any other kind, or an update without a runner, is Internal.
ServerPhaseOutcome RunServerPhaseWork(const ServerPhaseTask& task, JobContext& job,
                                      const ServerPhaseEnv& env);

// RunServerPhaseWork or a wrapper around it (CoordinatorOptions).
using ServerPhaseWork =
    std::function<ServerPhaseOutcome(const ServerPhaseTask&, JobContext&, const ServerPhaseEnv&)>;

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_SERVER_PHASES_H_
