// Host-only tests of the cuda backend's planning: plans are built and run by
// the host emulator, and compared with the reference executor. No GPU needed.
#include "worker/backends/cuda/planner/plan_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/strings.h"
#include "graph/graph_builder.h"
#include "graph/models/zoo.h"
#include "graph/test_graphs.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/testing/testing_util.h"
#include "worker/backends/cuda/planner/memory_plan.h"
#include "worker/backends/cuda/planner/plan_checks.h"
#include "worker/backends/cuda/planner/plan_emulator.h"
#include "worker/backends/reference/compare.h"
#include "worker/backends/reference/executor.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {
namespace {

using ::iosfarm::scheduler::ios::testing::ConcurrentStage;
using ::iosfarm::scheduler::ios::testing::MergeStage;
using ::iosfarm::scheduler::ios::testing::ScheduleOf;
using graph::GraphBuilder;
using graph::NodeId;
using graph::ValueId;
using graph::testing::ConvSpecOf;
using scheduler::ios::Schedule;
using scheduler::ios::Stage;
using scheduler::ios::Strategy;
using ::testing::HasSubstr;

std::vector<const Stage*> StagesOf(const Schedule& schedule) {
  std::vector<const Stage*> stages;
  for (const auto& s : schedule.stages) stages.push_back(&s.stage);
  return stages;
}

StatusOr<ExecutionPlan> SchedulePlan(const graph::Graph& graph, const Schedule& schedule) {
  PlanOptions options;
  options.external = ExternalValues::kGraphInputs;
  options.keep_graph_outputs = true;
  return BuildExecutionPlan(graph, StagesOf(schedule), options);
}

// Emulates the plan of `schedule` and compares with the reference executor.
Status EmulateAndCompare(const graph::Graph& graph, const Schedule& schedule,
                         const std::string& what) {
  RETURN_IF_ERROR(scheduler::ios::ValidateSchedule(graph, schedule));
  ASSIGN_OR_RETURN(ExecutionPlan plan, SchedulePlan(graph, schedule));
  const std::vector<graph::Tensor> inputs = MakeGraphInputs(graph, 7);
  ASSIGN_OR_RETURN(std::vector<graph::Tensor> actual, EmulatePlan(plan, inputs));
  ASSIGN_OR_RETURN(std::vector<graph::Tensor> expected,
                   reference::ExecuteSchedule(graph, schedule, inputs));
  return reference::CompareTensorLists(actual, expected, 1e-5, what);
}

int CountSteps(const ExecutionPlan& plan, StepKind kind) {
  int n = 0;
  for (const auto& stage : plan.stages) {
    for (const auto& group : stage.groups) {
      for (const auto& step : group.steps) n += step.kind == kind ? 1 : 0;
    }
  }
  return n;
}

// x -> {conv1x1, conv3x3, conv1x3 (asymmetric-free), conv3x1} merged, plus a
// max pool, all concatenated.
StatusOr<graph::Graph> InceptionBlock(int64_t batch) {
  GraphBuilder b("block");
  ValueId x = b.Input("x", {batch, 12, 9, 9});
  std::vector<ValueId> outs = {
      b.Conv(x, ConvSpecOf(8, {1, 1}, {0, 0}), "m1x1"),
      b.Conv(x, ConvSpecOf(10, {3, 3}, {1, 1}, graph::Activation::kRelu, false), "m3x3"),
      b.Conv(x, ConvSpecOf(4, {1, 3}, {0, 1}), "m1x3"),
      b.Conv(x, ConvSpecOf(6, {3, 1}, {1, 0}), "m3x1"),
      b.MaxPool(x, {3, 3}, {1, 1}, {1, 1, 1, 1}, "pool")};
  b.Output(b.Concat(outs, 1, "cat"));
  return std::move(b).Finish();
}

TEST(PlanBuilderTest, MergeStageMatchesReferenceAtBatchOneAndTwo) {
  for (int64_t batch : {1, 2}) {
    auto g = InceptionBlock(batch);
    ASSERT_TRUE(g.ok()) << g.status();
    auto merge = MergeStage(*g, {0, 1, 2, 3});
    ASSERT_TRUE(merge.ok()) << merge.status();
    Schedule s = ScheduleOf({*merge, ConcurrentStage({{4}}), ConcurrentStage({{5}})});
    Status status = EmulateAndCompare(*g, s, StrCat("batch ", batch));
    EXPECT_TRUE(status.ok()) << status;
    auto plan = SchedulePlan(*g, s);
    ASSERT_TRUE(plan.ok()) << plan.status();
    if (batch == 1) {
      // Branches are views of the merged output: no copies out of it, and
      // only the concat's copies remain (merged branch views and the pool
      // output, which is placed in the concat).
      for (const auto& step : plan->stages[0].groups[0].steps) {
        EXPECT_NE(step.kind, StepKind::kCopyRows) << step.label;
      }
    } else {
      EXPECT_EQ(plan->stages[0].groups[0].steps.size(), 5u);  // conv + 4 branch copies
    }
  }
}

TEST(PlanBuilderTest, ConcatInputsAreWrittenInPlaceAtBatchOne) {
  GraphBuilder b("concat");
  ValueId x = b.Input("x", {1, 8, 6, 6});
  ValueId a = b.Conv(x, ConvSpecOf(4, {3, 3}, {1, 1}), "a");
  ValueId c = b.Conv(x, ConvSpecOf(6, {1, 1}, {0, 0}), "c");
  ValueId p = b.MaxPool(x, {3, 3}, {1, 1}, {1, 1, 1, 1}, "p");
  ValueId cat = b.Concat({a, c, p, x}, 1, "cat");
  b.Output(b.Relu(cat, "relu"));
  auto g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status();
  Schedule s = ScheduleOf({ConcurrentStage({{0}, {1}, {2}}), ConcurrentStage({{3}}), ConcurrentStage({{4}})});
  EXPECT_TRUE(EmulateAndCompare(*g, s, "concat").ok());
  auto plan = SchedulePlan(*g, s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Only the graph input needs a copy; the three producers write in place.
  EXPECT_EQ(CountSteps(*plan, StepKind::kCopyRows), 1);
}

TEST(PlanBuilderTest, NestedConcatsAndSplitViews) {
  GraphBuilder b("nested");
  ValueId x = b.Input("x", {1, 16, 5, 5});
  std::vector<ValueId> parts = b.Split(x, 1, {4, 12}, "split");
  ValueId a = b.Conv(parts[0], ConvSpecOf(6, {1, 1}, {0, 0}), "a");
  ValueId c = b.Conv(parts[1], ConvSpecOf(6, {3, 3}, {1, 1}), "c");
  ValueId inner = b.Concat({a, c}, 1, "inner");
  ValueId d = b.Conv(x, ConvSpecOf(3, {1, 1}, {0, 0}), "d");
  ValueId outer = b.Concat({inner, d}, 1, "outer");
  b.Output(b.GlobalAveragePool(outer, "gap"));
  auto g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status();
  auto seq = scheduler::ios::SequentialSchedule(*g);
  ASSERT_TRUE(seq.ok());
  EXPECT_TRUE(EmulateAndCompare(*g, *seq, "nested").ok());
  auto plan = SchedulePlan(*g, *seq);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CountSteps(*plan, StepKind::kCopyRows), 0);  // split views, concats in place
}

TEST(PlanBuilderTest, AsymmetricPadsGetAnExplicitPad) {
  GraphBuilder b("asym");
  ValueId x = b.Input("x", {2, 5, 8, 8});
  graph::ConvSpec spec = ConvSpecOf(7, {3, 3}, {0, 0}, graph::Activation::kClip);
  spec.pads = {0, 1, 1, 0};
  spec.stride = {2, 2};
  b.Output(b.Conv(x, spec, "conv"));
  auto g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status();
  Schedule s = ScheduleOf({ConcurrentStage({{0}})});
  EXPECT_TRUE(EmulateAndCompare(*g, s, "asym").ok());
  auto plan = SchedulePlan(*g, s);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->stages[0].groups[0].steps.size(), 2u);
  EXPECT_EQ(plan->stages[0].groups[0].steps[0].kind, StepKind::kPad);
  const auto& conv = std::get<graph::ConvAttrs>(plan->stages[0].groups[0].steps[1].attrs);
  EXPECT_EQ(conv.pads, (std::array<int64_t, 4>{0, 0, 0, 0}));
}

