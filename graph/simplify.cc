#include "graph/simplify.h"

#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/strings.h"
#include "graph/validate.h"

namespace iosfarm::graph {
namespace {

bool IsFusableActivation(OpType type) {
  return type == OpType::kRelu || type == OpType::kClip || type == OpType::kSigmoid ||
         type == OpType::kTanh;
}

// The decisions of the pass, in terms of the input graph.
struct Plan {
  std::vector<ValueId> alias;               // value -> value it is replaced by
  std::vector<bool> removed;                // node removed (identity or fused)
  std::map<NodeId, std::vector<NodeId>> chains;  // conv -> nodes fused into it
  std::map<ValueId, NodeId> tail_owner;     // final value of a fused chain -> conv
  std::vector<bool> live;
  std::map<NodeId, std::array<int64_t, 4>> extra_pads;  // consumer -> folded Pad amounts

  ValueId Resolve(ValueId v) const {
    while (alias[v] != v) v = alias[v];
    return v;
  }
};

// The readers of each value among the nodes the plan keeps, and the graph
// outputs, after its aliases are resolved.
struct Uses {
  std::vector<std::set<NodeId>> consumers;  // by value
  std::set<ValueId> outputs;
};

Uses ResolvedUses(const Graph& graph, const Plan& plan) {
  Uses uses;
  uses.consumers.resize(graph.num_values());
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    if (plan.removed[n]) continue;
    for (ValueId v : graph.node(n).inputs) uses.consumers[plan.Resolve(v)].insert(n);
  }
  for (ValueId v : graph.outputs()) uses.outputs.insert(plan.Resolve(v));
  return uses;
}

Status PlanIdentities(const Graph& graph, const std::vector<NodeId>& order, Plan& plan) {
  const auto consumers = graph.Consumers();
  for (NodeId n : order) {
    const Node& node = graph.node(n);
    if (node.type != OpType::kIdentity && node.type != OpType::kDropout) continue;
    for (size_t i = 1; i < node.outputs.size(); ++i) {
      if (!consumers[node.outputs[i]].empty()) {
        return absl::InvalidArgumentError(StrCat(
            "node '", node.name, "' (", OpTypeName(node.type),
            "): its mask output is used, which inference cannot provide"));
      }
    }
    plan.removed[n] = true;
    plan.alias[node.outputs[0]] = node.inputs[0];
  }
  return absl::OkStatus();
}

// A zero constant Pad of H and W only, as {top, left, bottom, right}.
std::optional<std::array<int64_t, 4>> SpatialZeroPad(const Graph& graph, const Node& node) {
  const auto& a = std::get<PadAttrs>(node.attrs);
  if (a.mode != PadMode::kConstant || a.value != 0.0f) return std::nullopt;
  if (graph.value(node.inputs[0]).shape.size() != 4 || a.pads.size() != 8) return std::nullopt;
  if (a.pads[0] != 0 || a.pads[1] != 0 || a.pads[4] != 0 || a.pads[5] != 0) return std::nullopt;
  return std::array<int64_t, 4>{a.pads[2], a.pads[3], a.pads[6], a.pads[7]};
}

// Folds a zero Pad into the Conv or AveragePool that alone reads it: the
// consumer pads instead (an AveragePool then counts the padding, as the Pad
// made it do).
void PlanPadFolding(const Graph& graph, const std::vector<NodeId>& order, Plan& plan) {
  const auto [consumers, outputs] = ResolvedUses(graph, plan);
  for (NodeId n : order) {
    const Node& node = graph.node(n);
    if (plan.removed[n] || node.type != OpType::kPad) continue;
    const auto pads = SpatialZeroPad(graph, node);
    const ValueId out = node.outputs[0];
    if (!pads || consumers[out].size() != 1 || outputs.count(out) > 0) continue;
    const NodeId c = *consumers[out].begin();
    const Node& consumer = graph.node(c);
    if (plan.extra_pads.count(c) > 0) continue;
    if (consumer.type == OpType::kAveragePool) {
      const auto& pool = std::get<PoolAttrs>(consumer.attrs);
      if (pool.pads != std::array<int64_t, 4>{0, 0, 0, 0}) continue;
      bool fits = true;  // pool pads must stay smaller than the kernel
      for (int i = 0; i < 4; ++i) fits = fits && (*pads)[i] < pool.kernel[i % 2];
      if (!fits) continue;
    } else if (consumer.type != OpType::kConv) {
      continue;
    }
    plan.removed[n] = true;
    plan.alias[out] = node.inputs[0];
    plan.extra_pads[c] = *pads;
  }
}

void ApplyExtraPads(const std::array<int64_t, 4>& pads, Node& node) {
  if (auto* conv = std::get_if<ConvAttrs>(&node.attrs)) {
    for (int i = 0; i < 4; ++i) conv->pads[i] += pads[i];
  } else if (auto* pool = std::get_if<PoolAttrs>(&node.attrs)) {
    pool->pads = pads;
    pool->count_include_pad = true;
  }
}

void PlanFusions(const Graph& graph, const std::vector<NodeId>& order,
                 const SimplifyOptions& options, Plan& plan) {
  const auto [consumers, outputs] = ResolvedUses(graph, plan);

  std::map<ValueId, NodeId> open;  // conv chain tail value -> conv
  for (NodeId n : order) {
    if (plan.removed[n]) continue;
    const Node& node = graph.node(n);
    if (node.type == OpType::kConv) {
      open[node.outputs[0]] = n;
      continue;
    }
    const bool fold_bn = options.fold_batch_norm && node.type == OpType::kBatchNormalization;
    const bool fuse_act = options.fuse_activations && IsFusableActivation(node.type);
    if (!fold_bn && !fuse_act) continue;
    const ValueId in = plan.Resolve(node.inputs[0]);
    auto it = open.find(in);
    if (it == open.end() || consumers[in].size() != 1 || outputs.count(in) > 0) continue;
    const NodeId conv = it->second;
    std::vector<NodeId>& chain = plan.chains[conv];
    const bool has_activation =
        std::get<ConvAttrs>(graph.node(conv).attrs).activation != Activation::kNone ||
        (!chain.empty() && graph.node(chain.back()).type != OpType::kBatchNormalization);
    if (has_activation) continue;  // nothing may follow an activation
    if (fold_bn) {
      // Numeric folding needs data on both sides or on neither.
      const bool conv_data = graph.node(conv).weights.at("W").has_data();
      const bool bn_data = node.weights.at("scale").has_data();
      if (conv_data != bn_data) continue;
    }
    chain.push_back(n);
    plan.removed[n] = true;
    open.erase(it);
    open[node.outputs[0]] = conv;
  }
  for (const auto& [conv, chain] : plan.chains) {
    if (!chain.empty()) plan.tail_owner[graph.node(chain.back()).outputs[0]] = conv;
  }
}

NodeId ProducerAfterPlan(const Graph& graph, const Plan& plan, ValueId v) {
  auto it = plan.tail_owner.find(v);
  return it != plan.tail_owner.end() ? it->second : graph.value(v).producer;
}

void PlanLiveness(const Graph& graph, Plan& plan) {
  std::vector<ValueId> stack;
  for (ValueId v : graph.outputs()) stack.push_back(plan.Resolve(v));
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    const NodeId p = ProducerAfterPlan(graph, plan, v);
    if (p == kNoNode || plan.live[p]) continue;
    plan.live[p] = true;
    for (ValueId in : graph.node(p).inputs) stack.push_back(plan.Resolve(in));
  }
}

