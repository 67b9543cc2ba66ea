#include "scheduler/ios/stages/stage_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "worker/backends/sim/sim_test_graphs.h"

namespace iosfarm::worker::sim {
namespace {

using ::testing::HasSubstr;
using scheduler::ios::ValidateStage;
using testing::ConcurrentStage;
using testing::MakeTwoConvs;
using testing::MergeStage;

std::string Message(const Status& status) { return std::string(status.message()); }

TEST(StageValidationTest, AcceptsConcurrentAndMergeStages) {
  const testing::TwoConvs g = MakeTwoConvs(8, 4, 1);
  EXPECT_TRUE(ValidateStage(g.graph, ConcurrentStage({{g.a}, {g.b}})).ok());
  EXPECT_TRUE(ValidateStage(g.graph, ConcurrentStage({{g.a, g.b}})).ok());
  EXPECT_TRUE(ValidateStage(g.graph, MergeStage(g.graph, {g.a, g.b})).ok());
}

TEST(StageValidationTest, RejectsMalformedGroupsAndIds) {
  const testing::TwoConvs g = MakeTwoConvs(8, 4, 1);
  EXPECT_THAT(Message(ValidateStage(g.graph, ConcurrentStage({}))), HasSubstr("no group"));
  EXPECT_THAT(Message(ValidateStage(g.graph, ConcurrentStage({{g.a}, {}}))),
              HasSubstr("group 1 is empty"));
  EXPECT_THAT(Message(ValidateStage(g.graph, ConcurrentStage({{g.a}, {99}}))),
              HasSubstr("node id 99 out of range"));
  EXPECT_THAT(Message(ValidateStage(g.graph, ConcurrentStage({{g.a}, {g.a}}))),
              HasSubstr("'a' is listed twice"));
}

TEST(StageValidationTest, RejectsEdgesAcrossGroupsAndWrongOrder) {
  graph::GraphBuilder b("chain");
  const graph::ValueId x = b.Input("input", {1, 4, 4, 4});
  const graph::ValueId r1 = b.Relu(x, "r1");
  const graph::ValueId r2 = b.Relu(r1, "r2");
  b.Output(r2);
  const graph::Graph graph = *std::move(b).Finish();
  const graph::NodeId n1 = graph.value(r1).producer;
  const graph::NodeId n2 = graph.value(r2).producer;
  EXPECT_TRUE(ValidateStage(graph, ConcurrentStage({{n1, n2}})).ok());
  EXPECT_THAT(Message(ValidateStage(graph, ConcurrentStage({{n1}, {n2}}))),
              HasSubstr("'r1' feeds 'r2' from another group"));
  EXPECT_THAT(Message(ValidateStage(graph, ConcurrentStage({{n2, n1}}))),
              HasSubstr("'r2' is listed before its producer 'r1'"));
  // A producer outside the stage ran earlier.
  EXPECT_TRUE(ValidateStage(graph, ConcurrentStage({{n2}})).ok());
}

TEST(StageValidationTest, ChecksTheMergedDescription) {
  const testing::TwoConvs g = MakeTwoConvs(8, 4, 1);
  scheduler::ios::Stage merge = MergeStage(g.graph, {g.a, g.b});
  merge.merged->attrs.out_channels = 5;
  EXPECT_THAT(Message(ValidateStage(g.graph, merge)),
              HasSubstr("merged description does not match"));
  merge = MergeStage(g.graph, {g.a, g.b});
  merge.merged.reset();
  EXPECT_THAT(Message(ValidateStage(g.graph, merge)),
              HasSubstr("merged description does not match"));
  merge = MergeStage(g.graph, {g.a, g.b});
  merge.groups = {{g.a, g.b}};
  EXPECT_THAT(Message(ValidateStage(g.graph, merge)), HasSubstr("group 0 has 2 ops"));
  scheduler::ios::Stage concurrent = MergeStage(g.graph, {g.a, g.b});
  concurrent.strategy = scheduler::ios::Strategy::kConcurrent;
  EXPECT_THAT(Message(ValidateStage(g.graph, concurrent)),
              HasSubstr("concurrent stage with a merged description"));
}

TEST(StageValidationTest, RejectsIllegalMerges) {
  graph::GraphBuilder b("relu_and_conv");
  const graph::ValueId x = b.Input("input", {1, 4, 4, 4});
  const graph::ValueId r = b.Relu(x, "r");
  graph::ConvSpec spec;
  spec.out_channels = 4;
  const graph::ValueId c = b.Conv(x, spec, "c");
  b.Output(r);
  b.Output(c);
  const graph::Graph graph = *std::move(b).Finish();
  scheduler::ios::Stage stage;
  stage.strategy = scheduler::ios::Strategy::kMerge;
  stage.groups = {{graph.value(r).producer}, {graph.value(c).producer}};
  EXPECT_THAT(Message(ValidateStage(graph, stage)), HasSubstr("illegal merge"));
}

TEST(StageValidationTest, RequiresInferredShapes) {
  testing::TwoConvs g = MakeTwoConvs(8, 4, 1);
  g.graph.mutable_value(g.graph.node(g.a).outputs[0]).shape.clear();
  EXPECT_THAT(Message(ValidateStage(g.graph, ConcurrentStage({{g.a}}))),
              HasSubstr("'a': tensor 'a' has no shape"));
}

}  // namespace
}  // namespace iosfarm::worker::sim