// squeezenet and nasnet_a_mobile by default; IOSFARM_CUDA_PLAN_MODELS
// (comma-separated zoo names) replaces the list (the reference is slow on the
// big models).
std::vector<std::string> PlanTestModels() {
  const char* env = std::getenv("IOSFARM_CUDA_PLAN_MODELS");
  if (env == nullptr || *env == '\0') return {"squeezenet", "nasnet_a_mobile"};
  std::vector<std::string> models;
  for (absl::string_view name : absl::StrSplit(env, ',', absl::SkipEmpty())) {
    models.emplace_back(name);
  }
  return models;
}

TEST(PlanBuilderTest, ZooModelsMatchReferenceWithSequentialAndGreedySchedules) {
  for (const std::string& model : PlanTestModels()) {
    for (int64_t batch : {1, 2}) {
      auto g = graph::models::BuildZooModel(model, batch);
      ASSERT_TRUE(g.ok()) << g.status();
      auto seq = scheduler::ios::SequentialSchedule(*g);
      ASSERT_TRUE(seq.ok());
      Status status = EmulateAndCompare(*g, *seq, StrCat(model, " sequential batch ", batch));
      EXPECT_TRUE(status.ok()) << status;
      auto greedy = scheduler::ios::GreedySchedule(*g, 4);
      ASSERT_TRUE(greedy.ok());
      status = EmulateAndCompare(*g, *greedy, StrCat(model, " greedy batch ", batch));
      EXPECT_TRUE(status.ok()) << status;
    }
  }
}

