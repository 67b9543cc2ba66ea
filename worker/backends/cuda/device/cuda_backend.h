// The `cuda` backend: executes and times IOS stages and whole schedules on
// one NVIDIA GPU with cuDNN, cuBLAS and its own kernels (fp32, NCHW).
//
// Build (CPU only, never touches the device) turns each stage into an
// ExecutionPlan (plan_builder.h): steps per group, views and in-place
// concats, a memory plan, packed weights (merged conv weights assembled,
// stage inputs given deterministic random data). Profile and RunSchedule
// then, under the base's device lock (backend.h): create the device context at first use (lanes,
// handles, the per-device convolution algorithm cache), instantiate the plan
// (device_program.h: allocation, uploads, algorithm choice), and time runs
// with CUDA events using the protocol of profiling.h. Concurrent stages run
// one stream per group (stage_executor.h); RunSchedule with
// RunOptions::cuda_graph captures the whole schedule into one CUDA graph
// (cuda_graph_runner.h) and times graph launches.
//
// Thread safety: Build and CheckSupported may run concurrently with anything;
// Profile and RunSchedule are serialised by the base (a second caller waits). Plans are
// self-contained host data tied to the backend that built them.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_BACKEND_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/status.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "worker/backends/backend.h"
#include "worker/backends/cuda/device/cuda_context.h"
#include "worker/backends/cuda/device/cuda_device.h"
#include "worker/backends/cuda/planner/profile_breakdown.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {

struct CudaBackendOptions {
  int device = 0;  // CUDA device index
  CudaExecutionOptions execution;
};

class CudaPreparedSchedule;

class CudaBackend final : public Backend {
 public:
  // Unavailable "no CUDA device: ..." when no GPU answers; NotFound for a
  // device index out of range; Internal when the device cannot run this
  // build's kernels (probe kernel, e.g. missing arch).
  static StatusOr<std::unique_ptr<CudaBackend>> Create(const CudaBackendOptions& options = {});

  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::string device_description() const override { return description_; }
  bool accepts_device_buffers() const override { return true; }
  bool times_stages_as_graphs() const override { return options_.execution.graph_stages; }

  // CudaDeviceFloor (cuda_device_floor.h) of the launch cost measured when the
  // backend was created; none for stages timed as CUDA graphs, or where
  // the measurement failed.
  scheduler::ios::DeviceFloor device_floor() const override { return device_floor_; }

  Status CheckSupported(const graph::Graph& graph) const override;

  // Build (backend.h has the shared checks): InvalidArgument /
  // Unimplemented naming the stage for stages that cannot be planned
  // (plan_builder.h). External inputs of each stage get deterministic random
  // data. Profile instantiates each plan on the device, times it, and frees
  // it again.

  const CudaDeviceInfo& device_info() const { return info_; }

 private:
  CudaBackend(const CudaBackendOptions& options, CudaDeviceInfo info, std::string description,
              scheduler::ios::DeviceFloor device_floor)
      : options_(options),
        info_(std::move(info)),
        description_(std::move(description)),
        device_floor_(device_floor) {}

  StatusOr<std::vector<std::unique_ptr<StagePlan>>> DoBuild(
      const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) override;
  StatusOr<std::vector<LatencyStats>> DoProfile(const std::vector<const StagePlan*>& plans,
                                                const ProfileOptions& options) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);
  StatusOr<RunResult> DoRunSchedule(const graph::Graph& graph,
                                    const scheduler::ios::Schedule& schedule,
                                    const RunOptions& options) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);
  StatusOr<std::unique_ptr<PreparedSchedule>> DoPrepare(
      const graph::Graph& graph, const scheduler::ios::Schedule& schedule,
      const PrepareOptions& options) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);
  Status DoRunPrepared(PreparedSchedule& prepared, const InputBuffers& inputs,
                       const OutputBuffers& outputs, const BufferPlacement& placement) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);

  // The whole schedule planned and instantiated on the device (graph inputs
  // external, outputs kept); the device is idle when it returns.
  StatusOr<std::unique_ptr<CudaPreparedSchedule>> Instantiate(
      const graph::Graph& graph, const scheduler::ios::Schedule& schedule)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);

  // Makes the device current and creates the context on first use.
  StatusOr<CudaDeviceContext*> Activate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu_);

  const CudaBackendOptions options_;
  const CudaDeviceInfo info_;
  const std::string description_;
  const scheduler::ios::DeviceFloor device_floor_;
  // The weights Build draws, shared by every stage it plans (a search plans
  // thousands of stages of one model; bench/cuda_plan_bench). Thread-safe.
  WeightCache weight_cache_;

  std::unique_ptr<CudaDeviceContext> context_ ABSL_GUARDED_BY(device_mu_);
  ProfileBreakdown profile_breakdown_ ABSL_GUARDED_BY(device_mu_);
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_BACKEND_H_
