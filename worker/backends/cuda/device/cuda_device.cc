#include "worker/backends/cuda/device/cuda_device.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"
#include "worker/backends/cuda/diagnostics/probe_kernel.h"

namespace iosfarm::worker::cuda {

StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices() {
  int count = 0;
  RETURN_IF_ERROR(CudaCall(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (count == 0) return absl::UnavailableError("no CUDA device: the driver reports 0 devices");
  int runtime = 0, driver = 0;
  RETURN_IF_ERROR(CudaCall(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion"));
  RETURN_IF_ERROR(CudaCall(cudaDriverGetVersion(&driver), "cudaDriverGetVersion"));
  std::vector<CudaDeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    RETURN_IF_ERROR(CudaCall(cudaGetDeviceProperties(&prop, i),
                             StrCat("cudaGetDeviceProperties(", i, ")")));
    CudaDeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.compute_capability_major = prop.major;
    info.compute_capability_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    info.runtime_version = runtime;
    info.driver_version = driver;
    info.cudnn_version = cudnnGetVersion();
    devices.push_back(std::move(info));
  }
  return devices;
}

}  // namespace iosfarm::worker::cuda

namespace iosfarm::worker::cuda {

Status ProbeDevice(int device) {
  constexpr int kCount = 256;
  RETURN_IF_ERROR(CudaCall(cudaSetDevice(device), StrCat("cudaSetDevice(", device, ")")));
  int* buffer = nullptr;
  RETURN_IF_ERROR(CudaCall(cudaMalloc(reinterpret_cast<void**>(&buffer), kCount * sizeof(int)), "cudaMalloc"));
  int host[kCount] = {};
  Status status = CudaCall(LaunchProbeKernel(buffer, kCount), "probe kernel launch");
  if (status.ok()) {
    status = CudaCall(cudaMemcpy(host, buffer, sizeof(host), cudaMemcpyDeviceToHost),
                      "cudaMemcpy");
  }
  Status freed = CudaCall(cudaFree(buffer), "cudaFree");
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(freed);
  for (int i = 0; i < kCount; ++i) {
    if (host[i] != ProbeKernelValue(i)) {
      return absl::InternalError(StrCat("probe kernel on device ", device, " wrote ", host[i],
                                        " at ", i, ", expected ", ProbeKernelValue(i)));
    }
  }
  return absl::OkStatus();
}

StatusOr<double> MeasureLeastLaunchUs(int device) {
  constexpr int kBursts = 8, kLaunches = 128;
  RETURN_IF_ERROR(CudaCall(cudaSetDevice(device), StrCat("cudaSetDevice(", device, ")")));
  cudaStream_t stream = nullptr;
  RETURN_IF_ERROR(CudaCall(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                           "cudaStreamCreateWithFlags (launch floor)"));
  using Clock = std::chrono::steady_clock;
  double least_us = std::numeric_limits<double>::infinity();
  Status status;
  for (int burst = 0; burst <= kBursts && status.ok(); ++burst) {
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < kLaunches && status.ok(); ++i) {
      status = CudaCall(LaunchEmptyKernel(stream), "empty kernel launch (launch floor)");
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (status.ok()) status = CudaCall(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (burst > 0) least_us = std::min(least_us, us / kLaunches);  // burst 0 warms up
  }
  const Status destroyed = CudaCall(cudaStreamDestroy(stream), "cudaStreamDestroy (launch floor)");
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(destroyed);
  return least_us;
}

}  // namespace iosfarm::worker::cuda
