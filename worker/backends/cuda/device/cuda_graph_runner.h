// CudaGraphRunner: work captured once into a CUDA graph and replayed.
//
// Capture uses stream capture on an origin stream (thread-local mode):
// streams that wait on an event recorded on a capturing stream join the
// capture, and must be joined back into the origin before it ends (the
// StageExecutor's fork/join events do exactly that), so a whole multi-stream
// schedule becomes one graph. The captured work must be capturable: no
// allocation, no synchronisation. Move-only; not thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_GRAPH_RUNNER_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_GRAPH_RUNNER_H_

#include <cuda_runtime_api.h>

#include <functional>

#include "common/status.h"
#include "worker/backends/cuda/device/cuda_handles.h"

namespace iosfarm::worker::cuda {

class CudaGraphRunner {
 public:
  // Captures what `enqueue` puts on `origin` (and streams forked from it)
  // and instantiates it. An error from `enqueue` ends the capture and is
  // returned; capture and instantiation errors are Internal.
  static StatusOr<CudaGraphRunner> Capture(cudaStream_t origin,
                                           const std::function<Status()>& enqueue);

  // Enqueues one replay of the graph on `stream`.
  Status Launch(cudaStream_t stream) const;

  // Number of nodes in the captured graph.
  size_t num_nodes() const { return num_nodes_; }

 private:
  CudaGraphRunner(UniqueGraph graph, UniqueGraphExec exec, size_t num_nodes)
      : graph_(std::move(graph)), exec_(std::move(exec)), num_nodes_(num_nodes) {}

  UniqueGraph graph_;
  UniqueGraphExec exec_;
  size_t num_nodes_ = 0;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_GRAPH_RUNNER_H_
