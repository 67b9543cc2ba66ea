// FarmCoordinator: the server's core. It owns the load-aware scheduler
// (scheduler/farm), the jobs' search state (JobRunner), the connected
// workers and a pool of server CPU slots, and moves every job through its
// phases: enumerate -> build -> profile -> update -> ... -> measure.
//
// Event-driven: every call (submit, phase result, worker joined or lost,
// cancel) updates the scheduler and starts whatever may start now; server
// phases run on the CPU pool, worker phases are sent on the worker's stream.
// Nothing polls except the heartbeat monitor, which wakes once per interval.
//
// Everything measured goes to the LatencyDb before the search sees it, and
// job state and progress are written after every phase, so a restarted server
// resumes unfinished jobs (Resume) without re-profiling anything stored.
//
// Thread-safe: one mutex (mu_) guards the state. Stream sends happen outside
// it (SendAll); so do the search's latency reads and writes (JobRunner's
// Enumerate, ApplyProfile, Load on a pool thread). Job progress and state,
// the phase log, results and devices are written under it (short SQLite
// writes). WaitForChange waits on mu_ with a condition on the job's version.
// docs/architecture.md draws the threads and locks.
#ifndef IOSFARM_SERVER_FARM_COORDINATOR_H_
#define IOSFARM_SERVER_FARM_COORDINATOR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/status.h"
#include "graph/graph.h"
#include "iosfarm/v1/farm.pb.h"
#include "scheduler/farm/farm_scheduler.h"
#include "scheduler/farm/job_lifecycle.h"
#include "scheduler/ios/search_options.h"
#include "server/farm_metrics.h"
#include "server/heartbeat_monitor.h"
#include "server/import_gate.h"
#include "server/job_runner.h"
#include "server/job_store.h"
#include "server/latency_db.h"
#include "server/phase_padding.h"
#include "server/search_places.h"
#include "server/server_phase_pool.h"
#include "server/worker_registry.h"

namespace iosfarm::server {

struct CoordinatorOptions {
  scheduler::farm::Policy policy = scheduler::farm::Policy::kInterleaved;
  int server_slots = 2;
  int max_attempts = 3;             // failed worker phases per job before it fails
  int max_active_jobs_per_owner = 64;
  double heartbeat_interval_s = 1.0;
  double heartbeat_timeout_s = 5.0;  // silence after which a worker is lost
  v1::ProfileOptions profile;        // stage profiling (0 fields: backend defaults)
  v1::ProfileOptions measure;        // end-to-end measurement
  // BENCHMARK ONLY (empty = off): minimum wall seconds of each phase kind. A
  // server phase that ends sooner sleeps in its slot; a worker phase's result
  // is held back (on a timer thread) until its minimum has passed since it
  // was dispatched. See ServerOptions::synthetic_phase_seconds.
  std::map<scheduler::farm::PhaseKind, double> synthetic_phase_seconds;
  // The time the coordinator reads (not owned; null: SystemClock()).
  const Clock* clock = nullptr;
  // Where to report metrics (not owned; must outlive the coordinator), or null.
  FarmMetrics* metrics = nullptr;
  // What one job's search may spend (FarmSearchBudget()).
  scheduler::ios::SearchBudget search_budget = FarmSearchBudget();
  // The crash-loop guard (Resume): a job found in a server phase (enumerate,
  // update) by more than this many restarts after unclean stops, with no new
  // measurement stored in between, fails instead of being resumed again.
  int max_resumes = 3;
  // An enumerate phase gives its server slot back after this many seconds
  // of search (between DP passes) and queues again behind the other jobs'
  // server phases, so one long search cannot hold the slots for minutes
  // (JobRunner::Enumerate). <= 0: no slicing.
  double enumerate_slice_s = 2.0;
  // ONNX imports in flight at once, in model bytes (import_gate()): the
  // server's largest accepted model. >= 1.
  int64_t import_gate_bytes = 256LL << 20;
  // Searches that hold memory at once (a job's holds it from its first
  // enumerate until its search is done); later jobs stay queued until one
  // ends. With search_budget.max_bytes_per_pass this bounds the server's
  // memory (FarmSearchBudget). >= 1.
  int max_searches = 6;
};

// A job's state as the Watch call sees it.
struct JobSnapshot {
  JobRow job;
  int64_t version = 0;  // increases with every change
  std::string message;  // the last change, one line
  bool final = false;   // succeeded, failed or cancelled
};

class FarmCoordinator {
 public:
  // `jobs` and `latencies` must outlive the coordinator.
  FarmCoordinator(CoordinatorOptions options, JobStore* jobs, LatencyDb* latencies);
  ~FarmCoordinator();  // Shutdown()

