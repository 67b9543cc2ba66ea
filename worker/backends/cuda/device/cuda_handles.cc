#include "worker/backends/cuda/device/cuda_handles.h"

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"

namespace iosfarm::worker::cuda {

StatusOr<UniqueStream> CreateStream() {
  cudaStream_t stream = nullptr;
  RETURN_IF_ERROR(CudaCall(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                           "cudaStreamCreateWithFlags"));
  return UniqueStream(stream);
}

StatusOr<UniqueEvent> CreateEvent(bool timing) {
  cudaEvent_t event = nullptr;
  RETURN_IF_ERROR(CudaCall(
      cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming),
      "cudaEventCreateWithFlags"));
  return UniqueEvent(event);
}

StatusOr<UniqueCudnn> CreateCudnn(cudaStream_t stream) {
  cudnnHandle_t raw = nullptr;
  RETURN_IF_ERROR(CudnnCall(cudnnCreate(&raw), "cudnnCreate"));
  UniqueCudnn handle(raw);
  RETURN_IF_ERROR(CudnnCall(cudnnSetStream(raw, stream), "cudnnSetStream"));
  return handle;
}

StatusOr<UniqueCublas> CreateCublas(cudaStream_t stream, void* workspace, size_t workspace_bytes,
                                    bool allow_tf32) {
  cublasHandle_t raw = nullptr;
  RETURN_IF_ERROR(CublasCall(cublasCreate(&raw), "cublasCreate"));
  UniqueCublas handle(raw);
  // cublasSetStream resets the workspace to the default pool: set it after.
  RETURN_IF_ERROR(CublasCall(cublasSetStream(raw, stream), "cublasSetStream"));
  RETURN_IF_ERROR(
      CublasCall(cublasSetWorkspace(raw, workspace, workspace_bytes), "cublasSetWorkspace"));
  RETURN_IF_ERROR(CublasCall(
      cublasSetMathMode(raw, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
      "cublasSetMathMode"));
  RETURN_IF_ERROR(
      CublasCall(cublasSetPointerMode(raw, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode"));
  return handle;
}

StatusOr<UniqueTensorDesc> CreateTensorDesc(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t raw = nullptr;
  RETURN_IF_ERROR(CudnnCall(cudnnCreateTensorDescriptor(&raw), "cudnnCreateTensorDescriptor"));
  UniqueTensorDesc desc(raw);
  RETURN_IF_ERROR(CudnnCall(
      cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w),
      StrCat("cudnnSetTensor4dDescriptor [", n, ",", c, ",", h, ",", w, "]")));
  return desc;
}

StatusOr<UniqueFilterDesc> CreateFilterDesc(int k, int c, int h, int w) {
  cudnnFilterDescriptor_t raw = nullptr;
  RETURN_IF_ERROR(CudnnCall(cudnnCreateFilterDescriptor(&raw), "cudnnCreateFilterDescriptor"));
  UniqueFilterDesc desc(raw);
  RETURN_IF_ERROR(CudnnCall(
      cudnnSetFilter4dDescriptor(raw, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, h, w),
      StrCat("cudnnSetFilter4dDescriptor [", k, ",", c, ",", h, ",", w, "]")));
  return desc;
}

StatusOr<UniqueConvDesc> CreateConvDesc(int pad_h, int pad_w, int stride_h, int stride_w,
                                        int dilation_h, int dilation_w, int groups,
                                        cudnnMathType_t math) {
  cudnnConvolutionDescriptor_t raw = nullptr;
  RETURN_IF_ERROR(
      CudnnCall(cudnnCreateConvolutionDescriptor(&raw), "cudnnCreateConvolutionDescriptor"));
  UniqueConvDesc desc(raw);
  RETURN_IF_ERROR(CudnnCall(
      cudnnSetConvolution2dDescriptor(raw, pad_h, pad_w, stride_h, stride_w, dilation_h,
                                      dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor"));
  RETURN_IF_ERROR(
      CudnnCall(cudnnSetConvolutionGroupCount(raw, groups), "cudnnSetConvolutionGroupCount"));
  RETURN_IF_ERROR(CudnnCall(cudnnSetConvolutionMathType(raw, math), "cudnnSetConvolutionMathType"));
  return desc;
}

StatusOr<UniquePoolingDesc> CreatePoolingDesc(cudnnPoolingMode_t mode, int window_h, int window_w,
                                              int pad_h, int pad_w, int stride_h, int stride_w) {
  cudnnPoolingDescriptor_t raw = nullptr;
  RETURN_IF_ERROR(CudnnCall(cudnnCreatePoolingDescriptor(&raw), "cudnnCreatePoolingDescriptor"));
  UniquePoolingDesc desc(raw);
  RETURN_IF_ERROR(CudnnCall(cudnnSetPooling2dDescriptor(raw, mode, CUDNN_NOT_PROPAGATE_NAN,
                                                        window_h, window_w, pad_h, pad_w,
                                                        stride_h, stride_w),
                            "cudnnSetPooling2dDescriptor"));
  return desc;
}

StatusOr<UniqueActivationDesc> CreateActivationDesc(cudnnActivationMode_t mode) {
  cudnnActivationDescriptor_t raw = nullptr;
  RETURN_IF_ERROR(
      CudnnCall(cudnnCreateActivationDescriptor(&raw), "cudnnCreateActivationDescriptor"));
  UniqueActivationDesc desc(raw);
  RETURN_IF_ERROR(CudnnCall(cudnnSetActivationDescriptor(raw, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0),
                            "cudnnSetActivationDescriptor"));
  return desc;
}

}  // namespace iosfarm::worker::cuda
