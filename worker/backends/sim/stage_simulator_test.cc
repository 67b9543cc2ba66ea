#include "worker/backends/sim/stage_simulator.h"

#include <gtest/gtest.h>

namespace iosfarm::worker::sim {
namespace {

// 10 SMs, 1 us launch, 2 us stage sync.
SimDeviceModel TestModel() {
  SimDeviceModel m;
  m.name = "custom";
  m.sm_count = 10;
  m.kernel_launch_us = 1;
  m.stage_sync_us = 2;
  return m;
}

SimKernel Kernel(double work_us, int demand) { return SimKernel{work_us, demand}; }

TEST(StageSimulatorTest, OneKernelRunsAtItsUtilisation) {
  const SimDeviceModel m = TestModel();
  // 2 us at full device, 5 of 10 SMs: 4 us alone.
  EXPECT_DOUBLE_EQ(SimulateStageUs({{Kernel(2, 5)}}, m), 1 + 4 + 2);
  EXPECT_DOUBLE_EQ(SimulateStageUs({{Kernel(2, 10)}}, m), 1 + 2 + 2);
}

TEST(StageSimulatorTest, EmptyStageCostsTheSync) {
  const SimDeviceModel m = TestModel();
  EXPECT_DOUBLE_EQ(SimulateStageUs({}, m), 2);
  EXPECT_DOUBLE_EQ(SimulateStageUs({{}, {}}, m), 2);
  // An empty group takes no issue slot.
  EXPECT_DOUBLE_EQ(SimulateStageUs({{}, {Kernel(2, 10)}}, m), 1 + 2 + 2);
}

TEST(StageSimulatorTest, IssueOverlapsEarlierKernelsOfAStream) {
  const SimDeviceModel m = TestModel();
  // Long kernels hide the second launch: 1 + 5 + 5.
  EXPECT_DOUBLE_EQ(SimulateStageUs({{Kernel(5, 10), Kernel(5, 10)}}, m), 1 + 10 + 2);
  // Short kernels wait for their issue: a at [1, 1.5], b issued at 2, [2, 2.5].
  EXPECT_DOUBLE_EQ(SimulateStageUs({{Kernel(0.5, 10), Kernel(0.5, 10)}}, m), 2.5 + 2);
}

TEST(StageSimulatorTest, SmallGroupsOverlapFully) {
  const SimDeviceModel m = TestModel();
  // Two kernels of 2 SMs, 5 us alone each (work 1 us): a runs [1, 6], b [2, 7].
  const double concurrent = SimulateStageUs({{Kernel(1, 2)}, {Kernel(1, 2)}}, m);
  EXPECT_DOUBLE_EQ(concurrent, 7 + 2);
  const double one_stream = SimulateStageUs({{Kernel(1, 2), Kernel(1, 2)}}, m);
  EXPECT_DOUBLE_EQ(one_stream, 1 + 5 + 5 + 2);
  EXPECT_LT(concurrent, one_stream);
}

TEST(StageSimulatorTest, DeviceFillingGroupsTakeTheSumOfTheirWork) {
  const SimDeviceModel m = TestModel();
  // a alone on [1, 2], then a and b share: both at half speed; a has 4 us of
  // work left (done at 10), b then runs alone for its last 1 us (11).
  const double concurrent = SimulateStageUs({{Kernel(5, 10)}, {Kernel(5, 10)}}, m);
  EXPECT_DOUBLE_EQ(concurrent, 11 + 2);
  EXPECT_DOUBLE_EQ(SimulateStageUs({{Kernel(5, 10), Kernel(5, 10)}}, m), 11 + 2);
}

TEST(StageSimulatorTest, OversubscriptionStretchesProportionally) {
  SimDeviceModel m = TestModel();
  m.kernel_launch_us = 0;
  // Demands 6 + 6 > 10: each gets 5 SMs, runs at 0.5; work 3 each: 6 us.
  EXPECT_DOUBLE_EQ(SimulateStageUs({{Kernel(3, 6)}, {Kernel(3, 6)}}, m), 6 + 2);
  // Demands 4 + 6 = 10 fit: 7.5 us and 5 us alone, in parallel.
  EXPECT_DOUBLE_EQ(SimulateStageUs({{Kernel(3, 4)}, {Kernel(3, 6)}}, m), 7.5 + 2);
  // Three groups of 5 SMs (work 1, 2 us alone): 15 demanded, rate 1/3 each
  // until all finish together at 3 us = total work.
  EXPECT_DOUBLE_EQ(SimulateStageUs({{Kernel(1, 5)}, {Kernel(1, 5)}, {Kernel(1, 5)}}, m), 3 + 2);
}

TEST(StageSimulatorTest, RoundRobinIssueAcrossGroups) {
  SimDeviceModel m = TestModel();
  // Group 0: two 1-SM kernels of 1 us alone (0.1 us work); group 1: one.
  // Issue order: g0k0 (1), g1k0 (2), g0k1 (3). g0k1 runs [3, 4].
  EXPECT_DOUBLE_EQ(
      SimulateStageUs({{Kernel(0.1, 1), Kernel(0.1, 1)}, {Kernel(0.1, 1)}}, m), 4 + 2);
}

// Timed back to back, the host issues a run while the one before executes:
// a run lasts the longer of its launches and the device's time with every
// kernel issued at once (plus the sync), never longer than issued from an
// idle device.
TEST(StageSimulatorTest, BackToBackTakesTheIssueOrTheDeviceTime) {
  SimDeviceModel m = TestModel();
  m.back_to_back = true;
  SimDeviceModel idle = TestModel();
  // Four small kernels in four groups: 4 launches against 0.5 us of device.
  const GroupKernels small = {
      {Kernel(0.05, 1)}, {Kernel(0.05, 1)}, {Kernel(0.05, 1)}, {Kernel(0.05, 1)}};
  EXPECT_DOUBLE_EQ(SimulateStageUs(small, m), 4 + 2);
  // Two device-filling kernels on one stream: 10 us of device, 2 launches.
  const GroupKernels large = {{Kernel(5, 10), Kernel(5, 10)}};
  EXPECT_DOUBLE_EQ(SimulateStageUs(large, m), 10 + 2);
  // Issued from an idle device they wait for their launches.
  EXPECT_DOUBLE_EQ(SimulateStageUs(large, idle), 1 + 10 + 2);
  for (const GroupKernels* groups : {&small, &large}) {
    EXPECT_LE(SimulateStageUs(*groups, m), SimulateStageUs(*groups, idle));
  }
}

}  // namespace
}  // namespace iosfarm::worker::sim
