// The convolution algorithms chosen on one device, by problem.
//
// A ConvKey is everything an algorithm choice depends on: shapes, window,
// groups, whether bias+Relu (and a residual z) are fused into the call,
// whether TF32 is allowed and the 16-byte alignment of the data pointers
// (cuDNN picks kernels by alignment). Not thread-safe: owned by a CudaDeviceContext, used under the
// backend's run mutex.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CONV_ALGO_CACHE_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CONV_ALGO_CACHE_H_

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace iosfarm::worker::cuda {

struct ConvKey {
  // n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, dilation_h,
  // dilation_w, groups, fused mode (0 none, 1 bias + Relu, 2 bias + residual
  // + Relu, 3 bias + residual), allow_tf32, alignment bits (x, w, y, z).
  std::array<int64_t, 17> fields = {};

  bool operator<(const ConvKey& other) const { return fields < other.fields; }
};

struct ConvChoice {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t workspace_bytes = 0;
  // cudnnConvolutionBiasActivationForward ran with this algorithm (else the
  // bias and activation run as a separate kernel after cudnnConvolutionForward).
  bool fused = false;
};

class ConvAlgoCache {
 public:
  std::optional<ConvChoice> Find(const ConvKey& key) const {
    auto it = choices_.find(key);
    if (it == choices_.end()) return std::nullopt;
    return it->second;
  }
  void Insert(const ConvKey& key, const ConvChoice& choice) { choices_[key] = choice; }
  size_t size() const { return choices_.size(); }

 private:
  std::map<ConvKey, ConvChoice> choices_;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CONV_ALGO_CACHE_H_
