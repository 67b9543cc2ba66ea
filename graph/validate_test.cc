#include "graph/validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/test_graphs.h"

namespace iosfarm::graph {
namespace {

using ::testing::HasSubstr;

std::string Message(const Status& status) { return std::string(status.message()); }

TEST(ValidateTest, AcceptsWellFormedGraph) {
  EXPECT_TRUE(Validate(testing::SmallBranchyGraph(false)).ok());
  EXPECT_TRUE(Validate(testing::SmallBranchyGraph(true)).ok());
}

TEST(ValidateTest, ReportsShapeMismatchNamingNode) {
  Graph g = testing::SmallBranchyGraph(false);
  g.mutable_value(g.node(testing::NodeNamed(g, "conv2")).outputs[0]).shape = {1, 9, 16, 16};
  Status status = Validate(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), HasSubstr("conv2"));
  EXPECT_THAT(Message(status), HasSubstr("shape mismatch"));
}

TEST(ValidateTest, ReportsDanglingInput) {
  Graph g = testing::SmallBranchyGraph(false);
  g.mutable_node(testing::NodeNamed(g, "pool")).inputs[0] = g.AddValue("nowhere");
  Status status = Validate(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), HasSubstr("'pool'"));
  EXPECT_THAT(Message(status), HasSubstr("dangling"));
}

TEST(ValidateTest, ReportsCycle) {
  Graph g = testing::SmallBranchyGraph(false);
  // conv1 now reads the concat output: concat depends on conv1.
  const NodeId conv1 = testing::NodeNamed(g, "conv1");
  g.mutable_node(conv1).inputs[0] = g.node(testing::NodeNamed(g, "concat")).outputs[0];
  Status status = Validate(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), HasSubstr("cycle"));
}

TEST(ValidateTest, ReportsMissingWeightAndBadWeightData) {
  Graph g = testing::SmallBranchyGraph(false);
  g.mutable_node(testing::NodeNamed(g, "conv2")).weights.erase("W");
  Status status = Validate(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), HasSubstr("conv2"));
  EXPECT_THAT(Message(status), HasSubstr("'W'"));

  Graph h = testing::SmallBranchyGraph(true);
  h.mutable_node(testing::NodeNamed(h, "fc")).weights["C"].data.pop_back();
  status = Validate(h);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), HasSubstr("'C'"));
}

TEST(ValidateTest, ReportsDuplicateNamesAndMissingOutputs) {
  Graph g = testing::SmallBranchyGraph(false);
  g.mutable_node(testing::NodeNamed(g, "pool")).name = "conv2";
  EXPECT_THAT(Message(Validate(g)), HasSubstr("duplicate node name 'conv2'"));

  Graph empty("empty");
  empty.AddInput("x", {1});
  EXPECT_THAT(Message(Validate(empty)), HasSubstr("no outputs"));
}

TEST(ValidateTest, ReportsAttributeTypeMismatch) {
  Graph g = testing::SmallBranchyGraph(false);
  g.mutable_node(testing::NodeNamed(g, "pool")).attrs = ConcatAttrs{};
  EXPECT_THAT(Message(Validate(g)), HasSubstr("attributes do not match"));
}

}  // namespace
}  // namespace iosfarm::graph
