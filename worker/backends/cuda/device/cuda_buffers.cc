#include "worker/backends/cuda/device/cuda_buffers.h"

#include <cuda_runtime_api.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"

namespace iosfarm::worker::cuda {

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes, std::string_view what) {
  DeviceBuffer buffer;
  if (bytes == 0) return buffer;
  RETURN_IF_ERROR(CudaCall(cudaMalloc(&buffer.data_, bytes),
                           StrCat("cudaMalloc of ", bytes, " bytes for ", what)));
  buffer.bytes_ = bytes;
  return buffer;
}

void DeviceBuffer::Reset() {
  if (data_ == nullptr) return;
  const cudaError_t error = cudaFree(data_);
  if (error != cudaSuccess) {
    spdlog::warn("cuda backend: cudaFree: {}", cudaGetErrorString(error));
  }
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace iosfarm::worker::cuda
