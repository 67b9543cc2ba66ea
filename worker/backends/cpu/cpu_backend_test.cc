#include "worker/backends/cpu/cpu_backend.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "common/strings.h"
#include "graph/graph_builder.h"
#include "graph/models/zoo.h"
#include "graph/test_graphs.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/stages/merge.h"
#include "worker/backends/cpu/op_compiler.h"
#include "worker/backends/reference/compare.h"
#include "worker/backends/reference/executor.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cpu {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

ProfileOptions Quick() {
  ProfileOptions options;
  options.warmup = 1;
  options.min_repeats = 2;
  options.max_repeats = 4;
  return options;
}

std::unique_ptr<CpuBackend> MakeBackend(int threads = 2,
                                        std::optional<ActivationLayout> layout = {}) {
  CpuBackendOptions options;
  options.num_threads = threads;
  options.layout = layout;
  auto backend = CpuBackend::Create(options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return std::move(*backend);
}

// Runs `schedule` end to end and compares its outputs with the reference
// executor's on the same inputs (rtol 1e-3); `what` names the case.
void ExpectRunMatchesReference(CpuBackend& backend, const graph::Graph& g,
                               const scheduler::ios::Schedule& schedule, const char* what) {
  RunOptions options;
  options.profile = Quick();
  options.return_outputs = true;
  auto result = backend.RunSchedule(g, schedule, options);
  ASSERT_TRUE(result.ok()) << what << ": " << result.status();
  auto expected = reference::ExecuteGraph(g, MakeGraphInputs(g, options.input_seed));
  ASSERT_TRUE(expected.ok()) << what << ": " << expected.status();
  Status same = reference::CompareTensorLists(result->outputs, *expected, 1e-3, what);
  EXPECT_TRUE(same.ok()) << same;
}

// x [1,32,12,12] -> {conv3x3(32)+relu -> conv1x1(16) | maxpool3x3 | conv1x1(24)}
// -> concat. Groups: {0,1}, {2}, {3}; concat is node 4.
graph::Graph ThreeBranchGraph() {
  graph::GraphBuilder b("three");
  graph::ValueId x = b.Input("x", {1, 32, 12, 12});
  graph::ConvSpec c3;
  c3.out_channels = 32;
  c3.kernel = {3, 3};
  c3.padding = {1, 1};
  c3.activation = graph::Activation::kRelu;
  graph::ConvSpec c1;
  c1.out_channels = 16;
  graph::ValueId left = b.Conv(b.Conv(x, c3, "a3x3"), c1, "a1x1");
  graph::ValueId mid = b.MaxPool(x, {3, 3}, {1, 1}, {1, 1, 1, 1}, "pool");
  c1.out_channels = 24;
  graph::ValueId right = b.Conv(x, c1, "c1x1");
  b.Output(b.Concat({left, mid, right}, 1, "concat"));
  return *std::move(b).Finish();
}

TEST(CpuBackendTest, CreatesAndDescribesItself) {
  auto backend = MakeBackend();
  EXPECT_EQ(backend->name(), "cpu");
  EXPECT_THAT(backend->device_description(), HasSubstr("oneDNN"));
  EXPECT_EQ(backend->num_threads(), 2);
  EXPECT_FALSE(CpuBackend::Create({-1, std::nullopt}).ok());
  EXPECT_TRUE(backend->CheckSupported(graph::testing::SmallBranchyGraph(false)).ok());
}

TEST(CpuBackendTest, RunScheduleMatchesTheReference) {
  auto backend = MakeBackend();
  const graph::Graph g = graph::testing::SmallBranchyGraph(/*with_data=*/false);
  auto schedule = scheduler::ios::SequentialSchedule(g);
  ASSERT_TRUE(schedule.ok());
  RunOptions options;
  options.profile = Quick();
  options.return_outputs = true;
  options.input_seed = 5;
  auto result = backend->RunSchedule(g, *schedule, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->latency.median_ms, 0);
  EXPECT_GE(result->latency.repeats, 2);
  auto expected = reference::ExecuteGraph(g, MakeGraphInputs(g, 5));
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(result->outputs.size(), 1u);
  EXPECT_EQ(result->outputs[0].shape, (graph::Shape{1, 10}));
  EXPECT_TRUE(reference::CompareTensorLists(result->outputs, *expected, 1e-3, "small").ok());
  // Every layout computes the same.
  for (ActivationLayout layout : {ActivationLayout::kPlain, ActivationLayout::kChannelsLast,
                                  ActivationLayout::kBlocked8, ActivationLayout::kBlocked16}) {
    auto other = MakeBackend(1, layout)->RunSchedule(g, *schedule, options);
    ASSERT_TRUE(other.ok()) << other.status();
    Status same = reference::CompareTensorLists(other->outputs, *expected, 1e-3,
                                                ActivationLayoutName(layout));
    EXPECT_TRUE(same.ok()) << same;
  }
}

TEST(CpuBackendTest, ConcurrentStageRunsGroupsInLanes) {
  auto backend = MakeBackend(2);
  const graph::Graph g = ThreeBranchGraph();
  scheduler::ios::Schedule schedule;
  schedule.stages.resize(2);
  schedule.stages[0].stage.groups = {{0, 1}, {2}, {3}};
  schedule.stages[1].stage.groups = {{4}};
  ExpectRunMatchesReference(*backend, g, schedule, "three");

  auto plans = backend->Build(g, {schedule.stages[0].stage});
  ASSERT_TRUE(plans.ok()) << plans.status();
  const std::vector<std::string> lines = backend->DescribePlan(*(*plans)[0]);
  // Two cores: two lanes of one thread; the heavy group alone.
  EXPECT_THAT(lines, Contains(AllOf(HasSubstr("lane 0 (1 threads) a3x3"), Not(HasSubstr("ref")))));
  EXPECT_THAT(lines, Contains(HasSubstr("lane 1 (1 threads) pool")));
  EXPECT_THAT(lines, Contains(HasSubstr("lane 1 (1 threads) c1x1")));
  auto stats = backend->Profile({(*plans)[0].get()}, Quick());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT((*stats)[0].median_ms, 0);
  EXPECT_LE((*stats)[0].p10_ms, (*stats)[0].p90_ms);
}

// A single-core stage (a measurement for the search's core bound) runs
// every group in one lane on one thread; its own latency, not the stage's.
TEST(CpuBackendTest, SingleCoreStageRunsGroupsOneAfterAnotherOnOneThread) {
  auto backend = MakeBackend(2);
  EXPECT_EQ(backend->cores(), 2);
  const graph::Graph g = ThreeBranchGraph();
  scheduler::ios::Stage stage;
  stage.groups = {{0, 1}, {2}, {3}};
  stage.single_core = true;
  auto plans = backend->Build(g, {stage});
  ASSERT_TRUE(plans.ok()) << plans.status();
  const std::vector<std::string> lines = backend->DescribePlan(*(*plans)[0]);
  EXPECT_THAT(lines, Contains(HasSubstr("lane 0 (1 threads) a3x3")));
  EXPECT_THAT(lines, Contains(HasSubstr("lane 0 (1 threads) pool")));
  EXPECT_THAT(lines, Contains(HasSubstr("lane 0 (1 threads) c1x1")));
  EXPECT_THAT(lines, Not(Contains(HasSubstr("lane 1"))));
  auto stats = backend->Profile({(*plans)[0].get()}, Quick());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT((*stats)[0].median_ms, 0);
}

TEST(CpuBackendTest, MergeStageRunsOneConvolution) {
  auto backend = MakeBackend();
  graph::GraphBuilder b("merge");
  graph::ValueId x = b.Input("x", {1, 24, 9, 9});
  graph::ConvSpec one;
  one.out_channels = 20;
  one.activation = graph::Activation::kRelu;
  graph::ConvSpec three = one;
  three.out_channels = 12;
  three.kernel = {3, 3};
  three.padding = {1, 1};
  graph::ValueId p = b.Conv(x, one, "p");
  graph::ValueId q = b.Conv(x, three, "q");
  b.Output(b.Concat({p, q}, 1, "cat"));
  const graph::Graph g = *std::move(b).Finish();
  auto merged = scheduler::ios::MergeConvs(g, {0, 1});
  ASSERT_TRUE(merged.ok()) << merged.status();
  scheduler::ios::Schedule schedule;
  schedule.stages.resize(2);
  schedule.stages[0].stage.strategy = scheduler::ios::Strategy::kMerge;
  schedule.stages[0].stage.groups = {{0}, {1}};
  schedule.stages[0].stage.merged = *merged;
  schedule.stages[1].stage.groups = {{2}};
  ExpectRunMatchesReference(*backend, g, schedule, "merge");
  auto plans = backend->Build(g, {schedule.stages[0].stage});
  ASSERT_TRUE(plans.ok()) << plans.status();
  EXPECT_THAT(backend->DescribePlan(*(*plans)[0]), Contains(HasSubstr("merge[p+q]")));
}

// All nodes of `graph` in one group of one stage, in id (topological) order.
scheduler::ios::Stage OneGroup(const graph::Graph& graph) {
  scheduler::ios::Stage stage;
  stage.groups.emplace_back();
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) stage.groups[0].push_back(id);
  return stage;
}

