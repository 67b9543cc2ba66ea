// DeviceProgram: an ExecutionPlan instantiated on a GPU: the activation
// arena (zero-filled), the packed weights and presets uploaded, and a
// StageExecutor with every step's op ready.
//
// Creation does all the device setup (allocation, uploads, algorithm search)
// and returns with the device idle; Enqueue only enqueues work. Move-only;
// freed memory synchronises the device. Not thread-safe (used under the
// backend's run mutex); the plan must outlive the program.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DEVICE_PROGRAM_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DEVICE_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "graph/tensor.h"
#include "worker/backends/cuda/device/cuda_buffers.h"
#include "worker/backends/cuda/device/cuda_context.h"
#include "worker/backends/cuda/device/stage_executor.h"
#include "worker/backends/cuda/planner/execution_plan.h"

namespace iosfarm::worker::cuda {

// OK when `data` is memory of CUDA device `device` (or managed memory);
// otherwise InvalidArgument naming `what` and saying what the memory is.
Status CheckDeviceMemory(const void* data, int device, const std::string& what);

class DeviceProgram {
 public:
  static StatusOr<std::unique_ptr<DeviceProgram>> Create(CudaDeviceContext& device,
                                                         const ExecutionPlan& plan);

  // Uploads the plan's runtime inputs from `graph_inputs` (graph.inputs()
  // order) and waits for the copies. InvalidArgument on a missing input or a
  // size mismatch.
  Status WriteRuntimeInputs(const std::vector<graph::Tensor>& graph_inputs);
  // The same from plain memory, one span per graph input: host memory, or
  // where `on_device[i]` (empty: none) memory of this device (the caller
  // checks it with CheckDeviceMemory), after the work queued on
  // `ready_streams[i]` (empty or 0: none; a
  // cudaStream_t as an integer, 1 and 2 the legacy and per-thread default
  // streams as in __cuda_array_interface__) has completed.
  Status WriteRuntimeInputs(const std::vector<std::span<const float>>& graph_inputs,
                            const std::vector<bool>& on_device = {},
                            const std::vector<std::uintptr_t>& ready_streams = {});

  // Enqueues one run of every stage on the context's lanes (capturable).
  Status Enqueue() const;

  // Copies the plan's outputs to the host after lane 0's work completes.
  StatusOr<std::vector<graph::Tensor>> ReadOutputs() const;
  // The same into caller memory, one span of the right size per output:
  // host memory, or where `on_device[i]` (empty: none) memory of this device
  // (the caller checks it). Complete when it returns.
  Status ReadOutputsInto(const std::vector<std::span<float>>& outputs,
                         const std::vector<bool>& on_device = {}) const;

 private:
  DeviceProgram(CudaDeviceContext& device, const ExecutionPlan& plan)
      : device_(device), plan_(plan) {}

  CudaDeviceContext& device_;
  const ExecutionPlan& plan_;
  DeviceBuffer arena_;
  DeviceBuffer weights_;
  std::unique_ptr<StageExecutor> executor_;  // last: its ops point into the buffers
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DEVICE_PROGRAM_H_
