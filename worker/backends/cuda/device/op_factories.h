// The per-family constructors behind CreateDeviceOp (device_op.h); internal
// to the cuda backend.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_OP_FACTORIES_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_OP_FACTORIES_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "common/status.h"
#include "worker/backends/cuda/device/device_op.h"

namespace iosfarm::worker::cuda {

// conv_runner.cc: kConv.
StatusOr<std::unique_ptr<DeviceOp>> MakeConvOp(const Step& step, const DeviceOpContext& ctx);

// cudnn_ops.cc: kPool (cuDNN, or the backend's kernel for asymmetric pads and
// ceil-mode windows), kUnary (cuDNN for Relu/Sigmoid/Tanh, the backend's
// kernel otherwise), kSoftmax.
StatusOr<std::unique_ptr<DeviceOp>> MakePoolOp(const Step& step, const DeviceOpContext& ctx);
StatusOr<std::unique_ptr<DeviceOp>> MakeUnaryOp(const Step& step, const DeviceOpContext& ctx);
StatusOr<std::unique_ptr<DeviceOp>> MakeSoftmaxOp(const Step& step, const DeviceOpContext& ctx);

// blas_ops.cc: kGemm, kMatMul.
StatusOr<std::unique_ptr<DeviceOp>> MakeGemmOp(const Step& step, const DeviceOpContext& ctx);
StatusOr<std::unique_ptr<DeviceOp>> MakeMatMulOp(const Step& step, const DeviceOpContext& ctx);

// kernel_ops.cc: kGlobalPool, kBinary, kCopyRows, kSlice, kPad, kTranspose,
// kReduce, kBatchNorm.
StatusOr<std::unique_ptr<DeviceOp>> MakeKernelOp(const Step& step, const DeviceOpContext& ctx);

// An int dimension for cuDNN/cuBLAS; InvalidArgument naming `what` if it does
// not fit (op_support.h rejects such graphs earlier).
inline StatusOr<int> ToInt(int64_t value, const char* what) {
  if (value < 0 || value > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(std::string(what) + " does not fit in an int");
  }
  return static_cast<int>(value);
}

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_OP_FACTORIES_H_
