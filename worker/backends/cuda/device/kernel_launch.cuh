// Launch geometry shared by the backend's kernels (included by .cu files
// only): 256-thread blocks and grid-stride loops over int64 indices.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_KERNEL_LAUNCH_CUH_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_KERNEL_LAUNCH_CUH_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace iosfarm::worker::cuda {

inline constexpr int kBlockThreads = 256;
// Grid-stride loops cover any n; more blocks than this only add overhead.
inline constexpr int64_t kMaxBlocks = 65536;

inline unsigned int GridFor(int64_t n) {
  int64_t blocks = (n + kBlockThreads - 1) / kBlockThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned int>(blocks);
}

// First index of this thread and the grid-wide stride of a grid-stride loop.
__device__ inline int64_t GlobalThreadIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t GridStride() { return static_cast<int64_t>(blockDim.x) * gridDim.x; }

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_KERNEL_LAUNCH_CUH_
