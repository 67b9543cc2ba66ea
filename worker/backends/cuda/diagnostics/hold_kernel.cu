#include "worker/backends/cuda/diagnostics/hold_kernel.h"

namespace iosfarm::worker::cuda {
namespace {

__device__ unsigned long long GlobalTimerNs() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void Hold(unsigned long long nanoseconds) {
  const unsigned long long start = GlobalTimerNs();
  while (GlobalTimerNs() - start < nanoseconds) {
  }
}

}  // namespace

cudaError_t LaunchHoldKernel(cudaStream_t stream, unsigned long long nanoseconds) {
  Hold<<<1, 1, 0, stream>>>(nanoseconds);
  return cudaGetLastError();
}

}  // namespace iosfarm::worker::cuda