// All nodes of `graph` in one group of one stage, in id (topological) order.
Schedule OneGroupSchedule(const graph::Graph& graph) {
  std::vector<NodeId> all;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) all.push_back(id);
  return ScheduleOf({ConcurrentStage({all})});
}

TEST(PlanBuilderTest, ResidualAddsFuseIntoConvSteps) {
  for (int64_t batch : {1, 2}) {
    const graph::Graph g = graph::testing::ResidualBlocksGraph(batch);
    const Schedule one_group = OneGroupSchedule(g);
    auto plan = SchedulePlan(g, one_group);
    ASSERT_TRUE(plan.ok()) << plan.status();
    // Three Conv + Add (+ Relu) chains are three conv steps with a residual;
    // no Add or Relu step is left; b3's conv keeps its explicit pad.
    EXPECT_EQ(plan->num_residual_convs(), 3);
    EXPECT_EQ(CountSteps(*plan, StepKind::kConv), 6);
    EXPECT_EQ(CountSteps(*plan, StepKind::kBinary), 0);
    EXPECT_EQ(CountSteps(*plan, StepKind::kUnary), 0);
    EXPECT_EQ(CountSteps(*plan, StepKind::kPad), 1);
    for (const Step& step : plan->stages[0].groups[0].steps) {
      if (step.kind != StepKind::kConv || step.inputs.size() != 2) continue;
      EXPECT_EQ(step.inputs[1].shape, step.outputs[0].shape) << step.label;
      EXPECT_NE(step.inputs[1].buffer, step.outputs[0].buffer) << step.label;
      EXPECT_EQ(step.weights.size(), 2u) << step.label;  // a zero bias when none
    }
    Status same = EmulateAndCompare(g, one_group, StrCat("residual blocks batch ", batch));
    EXPECT_TRUE(same.ok()) << same;
    // One op per stage: nothing fuses.
    auto sequential = scheduler::ios::SequentialSchedule(g);
    ASSERT_TRUE(sequential.ok());
    auto unfused = SchedulePlan(g, *sequential);
    ASSERT_TRUE(unfused.ok()) << unfused.status();
    EXPECT_EQ(unfused->num_residual_convs(), 0);
    EXPECT_EQ(CountSteps(*unfused, StepKind::kBinary), 3);
  }
}

