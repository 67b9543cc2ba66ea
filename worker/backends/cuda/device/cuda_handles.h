// RAII owners of CUDA runtime, cuDNN and cuBLAS objects (streams, events,
// graphs, library handles, cuDNN descriptors) and checked factories for them.
//
// Every owner is a std::unique_ptr whose deleter calls the matching destroy
// function (its error, which cannot be reported from a destructor, is
// ignored). Factories return the creation or configuration error as Status.
// Descriptors describe dense fp32 NCHW data. Not thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_HANDLES_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_HANDLES_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <type_traits>

#include "common/status.h"

namespace iosfarm::worker::cuda {

template <typename Handle, auto Destroy>
struct HandleDeleter {
  void operator()(std::remove_pointer_t<Handle>* handle) const {
    if (handle != nullptr) (void)Destroy(handle);
  }
};

template <typename Handle, auto Destroy>
using UniqueHandle = std::unique_ptr<std::remove_pointer_t<Handle>, HandleDeleter<Handle, Destroy>>;

using UniqueStream = UniqueHandle<cudaStream_t, cudaStreamDestroy>;
using UniqueEvent = UniqueHandle<cudaEvent_t, cudaEventDestroy>;
using UniqueGraph = UniqueHandle<cudaGraph_t, cudaGraphDestroy>;
using UniqueGraphExec = UniqueHandle<cudaGraphExec_t, cudaGraphExecDestroy>;
using UniqueCudnn = UniqueHandle<cudnnHandle_t, cudnnDestroy>;
using UniqueCublas = UniqueHandle<cublasHandle_t, cublasDestroy_v2>;
using UniqueTensorDesc = UniqueHandle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using UniqueFilterDesc = UniqueHandle<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using UniqueConvDesc =
    UniqueHandle<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using UniquePoolingDesc = UniqueHandle<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
using UniqueActivationDesc =
    UniqueHandle<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;

// A stream that does not synchronise with the legacy default stream.
StatusOr<UniqueStream> CreateStream();

// An event; `timing` false creates it with cudaEventDisableTiming (cheaper,
// for cross-stream dependencies only).
StatusOr<UniqueEvent> CreateEvent(bool timing);

// A cuDNN handle whose calls run on `stream`.
StatusOr<UniqueCudnn> CreateCudnn(cudaStream_t stream);

// A cuBLAS handle whose calls run on `stream` with `workspace` (device
// memory of `workspace_bytes`, owned by the caller and kept alive as long as
// the handle; set explicitly so that graph capture never allocates). Default
// math (true fp32) unless `allow_tf32`.
StatusOr<UniqueCublas> CreateCublas(cudaStream_t stream, void* workspace, size_t workspace_bytes,
                                    bool allow_tf32);

// A packed fp32 NCHW tensor [n, c, h, w].
StatusOr<UniqueTensorDesc> CreateTensorDesc(int n, int c, int h, int w);

// An fp32 NCHW filter [k, c, h, w].
StatusOr<UniqueFilterDesc> CreateFilterDesc(int k, int c, int h, int w);

// A 2-D cross-correlation with fp32 compute, `groups` groups and math type
// `math`.
StatusOr<UniqueConvDesc> CreateConvDesc(int pad_h, int pad_w, int stride_h, int stride_w,
                                        int dilation_h, int dilation_w, int groups,
                                        cudnnMathType_t math);

// 2-D pooling (NaN not propagated).
StatusOr<UniquePoolingDesc> CreatePoolingDesc(cudnnPoolingMode_t mode, int window_h, int window_w,
                                              int pad_h, int pad_w, int stride_h, int stride_w);

// An activation (NaN not propagated; coef unused by RELU/SIGMOID/TANH).
StatusOr<UniqueActivationDesc> CreateActivationDesc(cudnnActivationMode_t mode);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_HANDLES_H_