  // Re-queues every unfinished job of the store (after a restart).
  //
  // Crash-loop guard: a job whose search takes the server down (out of
  // memory, a bug) would otherwise be resumed into the same crash forever. A
  // job stored in a server phase (enumerate or update: the search runs in the
  // server) counts one resume (JobRow::resumes); a clean Shutdown takes that
  // count back, and storing a new measurement clears it (the job got
  // further). When the count exceeds max_resumes the job fails with a
  // message saying why, and is not resumed.
  Status Resume();

  // Stores the model and the job and queues its first phase (the caller
  // checked that the model imports; the first enumerate loads it from the
  // store, so a queued job holds no graph). NotFound for a device key no
  // worker ever registered, ResourceExhausted when the owner has too many
  // active jobs.
  StatusOr<JobRow> Submit(JobRow job, const ModelRow& model);
  StatusOr<JobRow> Cancel(int64_t job_id);
  StatusOr<JobSnapshot> Snapshot(int64_t job_id);
  // Waits until the job changed after `seen_version`, it is final, the
  // coordinator shuts down or `timeout_s` passes; returns the snapshot then.
  StatusOr<JobSnapshot> WaitForChange(int64_t job_id, int64_t seen_version, double timeout_s);

  // Batch re-tuning: one job per stored model matching `filter` for
  // `device_key`, all tagged with one batch id.
  StatusOr<std::pair<std::string, std::vector<JobRow>>> Retune(
      const std::string& device_key, const RetuneFilter& filter,
      const std::optional<JobOptions>& options, const std::string& owner);

  // Workers. WorkerJoined: the registration within WorkerRegistry's bounds
  // (InvalidArgument naming the field otherwise); AlreadyExists when a live
  // worker has the id.
  Status WorkerJoined(const v1::RegisterWorker& registration, std::shared_ptr<WorkerLink> link);
  void WorkerHeartbeat(const std::string& worker);
  // Loses the workers whose last heartbeat is more than heartbeat_timeout_s
  // old on the options' clock (the monitor thread calls this every
  // heartbeat_interval_s; tests call it after advancing a FakeClock).
  void CheckHeartbeats() ABSL_LOCKS_EXCLUDED(mu_);
  // The worker's stream ended (or it went silent): its phases are re-queued.
  void WorkerLost(const std::string& worker, const std::string& reason);
  // A phase result from `worker`. Results of unknown or cancelled phases are
  // ignored (logged).
  void PhaseResult(const std::string& worker, const v1::PhaseResult& result);
  std::vector<WorkerSnapshot> Workers();

  // Bounds the ONNX imports in flight (ImportGate): the submit's and the
  // first enumerate's.
  ImportGate& import_gate() { return import_gate_; }

  scheduler::farm::QueueLengths QueueLengths();
  bool shutting_down() {
    absl::MutexLock lock(&mu_);
    return shutting_down_;
  }

  // Stops dispatching, ends worker streams, joins threads. Jobs in flight
  // stay unfinished in the store (Resume picks them up). Idempotent.
  void Shutdown();