TEST(PlanBuilderTest, ResidualFusionNeedsConvAndAddInOneGroup) {
  const graph::Graph g = graph::testing::ResidualBlocksGraph(1);
  struct Case {
    Schedule schedule;
    int fused;
  };
  const std::vector<Case> cases = {
      // Both block-2 convs in an earlier stage than their Add: not fused.
      {ScheduleOf({ConcurrentStage({{0, 1, 2, 3, 4}}), ConcurrentStage({{5}, {6}}),
                   ConcurrentStage({{7, 8, 9, 10}})}),
       2},
      // The projection (z) in an earlier stage: an input of the stage, fused.
      {ScheduleOf({ConcurrentStage({{0, 1, 2, 3, 4, 6}}),
                   ConcurrentStage({{5, 7, 8, 9, 10}})}),
       3},
      // The Relu of block 1 in the next stage: conv + add fused, Relu kept.
      {ScheduleOf({ConcurrentStage({{0, 1, 2, 3}}), ConcurrentStage({{4}}),
                   ConcurrentStage({{5, 6, 7, 8, 9, 10}})}),
       3},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(scheduler::ios::ValidateSchedule(g, cases[i].schedule).ok()) << i;
    auto plan = SchedulePlan(g, cases[i].schedule);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->num_residual_convs(), cases[i].fused) << i;
    Status same = EmulateAndCompare(g, cases[i].schedule, StrCat("case ", i));
    EXPECT_TRUE(same.ok()) << same;
  }
  // A stage plan (random stage inputs): block 2 alone, the projection's
  // output and r1 come from outside.
  const Stage block2 = ConcurrentStage({{5, 7, 8}});
  auto plan = BuildExecutionPlan(g, {&block2}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->num_residual_convs(), 1);
  EXPECT_EQ(plan->num_steps(), 1);
  EXPECT_TRUE(EmulatePlan(*plan, {}).ok());
}

TEST(PlanBuilderTest, NonFusableResidualPatternsStayUnfused) {
  const graph::Graph g = graph::testing::NonFusableResidualGraph();
  const Schedule one_group = OneGroupSchedule(g);
  auto plan = SchedulePlan(g, one_group);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->num_residual_convs(), 1);  // out_conv + out_add only
  EXPECT_EQ(CountSteps(*plan, StepKind::kBinary), 5);
  EXPECT_EQ(CountSteps(*plan, StepKind::kUnary), 2);
  Status same = EmulateAndCompare(g, one_group, "non-fusable residual patterns");
  EXPECT_TRUE(same.ok()) << same;
}

// IOS schedules (analytic oracle, r = 3, s = 8, 30-op blocks) put chains in
// groups, so residual adds fuse where a conv and its Add share one: the
// fused plans must still compute the reference's values.
TEST(PlanBuilderTest, ZooModelsMatchReferenceWithIosSchedules) {
  for (const std::string& model : PlanTestModels()) {
    auto g = graph::models::BuildZooModel(model, 1);
    ASSERT_TRUE(g.ok()) << g.status();
    scheduler::ios::SearchOptions options;
    options.max_block_ops = 30;
    auto result = scheduler::ios::RunSearch(*g, options, scheduler::ios::MakeAnalyticOracle(*g));
    ASSERT_TRUE(result.ok()) << result.status();
    Status status = EmulateAndCompare(*g, result->schedule, StrCat(model, " IOS"));
    EXPECT_TRUE(status.ok()) << status;
  }
}

