// CudaDeviceContext: the cuda backend's state on one GPU, created lazily at
// the first Profile or RunSchedule (Build never touches the device): lanes
// (streams with cuDNN/cuBLAS handles and workspaces), the convolution
// algorithm cache, and scratch memory for setup work.
//
// Not thread-safe: the backend's run mutex serialises every use. Callers make
// the context's device current (cudaSetDevice) before using it.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_CONTEXT_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_CONTEXT_H_

#include <cstddef>
#include <memory>

#include "common/status.h"
#include "worker/backends/cuda/device/conv_algo_cache.h"
#include "worker/backends/cuda/device/cuda_buffers.h"
#include "worker/backends/cuda/device/lane_pool.h"

namespace iosfarm::worker::cuda {

enum class ConvAlgoSearch {
  kExhaustive,  // cudnnFindConvolutionForwardAlgorithmEx: time every algorithm
  kHeuristic,   // cudnnGetConvolutionForwardAlgorithm_v7: cuDNN's ranking
};

struct CudaExecutionOptions {
  // TF32 tensor cores for fp32 convolutions and GEMMs. Off by default: TF32
  // keeps 10 mantissa bits, which breaks the 1e-3 agreement with the
  // reference on deep models.
  bool allow_tf32 = false;
  ConvAlgoSearch conv_algo_search = ConvAlgoSearch::kExhaustive;
  // Largest cuDNN workspace one convolution may use.
  size_t max_conv_workspace_bytes = size_t{256} << 20;
  // Profile times each stage captured as a CUDA graph, replayed: what the
  // stage costs in a schedule run as one graph (no host enqueueing per op),
  // for searches whose schedules will run that way. The device description
  // says so, keeping such latencies apart from eager ones.
  bool graph_stages = false;
  // With graph_stages: every timed replay follows a write over twice the L2
  // cache and is timed alone (StreamTimer::TimeEachDeviceOnly), so a stage
  // finds its weights (and inputs) in device memory, not in L2. An
  // experiment on whether warm caches explain why graph-timed stages add up
  // to less than the schedule's graph (docs/profiling.md). The device
  // description says so.
  bool flush_l2 = false;
};

class CudaDeviceContext {
 public:
  // The context of `device` (which must be current). Creates lane 0.
  static StatusOr<std::unique_ptr<CudaDeviceContext>> Create(int device,
                                                             const CudaExecutionOptions& options);

  int device() const { return device_; }
  const CudaExecutionOptions& options() const { return options_; }
  LanePool& lanes() { return lanes_; }
  ConvAlgoCache& conv_algos() { return conv_algos_; }

  // At least `bytes` of device memory for setup work (algorithm search and
  // trial runs); grows, never shrinks; contents undefined. Lane 0 is
  // synchronised before it is replaced.
  StatusOr<void*> Scratch(size_t bytes);

 private:
  CudaDeviceContext(int device, const CudaExecutionOptions& options)
      : device_(device), options_(options), lanes_(options.allow_tf32) {}

  const int device_;
  const CudaExecutionOptions options_;
  LanePool lanes_;
  ConvAlgoCache conv_algos_;
  DeviceBuffer scratch_;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_CONTEXT_H_
