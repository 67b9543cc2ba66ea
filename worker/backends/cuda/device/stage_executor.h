// StageExecutor: runs the stages of an ExecutionPlan on lanes (lane_pool.h).
//
// A stage with one non-empty group runs on lane 0 (the main stream). A stage
// with k > 1 non-empty groups forks: an event recorded on lane 0 marks the
// stage's start, group j's lane (j + 1) waits on it and runs the group's ops
// in order, records the group's end event, and lane 0 waits on every end
// event before the next stage. No device-wide synchronisation; the whole
// run is ordered on lane 0, so timing events and graph capture on lane 0
// cover it. Not thread-safe (used under the backend's run mutex).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_STAGE_EXECUTOR_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_STAGE_EXECUTOR_H_

#include <memory>
#include <vector>

#include "common/status.h"
#include "worker/backends/cuda/device/cuda_handles.h"
#include "worker/backends/cuda/device/device_op.h"
#include "worker/backends/cuda/device/lane_pool.h"
#include "worker/backends/cuda/planner/execution_plan.h"

namespace iosfarm::worker::cuda {

class StageExecutor {
 public:
  // Creates the ops of every step of `ctx.plan` (setup work on lane 0), the
  // events, and the lanes the stages need with large enough workspaces.
  // Errors name the stage and step.
  static StatusOr<std::unique_ptr<StageExecutor>> Create(const DeviceOpContext& ctx);

  // Enqueues one run of every stage (capturable; see device_op.h).
  Status Enqueue(const LanePool& lanes) const;

 private:
  struct Group {
    int lane = 0;
    std::vector<std::unique_ptr<DeviceOp>> ops;
  };
  struct StageOps {
    std::vector<Group> groups;        // the non-empty groups
    UniqueEvent fork;                 // set when groups.size() > 1
    std::vector<UniqueEvent> joins;   // one per group when groups.size() > 1
    std::string label;
  };

  StageExecutor() = default;
  Status EnqueueStage(const StageOps& stage, const LanePool& lanes) const;

  std::vector<StageOps> stages_;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_STAGE_EXECUTOR_H_