TEST(PlanBuilderTest, MemoryIsReusedAcrossStages) {
  GraphBuilder b("chain");
  ValueId y = b.Input("x", {1, 16, 32, 32});
  for (int i = 0; i < 8; ++i) y = b.Conv(y, ConvSpecOf(16, {3, 3}, {1, 1}), StrCat("c", i));
  b.Output(y);
  auto g = std::move(b).Finish();
  ASSERT_TRUE(g.ok());
  auto seq = scheduler::ios::SequentialSchedule(*g);
  ASSERT_TRUE(seq.ok());
  auto plan = SchedulePlan(*g, *seq);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int64_t total = 0;
  for (const auto& buffer : plan->buffers) total += AlignedBytes(buffer.elements);
  EXPECT_LE(plan->arena_bytes * 3, total);  // 9 tensors in the space of 3
  EXPECT_TRUE(EmulateAndCompare(*g, *seq, "chain").ok());
}

// Plans drawn through a weight cache hold the very bytes of plans drawn
// without one (weights and the stage inputs' random values).
TEST(PlanBuilderTest, WeightCacheGivesIdenticalPlans) {
  WeightCache cache;
  for (const std::string& model : PlanTestModels()) {
    auto g = graph::models::BuildZooModel(model, 1);
    ASSERT_TRUE(g.ok()) << g.status();
    auto greedy = scheduler::ios::GreedySchedule(*g, 4);
    ASSERT_TRUE(greedy.ok());
    for (const auto& scheduled : greedy->stages) {
      PlanOptions cached;
      cached.weight_cache = &cache;
      auto plain = BuildExecutionPlan(*g, {&scheduled.stage}, PlanOptions{});
      auto with_cache = BuildExecutionPlan(*g, {&scheduled.stage}, cached);
      ASSERT_TRUE(plain.ok() && with_cache.ok()) << plain.status() << with_cache.status();
      EXPECT_EQ(plain->weights, with_cache->weights) << model;
      ASSERT_EQ(plain->presets.size(), with_cache->presets.size());
      for (size_t i = 0; i < plain->presets.size(); ++i) {
        EXPECT_EQ(plain->presets[i].data, with_cache->presets[i].data) << plain->presets[i].label;
      }
    }
  }
  EXPECT_GT(cache.misses(), 0);
  EXPECT_GT(cache.bytes(), 0);
}

TEST(PlanBuilderTest, StagePlansGetRandomInputsAndKeepNothing) {
  auto g = InceptionBlock(1);
  ASSERT_TRUE(g.ok());
  auto merge = MergeStage(*g, {0, 1, 2, 3});
  ASSERT_TRUE(merge.ok());
  const Stage concat = ConcurrentStage({{5}});
  for (const Stage* stage : std::vector<const Stage*>{&*merge, &concat}) {
    auto plan = BuildExecutionPlan(*g, {stage}, PlanOptions{});
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(plan->runtime_inputs.empty());
    EXPECT_TRUE(plan->outputs.empty());
    EXPECT_FALSE(plan->presets.empty());
    EXPECT_TRUE(EmulatePlan(*plan, {}).ok());
  }
}

