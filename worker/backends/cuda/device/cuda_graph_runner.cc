#include "worker/backends/cuda/device/cuda_graph_runner.h"

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"

namespace iosfarm::worker::cuda {

StatusOr<CudaGraphRunner> CudaGraphRunner::Capture(cudaStream_t origin,
                                                   const std::function<Status()>& enqueue) {
  RETURN_IF_ERROR(CudaCall(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal),
                           "cudaStreamBeginCapture"));
  const Status enqueued = enqueue();
  cudaGraph_t raw = nullptr;
  // Always end the capture, also after an error, so the streams leave
  // capture mode.
  const cudaError_t ended = cudaStreamEndCapture(origin, &raw);
  UniqueGraph graph(raw);
  if (!enqueued.ok()) {
    (void)cudaGetLastError();  // the capture error, if any, is a consequence
    return Status(enqueued.code(),
                  StrCat("during CUDA graph capture: ", ToStd(enqueued.message())));
  }
  RETURN_IF_ERROR(CudaCall(ended, "cudaStreamEndCapture"));
  if (graph == nullptr) return absl::InternalError("cudaStreamEndCapture returned no graph");
  size_t num_nodes = 0;
  RETURN_IF_ERROR(
      CudaCall(cudaGraphGetNodes(graph.get(), nullptr, &num_nodes), "cudaGraphGetNodes"));
  cudaGraphExec_t exec = nullptr;
  RETURN_IF_ERROR(CudaCall(cudaGraphInstantiate(&exec, graph.get(), 0), "cudaGraphInstantiate"));
  return CudaGraphRunner(std::move(graph), UniqueGraphExec(exec), num_nodes);
}

Status CudaGraphRunner::Launch(cudaStream_t stream) const {
  return CudaCall(cudaGraphLaunch(exec_.get(), stream), "cudaGraphLaunch");
}

}  // namespace iosfarm::worker::cuda
