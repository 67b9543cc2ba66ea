#include "worker/backends/cuda/planner/execution_plan.h"

#include <algorithm>

namespace iosfarm::worker::cuda {

std::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kConv:
      return "conv";
    case StepKind::kPool:
      return "pool";
    case StepKind::kGlobalPool:
      return "global_pool";
    case StepKind::kUnary:
      return "unary";
    case StepKind::kBinary:
      return "binary";
    case StepKind::kCopyRows:
      return "copy_rows";
    case StepKind::kSlice:
      return "slice";
    case StepKind::kPad:
      return "pad";
    case StepKind::kResize:
      return "resize";
    case StepKind::kConvTranspose:
      return "conv_transpose";
    case StepKind::kTranspose:
      return "transpose";
    case StepKind::kReduce:
      return "reduce";
    case StepKind::kSoftmax:
      return "softmax";
    case StepKind::kBatchNorm:
      return "batch_norm";
    case StepKind::kGemm:
      return "gemm";
    case StepKind::kMatMul:
      return "matmul";
  }
  return "?";
}

int ExecutionPlan::num_steps() const {
  int n = 0;
  for (const StageProgram& stage : stages) {
    for (const GroupProgram& group : stage.groups) n += static_cast<int>(group.steps.size());
  }
  return n;
}

int ExecutionPlan::max_concurrent_groups() const {
  int most = 0;
  for (const StageProgram& stage : stages) {
    int busy = 0;
    for (const GroupProgram& group : stage.groups) busy += group.steps.empty() ? 0 : 1;
    most = std::max(most, busy);
  }
  return most;
}

int ExecutionPlan::num_residual_convs() const {
  int n = 0;
  for (const StageProgram& stage : stages) {
    for (const GroupProgram& group : stage.groups) {
      for (const Step& step : group.steps) {
        n += step.kind == StepKind::kConv && step.inputs.size() == 2 ? 1 : 0;
      }
    }
  }
  return n;
}

}  // namespace iosfarm::worker::cuda
