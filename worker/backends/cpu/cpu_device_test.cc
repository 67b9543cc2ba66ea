#include "worker/backends/cpu/cpu_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::worker::cpu {
namespace {

TEST(CpuDeviceTest, DescribesOneDnnEngine) {
  auto info = DescribeCpuDevice();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_THAT(info->onednn_version, ::testing::MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
  EXPECT_FALSE(info->isa.empty());
  EXPECT_GE(info->hardware_threads, 1);
}

}  // namespace
}  // namespace iosfarm::worker::cpu
