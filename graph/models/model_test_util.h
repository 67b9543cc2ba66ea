// Test helpers shared by the zoo model tests (test-only, header-only).
#ifndef IOSFARM_GRAPH_MODELS_MODEL_TEST_UTIL_H_
#define IOSFARM_GRAPH_MODELS_MODEL_TEST_UTIL_H_

#include <cstdint>
#include <map>

#include "graph/cost.h"
#include "graph/graph.h"
#include "graph/validate.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {

// Number of nodes of each op type.
inline std::map<OpType, int> OpHistogram(const Graph& graph) {
  std::map<OpType, int> counts;
  for (const Node& node : graph.nodes()) ++counts[node.type];
  return counts;
}

inline int CountOps(const Graph& graph, OpType type) {
  int n = 0;
  for (const Node& node : graph.nodes()) n += node.type == type ? 1 : 0;
  return n;
}

// Depthwise convs: groups == input channels > 1.
inline int CountDepthwiseConvs(const Graph& graph) {
  int n = 0;
  for (const Node& node : graph.nodes()) {
    if (node.type != OpType::kConv) continue;
    const auto& attrs = std::get<ConvAttrs>(node.attrs);
    const Shape& in = graph.value(node.inputs[0]).shape;
    n += attrs.groups > 1 && attrs.groups == in[1] ? 1 : 0;
  }
  return n;
}

// The zoo contract: valid graph, one input "input" [batch,3,size,size], one
// output "logits" [batch,1000].
inline void ExpectZooContract(const Graph& graph, int64_t batch, int64_t image_size) {
  EXPECT_TRUE(Validate(graph).ok()) << Validate(graph);
  ASSERT_EQ(graph.inputs().size(), 1u);
  const Value& input = graph.value(graph.inputs()[0]);
  EXPECT_EQ(input.name, "input");
  EXPECT_EQ(input.shape, (Shape{batch, 3, image_size, image_size}));
  ASSERT_EQ(graph.outputs().size(), 1u);
  const Value& output = graph.value(graph.outputs()[0]);
  EXPECT_EQ(output.name, "logits");
  EXPECT_EQ(output.shape, (Shape{batch, 1000}));
}

// |actual / expected - 1| <= rel_tol.
inline void ExpectNear(int64_t actual, double expected, double rel_tol) {
  EXPECT_NEAR(static_cast<double>(actual) / expected, 1.0, rel_tol)
      << "actual " << actual << " vs expected " << expected;
}

// MACs scale linearly with the batch; parameters do not change.
inline void ExpectLinearInBatch(const Graph& batch1, const Graph& batch4) {
  const OpCost c1 = ComputeGraphCost(batch1);
  const OpCost c4 = ComputeGraphCost(batch4);
  EXPECT_EQ(c4.macs, 4 * c1.macs);
  EXPECT_EQ(c4.params, c1.params);
  EXPECT_EQ(batch4.num_nodes(), batch1.num_nodes());
}

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_MODEL_TEST_UTIL_H_
