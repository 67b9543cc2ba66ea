// Small graphs and stages shared by the sim backend's tests (header-only,
// tests only).
#ifndef IOSFARM_WORKER_BACKENDS_SIM_SIM_TEST_GRAPHS_H_
#define IOSFARM_WORKER_BACKENDS_SIM_SIM_TEST_GRAPHS_H_

#include <cstdint>
#include <utility>

#include "graph/graph.h"
#include "graph/graph_builder.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::worker::sim::testing {

// input [1, channels, size, size] -> conv "a" and conv "b" (both k x k, pad
// k/2, `channels` outputs, bias, ReLU) -> outputs. The convs can merge.
struct TwoConvs {
  graph::Graph graph;
  graph::NodeId a = graph::kNoNode;
  graph::NodeId b = graph::kNoNode;
};

inline TwoConvs MakeTwoConvs(int64_t channels, int64_t size, int64_t kernel) {
  graph::GraphBuilder builder("two_convs");
  const graph::ValueId x = builder.Input("input", {1, channels, size, size});
  graph::ConvSpec spec;
  spec.out_channels = channels;
  spec.kernel = {kernel, kernel};
  spec.padding = {kernel / 2, kernel / 2};
  spec.activation = graph::Activation::kRelu;
  const graph::ValueId ya = builder.Conv(x, spec, "a");
  const graph::ValueId yb = builder.Conv(x, spec, "b");
  builder.Output(ya);
  builder.Output(yb);
  TwoConvs result;
  result.graph = *std::move(builder).Finish();
  result.a = result.graph.value(ya).producer;
  result.b = result.graph.value(yb).producer;
  return result;
}

inline scheduler::ios::Stage ConcurrentStage(std::vector<std::vector<graph::NodeId>> groups) {
  scheduler::ios::Stage stage;
  stage.groups = std::move(groups);
  return stage;
}

inline scheduler::ios::Stage MergeStage(const graph::Graph& graph,
                                        const std::vector<graph::NodeId>& convs) {
  scheduler::ios::Stage stage;
  stage.strategy = scheduler::ios::Strategy::kMerge;
  for (graph::NodeId id : convs) stage.groups.push_back({id});
  stage.merged = *scheduler::ios::MergeConvs(graph, convs);
  return stage;
}

}  // namespace iosfarm::worker::sim::testing

#endif  // IOSFARM_WORKER_BACKENDS_SIM_SIM_TEST_GRAPHS_H_
