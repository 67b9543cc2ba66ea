#include "worker/backends/reference/executor.h"

#include <algorithm>

#include "common/strings.h"
#include "worker/backends/merged_conv_weights.h"
#include "worker/backends/reference/kernels.h"
#include "worker/backends/reference/node_kernel.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::reference {
namespace {

graph::Tensor Zeros(const graph::Shape& shape) {
  graph::Tensor t;
  t.shape = shape;
  t.data.assign(static_cast<size_t>(graph::NumElements(shape)), 0.0f);
  return t;
}

// The tensor of `value`, computing it first when a Constant produces it.
StatusOr<const graph::Tensor*> Lookup(const graph::Graph& graph, graph::ValueId value,
                                      const graph::Node& reader, ValueMap& values) {
  auto it = values.find(value);
  if (it != values.end()) return &it->second;
  const graph::NodeId producer = graph.value(value).producer;
  if (producer != graph::kNoNode && graph.node(producer).type == graph::OpType::kConstant) {
    RETURN_IF_ERROR(ExecuteNode(graph, producer, values));
    return &values.at(value);
  }
  return absl::FailedPreconditionError(StrCat("node '", reader.name, "' reads '",
                                              graph.value(value).name,
                                              "', which is not computed yet"));
}

}  // namespace

Status ExecuteNode(const graph::Graph& graph, graph::NodeId id, ValueMap& values) {
  const graph::Node& node = graph.node(id);
  std::vector<ConstView> inputs;
  for (graph::ValueId v : node.inputs) {
    ASSIGN_OR_RETURN(const graph::Tensor* t, Lookup(graph, v, node, values));
    inputs.push_back({t->data.data(), t->shape});
  }
  std::vector<graph::Tensor> results;
  std::vector<MutableView> outputs;
  for (graph::ValueId v : node.outputs) {
    const graph::Shape& shape = graph.value(v).shape;
    if (shape.empty()) {
      return absl::InvalidArgumentError(StrCat("node '", node.name, "': output '",
                                               graph.value(v).name, "' has no inferred shape"));
    }
    results.push_back(Zeros(shape));
  }
  for (graph::Tensor& t : results) outputs.push_back({t.data.data(), t.shape});
  if (NeedsMaterialization(node)) {
    RETURN_IF_ERROR(RunNode(node, MaterializeNodeWeights(node), inputs, outputs));
  } else {
    RETURN_IF_ERROR(RunNode(node, node.weights, inputs, outputs));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    values[node.outputs[i]] = std::move(results[i]);
  }
  return absl::OkStatus();
}

Status ExecuteStage(const graph::Graph& graph, const scheduler::ios::Stage& stage,
                    ValueMap& values) {
  if (stage.strategy == scheduler::ios::Strategy::kConcurrent) {
    for (const auto& group : stage.groups) {
      for (graph::NodeId id : group) {
        if (id < 0 || id >= graph.num_nodes()) {
          return absl::InvalidArgumentError(StrCat("stage: node id ", id, " out of range"));
        }
        RETURN_IF_ERROR(ExecuteNode(graph, id, values));
      }
    }
    return absl::OkStatus();
  }
  if (!stage.merged.has_value() || stage.merged->branches.empty()) {
    return absl::InvalidArgumentError("merge stage without a merged convolution");
  }
  const scheduler::ios::MergedConv& merged = *stage.merged;
  ASSIGN_OR_RETURN(MergedConvWeights weights, AssembleMergedConvWeights(graph, merged));
  const graph::Node& first = graph.node(merged.branches[0].op);
  ASSIGN_OR_RETURN(const graph::Tensor* x, Lookup(graph, merged.input, first, values));
  const graph::Shape& branch_shape = graph.value(first.outputs[0]).shape;
  graph::Tensor y = Zeros(
      {x->shape[0], merged.attrs.out_channels, branch_shape[2], branch_shape[3]});
  Conv2D(merged.attrs, {x->data.data(), x->shape}, weights.weight.data.data(),
         merged.attrs.has_bias ? weights.bias.data.data() : nullptr, {y.data.data(), y.shape});
  const int64_t plane = y.shape[2] * y.shape[3];
  for (const scheduler::ios::MergedBranch& branch : merged.branches) {
    const int64_t channels = branch.channel_end - branch.channel_begin;
    graph::Tensor out = Zeros({y.shape[0], channels, y.shape[2], y.shape[3]});
    for (int64_t n = 0; n < y.shape[0]; ++n) {
      const float* src = y.data.data() + (n * y.shape[1] + branch.channel_begin) * plane;
      std::copy(src, src + channels * plane, out.data.data() + n * channels * plane);
    }
    values[graph.node(branch.op).outputs[0]] = std::move(out);
  }
  return absl::OkStatus();
}

StatusOr<ValueMap> BindInputs(const graph::Graph& graph,
                              const std::vector<graph::Tensor>& inputs) {
  if (inputs.size() != graph.inputs().size()) {
    return absl::InvalidArgumentError(StrCat("graph '", graph.name(), "' has ",
                                             graph.inputs().size(), " inputs, got ",
                                             inputs.size()));
  }
  ValueMap values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::Value& value = graph.value(graph.inputs()[i]);
    if (inputs[i].shape != value.shape ||
        static_cast<int64_t>(inputs[i].data.size()) != graph::NumElements(value.shape)) {
      return absl::InvalidArgumentError(StrCat(
          "input '", value.name, "' expects shape ", graph::ShapeToString(value.shape), ", got ",
          graph::ShapeToString(inputs[i].shape), " with ", inputs[i].data.size(), " values"));
    }
    values[graph.inputs()[i]] = inputs[i];
  }
  return values;
}

StatusOr<std::vector<graph::Tensor>> CollectOutputs(const graph::Graph& graph,
                                                    const ValueMap& values) {
  std::vector<graph::Tensor> outputs;
  for (graph::ValueId v : graph.outputs()) {
    auto it = values.find(v);
    if (it == values.end()) {
      return absl::FailedPreconditionError(
          StrCat("graph output '", graph.value(v).name, "' was not computed"));
    }
    outputs.push_back(it->second);
  }
  return outputs;
}

StatusOr<std::vector<graph::Tensor>> ExecuteGraph(const graph::Graph& graph,
                                                  const std::vector<graph::Tensor>& inputs) {
  ASSIGN_OR_RETURN(ValueMap values, BindInputs(graph, inputs));
  ASSIGN_OR_RETURN(std::vector<graph::NodeId> order, graph.TopologicalOrder());
  for (graph::NodeId id : order) RETURN_IF_ERROR(ExecuteNode(graph, id, values));
  return CollectOutputs(graph, values);
}

StatusOr<std::vector<graph::Tensor>> ExecuteSchedule(const graph::Graph& graph,
                                                     const scheduler::ios::Schedule& schedule,
                                                     const std::vector<graph::Tensor>& inputs) {
  ASSIGN_OR_RETURN(ValueMap values, BindInputs(graph, inputs));
  for (const scheduler::ios::ScheduledStage& stage : schedule.stages) {
    RETURN_IF_ERROR(ExecuteStage(graph, stage.stage, values));
  }
  // Graph outputs that are Constants are never scheduled.
  for (graph::ValueId v : graph.outputs()) {
    const graph::NodeId producer = graph.value(v).producer;
    if (values.count(v) == 0 && producer != graph::kNoNode &&
        graph.node(producer).type == graph::OpType::kConstant) {
      RETURN_IF_ERROR(ExecuteNode(graph, producer, values));
    }
  }
  return CollectOutputs(graph, values);
}

}  // namespace iosfarm::worker::reference
