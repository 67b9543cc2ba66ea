// PhaseExecutor: turns the server's phase assignments into Backend calls.
//
//  * build (worker CPU): parses the graph (weights without values: backends
//    materialise deterministic ones), rebuilds and checks every stage against
//    the server's signature (stage_spec.h), calls Backend::Build and keeps the
//    graph and plans under the assignment's batch_id. A newer batch of the
//    same job replaces the job's older ones; at most kMaxBatches are kept
//    (profiled ones dropped first, then the least recently built). The worker
//    tells the server kMaxBatches when it registers, and the server never has
//    more of its builds waiting for their profile (farm_scheduler.h).
//  * profile (device): Backend::Profile on the plans of batch_id; one
//    StageLatency per stage, in assignment order, with its signature. Fails
//    with "unknown batch ..." when the batch is not here (e.g. the worker
//    restarted since the build).
//  * measure (device): parses the graph and every schedule
//    (ParseScheduleJson) and runs each end to end with Backend::RunSchedule.
//
// Errors never escape: every failure is a PhaseResult with ok = false and a
// one-line error naming the phase, stage or schedule.
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
#include "iosfarm/v1/farm.pb.h"
#include "worker/backends/backend.h"

namespace iosfarm::worker {

// Wire profiling options to the backend's; a zero field means the default
// of ProfileOptions (proto3 cannot tell unset from 0).
ProfileOptions ProfileOptionsFromProto(const v1::ProfileOptions& options);

class PhaseExecutor {
 public:
  static constexpr int kMaxBatches = 8;

  // `backend` must outlive the executor.
  explicit PhaseExecutor(Backend& backend) : backend_(backend) {}
  PhaseExecutor(const PhaseExecutor&) = delete;
  PhaseExecutor& operator=(const PhaseExecutor&) = delete;

  // Runs the assignment to completion on the calling thread; the result's
  // phase_id is the assignment's. An assignment without a kind fails, and so
  // does a phase that throws (the exception is caught here).
  v1::PhaseResult Execute(const v1::PhaseAssignment& assignment);

  v1::PhaseResult Build(const v1::PhaseAssignment& assignment);
  v1::PhaseResult Profile(const v1::PhaseAssignment& assignment);
  v1::PhaseResult Measure(const v1::PhaseAssignment& assignment);

  // Whether the plans of `batch_id` are kept; how many batches are.
  bool HasBatch(const std::string& batch_id) const;
  int num_batches() const;

 private:
  // One built batch. The graph is declared first so the plans (which point
  // into it) are destroyed before it.
  struct Batch {
    int64_t job_id = 0;
    uint64_t sequence = 0;  // build order, for eviction
    std::unique_ptr<graph::Graph> graph;
    std::vector<uint64_t> signatures;
    std::vector<std::unique_ptr<StagePlan>> plans;
    mutable std::atomic<bool> profiled{false};  // evicted first when the table is full
  };

  v1::PhaseResult Dispatch(const v1::PhaseAssignment& assignment);
  Status BuildBatch(const v1::PhaseAssignment& assignment, int* plans_built);
  Status ProfileBatch(const v1::PhaseAssignment& assignment, v1::PhaseResult& result);
  Status MeasureSchedules(const v1::PhaseAssignment& assignment, v1::PhaseResult& result);
  void Store(const std::string& batch_id, std::shared_ptr<Batch> batch);

  Backend& backend_;
  mutable absl::Mutex mutex_;
  std::map<std::string, std::shared_ptr<const Batch>> batches_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_sequence_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_PHASE_EXECUTOR_H_
