#include "worker/backends/cuda/device/cuda_context.h"

#include <cuda_runtime_api.h>

#include "worker/backends/cuda/device/cuda_status.h"

namespace iosfarm::worker::cuda {

StatusOr<std::unique_ptr<CudaDeviceContext>> CudaDeviceContext::Create(
    int device, const CudaExecutionOptions& options) {
  std::unique_ptr<CudaDeviceContext> context(new CudaDeviceContext(device, options));
  RETURN_IF_ERROR(context->lanes_.EnsureLanes(1));
  return context;
}

StatusOr<void*> CudaDeviceContext::Scratch(size_t bytes) {
  if (scratch_.bytes() < bytes) {
    RETURN_IF_ERROR(
        CudaCall(cudaStreamSynchronize(lanes_.lane(0).stream), "cudaStreamSynchronize"));
    scratch_.Reset();
    ASSIGN_OR_RETURN(scratch_, DeviceBuffer::Allocate(bytes, "convolution algorithm search"));
  }
  return scratch_.data();
}

}  // namespace iosfarm::worker::cuda