// Ops of a built plan that run a residual Add fused into their conv.
int FusedResidualOps(const CpuBackend& backend, const StagePlan& plan) {
  const std::vector<std::string> lines = backend.DescribePlan(plan);
  return static_cast<int>(std::count_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.find(kResidualFusedSuffix) != std::string::npos;
  }));
}

TEST(CpuBackendTest, ResidualAddsRunFusedAndMatchTheReference) {
  const graph::Graph g = graph::testing::ResidualBlocksGraph(2);
  scheduler::ios::Schedule schedule;
  schedule.stages.resize(1);
  schedule.stages[0].stage = OneGroup(g);
  RunOptions options;
  options.profile = Quick();
  options.return_outputs = true;
  auto expected = reference::ExecuteGraph(g, MakeGraphInputs(g, options.input_seed));
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (ActivationLayout layout : {ActivationLayout::kPlain, ActivationLayout::kChannelsLast,
                                  ActivationLayout::kBlocked8, ActivationLayout::kBlocked16}) {
    auto backend = MakeBackend(2, layout);
    auto result = backend->RunSchedule(g, schedule, options);
    ASSERT_TRUE(result.ok()) << result.status();
    Status same = reference::CompareTensorLists(result->outputs, *expected, 1e-3,
                                                ActivationLayoutName(layout));
    EXPECT_TRUE(same.ok()) << same;
    auto plans = backend->Build(g, {schedule.stages[0].stage});
    ASSERT_TRUE(plans.ok()) << plans.status();
    EXPECT_EQ(FusedResidualOps(*backend, *(*plans)[0]), 3) << ActivationLayoutName(layout);
    EXPECT_THAT(backend->DescribePlan(*(*plans)[0]),
                Contains(HasSubstr("b1/conv2 + b1/add + b1/relu")));
  }
}

