#include "worker/backends/cuda/diagnostics/probe_kernel.h"

namespace iosfarm::worker::cuda {
namespace {

__global__ void FillProbe(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3 * i + 1;
}

__global__ void Empty() {}

}  // namespace

cudaError_t LaunchProbeKernel(int* out, int n) {
  constexpr int kThreads = 128;
  FillProbe<<<(n + kThreads - 1) / kThreads, kThreads>>>(out, n);
  return cudaGetLastError();
}

cudaError_t LaunchEmptyKernel(cudaStream_t stream) {
  Empty<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace iosfarm::worker::cuda