void FoldBatchNorm(const Node& bn, ConvAttrs& conv, std::map<std::string, Tensor>& weights) {
  const int64_t out_channels = conv.out_channels;
  Tensor& bias = weights["B"];
  const Tensor& w = weights.at("W");
  if (!w.has_data()) {
    bias.shape = {out_channels};
    bias.data.clear();
    conv.has_bias = true;
    return;
  }
  const float epsilon = std::get<BatchNormAttrs>(bn.attrs).epsilon;
  const auto& scale = bn.weights.at("scale").data;
  const auto& shift = bn.weights.at("bias").data;
  const auto& mean = bn.weights.at("mean").data;
  const auto& var = bn.weights.at("var").data;
  if (!conv.has_bias || !bias.has_data()) {
    bias.shape = {out_channels};
    bias.data.assign(out_channels, 0.0f);
  }
  Tensor& weight = weights.at("W");
  const int64_t per_channel = weight.num_elements() / out_channels;
  for (int64_t o = 0; o < out_channels; ++o) {
    const float factor = scale[o] / std::sqrt(var[o] + epsilon);
    for (int64_t i = 0; i < per_channel; ++i) weight.data[o * per_channel + i] *= factor;
    bias.data[o] = (bias.data[o] - mean[o]) * factor + shift[o];
  }
  conv.has_bias = true;
}

