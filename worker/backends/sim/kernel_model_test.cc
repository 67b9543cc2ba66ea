#include "worker/backends/sim/kernel_model.h"

#include <gtest/gtest.h>

#include "graph/cost.h"
#include "graph/graph_builder.h"
#include "worker/backends/sim/sim_test_graphs.h"

namespace iosfarm::worker::sim {
namespace {

// 10 SMs, 1 GFLOP/us... in round numbers: 1000 GFLOP/s = 1e6 FLOP/us,
// 100 GB/s = 1e5 bytes/us.
SimDeviceModel RoundModel() {
  SimDeviceModel m;
  m.name = "custom";
  m.sm_count = 10;
  m.peak_gflops = 1000;
  m.bandwidth_gbps = 100;
  m.efficiency = 1;
  m.items_per_sm = 100;
  m.reads_per_item = 10;
  return m;
}

TEST(KernelModelTest, WorkIsTheSlowerOfComputeAndMemory) {
  const SimDeviceModel m = RoundModel();
  // 1 us of compute, 0.1 us of memory traffic.
  SimKernel k = KernelFromCounts(1e6, 1e4, 0, 250, m);
  EXPECT_DOUBLE_EQ(k.work_us, 1.0);
  EXPECT_EQ(k.sm_demand, 3);  // ceil(250 / 100)
  EXPECT_DOUBLE_EQ(k.AloneUs(m), 10.0 / 3.0);
  // Memory bound: 2 us of traffic.
  k = KernelFromCounts(1e3, 2e5, 0, 1000, m);
  EXPECT_DOUBLE_EQ(k.work_us, 2.0);
  EXPECT_EQ(k.sm_demand, 10);
  EXPECT_DOUBLE_EQ(k.AloneUs(m), 2.0);
  // Efficiency scales both rates.
  SimDeviceModel half = m;
  half.efficiency = 0.5;
  EXPECT_DOUBLE_EQ(KernelFromCounts(1e6, 1e4, 0, 250, half).work_us, 2.0);
}

TEST(KernelModelTest, DemandComesFromOutputsOrSpreadReadsAndIsClamped) {
  const SimDeviceModel m = RoundModel();
  EXPECT_EQ(KernelFromCounts(0, 0, 0, 1, m).sm_demand, 1);
  EXPECT_EQ(KernelFromCounts(0, 0, 0, 0, m).sm_demand, 1);
  EXPECT_EQ(KernelFromCounts(0, 0, 0, 1e9, m).sm_demand, 10);
  // A GEMV: 10 outputs but 5000 elements read = 500 items = 5 SMs.
  EXPECT_EQ(KernelFromCounts(0, 0, 5000, 10, m).sm_demand, 5);
}

TEST(KernelModelTest, OpKernelUsesTheGraphCost) {
  const SimDeviceModel m = RoundModel();
  const testing::TwoConvs g = testing::MakeTwoConvs(16, 8, 3);
  const graph::Node& conv = g.graph.node(g.a);
  const graph::OpCost cost = graph::ComputeOpCost(g.graph, conv);
  const std::optional<SimKernel> k = OpKernel(g.graph, conv, m);
  ASSERT_TRUE(k.has_value());
  const double compute_us = static_cast<double>(cost.flops) / 1e6;
  const double memory_us = static_cast<double>(cost.bytes_read + cost.bytes_written) / 1e5;
  EXPECT_DOUBLE_EQ(k->work_us, std::max(compute_us, memory_us));
  EXPECT_EQ(k->sm_demand, 10);  // 16*8*8 = 1024 outputs, 16*8*8 + 16*16*9 + 16 reads
}

TEST(KernelModelTest, ViewOpsLaunchNothing) {
  graph::GraphBuilder b("views");
  const graph::ValueId x = b.Input("input", {1, 4, 2, 2});
  const graph::ValueId f = b.Flatten(x, 1, "flatten");
  const graph::ValueId r = b.Relu(f, "relu");
  b.Output(r);
  const graph::Graph graph = *std::move(b).Finish();
  const SimDeviceModel m = RoundModel();
  EXPECT_FALSE(OpKernel(graph, graph.node(graph.value(f).producer), m).has_value());
  EXPECT_TRUE(OpKernel(graph, graph.node(graph.value(r).producer), m).has_value());
}

TEST(KernelModelTest, MergedConvReadsTheInputOnceAndSumsOutputs) {
  const SimDeviceModel m = RoundModel();
  const testing::TwoConvs g = testing::MakeTwoConvs(16, 8, 3);
  const scheduler::ios::Stage merge = testing::MergeStage(g.graph, {g.a, g.b});
  const SimKernel merged = MergedConvKernel(g.graph, *merge.merged, m);
  const graph::OpCost a = graph::ComputeOpCost(g.graph, g.graph.node(g.a));
  const graph::OpCost b = graph::ComputeOpCost(g.graph, g.graph.node(g.b));
  const double flops = static_cast<double>(a.flops + b.flops);
  // Same kernels: the merged conv does exactly the branches' arithmetic and
  // moves the branches' bytes minus one read of the input.
  const double input_bytes = 4.0 * 16 * 8 * 8;
  const double bytes =
      static_cast<double>(a.bytes_read + a.bytes_written + b.bytes_read + b.bytes_written) -
      input_bytes;
  EXPECT_DOUBLE_EQ(merged.work_us, std::max(flops / 1e6, bytes / 1e5));
  EXPECT_EQ(merged.sm_demand, 10);

  // A merge of one conv is that conv.
  const scheduler::ios::MergedConv single = *scheduler::ios::MergeConvs(g.graph, {g.a, g.b});
  scheduler::ios::MergedConv only_a = single;
  only_a.attrs.out_channels = 16;
  only_a.branches.resize(1);
  const SimKernel alone = MergedConvKernel(g.graph, only_a, m);
  const SimKernel direct = *OpKernel(g.graph, g.graph.node(g.a), m);
  EXPECT_DOUBLE_EQ(alone.work_us, direct.work_us);
  EXPECT_EQ(alone.sm_demand, direct.sm_demand);
}

}  // namespace
}  // namespace iosfarm::worker::sim
