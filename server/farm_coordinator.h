// FarmCoordinator: the server's core. It owns the load-aware scheduler
// (scheduler/farm), the active jobs (JobContext: their search in a
// JobRunner, their phase chain in a JobLifecycle), the connected workers
// (WorkerRegistry) and a pool of server CPU slots, and moves every job
// through its phases: enumerate -> build -> profile -> update -> ... ->
// measure.
//
// Event-driven: every call (submit, phase result, worker joined or lost,
// cancel) updates the scheduler and starts whatever may start now; server
// phases run on the CPU pool, worker phases are sent on the worker's link.
// Nothing polls except the heartbeat monitor, which wakes once per interval.
// It speaks only the core's types (worker_protocol.h, job_rows.h); the
// gRPC services convert at the edge (proto_convert.h).
//
// Everything measured goes to the LatencyDb before the search sees it, and job
// state and progress are written after every phase, so a restarted server
// resumes unfinished jobs (Resume) without re-profiling anything stored.
//
// Thread-safe. One mutex (mu_) guards the scheduler and the jobs' state; it
// is never held across SQLite or a stream write: job-table writes are queued
// in a JobRecorder and carried out after the lock is released, in the order
// they were made (Deliver), and so are stream sends. The search's latency
// reads and writes run on pool threads outside the lock (JobRunner's
// Enumerate, ApplyProfile, Load), and so does storing a measure's result.
// docs/architecture.md draws the threads and locks.
#ifndef IOSFARM_SERVER_FARM_COORDINATOR_H_
#define IOSFARM_SERVER_FARM_COORDINATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/farm/farm_scheduler.h"
#include "scheduler/farm/job_lifecycle.h"
#include "scheduler/farm/search_admission.h"
#include "scheduler/ios/search_options.h"
#include "server/farm_metrics.h"
#include "server/heartbeat_monitor.h"
#include "server/import_gate.h"
#include "server/job_context.h"
#include "server/job_recorder.h"
#include "server/job_runner.h"
#include "server/job_store.h"
#include "server/latency_db.h"
#include "server/server_phase_pool.h"
#include "server/server_phases.h"
#include "server/worker_events.h"
#include "server/worker_protocol.h"
#include "server/worker_registry.h"

