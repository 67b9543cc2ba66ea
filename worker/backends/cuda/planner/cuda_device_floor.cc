#include "worker/backends/cuda/planner/cuda_device_floor.h"

#include <cmath>

namespace iosfarm::worker::cuda {

scheduler::ios::DeviceFloor CudaDeviceFloor(double least_launch_us) {
  scheduler::ios::DeviceFloor floor;
  if (!(least_launch_us > 0) || !std::isfinite(least_launch_us)) return floor;
  floor.launch_ms = kLaunchShare * least_launch_us / 1e3;
  floor.back_to_back = true;
  floor.free_ops = scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable;
  return floor;
}

}  // namespace iosfarm::worker::cuda
