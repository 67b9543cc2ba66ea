#include "worker/backends/cuda/device/cuda_status.h"

#include "common/strings.h"

namespace iosfarm::worker::cuda {

Status CudaCall(cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  std::string message = StrCat(what, ": ", cudaGetErrorName(error), ": ",
                               cudaGetErrorString(error));
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
      error == cudaErrorDevicesUnavailable) {
    return absl::UnavailableError(StrCat("no CUDA device: ", message));
  }
  return absl::InternalError(message);
}

Status CudnnCall(cudnnStatus_t status, std::string_view what) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(StrCat(what, ": ", cudnnGetErrorString(status)));
}

Status CublasCall(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(StrCat(what, ": ", cublasGetStatusName(status), ": ",
                                    cublasGetStatusString(status)));
}

}  // namespace iosfarm::worker::cuda
