// DeviceOp: one plan step (execution_plan.h) made ready to run on a GPU:
// descriptors created, algorithms chosen, pointers resolved.
//
// Creation may do setup work on the device (convolution algorithm search and
// trial runs on the setup lane); Enqueue only enqueues kernels and library
// calls on a lane's stream: it never allocates, synchronises or changes a
// handle's configuration, so it may run inside CUDA graph capture. Ops are
// immutable after creation; not thread-safe (used under the run mutex).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DEVICE_OP_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DEVICE_OP_H_

#include <cstddef>
#include <memory>

#include "common/status.h"
#include "worker/backends/cuda/device/cuda_context.h"
#include "worker/backends/cuda/device/lane_pool.h"
#include "worker/backends/cuda/planner/execution_plan.h"

namespace iosfarm::worker::cuda {

// Where a program's data lives on the device.
struct DeviceOpContext {
  CudaDeviceContext* device = nullptr;
  const ExecutionPlan* plan = nullptr;
  char* arena = nullptr;            // activation arena (plan->arena_bytes)
  const float* weights = nullptr;   // packed weights (plan->weights)

  float* Ptr(const TensorRef& ref) const {
    return reinterpret_cast<float*>(arena + plan->buffers[ref.buffer].byte_offset) + ref.offset;
  }
  const float* Weight(const WeightRef& w) const { return weights + w.offset; }
  // The lane setup work runs on.
  const Lane& setup_lane() const { return device->lanes().lane(0); }
};

class DeviceOp {
 public:
  virtual ~DeviceOp() = default;

  // Enqueues the step on `lane` (whose workspace holds >= workspace_bytes()).
  virtual Status Enqueue(const Lane& lane) const = 0;

  // cuDNN workspace the op needs on the lane that runs it.
  virtual size_t workspace_bytes() const { return 0; }
};

// The device implementation of `step`: cuDNN for convolution, pooling
// (where cuDNN expresses it), Relu/Sigmoid/Tanh and softmax; cuBLAS for
// Gemm/MatMul; the backend's kernels for the rest. Errors name the step.
StatusOr<std::unique_ptr<DeviceOp>> CreateDeviceOp(const Step& step, const DeviceOpContext& ctx);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DEVICE_OP_H_
