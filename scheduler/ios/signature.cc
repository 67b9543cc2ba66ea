#include "scheduler/ios/signature.h"

#include <algorithm>
#include <unordered_map>

#include "common/strings.h"
#include "scheduler/ios/merge.h"
#include "scheduler/ios/op_content.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/stable_hash.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr uint64_t kExternalTag = 0x65787465726e616cULL;  // "external"
constexpr uint64_t kGroupTag = 0x67726f7570ULL;           // "group"
constexpr uint64_t kStageTag = 0x7374616765ULL;           // "stage"

uint64_t PortKey(int port, int output) {
  return (static_cast<uint64_t>(port) << 32) | static_cast<uint32_t>(output);
}

}  // namespace

void SignatureBuilder::Begin(Strategy strategy) {
  strategy_ = strategy;
  content_.clear();
  group_.clear();
  port_begin_.clear();
  ports_.clear();
}

void SignatureBuilder::AddOp(uint64_t content, int group) {
  content_.push_back(content);
  group_.push_back(group);
  port_begin_.push_back(static_cast<int>(ports_.size()));
}

void SignatureBuilder::AddInternalInput(int port, int producer, int output_index) {
  ports_.push_back({static_cast<int>(content_.size()) - 1, port, producer, output_index, -1});
}

void SignatureBuilder::AddExternalInput(int port, int64_t tensor_key) {
  ports_.push_back({static_cast<int>(content_.size()) - 1, port, -1, 0, tensor_key});
}

Signature SignatureBuilder::Finish() {
  const int n = static_cast<int>(content_.size());
  port_begin_.push_back(static_cast<int>(ports_.size()));
  const int num_ports = static_cast<int>(ports_.size());

  // Up labels: content and labelled inputs (ops arrive in topological order).
  up_.assign(n, 0);
  for (int k = 0; k < n; ++k) {
    uint64_t h = HashCombine(content_[k], 0x7570);
    for (int p = port_begin_[k]; p < port_begin_[k + 1]; ++p) {
      const Port& port = ports_[p];
      h = HashCombine(h, port.producer >= 0
                             ? HashCombine(up_[port.producer], PortKey(port.port, port.output))
                             : HashCombine(kExternalTag, PortKey(port.port, 0)));
    }
    up_[k] = h;
  }
  // Down labels: up label and the multiset of labelled consumers.
  down_acc_.assign(n, 0);
  down_.assign(n, 0);
  for (int k = n - 1; k >= 0; --k) {
    down_[k] = HashCombine(up_[k], down_acc_[k]);
    for (int p = port_begin_[k]; p < port_begin_[k + 1]; ++p) {
      const Port& port = ports_[p];
      if (port.producer >= 0) {
        down_acc_[port.producer] +=
            Mix64(HashCombine(down_[k], PortKey(port.port, port.output)));
      }
    }
  }
  // External tensors: labelled by the multiset of their readers.
  ext_keys_.clear();
  ext_acc_.clear();
  ext_of_port_.assign(num_ports, -1);
  for (int p = 0; p < num_ports; ++p) {
    const Port& port = ports_[p];
    if (port.producer >= 0) continue;
    int e = 0;
    while (e < static_cast<int>(ext_keys_.size()) && ext_keys_[e] != port.tensor) ++e;
    if (e == static_cast<int>(ext_keys_.size())) {
      ext_keys_.push_back(port.tensor);
      ext_acc_.push_back(0);
    }
    ext_of_port_[p] = e;
    ext_acc_[e] += Mix64(HashCombine(down_[port.op], PortKey(port.port, 0)));
  }
  final_.assign(n, 0);
  for (int k = 0; k < n; ++k) {
    uint64_t shared = 0;
    for (int p = port_begin_[k]; p < port_begin_[k + 1]; ++p) {
      if (ext_of_port_[p] < 0) continue;
      shared += Mix64(HashCombine(HashCombine(kExternalTag, ext_acc_[ext_of_port_[p]]),
                                  PortKey(ports_[p].port, 0)));
    }
    final_[k] = HashCombine(down_[k], shared);
  }

  // Groups: canonical topological order inside each, then the group hash.
  int num_group_ids = 0;
  for (int g : group_) num_group_ids = std::max(num_group_ids, g + 1);
  if (static_cast<int>(group_ops_.size()) < num_group_ids) group_ops_.resize(num_group_ids);
  for (int g = 0; g < num_group_ids; ++g) group_ops_[g].clear();
  pending_preds_.assign(n, 0);
  for (const Port& port : ports_) {
    if (port.producer >= 0) ++pending_preds_[port.op];
  }
  canonical_index_.assign(n, -1);
  group_hash_.assign(num_group_ids, 0);
  group_order_.clear();
  std::vector<int>& ready = ready_;
  for (int g = 0; g < num_group_ids; ++g) {
    ready.clear();
    int size = 0;
    for (int k = 0; k < n; ++k) {
      if (group_[k] != g) continue;
      ++size;
      if (pending_preds_[k] == 0) ready.push_back(k);
    }
    if (size == 0) continue;
    group_order_.push_back(g);
    std::vector<int>& order = group_ops_[g];
    uint64_t h = HashCombine(kGroupTag, static_cast<uint64_t>(size));
    while (!ready.empty()) {
      size_t best = 0;
      for (size_t i = 1; i < ready.size(); ++i) {
        if (final_[ready[i]] < final_[ready[best]] ||
            (final_[ready[i]] == final_[ready[best]] && ready[i] < ready[best])) {
          best = i;
        }
      }
      const int k = ready[best];
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
      canonical_index_[k] = static_cast<int>(order.size());
      order.push_back(k);
      h = HashCombine(h, final_[k]);
      for (int p = port_begin_[k]; p < port_begin_[k + 1]; ++p) {
        const Port& port = ports_[p];
        if (port.producer >= 0) {
          h = HashCombine(h, PortKey(port.port, port.output));
          h = HashCombine(h, static_cast<uint64_t>(canonical_index_[port.producer]));
        }
      }
      // Release consumers of k (ports after k's position only).
      for (int p = port_begin_[k + 1]; p < num_ports; ++p) {
        if (ports_[p].producer == k && --pending_preds_[ports_[p].op] == 0 &&
            group_[ports_[p].op] == g) {
          ready.push_back(ports_[p].op);
        }
      }
    }
    group_hash_[g] = h;
  }
  std::sort(group_order_.begin(), group_order_.end(), [this](int a, int b) {
    if (group_hash_[a] != group_hash_[b]) return group_hash_[a] < group_hash_[b];
    return group_ops_[a].front() < group_ops_[b].front();
  });
  uint64_t h = HashCombine(kStageTag, kSignatureVersion);
  h = HashCombine(h, static_cast<uint64_t>(strategy_));
  h = HashCombine(h, static_cast<uint64_t>(group_order_.size()));
  for (int g : group_order_) h = HashCombine(h, group_hash_[g]);
  port_begin_.pop_back();
  return h;
}

