#include "worker/backends/sim/device_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::worker::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SimDeviceModelTest, PresetsAreListedInOrderAndValid) {
  EXPECT_THAT(SimDevicePresetNames(),
              ElementsAre("v100", "a100", "h100", "h200", "t4", "cpu-small"));
  for (std::string_view name : SimDevicePresetNames()) {
    StatusOr<SimDeviceModel> model = SimDevicePreset(name);
    ASSERT_TRUE(model.ok()) << name;
    EXPECT_EQ(model->name, name);
    EXPECT_TRUE(ValidateSimDeviceModel(*model).ok()) << name;
  }
}

TEST(SimDeviceModelTest, PresetsCarryNominalFigures) {
  const SimDeviceModel v100 = *SimDevicePreset("v100");
  EXPECT_EQ(v100.sm_count, 80);
  EXPECT_DOUBLE_EQ(v100.peak_gflops, 15700);
  EXPECT_DOUBLE_EQ(v100.bandwidth_gbps, 900);
  const SimDeviceModel h100 = *SimDevicePreset("h100");
  EXPECT_EQ(h100.sm_count, 132);
  EXPECT_DOUBLE_EQ(h100.bandwidth_gbps, 3350);
  EXPECT_GT(SimDevicePreset("h200")->bandwidth_gbps, h100.bandwidth_gbps);
  EXPECT_EQ(SimDevicePreset("cpu-small")->sm_count, 4);
  // The default model is the v100 preset.
  const SimDeviceModel fallback;
  EXPECT_EQ(fallback.name, "v100");
  EXPECT_EQ(fallback.sm_count, v100.sm_count);
  EXPECT_DOUBLE_EQ(fallback.kernel_launch_us, v100.kernel_launch_us);
}

TEST(SimDeviceModelTest, UnknownPresetListsValidNames) {
  StatusOr<SimDeviceModel> model = SimDevicePreset("p100");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("\"p100\" (valid: v100, a100, h100, h200, t4, cpu-small)"));
}

TEST(SimDeviceModelTest, ValidationNamesTheField) {
  SimDeviceModel m;
  m.sm_count = 0;
  EXPECT_THAT(std::string(ValidateSimDeviceModel(m).message()), HasSubstr("sm_count"));
  m = {};
  m.efficiency = 1.5;
  EXPECT_THAT(std::string(ValidateSimDeviceModel(m).message()), HasSubstr("efficiency"));
  m = {};
  m.bandwidth_gbps = 0;
  EXPECT_THAT(std::string(ValidateSimDeviceModel(m).message()), HasSubstr("bandwidth_gbps"));
  m = {};
  m.kernel_launch_us = -1;
  EXPECT_EQ(ValidateSimDeviceModel(m).code(), absl::StatusCode::kInvalidArgument);
  m = {};
  m.kernel_launch_us = 0;
  m.stage_sync_us = 0;
  EXPECT_TRUE(ValidateSimDeviceModel(m).ok());
}

TEST(SimDeviceModelTest, DescribesTheDevice) {
  EXPECT_EQ(DescribeSimDevice(*SimDevicePreset("v100")),
            "sim v100 (80 SMs, 15.7 TFLOP/s fp32, 900 GB/s, simulated)");
  EXPECT_EQ(DescribeSimDevice(*SimDevicePreset("cpu-small")),
            "sim cpu-small (4 SMs, 200 GFLOP/s fp32, 25 GB/s, simulated)");
}

}  // namespace
}  // namespace iosfarm::worker::sim