void FuseActivation(const Node& act, ConvAttrs& conv) {
  switch (act.type) {
    case OpType::kRelu:
      conv.activation = Activation::kRelu;
      break;
    case OpType::kClip: {
      const auto& clip = std::get<ClipAttrs>(act.attrs);
      conv.activation = Activation::kClip;
      conv.clip_min = clip.min;
      conv.clip_max = clip.max;
      break;
    }
    case OpType::kSigmoid:
      conv.activation = Activation::kSigmoid;
      break;
    case OpType::kTanh:
      conv.activation = Activation::kTanh;
      break;
    default:
      break;
  }
}

}  // namespace

StatusOr<Graph> Simplify(const Graph& graph, const SimplifyOptions& options) {
  return Simplify(Graph(graph), options);
}

StatusOr<Graph> Simplify(Graph&& graph, const SimplifyOptions& options) {
  RETURN_IF_ERROR(Validate(graph));
  ASSIGN_OR_RETURN(std::vector<NodeId> order, graph.TopologicalOrder());
  Plan plan;
  plan.alias.resize(graph.num_values());
  for (ValueId v = 0; v < graph.num_values(); ++v) plan.alias[v] = v;
  plan.removed.assign(graph.num_nodes(), false);
  plan.live.assign(graph.num_nodes(), false);
  RETURN_IF_ERROR(PlanIdentities(graph, order, plan));
  if (options.fold_pads) PlanPadFolding(graph, order, plan);
  PlanFusions(graph, order, options, plan);
  PlanLiveness(graph, plan);

  Graph out(graph.name());
  std::vector<ValueId> mapped(graph.num_values(), -1);
  for (ValueId v : graph.inputs()) {
    mapped[v] = out.AddInput(graph.value(v).name, graph.value(v).shape);
  }
  for (NodeId n : order) {
    if (plan.removed[n] || !plan.live[n]) continue;
    // Moved: no later step reads a kept node (fused nodes are removed ones,
    // read through graph.node() below and never moved).
    Node node = std::move(graph.mutable_node(n));
    for (ValueId& in : node.inputs) in = mapped[plan.Resolve(in)];
    if (auto pads = plan.extra_pads.find(n); pads != plan.extra_pads.end()) {
      ApplyExtraPads(pads->second, node);
    }
    std::vector<ValueId> old_outputs = node.outputs;
    auto chain = plan.chains.find(n);
    if (chain != plan.chains.end() && !chain->second.empty()) {
      auto& attrs = std::get<ConvAttrs>(node.attrs);
      for (NodeId fused : chain->second) {
        const Node& f = graph.node(fused);
        if (f.type == OpType::kBatchNormalization) {
          FoldBatchNorm(f, attrs, node.weights);
        } else {
          FuseActivation(f, attrs);
        }
      }
      old_outputs = {graph.node(chain->second.back()).outputs[0]};
    }
    node.outputs.clear();
    for (ValueId v : old_outputs) {
      const ValueId nv = out.AddValue(graph.value(v).name);
      out.mutable_value(nv).shape = graph.value(v).shape;
      node.outputs.push_back(nv);
      mapped[v] = nv;
    }
    out.AddNode(std::move(node));
  }
  for (ValueId v : graph.outputs()) {
    const ValueId resolved = mapped[plan.Resolve(v)];
    out.AddOutput(resolved);
    // Keep the output's public name when an Identity in front of it was removed.
    out.mutable_value(resolved).name = graph.value(v).name;
  }
  RETURN_IF_ERROR(Validate(out));
  return out;
}

}  // namespace iosfarm::graph