TEST(CpuBackendTest, NonFusableResidualPatternsRunUnfused) {
  auto backend = MakeBackend();
  const graph::Graph g = graph::testing::NonFusableResidualGraph();
  scheduler::ios::Schedule schedule;
  schedule.stages.resize(1);
  schedule.stages[0].stage = OneGroup(g);
  auto plans = backend->Build(g, {schedule.stages[0].stage});
  ASSERT_TRUE(plans.ok()) << plans.status();
  const std::vector<std::string> lines = backend->DescribePlan(*(*plans)[0]);
  EXPECT_EQ(FusedResidualOps(*backend, *(*plans)[0]), 1);  // out_conv + out_add
  EXPECT_THAT(lines, Contains(HasSubstr("out_conv + out_add:")));
  EXPECT_THAT(lines, Contains(HasSubstr("out_relu")));
  for (const char* name : {"shared_add", "bcast_add", "relu_add", "kept_add", "twice_add"}) {
    EXPECT_THAT(lines, Contains(HasSubstr(StrCat(") ", name, ":")))) << name;
  }
  ExpectRunMatchesReference(*backend, g, schedule, "non-fusable");
}

// ResNet-50's 16 residual blocks end in conv3 + Add + Relu: with the whole
// model in one group all 16 Adds fuse (each with its Relu).
TEST(CpuBackendTest, ResNet50FusesEveryResidualAdd) {
  auto backend = MakeBackend();
  auto g = graph::models::BuildZooModel("resnet50", 1);
  ASSERT_TRUE(g.ok()) << g.status();
  auto plans = backend->Build(*g, {OneGroup(*g)});
  ASSERT_TRUE(plans.ok()) << plans.status();
  EXPECT_EQ(FusedResidualOps(*backend, *(*plans)[0]), 16);
  // ... and computes the reference's values.
  scheduler::ios::Schedule schedule;
  schedule.stages.resize(1);
  schedule.stages[0].stage = OneGroup(*g);
  ExpectRunMatchesReference(*backend, *g, schedule, "resnet50");
}

