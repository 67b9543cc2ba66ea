// PhaseExecutor: turns the server's phase orders (phase_order.h) into Backend
// calls. It sees no wire type: worker/wire_convert.h decodes assignments
// (parsing the graph, rebuilding every stage and checking it against the
// server's signature, proto/stage_codec.h) before they get here.
//
//  * build (worker CPU): calls Backend::Build on the order's checked stages
//    and keeps the graph and plans under the order's batch_id. A rebuild of
//    a batch replaces it, and a new batch of a job drops the job's batches
//    already profiled (its batches out at once stay); at most kMaxBatches are
//    kept (profiled ones dropped first, then the least recently built). The
//    worker tells the server kMaxBatches when it registers, and the server
//    never has more of its builds waiting for their profile
//    (farm_scheduler.h).
//  * profile (device): Backend::Profile on the plans of batch_id; one
//    MeasuredStage per stage, in build order, with its signature. Fails with
//    "unknown batch ..." when the batch is not here (e.g. the worker
//    restarted since the build).
//  * measure (device): parses every schedule (ParseScheduleJson) and runs
//    each end to end with Backend::RunSchedule.
//
// Errors never escape: every failure is a PhaseReport with ok = false and a
// one-line error naming the phase, stage or schedule (FailedReport).
//
// Thread safety: Execute may be called from several threads at once (one
// build beside one profile/measure, as the daemon does); the batch table is
// locked and a profile keeps its batch alive while a build replaces it.
// Whether two device phases may overlap is the backend's business (every
// Backend serialises Profile/RunSchedule); the daemon never asks for that.
#ifndef IOSFARM_WORKER_PHASE_EXECUTOR_H_
#define IOSFARM_WORKER_PHASE_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "worker/backends/backend.h"
#include "worker/phase_order.h"

namespace iosfarm::worker {

class PhaseExecutor {
 public:
  static constexpr int kMaxBatches = 8;

  // `backend` must outlive the executor.
  explicit PhaseExecutor(Backend& backend) : backend_(backend) {}
  PhaseExecutor(const PhaseExecutor&) = delete;
  PhaseExecutor& operator=(const PhaseExecutor&) = delete;

  // Runs the order to completion on the calling thread; the report's
  // phase_id is the order's. A phase that throws fails (the exception is
  // caught here).
  PhaseReport Execute(const PhaseOrder& order);

  // Whether the plans of `batch_id` are kept; how many batches are.
  bool HasBatch(const std::string& batch_id) const;
  int num_batches() const;

 private:
  // One built batch. The graph is declared first so the plans (which point
  // into it) are destroyed before it.
  struct Batch {
    int64_t job_id = 0;
    uint64_t sequence = 0;  // build order, for eviction
    std::shared_ptr<const graph::Graph> graph;
    std::vector<uint64_t> signatures;
    std::vector<std::unique_ptr<StagePlan>> plans;
    mutable std::atomic<bool> profiled{false};  // evicted first when the table is full
  };

  // The phase's work; `report` gets its results (ok and phase_id are set by
  // Execute).
  Status Run(const PhaseOrder& order, PhaseReport& report);
  Status BuildBatch(const PhaseOrder& order, const BuildOrder& build, PhaseReport& report);
  Status ProfileBatch(const PhaseOrder& order, const ProfileOrder& profile, PhaseReport& report);
  Status MeasureSchedules(const MeasureOrder& measure, PhaseReport& report);
  void Store(const std::string& batch_id, std::shared_ptr<Batch> batch);

  Backend& backend_;
  mutable absl::Mutex mutex_;
  std::map<std::string, std::shared_ptr<const Batch>> batches_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_sequence_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_PHASE_EXECUTOR_H_
