// The cuda backend's device floor (cuda_device_floor.h) against its plans: no
// candidate stage's plan launches fewer kernels than the floor counts, and
// the count of every op (the sim's) would overstate some.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/strings.h"
#include "graph/models/zoo.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/inline_search.h"
#include "worker/backends/cuda/planner/cuda_device_floor.h"
#include "worker/backends/cuda/planner/plan_builder.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {
namespace {

namespace ios = scheduler::ios;

double FloorKernels(const graph::Graph& graph, const ios::Stage& stage,
                    const ios::DeviceFloor& floor) {
  double kernels = 0;
  for (const auto& group : stage.groups) {
    for (graph::NodeId id : group)
      kernels += ios::ComputeOpFloor(graph, graph.node(id), floor).kernels;
  }
  return kernels;
}

TEST(CudaFloorTest, DeclaresTheLaunchesOfStagesTimedBackToBack) {
  const ios::DeviceFloor floor = CudaDeviceFloor(3.2);
  EXPECT_DOUBLE_EQ(floor.launch_ms, kLaunchShare * 3.2e-3);
  EXPECT_TRUE(floor.back_to_back);
  EXPECT_EQ(floor.free_ops, ios::DeviceFloor::FreeOps::kViewsAndFusable);
  EXPECT_EQ(floor.issue_order, ios::DeviceFloor::IssueOrder::kUnknown);
  EXPECT_EQ(floor.stage_ms, 0);
  EXPECT_EQ(floor.peak_gflops, 0);
  EXPECT_EQ(floor.bandwidth_gbps, 0);
  EXPECT_TRUE(ios::ValidateDeviceFloor(floor).ok());
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_FALSE(CudaDeviceFloor(bad).bounds_anything()) << bad;
  }
}

// Every concurrent candidate stage of the exhaustive search's (resnet50's
// residual blocks, inception_v3's and squeezenet's concats, at batch 1 and
// 2; RandWire's and NASNet-A mobile's at smaller bounds: their separable
// convolutions, Relus before convolutions, many-input adds and pools) plans
// at least as many steps (each one kernel or library call, or more) as the
// floor counts kernels; counting every op would overstate some of them
// (fused residuals; concats in place at batch 1).
TEST(CudaFloorTest, PlansNeverLaunchFewerKernelsThanTheFloorCounts) {
  const ios::DeviceFloor floor = CudaDeviceFloor(3.0);
  ios::DeviceFloor every_op = floor;
  every_op.free_ops = ios::DeviceFloor::FreeOps::kViews;
  WeightCache weights;
  for (const char* model :
       {"resnet50", "inception_v3", "squeezenet", "randwire", "nasnet_a_mobile"}) {
    const bool wide = std::string(model) == "randwire" || std::string(model) == "nasnet_a_mobile";
    for (int batch : {1, 2}) {
      SCOPED_TRACE(StrCat(model, " batch ", batch));
      StatusOr<graph::Graph> graph = graph::models::BuildZooModel(model, batch);
      ASSERT_TRUE(graph.ok()) << graph.status();
      const ios::StageLatencyFn analytic = ios::MakeAnalyticOracle(*graph);
      int64_t stages = 0, below = 0, overstated = 0;
      ios::SearchOptions options;
      options.exhaustive = true;
      if (wide) {  // r=2, s=3 in 16-op blocks: thousands of stages, not millions
        options.max_group_ops = 2;
        options.max_groups = 3;
        options.max_block_ops = 16;
      }
      auto result = ios::RunSearch(*graph, options, [&](const ios::Stage& stage) {
        if (stage.strategy == ios::Strategy::kConcurrent) {
          PlanOptions plan_options;
          plan_options.weight_cache = &weights;
          StatusOr<ExecutionPlan> plan = BuildExecutionPlan(*graph, {&stage}, plan_options);
          EXPECT_TRUE(plan.ok()) << plan.status();
          if (plan.ok()) {
            const double steps = plan->num_steps();
            ++stages;
            below += steps < FloorKernels(*graph, stage, floor) - 1e-9;
            overstated += steps < FloorKernels(*graph, stage, every_op) - 1e-9;
          }
        }
        return analytic(stage);
      });
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_GT(stages, 40);
      EXPECT_EQ(below, 0);
      // At batch 1 concats are in place (their slices are contiguous);
      // ResNet's residual Adds fuse at any batch.
      if (batch == 1 || std::string(model) == "resnet50") {
        EXPECT_GT(overstated, 0) << "counting every op, no stage would be overstated";
      }
      std::printf("%s batch %d: %lld concurrent stages, %lld overstated counting every op\n", model,
                  batch, static_cast<long long>(stages), static_cast<long long>(overstated));
    }
  }
}

}  // namespace
}  // namespace iosfarm::worker::cuda
