// Conversion of CUDA runtime, cuDNN and cuBLAS error codes into Status.
//
// Every CUDA/cuDNN/cuBLAS call in the backend goes through CudaCall/CudnnCall/
// CublasCall so no error is ignored; the message names the call that failed.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_STATUS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string_view>

#include "common/status.h"

namespace iosfarm::worker::cuda {

// OK for cudaSuccess; otherwise Internal (Unavailable for "no device" and
// "driver missing" errors) with "<what>: <cuda error name>: <description>".
Status CudaCall(cudaError_t error, std::string_view what);

// OK for CUDNN_STATUS_SUCCESS; otherwise Internal with cuDNN's error string.
Status CudnnCall(cudnnStatus_t status, std::string_view what);

// OK for CUBLAS_STATUS_SUCCESS; otherwise Internal with cuBLAS's status name.
Status CublasCall(cublasStatus_t status, std::string_view what);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_STATUS_H_
