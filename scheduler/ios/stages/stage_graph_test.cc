#include "scheduler/ios/stages/stage_graph.h"

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "scheduler/ios/stages/signature.h"

namespace iosfarm::scheduler::ios {
namespace {

graph::NodeId Node(const graph::Graph& graph, const std::string& name) {
  return graph::testing::NodeNamed(graph, name);
}

TEST(StageGraphTest, ExtractsAStandaloneGraph) {
  graph::GraphBuilder b("model");
  auto x = b.Input("x", {1, 8, 10, 10});
  auto stem = b.Relu(x, "stem");
  graph::ConvSpec spec;
  spec.out_channels = 8;
  auto a = b.Conv(stem, spec, "a");
  auto r = b.Relu(a, "r");
  auto c = b.Conv(stem, spec, "c");
  auto scale = b.AddNode(graph::OpType::kConstant, graph::NoAttrs{}, {}, "scale",
                         {{"value", graph::Tensor{{1, 8, 1, 1}, {}}}})[0];
  auto m = b.Mul(c, scale, "m");
  b.Output(b.Add(r, m, "sum"));
  graph::Graph graph = *std::move(b).Finish();
  Stage stage;
  stage.groups = {{Node(graph, "a"), Node(graph, "r")}, {Node(graph, "c"), Node(graph, "m")}};
  auto extracted = ExtractStageGraph(graph, stage);
  ASSERT_TRUE(extracted.ok()) << extracted.status();
  const graph::Graph& g = *extracted;
  EXPECT_EQ(g.name(), "model/stage");
  ASSERT_EQ(g.inputs().size(), 1u);  // "stem" read by a and c: one input
  EXPECT_EQ(g.value(g.inputs()[0]).name, "stem");
  EXPECT_EQ(g.value(g.inputs()[0]).shape, (graph::Shape{1, 8, 10, 10}));
  EXPECT_EQ(g.num_nodes(), 5);  // the Constant and four ops
  ASSERT_EQ(g.outputs().size(), 2u);  // r and m (a and c are read inside)
  EXPECT_EQ(g.value(g.outputs()[0]).name, "r");
  EXPECT_EQ(g.value(g.outputs()[1]).name, "m");
  EXPECT_TRUE(graph::Validate(g).ok()) << graph::Validate(g);
  // The standalone stage has the same signature as the original one.
  Stage same;
  same.groups = {{Node(g, "a"), Node(g, "r")}, {Node(g, "c"), Node(g, "m")}};
  EXPECT_EQ(*StageSignature(g, same), *StageSignature(graph, stage));
  EXPECT_FALSE(ExtractStageGraph(graph, Stage{}).ok());
  Stage twice;
  twice.groups = {{Node(graph, "a")}, {Node(graph, "a")}};
  EXPECT_FALSE(ExtractStageGraph(graph, twice).ok());
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
