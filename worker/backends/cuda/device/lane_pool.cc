#include "worker/backends/cuda/device/lane_pool.h"

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"

namespace iosfarm::worker::cuda {

LanePool::~LanePool() {
  for (const auto& lane : lanes_) (void)cudaStreamSynchronize(lane->stream.get());
}

Status LanePool::EnsureLanes(int count) {
  while (size() < count) {
    auto owned = std::make_unique<Owned>();
    ASSIGN_OR_RETURN(owned->stream, CreateStream());
    ASSIGN_OR_RETURN(owned->cublas_workspace,
                     DeviceBuffer::Allocate(kCublasWorkspaceBytes,
                                            StrCat("the cuBLAS workspace of lane ", size())));
    ASSIGN_OR_RETURN(owned->cudnn, CreateCudnn(owned->stream.get()));
    ASSIGN_OR_RETURN(owned->cublas,
                     CreateCublas(owned->stream.get(), owned->cublas_workspace.data(),
                                  owned->cublas_workspace.bytes(), allow_tf32_));
    owned->view.stream = owned->stream.get();
    owned->view.cudnn = owned->cudnn.get();
    owned->view.cublas = owned->cublas.get();
    lanes_.push_back(std::move(owned));
  }
  return absl::OkStatus();
}

Status LanePool::EnsureWorkspace(int index, size_t bytes) {
  Owned& lane = *lanes_.at(static_cast<size_t>(index));
  if (lane.workspace.bytes() >= bytes) return absl::OkStatus();
  RETURN_IF_ERROR(CudaCall(cudaStreamSynchronize(lane.stream.get()), "cudaStreamSynchronize"));
  lane.workspace.Reset();
  lane.view.workspace = nullptr;
  lane.view.workspace_bytes = 0;
  ASSIGN_OR_RETURN(lane.workspace,
                   DeviceBuffer::Allocate(bytes, StrCat("the cuDNN workspace of lane ", index)));
  lane.view.workspace = lane.workspace.data();
  lane.view.workspace_bytes = lane.workspace.bytes();
  return absl::OkStatus();
}

Status LanePool::SynchronizeAll() const {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    RETURN_IF_ERROR(CudaCall(cudaStreamSynchronize(lanes_[i]->stream.get()),
                             StrCat("cudaStreamSynchronize(lane ", i, ")")));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cuda
