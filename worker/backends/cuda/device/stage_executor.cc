#include "worker/backends/cuda/device/stage_executor.h"

#include <algorithm>

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"

namespace iosfarm::worker::cuda {

StatusOr<std::unique_ptr<StageExecutor>> StageExecutor::Create(const DeviceOpContext& ctx) {
  std::unique_ptr<StageExecutor> executor(new StageExecutor());
  const ExecutionPlan& plan = *ctx.plan;
  LanePool& lanes = ctx.device->lanes();
  std::vector<size_t> workspace;  // needed per lane
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StageProgram& program = plan.stages[s];
    StageOps stage;
    stage.label = program.label;
    int busy = 0;
    for (const GroupProgram& group : program.groups) busy += group.steps.empty() ? 0 : 1;
    for (const GroupProgram& group : program.groups) {
      if (group.steps.empty()) continue;
      Group ops;
      ops.lane = busy > 1 ? static_cast<int>(stage.groups.size()) + 1 : 0;
      for (size_t i = 0; i < group.steps.size(); ++i) {
        auto op = CreateDeviceOp(group.steps[i], ctx);
        if (!op.ok()) {
          return Status(op.status().code(), StrCat("stage ", s, " (", program.label, "): ",
                                                   ToStd(op.status().message())));
        }
        if (workspace.size() <= static_cast<size_t>(ops.lane)) workspace.resize(ops.lane + 1, 0);
        workspace[ops.lane] = std::max(workspace[ops.lane], (*op)->workspace_bytes());
        ops.ops.push_back(std::move(*op));
      }
      stage.groups.push_back(std::move(ops));
    }
    if (stage.groups.size() > 1) {
      ASSIGN_OR_RETURN(stage.fork, CreateEvent(/*timing=*/false));
      for (size_t g = 0; g < stage.groups.size(); ++g) {
        ASSIGN_OR_RETURN(UniqueEvent join, CreateEvent(/*timing=*/false));
        stage.joins.push_back(std::move(join));
      }
    }
    executor->stages_.push_back(std::move(stage));
  }
  RETURN_IF_ERROR(lanes.EnsureLanes(std::max<int>(1, static_cast<int>(workspace.size()))));
  for (size_t lane = 0; lane < workspace.size(); ++lane) {
    RETURN_IF_ERROR(lanes.EnsureWorkspace(static_cast<int>(lane), workspace[lane]));
  }
  return executor;
}

Status StageExecutor::EnqueueStage(const StageOps& stage, const LanePool& lanes) const {
  if (stage.groups.empty()) return absl::OkStatus();
  if (stage.groups.size() == 1) {
    const Lane& lane = lanes.lane(stage.groups[0].lane);
    for (const auto& op : stage.groups[0].ops) RETURN_IF_ERROR(op->Enqueue(lane));
    return absl::OkStatus();
  }
  const cudaStream_t main = lanes.lane(0).stream;
  RETURN_IF_ERROR(CudaCall(cudaEventRecord(stage.fork.get(), main), "cudaEventRecord (fork)"));
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    const Lane& lane = lanes.lane(stage.groups[g].lane);
    RETURN_IF_ERROR(CudaCall(cudaStreamWaitEvent(lane.stream, stage.fork.get(), 0),
                             "cudaStreamWaitEvent (fork)"));
    for (const auto& op : stage.groups[g].ops) RETURN_IF_ERROR(op->Enqueue(lane));
    RETURN_IF_ERROR(
        CudaCall(cudaEventRecord(stage.joins[g].get(), lane.stream), "cudaEventRecord (join)"));
  }
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    RETURN_IF_ERROR(CudaCall(cudaStreamWaitEvent(main, stage.joins[g].get(), 0),
                             "cudaStreamWaitEvent (join)"));
  }
  return absl::OkStatus();
}

Status StageExecutor::Enqueue(const LanePool& lanes) const {
  for (size_t s = 0; s < stages_.size(); ++s) {
    Status status = EnqueueStage(stages_[s], lanes);
    if (!status.ok()) {
      return Status(status.code(), StrCat("stage ", s, " (", stages_[s].label, "): ",
                                          ToStd(status.message())));
    }
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cuda
