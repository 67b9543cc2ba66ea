#include "worker/backends/cuda/device/device_op.h"

#include "common/strings.h"
#include "worker/backends/cuda/device/op_factories.h"

namespace iosfarm::worker::cuda {

StatusOr<std::unique_ptr<DeviceOp>> CreateDeviceOp(const Step& step, const DeviceOpContext& ctx) {
  StatusOr<std::unique_ptr<DeviceOp>> op = absl::InternalError("unreachable");
  switch (step.kind) {
    case StepKind::kConv:
      op = MakeConvOp(step, ctx);
      break;
    case StepKind::kPool:
      op = MakePoolOp(step, ctx);
      break;
    case StepKind::kUnary:
      op = MakeUnaryOp(step, ctx);
      break;
    case StepKind::kSoftmax:
      op = MakeSoftmaxOp(step, ctx);
      break;
    case StepKind::kGemm:
      op = MakeGemmOp(step, ctx);
      break;
    case StepKind::kMatMul:
      op = MakeMatMulOp(step, ctx);
      break;
    case StepKind::kGlobalPool:
    case StepKind::kBinary:
    case StepKind::kCopyRows:
    case StepKind::kSlice:
    case StepKind::kPad:
    case StepKind::kResize:
    case StepKind::kConvTranspose:
    case StepKind::kTranspose:
    case StepKind::kReduce:
    case StepKind::kBatchNorm:
      op = MakeKernelOp(step, ctx);
      break;
  }
  if (!op.ok()) {
    return Status(op.status().code(), StrCat(StepKindName(step.kind), " '", step.label, "': ",
                                             ToStd(op.status().message())));
  }
  return op;
}

}  // namespace iosfarm::worker::cuda
