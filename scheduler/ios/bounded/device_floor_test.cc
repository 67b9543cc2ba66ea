// The device floor's stage bounds (device_floor.h) on hand-worked stages.
#include "scheduler/ios/bounded/device_floor.h"

#include <gtest/gtest.h>

#include <limits>
#include <span>
#include <string>
#include <vector>

#include "graph/cost.h"
#include "graph/graph_builder.h"

namespace iosfarm::scheduler::ios {
namespace {

DeviceFloor Floor(DeviceFloor::IssueOrder order = DeviceFloor::IssueOrder::kUnknown) {
  DeviceFloor floor;
  floor.stage_ms = 2.5;
  floor.launch_ms = 3;
  floor.issue_order = order;
  return floor;
}

// Where issue overlaps work: the last launch and the last kernel, or one
// launch and then the whole work, whichever is longer.
TEST(DeviceFloorTest, StageFloorTakesTheLastKernelOrOneLaunchAndTheWork) {
  const DeviceFloor floor = Floor();
  // 4 kernels, 10 of work, last kernel 1: 4 * 3 + 1 = 13 against 3 + 10.
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 4, 10, 1), 2.5 + 13);
  // 2 kernels, 20 of work: nothing runs before the first launch.
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 2, 20, 1), 2.5 + 3 + 20);
  // No kernel: no launch before the (zero) work.
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 0, 0, 0), 2.5);
  DeviceFloor adds = floor;
  adds.issue_overlaps_work = false;
  EXPECT_DOUBLE_EQ(StageFloorMs(adds, 2, 20, 1), 2.5 + 6 + 20);
}

// Contention: a stage of g groups does its work (1 + c * (g - 1)) times
// slower; its launches and last kernel are not slowed. One group, or a
// caller that passes none, takes the work as it is.
TEST(DeviceFloorTest, ContentionSlowsTheWorkOfEachExtraGroup) {
  DeviceFloor floor = Floor();
  floor.contention = 0.25;
  // 2 kernels, 20 of work, 3 groups: 3 + 20 * 1.5 against 2 * 3 + 1.
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 2, 20, 1, 3), 2.5 + 3 + 30);
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 2, 20, 1, 1), StageFloorMs(Floor(), 2, 20, 1));
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 2, 20, 1), StageFloorMs(Floor(), 2, 20, 1));
  // Launch-bound: 8 kernels, 1 of work, 4 groups: 8 * 3 + 1 against 3 + 1.75.
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 8, 1, 1, 4), 2.5 + 25);
  DeviceFloor adds = floor;
  adds.issue_overlaps_work = false;
  EXPECT_DOUBLE_EQ(StageFloorMs(adds, 2, 20, 1, 5), 2.5 + 6 + 40);
  DeviceFloor timed = floor;
  timed.back_to_back = true;
  EXPECT_DOUBLE_EQ(StageFloorMs(timed, 2, 20, 1, 2), 2.5 + 25);
  EXPECT_EQ(DescribeDeviceFloor(floor),
            "stage 2500 us, launch 3000 us, issue overlaps work, work 25 % slower per extra group");
  EXPECT_TRUE(ValidateDeviceFloor(floor).ok());
  for (double bad :
       {-0.01, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    floor.contention = bad;
    const Status refused = ValidateDeviceFloor(floor);
    EXPECT_TRUE(absl::IsInvalidArgument(refused)) << bad;
    EXPECT_NE(std::string(refused.message()).find("contention"), std::string::npos) << refused;
  }
}

// Timed back to back, a run's kernels are issued while the run before
// executes: its launches or its work, whichever is longer, and neither the
// last kernel nor a launch before the work.
TEST(DeviceFloorTest, BackToBackTakesTheLaunchesOrTheWorkOnly) {
  DeviceFloor floor = Floor();
  floor.back_to_back = true;
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 4, 10, 1), 2.5 + 12);
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 2, 20, 1), 2.5 + 20);
  EXPECT_DOUBLE_EQ(StageFloorMs(floor, 0, 0, 5), 2.5);
  EXPECT_LE(StageFloorMs(floor, 4, 10, 1), StageFloorMs(Floor(), 4, 10, 1));
  EXPECT_LE(StageFloorMs(floor, 2, 20, 1), StageFloorMs(Floor(), 2, 20, 1));
  EXPECT_EQ(DescribeDeviceFloor(floor),
            "stage 2500 us, launch 3000 us, issue overlaps work, timed back to back");
}

