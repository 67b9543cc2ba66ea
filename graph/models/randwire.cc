#include "graph/models/randwire.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "graph/graph_builder.h"
#include "graph/models/layers.h"
#include "graph/models/watts_strogatz.h"

namespace iosfarm::graph::models {
namespace {

// One random stage of the network, before its graph is drawn.
struct StageSpec {
  std::string_view name;  // "conv2" .. "conv5"
  int nodes = 0;
  int64_t channels = 0;
};

// One random stage: every DAG node is sum -> Relu -> separable conv.
ValueId RandomStage(GraphBuilder& b, ValueId x, const RandomDag& dag, int64_t channels,
                    std::string_view name) {
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
      in = AddAll(b, terms, StrCat(node, "/sum"));
      stride = 1;
    }
    const ValueId act = b.Relu(in, StrCat(node, "/relu"));
    outputs[i] =
        SeparableConvBn(b, act, channels, 3, stride, {1, 1, 1, 1}, StrCat(node, "/sep"));
  }
  std::vector<ValueId> ends;
  for (int o : dag.OutputNodes()) ends.push_back(outputs[o]);
  return AddAll(b, ends, StrCat(name, "/output"));
}

// The random stages of a regime, in order (Xie et al. 2019, Table 2).
std::vector<StageSpec> RandomStages(const RandWireOptions& options) {
  const int n = options.nodes;
  const int64_t c = options.channels;
  if (options.regime == RandWireRegime::kSmall) {
    return {{"conv3", n, c}, {"conv4", n, 2 * c}, {"conv5", n, 4 * c}};
  }
  return {
      {"conv2", n / 2, c}, {"conv3", n, 2 * c}, {"conv4", n, 4 * c}, {"conv5", n, 8 * c}};
}

}  // namespace

RandWireOptions RandWireOptions::Small() {
  RandWireOptions options;
  options.regime = RandWireRegime::kSmall;
  options.channels = kRandWireSmallChannels;
  return options;
}

StatusOr<Graph> BuildRandWire(int64_t batch) {
  return BuildRandWire(batch, RandWireOptions{});
}

StatusOr<Graph> BuildRandWire(int64_t batch, const RandWireOptions& options) {
  RETURN_IF_ERROR(CheckZooBatch("randwire", batch));
  if (options.regime != RandWireRegime::kSmall &&
      options.regime != RandWireRegime::kRegular) {
    return absl::InvalidArgumentError(
        StrCat("randwire: unknown regime ", static_cast<int>(options.regime)));
  }
  if (options.channels < 2) {
    return absl::InvalidArgumentError(
        StrCat("randwire: channels must be >= 2, got ", options.channels));
  }
  const std::vector<StageSpec> stages = RandomStages(options);
  std::vector<RandomDag> dags;
  for (size_t s = 0; s < stages.size(); ++s) {
    StatusOr<RandomDag> dag =
        WattsStrogatzDag(stages[s].nodes, options.k, options.p, options.seed + s);
    if (!dag.ok()) {
      return absl::InvalidArgumentError(StrCat("randwire: stage ", stages[s].name, " (",
                                               stages[s].nodes,
                                               " nodes): ", dag.status().message()));
    }
    dags.push_back(*std::move(dag));
  }
  const int64_t c = options.channels;
  const bool small = options.regime == RandWireRegime::kSmall;
  GraphBuilder b(small ? "randwire_small" : "randwire");
  ValueId x = b.Input("input", {batch, 3, 224, 224});
  if (small) {
    x = ConvBn(b, x, c / 2, {3, 3}, {2, 2}, {1, 1}, "conv1");
    x = ConvBn(b, x, c, {3, 3}, {2, 2}, {1, 1}, "conv2", Activation::kNone);
  } else {
    // Conv-BN only: the first random stage's nodes start with their own Relu.
    x = ConvBn(b, x, c / 2, {3, 3}, {2, 2}, {1, 1}, "conv1", Activation::kNone);
  }
  for (size_t s = 0; s < stages.size(); ++s) {
    x = RandomStage(b, x, dags[s], stages[s].channels, stages[s].name);
  }
  x = b.Relu(x, "head/relu");
  x = ConvBn(b, x, 1280, {1, 1}, {1, 1}, {0, 0}, "head/conv", Activation::kNone);
  ClassifierHead(b, x);
  return std::move(b).Finish();
}

}  // namespace iosfarm::graph::models