 private:
  struct JobContext {
    JobRow row;
    std::unique_ptr<JobRunner> runner;   // created by the first enumerate
    bool scheduled = false;              // known to scheduler_ (from its search's start)
    // The phase chain (the one the simulation runs); counts failed attempts.
    scheduler::farm::JobLifecycle lifecycle{1};
    scheduler::farm::PhaseKind queued_kind = scheduler::farm::PhaseKind::kEnumerate;
    bool resume_counted = false;         // Resume counted this start (crash-loop guard)
    bool parked = false;                 // waiting for another job's measurements
    v1::PhaseResult pending_profile;     // for the next update
    std::string pending_worker, pending_backend;
    double submitted_s = 0;
    int64_t version = 0;
    std::string message;
    // Set by Cancel and Shutdown: a running search pass stops soon after.
    std::atomic<bool> stop{false};
  };
  struct InFlight {
    double dispatched_s = 0;  // NowSeconds() at dispatch (benchmark padding)
    int64_t job = 0;
    scheduler::farm::PhaseKind kind = scheduler::farm::PhaseKind::kEnumerate;
    std::string worker;
    int64_t stages = 0;
  };
  using Send = std::pair<std::shared_ptr<WorkerLink>, v1::ServerMessage>;

  // Starts what may start now; worker messages to send go to `sends`.
  void DispatchLocked(std::vector<Send>& sends) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends outside the lock; a failed send loses the worker.
  void SendAll(std::vector<Send> sends) ABSL_LOCKS_EXCLUDED(mu_);
  void EnqueueLocked(JobContext& job, scheduler::farm::PhaseKind kind,
                     const std::string& pinned_worker = "") ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends finished phase records to the store's phase log.
  void FlushRecordsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TouchLocked(JobContext& job, std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gauges: queue lengths, active jobs, connected workers.
  void ReportGaugesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a job: final state in the store, scheduler and claims released.
  void FinishJobLocked(JobContext& job, JobState state, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acts on the job's lifecycle step: queues its next phase, parks it, or
  // ends it. `message` (when not empty) becomes the job's progress line; a
  // retry says so instead.
  void StepLocked(JobContext& job, const scheduler::farm::LifecycleStep& step,
                  std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WakeParkedLocked(const std::string& device_key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLostLocked(const std::string& worker, const std::string& reason,
                        std::vector<Send>& sends) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Server phases, run on the CPU pool.
  void RunServerPhase(scheduler::farm::Assignment assignment) ABSL_LOCKS_EXCLUDED(mu_);
  void ServerPhaseDone(const scheduler::farm::Assignment& assignment,
                       const std::shared_ptr<JobContext>& job, const Status& status,
                       std::optional<JobRunner::Next> next) ABSL_LOCKS_EXCLUDED(mu_);
  v1::ServerMessage WorkerPhaseMessageLocked(const scheduler::farm::Assignment& assignment,
                                             JobContext& job, Status& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK when a connected worker has `device_key` or one registered it before;
  // NotFound naming the key and listing the known ones otherwise.
  Status CheckDeviceKeyLocked(const std::string& device_key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  StatusOr<JobRow> AdmitLocked(JobRow job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Registers the job with the scheduler and queues its first enumerate when
  // fewer than max_searches searches hold memory; otherwise the job waits in
  // search_places_, unknown to the scheduler.
  void StartSearchOrWaitLocked(JobContext& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's search is done or the job ended: its place goes to the next
  // waiting job.
  void EndSearchLocked(JobContext& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorOptions options_;
  const Clock& clock_;
  JobStore* const job_store_;
  LatencyDb* const latency_db_;
  SignatureClaims claims_;
  ImportGate import_gate_;

  absl::Mutex mu_;
  scheduler::farm::FarmScheduler scheduler_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::shared_ptr<JobContext>> jobs_ ABSL_GUARDED_BY(mu_);  // active
  WorkerRegistry workers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<scheduler::farm::PhaseId, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  SearchPlaces search_places_ ABSL_GUARDED_BY(mu_);  // max_searches

  std::unique_ptr<ServerPhasePool> pool_;       // enumerate and update
  std::unique_ptr<HeartbeatMonitor> heartbeat_;  // calls CheckHeartbeats
  std::unique_ptr<PhasePadding> padding_;        // benchmark only; null unless set
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_FARM_COORDINATOR_H_
