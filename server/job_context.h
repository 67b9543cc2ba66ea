// JobContext: what the coordinator keeps in memory for one active job (from
// admission until it ends): its row, its search (JobRunner), its phase chain
// (JobLifecycle) and what it waits for. The coordinator's lock guards every
// field except `runner` (owned by the job's one phase in flight, which runs
// outside the lock; JobRunner's contract) and `stop` (atomic).
#ifndef IOSFARM_SERVER_JOB_CONTEXT_H_
#define IOSFARM_SERVER_JOB_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "scheduler/farm/job_lifecycle.h"
#include "scheduler/farm/phase.h"
#include "server/job_rows.h"
#include "server/job_runner.h"
#include "server/worker_protocol.h"

namespace iosfarm::server {

// A batch's profile answer, kept for its update.
struct ProfiledBatch {
  PhaseReport report;
  std::string worker, backend;
};

struct JobContext {
  JobRow row;
  std::unique_ptr<JobRunner> runner;  // created by the first enumerate
  bool scheduled = false;             // known to the scheduler (from its search's start)
  // The phase chain (the one the simulation runs); counts failed attempts.
  scheduler::farm::JobLifecycle lifecycle{1};
  bool resume_counted = false;  // Resume counted this start (crash-loop guard)
  bool parked = false;          // waiting for another job's measurements
  int yields = 0;               // turns it gave its search place back (SearchAdmission)
  // A server phase of the job runs on the pool: its runner is not to be read.
  bool server_phase_running = false;
  // Batches handed out (the lifecycle's ids) and what their builds send,
  // until their update is stored: a build, and a rebuild after a failure,
  // reads it here, not from the runner (a server phase may own that).
  std::map<int64_t, BuildRequest> batches;
  // Profiles that ended ok and wait for their update, by batch.
  std::map<int64_t, ProfiledBatch> profiled;
  double busy_s = 0;    // time its ended phases took (the critical-path estimate)
  int64_t version = 0;  // increases with every change (WaitForChange)
  std::string message;  // the last change, one line
  // Set by Cancel and Shutdown: a running search pass stops soon after.
  std::atomic<bool> stop{false};
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_JOB_CONTEXT_H_
