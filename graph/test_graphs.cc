#include "graph/test_graphs.h"

#include "graph/graph_builder.h"

namespace iosfarm::graph::testing {
namespace {

void Fill(Node& node, int seed) {
  for (auto& [role, tensor] : node.weights) {
    tensor.data.resize(tensor.num_elements());
    for (size_t i = 0; i < tensor.data.size(); ++i) {
      const float v = static_cast<float>((i * 7 + seed * 13) % 17) / 17.0f;
      // BN variances must stay positive.
      tensor.data[i] = role == "var" ? 0.5f + v : v - 0.5f;
    }
  }
}

}  // namespace

Graph SmallBranchyGraph(bool with_data) {
  GraphBuilder b("small");
  ValueId x = b.Input("input", {1, 8, 16, 16});
  ConvSpec c1;
  c1.out_channels = 16;
  c1.kernel = {3, 3};
  c1.padding = {1, 1};
  c1.bias = false;
  ValueId y = b.Conv(x, c1, "conv1");
  y = b.BatchNorm(y, "bn1");
  y = b.Relu(y, "relu1");
  ConvSpec c2;
  c2.out_channels = 8;
  ValueId left = b.Conv(y, c2, "conv2");
  ValueId right = b.MaxPool(y, {3, 3}, {1, 1}, {1, 1, 1, 1}, "pool");
  ValueId cat = b.Concat({left, right}, 1, "concat");
  ValueId id = b.AddNode(OpType::kIdentity, NoAttrs{}, {cat}, "identity")[0];
  ValueId gap = b.GlobalAveragePool(id, "gap");
  ValueId flat = b.Flatten(gap, 1, "flatten");
  b.Output(b.Linear(flat, 10, "fc"));
  Graph graph = *std::move(b).Finish();
  if (with_data) {
    for (NodeId n = 0; n < graph.num_nodes(); ++n) Fill(graph.mutable_node(n), n);
  }
  return graph;
}

}  // namespace iosfarm::graph::testing