StatusOr<Signature> CanonicalizeStage(const graph::Graph& graph, Stage& stage) {
  // Ops of the stage in a topological order of the stage (Kahn on the
  // induced subgraph, ties by node id), with their group.
  std::unordered_map<graph::NodeId, int> group_of;
  std::vector<graph::NodeId> ops;
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    for (graph::NodeId id : stage.groups[g]) {
      if (id < 0 || id >= graph.num_nodes()) {
        return absl::InvalidArgumentError(StrCat("stage lists node id ", id, " out of range"));
      }
      if (IsFreeNode(graph.node(id))) {
        return absl::InvalidArgumentError(
            StrCat("stage lists Constant node '", graph.node(id).name, "'"));
      }
      if (!group_of.emplace(id, static_cast<int>(g)).second) {
        return absl::InvalidArgumentError(
            StrCat("stage lists '", graph.node(id).name, "' twice"));
      }
      ops.push_back(id);
    }
  }
  std::sort(ops.begin(), ops.end());
  std::unordered_map<graph::NodeId, int> pending;
  for (graph::NodeId id : ops) {
    int count = 0;
    for (graph::ValueId v : graph.node(id).inputs) {
      const graph::NodeId producer = graph.value(v).producer;
      if (producer == graph::kNoNode || !group_of.count(producer)) continue;
      if (group_of[producer] != group_of[id]) {
        return absl::InvalidArgumentError(
            StrCat("stage: '", graph.node(producer).name, "' feeds '", graph.node(id).name,
                   "' but they are in different groups"));
      }
      ++count;
    }
    pending[id] = count;
  }
  std::vector<graph::NodeId> topo;
  std::vector<graph::NodeId> ready;
  for (graph::NodeId id : ops) {
    if (pending[id] == 0) ready.push_back(id);
  }
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    const graph::NodeId id = *it;
    ready.erase(it);
    topo.push_back(id);
    for (graph::NodeId other : ops) {
      for (graph::ValueId v : graph.node(other).inputs) {
        if (graph.value(v).producer == id && --pending[other] == 0) ready.push_back(other);
      }
    }
  }
  if (topo.size() != ops.size()) {
    return absl::InvalidArgumentError("stage contains a cycle");
  }
  std::unordered_map<graph::NodeId, int> index_of;
  for (size_t k = 0; k < topo.size(); ++k) index_of[topo[k]] = static_cast<int>(k);

  SignatureBuilder builder;
  builder.Begin(stage.strategy);
  for (graph::NodeId id : topo) {
    const graph::Node& node = graph.node(id);
    builder.AddOp(OpContentHash(graph, node), group_of[id]);
    for (size_t port = 0; port < node.inputs.size(); ++port) {
      const graph::Value& value = graph.value(node.inputs[port]);
      if (value.producer != graph::kNoNode && IsFreeNode(graph.node(value.producer))) continue;
      if (value.producer != graph::kNoNode && index_of.count(value.producer)) {
        builder.AddInternalInput(static_cast<int>(port), index_of[value.producer],
                                 value.producer_output);
      } else {
        builder.AddExternalInput(static_cast<int>(port), node.inputs[port]);
      }
    }
  }
  const Signature signature = builder.Finish();
  std::vector<std::vector<graph::NodeId>> groups;
  for (int g : builder.canonical_groups()) {
    std::vector<graph::NodeId> group;
    for (int k : builder.canonical_ops(g)) group.push_back(topo[k]);
    groups.push_back(std::move(group));
  }
  stage.groups = std::move(groups);
  if (stage.strategy == Strategy::kMerge) {
    std::vector<graph::NodeId> convs;
    for (const auto& group : stage.groups) {
      if (group.size() != 1) {
        return absl::FailedPreconditionError(
            StrCat("merge stage: group of ", group.size(), " ops (each conv is its own group)"));
      }
      convs.push_back(group[0]);
    }
    ASSIGN_OR_RETURN(MergedConv merged, MergeConvs(graph, convs));
    stage.merged = std::move(merged);
  } else {
    stage.merged.reset();
  }
  return signature;
}

StatusOr<Signature> StageSignature(const graph::Graph& graph, const Stage& stage) {
  Stage copy = stage;
  return CanonicalizeStage(graph, copy);
}

}  // namespace iosfarm::scheduler::ios
