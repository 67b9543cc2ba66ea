#include "graph/models/randwire.h"

#include <string>
#include <vector>

#include "common/strings.h"
#include "graph/graph_builder.h"
#include "graph/models/layers.h"
#include "graph/models/watts_strogatz.h"

namespace iosfarm::graph::models {
namespace {

// One random stage: every DAG node is sum -> Relu -> separable conv.
ValueId RandomStage(GraphBuilder& b, ValueId x, const RandomDag& dag, int64_t channels,
                    const std::string& name) {
  const std::vector<std::vector<int>> preds = dag.Predecessors();
  std::vector<ValueId> outputs(dag.num_nodes, -1);
  // Edges point from lower to higher index, so index order is topological.
  for (int i = 0; i < dag.num_nodes; ++i) {
    const std::string node = StrCat(name, i < 10 ? "/node0" : "/node", i);
    ValueId in = x;
    int64_t stride = 2;
    if (!preds[i].empty()) {
      std::vector<ValueId> terms;
      for (int p : preds[i]) terms.push_back(outputs[p]);
      in = AddAll(b, terms, node + "/sum");
      stride = 1;
    }
    const ValueId act = b.Relu(in, node + "/relu");
    outputs[i] =
        SeparableConvBn(b, act, channels, 3, stride, {1, 1, 1, 1}, node + "/sep");
  }
  std::vector<ValueId> ends;
  for (int o : dag.OutputNodes()) ends.push_back(outputs[o]);
  return AddAll(b, ends, name + "/output");
}

}  // namespace

StatusOr<Graph> BuildRandWire(int64_t batch) {
  return BuildRandWire(batch, RandWireOptions{});
}

StatusOr<Graph> BuildRandWire(int64_t batch, const RandWireOptions& options) {
  RETURN_IF_ERROR(CheckZooBatch("randwire", batch));
  if (options.channels < 2) {
    return absl::InvalidArgumentError(
        StrCat("randwire: channels must be >= 2, got ", options.channels));
  }
  std::vector<RandomDag> dags;
  for (int s = 0; s < 3; ++s) {
    ASSIGN_OR_RETURN(RandomDag dag, WattsStrogatzDag(options.nodes, options.k, options.p,
                                                     options.seed + s));
    dags.push_back(std::move(dag));
  }
  const int64_t c = options.channels;
  GraphBuilder b("randwire");
  ValueId x = b.Input("input", {batch, 3, 224, 224});
  x = ConvBn(b, x, c / 2, {3, 3}, {2, 2}, {1, 1}, "conv1");
  x = ConvBn(b, x, c, {3, 3}, {2, 2}, {1, 1}, "conv2", Activation::kNone);
  x = RandomStage(b, x, dags[0], c, "conv3");
  x = RandomStage(b, x, dags[1], 2 * c, "conv4");
  x = RandomStage(b, x, dags[2], 4 * c, "conv5");
  x = b.Relu(x, "head/relu");
  x = ConvBn(b, x, 1280, {1, 1}, {1, 1}, {0, 0}, "head/conv", Activation::kNone);
  ClassifierHead(b, x);
  return std::move(b).Finish();
}

}  // namespace iosfarm::graph::models