namespace iosfarm::server {

struct CoordinatorOptions {
  scheduler::farm::Policy policy = scheduler::farm::Policy::kInterleaved;
  int server_slots = 2;
  int max_attempts = 3;             // failed worker phases per job before it fails
  int max_active_jobs_per_owner = 64;
  double heartbeat_interval_s = 1.0;
  double heartbeat_timeout_s = 5.0;  // silence after which a worker is lost
  ProfileSettings profile;           // stage profiling (0 fields: backend defaults)
  ProfileSettings measure;           // end-to-end measurement
  // The work of a server phase (empty: RunServerPhaseWork). Benchmarks pad
  // it (PaddedServerPhaseWork, padded_farm.h).
  ServerPhaseWork server_phase_work;
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
  // enumerate until its search is done or it yields its place); the others
  // wait. With search_budget.max_bytes_per_pass this bounds the server's
  // memory (FarmSearchBudget). >= 1.
  int max_searches = 6;
  // Search places are shared in time (scheduler/farm/search_admission.h): a
  // search keeps its place at least search_min_turn_s, and a job waiting
  // search_max_wait_s goes before every job of its priority that waited less.
  // search_first_turns of the max_searches places (at most max_searches - 1)
  // are kept for first turns: jobs that never had one.
  int search_first_turns = 2;
  double search_min_turn_s = 5;
  double search_max_wait_s = 60;
};

// A job's state as the Watch call sees it.
struct JobSnapshot {
  JobRow job;
  int64_t version = 0;  // increases with every change
  std::string message;  // the last change, one line
  bool final = false;   // succeeded, failed or cancelled
  // While it runs: its batches out, its cap on them (JobLifecycle), and the
  // workers running its phases now (sorted).
  int batches_out = 0;
  int max_parallel_batches = 0;
  std::vector<std::string> workers;
  int yields = 0;  // turns it gave its search place back to other jobs
};

class FarmCoordinator final : public WorkerEvents {
 public:
  // `jobs` and `latencies` must outlive the coordinator.
  FarmCoordinator(CoordinatorOptions options, JobStore* jobs, LatencyDb* latencies);
  ~FarmCoordinator() override;  // Shutdown()

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
  Status WorkerJoined(const WorkerRegistration& registration,
                      std::shared_ptr<WorkerLink> link) override;
  void WorkerHeartbeat(const std::string& worker) override;
  // Loses the workers whose last heartbeat is more than heartbeat_timeout_s
  // old on the options' clock (the monitor thread calls this every
  // heartbeat_interval_s; tests call it after advancing a FakeClock).
  void CheckHeartbeats() ABSL_LOCKS_EXCLUDED(mu_);
  // The worker's stream ended (or it went silent): its phases are re-queued.
  void WorkerLost(const std::string& worker, const std::string& reason) override;
  // A phase result from `worker`. Results of unknown or cancelled phases are
  // ignored (logged). A measure's result is stored (outside the lock) before
  // the job moves on.
  void PhaseResult(const std::string& worker, const PhaseReport& report) override;
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
  struct PhaseInFlight {
    int64_t job = 0;
    scheduler::farm::PhaseKind kind = scheduler::farm::PhaseKind::kEnumerate;
    std::string worker;
    int64_t stages = 0;
    int64_t batch = 0;  // the lifecycle's batch id (build, profile, update)
  };
  // What a call does after it releases mu_ (Deliver): the recorder's writes,
  // then the stream sends; a failed send closes the link (the stream handler
  // reports the loss).
  struct Outbox {
    std::vector<std::pair<std::shared_ptr<WorkerLink>, WorkerCommand>> sends;
    std::vector<std::shared_ptr<WorkerLink>> to_close;
  };
  void Deliver(Outbox outbox) ABSL_LOCKS_EXCLUDED(mu_);