// Free ops: with kViewsAndFusable, Add, Relu, Concat and Split launch no
// kernel (nor any work), as the cuda backend may run them; a Conv, a Mul and
// a pool still launch one; views launch none either way.
TEST(DeviceFloorTest, FusableOpsLaunchNoKernelWhereTheBackendMayFuseThem) {
  graph::GraphBuilder b("fusable");
  const graph::ValueId x = b.Input("x", {1, 8, 16, 16});
  graph::ConvSpec spec;
  spec.out_channels = 8;
  const graph::ValueId conv = b.Conv(x, spec, "conv");
  const graph::ValueId relu = b.Relu(b.Add(conv, x, "add"), "relu");
  const graph::ValueId cat = b.Concat({relu, x}, 1, "cat");
  const graph::ValueId mul = b.Mul(relu, relu, "mul");
  b.Output(b.GlobalAveragePool(cat, "pool"));
  b.Output(b.Flatten(mul, 1, "flat"));
  auto graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status();
  DeviceFloor every = Floor();
  every.peak_gflops = 1000;
  DeviceFloor fusable = every;
  fusable.free_ops = DeviceFloor::FreeOps::kViewsAndFusable;
  int checked = 0;
  for (const graph::Node& node : graph->nodes()) {
    SCOPED_TRACE(graph::OpTypeName(node.type));
    const OpFloor all = ComputeOpFloor(*graph, node, every);
    const OpFloor fused = ComputeOpFloor(*graph, node, fusable);
    const bool free = node.type == graph::OpType::kAdd || node.type == graph::OpType::kRelu ||
                      node.type == graph::OpType::kConcat;
    const bool view = graph::LaunchesNoKernel(node.type);
    EXPECT_EQ(all.kernels, view ? 0 : 1);
    EXPECT_EQ(fused.kernels, view || free ? 0 : 1);
    if (free) EXPECT_EQ(fused.work_ms(), 0);
    if (!free && !view) EXPECT_EQ(fused.work_ms(), all.work_ms());
    ++checked;
  }
  EXPECT_GE(checked, 7);
  EXPECT_NE(DescribeDeviceFloor(fusable).find("Add, Relu, Concat and Split may launch no kernel"),
            std::string::npos);
  EXPECT_EQ(FreeOpsFromNumber(0), DeviceFloor::FreeOps::kViews);
  EXPECT_EQ(FreeOpsFromNumber(1), DeviceFloor::FreeOps::kViewsAndFusable);
  EXPECT_EQ(FreeOpsFromNumber(5), DeviceFloor::FreeOps::kViewsAndFusable);  // fewest kernels
}

// Back to back needs issue that overlaps work and no issue order: the
// chains need each run issued from an idle device.
TEST(DeviceFloorTest, BackToBackRefusesAnIssueOrderAndIssueThatAddsToWork) {
  DeviceFloor floor = Floor();
  floor.back_to_back = true;
  EXPECT_TRUE(ValidateDeviceFloor(floor).ok());
  DeviceFloor ordered = Floor(DeviceFloor::IssueOrder::kGroupByGroup);
  ordered.back_to_back = true;
  const Status order = ValidateDeviceFloor(ordered);
  EXPECT_TRUE(absl::IsInvalidArgument(order)) << order;
  EXPECT_NE(std::string(order.message()).find("issue order"), std::string::npos) << order;
  DeviceFloor adds = floor;
  adds.issue_overlaps_work = false;
  const Status issue = ValidateDeviceFloor(adds);
  EXPECT_TRUE(absl::IsInvalidArgument(issue)) << issue;
  EXPECT_NE(std::string(issue.message()).find("issue_overlaps_work"), std::string::npos) << issue;
}

// Two groups: A runs 5 then 1, B runs 4. Round-robin issues A1 at 3, B1 at
// 6, A2 at 9: A1 ends at 8, B1 at 10, A2 starts at 9 and ends at 10. Group
// by group issues A1 at 3 (ends 8), A2 at 6 (waits for A1: 8 to 9), B1 at
// 9 (ends 13).
TEST(DeviceFloorTest, ChainsFollowTheIssueOrder) {
  const std::vector<double> a = {5, 1}, b = {4};
  const std::vector<std::span<const double>> chains = {a, b};
  EXPECT_DOUBLE_EQ(IssuedChainsFloorMs(Floor(DeviceFloor::IssueOrder::kRoundRobin), chains),
                   2.5 + 10);
  EXPECT_DOUBLE_EQ(IssuedChainsFloorMs(Floor(DeviceFloor::IssueOrder::kGroupByGroup), chains),
                   2.5 + 13);
  // A long first kernel holds its group's next one back.
  const std::vector<double> slow = {20, 1};
  const std::vector<std::span<const double>> held = {slow, b};
  EXPECT_DOUBLE_EQ(IssuedChainsFloorMs(Floor(DeviceFloor::IssueOrder::kRoundRobin), held),
                   2.5 + 24);
  // Without an order there is no such bound.
  EXPECT_DOUBLE_EQ(IssuedChainsFloorMs(Floor(), chains), 0);
}

TEST(DeviceFloorTest, DescribesTheIssueOrder) {
  EXPECT_EQ(DescribeDeviceFloor(Floor(DeviceFloor::IssueOrder::kRoundRobin)),
            "stage 2500 us, launch 3000 us, issue overlaps work, round-robin issue");
  EXPECT_EQ(DescribeDeviceFloor(Floor()), "stage 2500 us, launch 3000 us, issue overlaps work");
  EXPECT_EQ(IssueOrderName(DeviceFloor::IssueOrder::kGroupByGroup), "group by group");
}

// The stored and wire numbers: 0, 1, 2; any other reads as unknown.
TEST(DeviceFloorTest, IssueOrderFromItsNumber) {
  EXPECT_EQ(IssueOrderFromNumber(0), DeviceFloor::IssueOrder::kUnknown);
  EXPECT_EQ(IssueOrderFromNumber(1), DeviceFloor::IssueOrder::kRoundRobin);
  EXPECT_EQ(IssueOrderFromNumber(2), DeviceFloor::IssueOrder::kGroupByGroup);
  EXPECT_EQ(IssueOrderFromNumber(3), DeviceFloor::IssueOrder::kUnknown);
  EXPECT_EQ(IssueOrderFromNumber(-1), DeviceFloor::IssueOrder::kUnknown);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
