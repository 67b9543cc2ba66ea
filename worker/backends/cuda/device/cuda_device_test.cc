#include "worker/backends/cuda/device/cuda_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::worker::cuda {
namespace {

using ::testing::StartsWith;

TEST(CudaDeviceTest, ListsDevicesOrSaysNoDevice) {
  auto devices = ListCudaDevices();
  if (!devices.ok()) {
    // Machines without a GPU must get the clear error, never a crash.
    EXPECT_EQ(devices.status().code(), absl::StatusCode::kUnavailable) << devices.status();
    EXPECT_THAT(std::string(devices.status().message()), StartsWith("no CUDA device"));
    return;
  }
  ASSERT_FALSE(devices->empty());
  for (const auto& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.compute_capability_major, 7);
    EXPECT_GT(d.multiprocessors, 0);
    EXPECT_GT(d.memory_bytes, 0);
    EXPECT_GT(d.cudnn_version, 0u);
  }
}

TEST(CudaDeviceTest, ProbeKernelRunsOnEveryDevice) {
  auto devices = ListCudaDevices();
  if (!devices.ok()) GTEST_SKIP() << "no GPU here: " << devices.status().message();
  for (const auto& d : *devices) {
    Status status = ProbeDevice(d.index);
    EXPECT_TRUE(status.ok()) << d.name << ": " << status;
  }
}

}  // namespace
}  // namespace iosfarm::worker::cuda