  // Starts what may start now; worker orders to send go to `out`.
  void DispatchLocked(Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends a worker phase of `job` (or fails the job when it cannot be sent).
  void DispatchToWorkerLocked(const scheduler::farm::Assignment& assignment, JobContext& job,
                              PhaseInFlight flight, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EnqueueLocked(JobContext& job, const scheduler::farm::PhaseRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the scheduler's finished phase records for the store's phase log.
  void FlushRecordsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TouchLocked(JobContext& job, std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gauges: queue lengths, active jobs, connected workers.
  void ReportGaugesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a job: final state queued for the store, scheduler and claims released.
  void FinishJobLocked(JobContext& job, JobState state, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acts on the job's lifecycle step: queues its next phase, parks it,
  // yields its search place, or ends it. `message` (when not empty) becomes
  // the job's progress line; a retry says so instead.
  void StepLocked(JobContext& job, const scheduler::farm::LifecycleStep& step,
                  std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WakeParkedLocked(const std::string& device_key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The builds `step` queues for batches the enumerate just filled: the
  // runner hands each out (JobRunner::TakeBatch) and the job keeps what its
  // build sends. A failure turns `step` into kFail.
  void HandOutBatchesLocked(JobContext& job, scheduler::farm::LifecycleStep& step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLostLocked(const std::string& worker, const std::string& reason, Outbox& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Server phases, run on the CPU pool.
  void RunServerPhase(scheduler::farm::Assignment assignment,
                      std::shared_ptr<const ServerPhaseTask> task) ABSL_LOCKS_EXCLUDED(mu_);
  void ServerPhaseDone(const scheduler::farm::Assignment& assignment,
                       const std::shared_ptr<JobContext>& job, const Status& status,
                       std::optional<JobRunner::Next> next, int64_t stored_stages)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Checks and stores a measure's result; outside mu_ (the job's one phase
  // in flight owns its runner). The first status is the worker's bad answer
  // (retried), the second the store's failure (the job fails).
  std::pair<Status, Status> StoreMeasure(JobContext& job, const PhaseReport& report,
                                         const std::string& worker, const std::string& backend)
      ABSL_LOCKS_EXCLUDED(mu_);
  // OK when a connected worker has `device_key` or one registered it before;
  // NotFound naming the key and listing the known ones otherwise.
  Status CheckDeviceKey(const std::string& device_key) ABSL_LOCKS_EXCLUDED(mu_);
  // Reserves an active-job place for `owner` (ResourceExhausted past the
  // limit, Unavailable while shutting down) for Submit; CreateAndAdmit
  // releases it (UnreserveLocked). Retune reserves without the limit.
  Status ReserveLocked(const std::string& owner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnreserveLocked(const std::string& owner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets job.estimated_stages (EstimateSearchStages over the store's
  // history) unless it is set already; outside mu_.
  Status EstimateStages(JobRow& job, int64_t model_ops) ABSL_LOCKS_EXCLUDED(mu_);
  // Stores a new queued job (outside mu_, on its reservation) and admits it.
  StatusOr<JobRow> CreateAndAdmit(JobRow job) ABSL_LOCKS_EXCLUDED(mu_);
  JobContext& AdmitLocked(JobRow row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Registers the job with the scheduler and queues its first enumerate when
  // admission_ gives it a search place; otherwise the job waits there,
  // unknown to the scheduler.
  void StartSearchOrWaitLocked(JobContext& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's search is done or the job ended: its place goes to the next
  // waiting job.
  void EndSearchLocked(JobContext& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What admission_ orders the job by: its priority, owner and the stages
  // it is expected to measure from now.
  scheduler::farm::SearchCandidate CandidateOf(const JobContext& job) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks every search whose turn is over to yield its place (admission_'s
  // ShouldYield); those with nothing out yield at once.
  void RotateSearchPlacesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job yielded (its lifecycle's kYield: nothing of it out): it leaves
  // the scheduler, drops its search (what it measured is stored) and waits
  // for a place again; the places it frees are started.
  void YieldSearchLocked(JobContext& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the job's turn is over (admission_'s ShouldYield). A search
  // stopped inside a cost-to-go DP walk keeps an ordinary place until the
  // walk ends (a yield drops the walk, and turns shorter than a walk would
  // never finish one): its next enumerate ends with that walk
  // (JobRunner::StopAfterTheWalk), and it yields then. On a first-turn place
  // it yields at the slice's end all the same (a first turn is short: a new
  // job waits behind it). A job whose server phase is in flight is asked
  // when that phase ends.
  bool TurnOverLocked(JobContext& job, double now_s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorOptions options_;
  const Clock& clock_;
  JobStore* const job_store_;
  LatencyDb* const latency_db_;
  JobRecorder recorder_;  // job-table writes, carried out outside mu_
  SignatureClaims claims_;
  ImportGate import_gate_;

  absl::Mutex mu_;
  scheduler::farm::FarmScheduler scheduler_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::shared_ptr<JobContext>> jobs_ ABSL_GUARDED_BY(mu_);  // active
  // Jobs being stored by Submit or Retune (outside mu_), per owner: they
  // count against max_active_jobs_per_owner until admitted.
  std::map<std::string, int> reserved_ ABSL_GUARDED_BY(mu_);
  WorkerRegistry workers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<scheduler::farm::PhaseId, PhaseInFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  scheduler::farm::SearchAdmission admission_ ABSL_GUARDED_BY(mu_);  // max_searches

  ServerPhaseEnv phase_env_;                    // what server phases use
  std::unique_ptr<ServerPhasePool> pool_;       // enumerate and update
  std::unique_ptr<HeartbeatMonitor> heartbeat_;  // calls CheckHeartbeats
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_FARM_COORDINATOR_H_
