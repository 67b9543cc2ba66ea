// Lanes: the streams the cuda backend runs work on, each with its own cuDNN
// and cuBLAS handles and workspaces, so that concurrent groups never share a
// handle or a workspace.
//
// Lane 0 is the main stream: single-group stages, setup work, timing events
// and graph capture run there; the groups of a concurrent stage run on lanes
// 1..k. Lanes are created on demand and live as long as the pool. Not
// thread-safe: the backend's run mutex serialises every use.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_LANE_POOL_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_LANE_POOL_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <vector>

#include "common/status.h"
#include "worker/backends/cuda/device/cuda_buffers.h"
#include "worker/backends/cuda/device/cuda_handles.h"

namespace iosfarm::worker::cuda {

// What a step needs to enqueue work (non-owning; valid while the pool lives
// and until the lane's workspace grows).
struct Lane {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  void* workspace = nullptr;  // cuDNN workspace of this lane
  size_t workspace_bytes = 0;
};

class LanePool {
 public:
  // cuBLAS workspace per lane (cuBLAS recommends 32 MiB on Hopper).
  static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

  explicit LanePool(bool allow_tf32) : allow_tf32_(allow_tf32) {}
  // Synchronises every lane, then destroys handles, buffers and streams.
  ~LanePool();
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  // Creates lanes until there are at least `count`.
  Status EnsureLanes(int count);

  // Grows lane `index`'s cuDNN workspace to at least `bytes` (the lane must
  // exist; its old workspace is freed, so nothing may be in flight or
  // captured that uses it).
  Status EnsureWorkspace(int index, size_t bytes);

  int size() const { return static_cast<int>(lanes_.size()); }
  const Lane& lane(int index) const { return lanes_[index]->view; }

  // cudaStreamSynchronize on every lane.
  Status SynchronizeAll() const;

 private:
  struct Owned {
    // Declaration order = reverse destruction order: handles go first, the
    // stream last.
    UniqueStream stream;
    DeviceBuffer cublas_workspace;
    DeviceBuffer workspace;
    UniqueCudnn cudnn;
    UniqueCublas cublas;
    Lane view;
  };

  const bool allow_tf32_;
  std::vector<std::unique_ptr<Owned>> lanes_;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_LANE_POOL_H_
