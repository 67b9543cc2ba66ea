#include "graph/dot_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"

namespace iosfarm::graph {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(DotExportTest, HasNodesEdgesAndShapes) {
  Graph g = testing::SmallBranchyGraph(false);
  const std::string dot = ExportDot(g);
  EXPECT_THAT(dot, StartsWith("digraph \"small\" {"));
  EXPECT_THAT(dot, HasSubstr("conv1\\nConv 3x3/1"));
  EXPECT_THAT(dot, HasSubstr("[1,16,16,16]"));
  // One edge per tensor use plus one per graph output.
  size_t edges = 0;
  for (size_t pos = 0; (pos = dot.find("->", pos)) != std::string::npos; ++pos) ++edges;
  size_t uses = 0;
  for (const Node& node : g.nodes()) uses += node.inputs.size();
  EXPECT_EQ(edges, uses + g.outputs().size());
}

TEST(DotExportTest, EscapesQuotesInNames) {
  GraphBuilder b("q\"uote");
  ValueId x = b.Input("in\"put", {1, 2});
  b.Output(b.Relu(x, "re\"lu"));
  const std::string dot = ExportDot(*std::move(b).Finish());
  EXPECT_THAT(dot, HasSubstr("re\\\"lu"));
  EXPECT_THAT(dot, HasSubstr("digraph \"q\\\"uote\""));
}

}  // namespace
}  // namespace iosfarm::graph