TEST(PlanBuilderTest, RejectsMalformedStages) {
  auto g = InceptionBlock(1);
  ASSERT_TRUE(g.ok());
  const Stage out_of_range = ConcurrentStage({{42}});
  auto plan = BuildExecutionPlan(*g, {&out_of_range}, PlanOptions{});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("out of range"));

  // The concat before its inputs, in one schedule.
  Schedule backwards = ScheduleOf({ConcurrentStage({{5}}), ConcurrentStage({{0}, {1}, {2}, {3}, {4}})});
  auto bad = SchedulePlan(*g, backwards);
  EXPECT_FALSE(bad.ok());

  // A group reading another group's output in the same stage.
  GraphBuilder b("pair");
  ValueId x = b.Input("x", {1, 4, 4, 4});
  b.Output(b.Relu(b.Relu(x, "r1"), "r2"));
  auto pair = std::move(b).Finish();
  ASSERT_TRUE(pair.ok());
  const Stage crossing = ConcurrentStage({{0}, {1}});
  auto crossed = BuildExecutionPlan(*pair, {&crossing}, PlanOptions{});
  EXPECT_EQ(crossed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(crossed.status().message()), HasSubstr("another group"));

  Stage merge_without_conv;
  merge_without_conv.strategy = Strategy::kMerge;
  merge_without_conv.groups = {{0}, {1}};
  auto no_merged = BuildExecutionPlan(*pair, {&merge_without_conv}, PlanOptions{});
  EXPECT_EQ(no_merged.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlanBuilderTest, EveryOpKindEmulates) {
  GraphBuilder b("ops");
  ValueId x = b.Input("x", {2, 6, 7, 7});
  ValueId y = b.BatchNorm(x, "bn");
  y = b.HardSwish(y, "hs");
  y = b.AveragePool(y, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, "ap", /*ceil_mode=*/true);
  ValueId t = b.Transpose(y, {0, 2, 3, 1}, "tr");
  ValueId s = b.Softmax(t, 3, "sm");
  ValueId r = b.ReduceMean(s, {1, 2}, false, "rm");
  ValueId padded = b.Pad(y, {0, 0, 1, 0, 0, 1, 0, 2}, "pad");
  ValueId gm = b.Linear(b.Flatten(padded, 1, "flat"), 5, "fc");
  ValueId sig = b.Sigmoid(gm, "sig");
  b.Output(b.Add(r, b.Tanh(r, "tanh"), "add"));
  b.Output(b.Mul(sig, sig, "sq"));
  auto g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status();
  for (auto schedule : {scheduler::ios::SequentialSchedule(*g),
                        scheduler::ios::GreedySchedule(*g, 3)}) {
    ASSERT_TRUE(schedule.ok());
    Status status = EmulateAndCompare(*g, *schedule, "ops");
    EXPECT_TRUE(status.ok()) << status;
  }
}

TEST(MemoryPlanTest, OverlappingLifetimesNeverShareBytes) {
  std::vector<BufferSpec> buffers;
  for (int i = 0; i < 40; ++i) {
    BufferSpec spec;
    spec.elements = 100 + 37 * (i % 7);
    spec.first_stage = i % 10;
    spec.last_stage = spec.first_stage + i % 4;
    buffers.push_back(spec);
  }
  const int64_t arena = AssignArenaOffsets(buffers);
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(buffers[i].byte_offset % kArenaAlignment, 0);
    EXPECT_LE(buffers[i].byte_offset + AlignedBytes(buffers[i].elements), arena);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!LifetimesOverlap(buffers[i], buffers[j])) continue;
      const bool disjoint =
          buffers[i].byte_offset + AlignedBytes(buffers[i].elements) <= buffers[j].byte_offset ||
          buffers[j].byte_offset + AlignedBytes(buffers[j].elements) <= buffers[i].byte_offset;
      EXPECT_TRUE(disjoint) << i << " and " << j;
    }
  }
}

TEST(PlanChecksTest, CatchesConcurrentGroupsSharingMemory) {
  ExecutionPlan plan;
  plan.buffers = {{16, 0, 0, 0, "a"}, {16, 0, 0, 256, "b"}};
  plan.arena_bytes = 512;
  Step write_a;
  write_a.kind = StepKind::kUnary;
  write_a.op = graph::OpType::kRelu;
  write_a.inputs = {{1, 0, {16}}};
  write_a.outputs = {{0, 0, {16}}};
  Step read_a = write_a;
  read_a.inputs = {{0, 0, {16}}};
  read_a.outputs = {{1, 0, {8}}};
  plan.stages.push_back({{{{write_a}}, {{read_a}}}, "race"});
  Status status = CheckPlanHazards(plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()), HasSubstr("writes memory"));
}

}  // namespace
}  // namespace iosfarm::worker::cuda
