#include "worker/backends/reference/executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/stages/merge.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::reference {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

graph::Tensor MakeTensor(graph::Shape shape, std::vector<float> data) {
  graph::Tensor t;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

// input [1,1,2,2] -> Relu -> Add(Constant [1]) -> Mul(input) -> output.
graph::Graph TinyGraph() {
  graph::GraphBuilder b("tiny");
  graph::ValueId x = b.Input("x", {1, 1, 2, 2});
  graph::ValueId r = b.Relu(x, "relu");
  std::map<std::string, graph::Tensor> weights;
  weights["value"] = MakeTensor({1}, {10});
  graph::ValueId c =
      b.AddNode(graph::OpType::kConstant, graph::NoAttrs{}, {}, "ten", std::move(weights))[0];
  graph::ValueId s = b.Add(r, c, "add");
  b.Output(b.Mul(s, x, "mul"));
  return *std::move(b).Finish();
}

TEST(ExecutorTest, ExecutesAGraphWithConstants) {
  const graph::Graph g = TinyGraph();
  auto out = ExecuteGraph(g, {MakeTensor({1, 1, 2, 2}, {-1, 2, -3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  // (relu(x) + 10) * x
  EXPECT_THAT((*out)[0].data, ElementsAre(-10, 24, -30, 56));
  EXPECT_EQ((*out)[0].shape, (graph::Shape{1, 1, 2, 2}));
}

TEST(ExecutorTest, RejectsWrongInputs) {
  const graph::Graph g = TinyGraph();
  EXPECT_THAT(ExecuteGraph(g, {}).status().message(), HasSubstr("has 1 inputs, got 0"));
  auto wrong = ExecuteGraph(g, {MakeTensor({1, 1, 2, 3}, std::vector<float>(6))});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("input 'x' expects shape [1,1,2,2]"));
}

TEST(ExecutorTest, StageNeedsItsInputsComputed) {
  const graph::Graph g = TinyGraph();
  auto values = BindInputs(g, {MakeTensor({1, 1, 2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(values.ok());
  scheduler::ios::Stage add_stage;
  add_stage.groups = {{2}};  // "add" reads relu's output, not computed yet
  ASSERT_EQ(g.node(2).name, "add");
  Status status = ExecuteStage(g, add_stage, *values);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("'add' reads 'relu'"));
}

TEST(ExecutorTest, SequentialScheduleMatchesGraphOrder) {
  const graph::Graph g = graph::testing::SmallBranchyGraph(/*with_data=*/true);
  const auto inputs = MakeGraphInputs(g, 7);
  auto direct = ExecuteGraph(g, inputs);
  ASSERT_TRUE(direct.ok()) << direct.status();
  auto schedule = scheduler::ios::SequentialSchedule(g);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  auto scheduled = ExecuteSchedule(g, *schedule, inputs);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  ASSERT_EQ((*direct)[0].shape, (graph::Shape{1, 10}));
  EXPECT_EQ((*direct)[0].data, (*scheduled)[0].data);
}

TEST(ExecutorTest, MaterialisesMissingWeightsDeterministically) {
  const graph::Graph g = graph::testing::SmallBranchyGraph(/*with_data=*/false);
  const auto inputs = MakeGraphInputs(g, 3);
  auto lazy = ExecuteGraph(g, inputs);
  auto eager = ExecuteGraph(MaterializeWeights(g), inputs);
  ASSERT_TRUE(lazy.ok()) << lazy.status();
  ASSERT_TRUE(eager.ok()) << eager.status();
  EXPECT_EQ((*lazy)[0].data, (*eager)[0].data);
  // Not all zero: the weights really have values.
  double sum = 0;
  for (float v : (*lazy)[0].data) sum += std::abs(v);
  EXPECT_GT(sum, 0.01);
}

// x [1,6,7,7] -> conv1x1(4), conv3x3(5), conv1x3(3), conv3x1(2), all pads
// centred, bias on some; the four outputs are graph outputs.
graph::Graph FourConvGraph() {
  graph::GraphBuilder b("four");
  graph::ValueId x = b.Input("x", {1, 6, 7, 7});
  const struct {
    const char* name;
    int64_t out;
    std::array<int64_t, 2> kernel;
    std::array<int64_t, 2> padding;
    bool bias;
  } specs[] = {{"c1x1", 4, {1, 1}, {0, 0}, true},
               {"c3x3", 5, {3, 3}, {1, 1}, false},
               {"c1x3", 3, {1, 3}, {0, 1}, true},
               {"c3x1", 2, {3, 1}, {1, 0}, true}};
  for (const auto& s : specs) {
    graph::ConvSpec spec;
    spec.out_channels = s.out;
    spec.kernel = s.kernel;
    spec.padding = s.padding;
    spec.bias = s.bias;
    spec.activation = graph::Activation::kRelu;
    b.Output(b.Conv(x, spec, s.name));
  }
  return *std::move(b).Finish();
}

TEST(ExecutorTest, MergedStageEqualsSeparateConvolutions) {
  const graph::Graph g = FourConvGraph();
  auto merged = scheduler::ios::MergeConvs(g, {0, 1, 2, 3});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->attrs.kernel, (std::array<int64_t, 2>{3, 3}));
  EXPECT_EQ(merged->attrs.out_channels, 14);

  scheduler::ios::Stage merge_stage;
  merge_stage.strategy = scheduler::ios::Strategy::kMerge;
  merge_stage.groups = {{0}, {1}, {2}, {3}};
  merge_stage.merged = *merged;
  scheduler::ios::Stage concurrent = merge_stage;
  concurrent.strategy = scheduler::ios::Strategy::kConcurrent;
  concurrent.merged.reset();

  const auto inputs = MakeGraphInputs(g, 11);
  auto via_merge = BindInputs(g, inputs);
  auto separately = BindInputs(g, inputs);
  ASSERT_TRUE(via_merge.ok() && separately.ok());
  ASSERT_TRUE(ExecuteStage(g, merge_stage, *via_merge).ok());
  ASSERT_TRUE(ExecuteStage(g, concurrent, *separately).ok());
  for (graph::ValueId out : g.outputs()) {
    const graph::Tensor& a = via_merge->at(out);
    const graph::Tensor& b = separately->at(out);
    EXPECT_EQ(a.shape, b.shape);
    ASSERT_EQ(a.data.size(), b.data.size());
    for (size_t i = 0; i < a.data.size(); ++i) {
      ASSERT_NEAR(a.data[i], b.data[i], 1e-6) << g.value(out).name << " at " << i;
    }
  }
  // Relu outputs of random data: some positive, some zero.
  const auto& first = via_merge->at(g.outputs()[1]).data;
  EXPECT_GT(*std::max_element(first.begin(), first.end()), 0.0f);
  EXPECT_EQ(*std::min_element(first.begin(), first.end()), 0.0f);
}

TEST(ExecutorTest, MergeStageWithoutMergedConvFails) {
  const graph::Graph g = FourConvGraph();
  scheduler::ios::Stage stage;
  stage.strategy = scheduler::ios::Strategy::kMerge;
  stage.groups = {{0}, {1}};
  auto values = BindInputs(g, MakeGraphInputs(g, 1));
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(ExecuteStage(g, stage, *values).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::worker::reference
