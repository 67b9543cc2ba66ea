#include "graph/test_graphs.h"

#include "graph/graph_builder.h"

namespace iosfarm::graph::testing {

NodeId NodeNamed(const Graph& graph, std::string_view name) {
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (graph.node(id).name == name) return id;
  }
  return kNoNode;
}
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

ConvSpec ConvSpecOf(int64_t out, std::array<int64_t, 2> kernel, std::array<int64_t, 2> padding,
                    Activation act, bool bias) {
  return ConvSpec{.out_channels = out,
                  .kernel = kernel,
                  .padding = padding,
                  .bias = bias,
                  .activation = act};
}

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

Graph ResidualBlocksGraph(int64_t batch) {
  GraphBuilder b("residual_blocks");
  const auto conv = [](int64_t out, int64_t k, Activation act, bool bias) {
    ConvSpec spec;
    spec.out_channels = out;
    spec.kernel = {k, k};
    spec.padding = {k / 2, k / 2};
    spec.activation = act;
    spec.bias = bias;
    return spec;
  };
  ValueId x = b.Input("x", {batch, 8, 10, 10});
  ValueId s = b.Conv(x, conv(8, 3, Activation::kRelu, true), "stem");
  ValueId t = b.Conv(s, conv(8, 1, Activation::kRelu, true), "b1/conv1");
  ValueId u = b.Conv(t, conv(8, 3, Activation::kNone, true), "b1/conv2");
  ValueId r1 = b.Relu(b.Add(u, s, "b1/add"), "b1/relu");
  ValueId p = b.Conv(r1, conv(16, 3, Activation::kNone, true), "b2/conv");
  ValueId q = b.Conv(r1, conv(16, 1, Activation::kNone, false), "b2/proj");
  ValueId r2 = b.Relu(b.Add(p, q, "b2/add"), "b2/relu");
  ConvSpec asymmetric = conv(16, 2, Activation::kNone, false);
  asymmetric.pads = {0, 0, 1, 1};
  ValueId e = b.Conv(r2, asymmetric, "b3/conv");
  b.Output(b.Add(r2, e, "b3/add"));
  return *std::move(b).Finish();
}

Graph NonFusableResidualGraph() {
  GraphBuilder b("non_fusable_residual");
  ConvSpec spec;
  spec.out_channels = 8;
  spec.kernel = {3, 3};
  spec.padding = {1, 1};
  ConvSpec relu_spec = spec;
  relu_spec.activation = Activation::kRelu;
  ValueId x = b.Input("x", {1, 8, 6, 6});
  ValueId z = b.Input("z", {1, 8, 6, 6});
  ValueId narrow = b.Input("narrow", {1, 8, 1, 1});
  ValueId c0 = b.Conv(x, spec, "shared_conv");
  b.Output(b.Add(c0, z, "shared_add"));
  b.Output(b.Relu(c0, "other_reader"));
  b.Output(b.Add(b.Conv(x, spec, "bcast_conv"), narrow, "bcast_add"));
  b.Output(b.Add(b.Conv(x, relu_spec, "relu_conv"), z, "relu_add"));
  ValueId c3 = b.Conv(x, spec, "kept_conv");
  b.Output(c3);
  b.Output(b.Add(c3, z, "kept_add"));
  ValueId c4 = b.Conv(x, spec, "twice_conv");
  b.Output(b.Add(c4, c4, "twice_add"));
  ValueId sum = b.Add(b.Conv(x, spec, "out_conv"), z, "out_add");
  b.Output(sum);
  b.Output(b.Relu(sum, "out_relu"));
  return *std::move(b).Finish();
}

}  // namespace iosfarm::graph::testing
