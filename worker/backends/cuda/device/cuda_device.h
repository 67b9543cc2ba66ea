// Discovery of CUDA devices for the `cuda` backend.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_DEVICE_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_DEVICE_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace iosfarm::worker::cuda {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;  // e.g. "NVIDIA H100 80GB HBM3"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  int runtime_version = 0;  // CUDA runtime, e.g. 13000
  int driver_version = 0;
  size_t cudnn_version = 0;  // e.g. 91000
};

// All CUDA devices. With no GPU or no driver this is Unavailable with a
// message that starts "no CUDA device" (cudaGetDeviceCount's error is
// checked, not only the count).
StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices();

// Runs a tiny kernel on `device` and checks its result: proves the device
// executes code built for it (fails clearly when the binary lacks its arch).
Status ProbeDevice(int device);

// The least host time of one asynchronous empty-kernel launch on `device`,
// in microseconds: the fastest of 8 bursts of 128 launches back to back on
// a stream of its own, each burst's wall time over its launches (after a
// warm-up burst, the stream drained between bursts). A few milliseconds.
StatusOr<double> MeasureLeastLaunchUs(int device);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CUDA_DEVICE_H_
