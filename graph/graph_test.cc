#include "graph/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::graph {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Node Unary(std::string name, OpType type, ValueId in) {
  Node node;
  node.name = std::move(name);
  node.type = type;
  node.inputs = {in};
  return node;
}

TEST(GraphTest, AddNodeCreatesNamedOutputsWithProducer) {
  Graph g("g");
  ValueId x = g.AddInput("x", {1, 3, 8, 8});
  NodeId relu = g.AddNode(Unary("relu", OpType::kRelu, x));
  Node split = Unary("split", OpType::kSplit, g.node(relu).outputs[0]);
  NodeId s = g.AddNode(split, 2);
  ASSERT_EQ(g.node(s).outputs.size(), 2u);
  EXPECT_EQ(g.value(g.node(relu).outputs[0]).name, "relu");
  EXPECT_EQ(g.value(g.node(s).outputs[1]).name, "split:1");
  EXPECT_EQ(g.value(g.node(s).outputs[1]).producer, s);
  EXPECT_EQ(g.value(g.node(s).outputs[1]).producer_output, 1);
  EXPECT_EQ(g.value(x).producer, kNoNode);
}

TEST(GraphTest, ConsumersAndPredecessorsListEachNodeOnce) {
  Graph g("g");
  ValueId x = g.AddInput("x", {1, 4});
  NodeId a = g.AddNode(Unary("a", OpType::kRelu, x));
  Node add;
  add.name = "add";
  add.type = OpType::kAdd;
  add.inputs = {g.node(a).outputs[0], g.node(a).outputs[0]};
  NodeId b = g.AddNode(add);
  const auto consumers = g.Consumers();
  EXPECT_THAT(consumers[g.node(a).outputs[0]], ElementsAre(b));
  EXPECT_THAT(g.Predecessors()[b], ElementsAre(a));
}

TEST(GraphTest, TopologicalOrderHandlesForwardReferences) {
  Graph g("g");
  ValueId x = g.AddInput("x", {1, 4});
  ValueId later = g.AddValue("later");
  NodeId consumer = g.AddNode(Unary("consumer", OpType::kRelu, later));
  Node producer = Unary("producer", OpType::kRelu, x);
  producer.outputs = {later};
  NodeId p = g.AddNode(producer);
  auto order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_THAT(*order, ElementsAre(p, consumer));
}

TEST(GraphTest, TopologicalOrderReportsCycleByNodeName) {
  Graph g("loop");
  g.AddInput("x", {1, 4});
  ValueId a_out = g.AddValue("a_out");
  ValueId b_out = g.AddValue("b_out");
  Node a = Unary("node_a", OpType::kRelu, b_out);
  a.outputs = {a_out};
  Node b = Unary("node_b", OpType::kRelu, a_out);
  b.outputs = {b_out};
  g.AddNode(a);
  g.AddNode(b);
  auto order = g.TopologicalOrder();
  ASSERT_FALSE(order.ok());
  EXPECT_THAT(std::string(order.status().message()), HasSubstr("cycle"));
  EXPECT_THAT(std::string(order.status().message()), HasSubstr("node_a"));
}

}  // namespace
}  // namespace iosfarm::graph
