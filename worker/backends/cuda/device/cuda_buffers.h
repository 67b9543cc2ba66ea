// DeviceBuffer: owning RAII handle of one cudaMalloc allocation.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_BUFFERS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_BUFFERS_H_

#include <cstddef>
#include <string_view>

#include "common/status.h"

namespace iosfarm::worker::cuda {

// Device memory on the current device. Move-only; the destructor frees it
// (cudaFree synchronises the device). Not thread-safe.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // `bytes` of device memory (none for 0). Internal (or Unavailable) naming
  // `what` and the size when cudaMalloc fails, e.g. out of memory.
  static StatusOr<DeviceBuffer> Allocate(size_t bytes, std::string_view what);

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  // Frees the memory now (errors of cudaFree are logged, not returned).
  void Reset();

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_BUFFERS_H_