// A Constant first read late must not get the buffer of a value that died
// earlier (its data is written at compile time, the dead value's at run time).
TEST(CpuBackendTest, ConstantsSurviveMemoryReuse) {
  auto backend = MakeBackend();
  graph::GraphBuilder b("late_constant");
  graph::ValueId x = b.Input("x", {1, 8, 6, 6});
  graph::ConvSpec spec;
  spec.out_channels = 8;
  graph::ValueId y = b.Relu(b.Conv(x, spec, "a"), "b");
  graph::Tensor value;
  value.shape = {1, 8, 6, 6};
  value.data.resize(288);
  FillUniform(9, 0.5f, 1.5f, value.data);
  std::map<std::string, graph::Tensor> weights;
  weights["value"] = value;
  graph::ValueId c =
      b.AddNode(graph::OpType::kConstant, graph::NoAttrs{}, {}, "c", std::move(weights))[0];
  b.Output(b.Add(y, c, "add"));
  const graph::Graph g = *std::move(b).Finish();
  auto schedule = scheduler::ios::SequentialSchedule(g);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  ExpectRunMatchesReference(*backend, g, *schedule, "late");
}

TEST(CpuBackendTest, BuildRunsWhileProfilesAreSerialised) {
  auto backend = MakeBackend(2);
  const graph::Graph g = ThreeBranchGraph();
  const scheduler::ios::Stage stage{scheduler::ios::Strategy::kConcurrent, {{0, 1}, {2}, {3}},
                                    std::nullopt};
  auto plans = backend->Build(g, {stage});
  ASSERT_TRUE(plans.ok()) << plans.status();
  const StagePlan* plan = (*plans)[0].get();
  std::vector<std::thread> threads;
  std::vector<Status> results(4);
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] { results[i] = backend->Profile({plan}, Quick()).status(); });
  }
  threads.emplace_back([&] { results[3] = backend->Build(g, {stage, stage}).status(); });
  for (auto& t : threads) t.join();
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s;
}

TEST(CpuBackendTest, RejectsForeignPlansAndInvalidSchedules) {
  auto backend = MakeBackend();
  auto other = MakeBackend();
  const graph::Graph g = ThreeBranchGraph();
  auto plans = other->Build(g, {scheduler::ios::Stage{scheduler::ios::Strategy::kConcurrent,
                                                      {{2}},
                                                      std::nullopt}});
  ASSERT_TRUE(plans.ok()) << plans.status();
  auto stats = backend->Profile({(*plans)[0].get()}, Quick());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(stats.status().message(), HasSubstr("not built by this cpu backend"));

  scheduler::ios::Schedule missing;  // covers nothing
  missing.stages.resize(1);
  missing.stages[0].stage.groups = {{4}};
  auto run = backend->RunSchedule(g, missing, RunOptions{});
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);

  scheduler::ios::Stage bad_merge;
  bad_merge.strategy = scheduler::ios::Strategy::kMerge;
  bad_merge.groups = {{2}, {3}};
  auto bad = backend->Build(g, {bad_merge});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("stage 0"));
}

}  // namespace
}  // namespace iosfarm::worker::cpu
