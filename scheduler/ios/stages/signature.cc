#include "scheduler/ios/stages/signature.h"

#include <algorithm>
#include <unordered_map>

#include "common/strings.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/stages/op_content.h"
#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr uint64_t kExternalTag = 0x65787465726e616cULL;  // "external"
constexpr uint64_t kGroupTag = 0x67726f7570ULL;           // "group"
constexpr uint64_t kStageTag = 0x7374616765ULL;           // "stage"
constexpr uint64_t kSingleCoreTag = 0x73696e676c65ULL;    // "single"
constexpr uint64_t kSharedTag = 0x736861726564ULL;        // "shared"

uint64_t PortKey(int port, int output) {
  return (static_cast<uint64_t>(port) << 32) | static_cast<uint32_t>(output);
}

}  // namespace

void GroupCanonicalizer::Begin() {
  content_.clear();
  port_begin_.clear();
  ports_.clear();
}

void GroupCanonicalizer::AddOp(uint64_t content) {
  content_.push_back(content);
  port_begin_.push_back(static_cast<int>(ports_.size()));
}

void GroupCanonicalizer::AddInternalInput(int port, int producer, int output_index) {
  ports_.push_back({static_cast<int>(content_.size()) - 1, port, producer, output_index, -1});
}

void GroupCanonicalizer::AddExternalInput(int port, int64_t tensor_key) {
  ports_.push_back({static_cast<int>(content_.size()) - 1, port, -1, 0, tensor_key});
}

uint64_t GroupCanonicalizer::Finish() {
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
        down_acc_[port.producer] += Mix64(HashCombine(down_[k], PortKey(port.port, port.output)));
      }
    }
  }
  // External tensors: labelled by the multiset of their readers in the group.
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
  // Canonical topological order: the ready op with the smallest final label.
  pending_.assign(n, 0);
  for (const Port& port : ports_) {
    if (port.producer >= 0) ++pending_[port.op];
  }
  ready_.clear();
  for (int k = 0; k < n; ++k) {
    if (pending_[k] == 0) ready_.push_back(k);
  }
  canonical_index_.assign(n, -1);
  order_.clear();
  reads_.clear();
  uint64_t h = HashCombine(kGroupTag, static_cast<uint64_t>(n));
  while (!ready_.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < ready_.size(); ++i) {
      if (final_[ready_[i]] < final_[ready_[best]] ||
          (final_[ready_[i]] == final_[ready_[best]] && ready_[i] < ready_[best])) {
        best = i;
      }
    }
    const int k = ready_[best];
    ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(best));
    const int index = static_cast<int>(order_.size());
    canonical_index_[k] = index;
    order_.push_back(k);
    h = HashCombine(h, final_[k]);
    for (int p = port_begin_[k]; p < port_begin_[k + 1]; ++p) {
      const Port& port = ports_[p];
      if (port.producer >= 0) {
        h = HashCombine(h, PortKey(port.port, port.output));
        h = HashCombine(h, static_cast<uint64_t>(canonical_index_[port.producer]));
      } else {
        reads_.push_back({port.tensor, HashCombine(static_cast<uint64_t>(index),
                                                   PortKey(port.port, 0))});
      }
    }
    // Release consumers of k (their ports come after k's).
    for (int p = port_begin_[k + 1]; p < num_ports; ++p) {
      if (ports_[p].producer == k && --pending_[ports_[p].op] == 0) ready_.push_back(ports_[p].op);
    }
  }
  port_begin_.pop_back();
  return h;
}

uint64_t StageHasher::ReaderHash(uint64_t group_hash, uint64_t slot) {
  return Mix64(HashCombine(group_hash, slot));
}

void StageHasher::Begin() {
  num_groups_ = 0;
  groups_sum_ = 0;
  tensors_.clear();
  if (++stage_stamp_ == 0) {  // wrapped: forget every stamp
    std::fill(stamp_.begin(), stamp_.end(), 0);
    stage_stamp_ = 1;
  }
}

void StageHasher::AddRead(Tensor& tensor, uint64_t reader) {
  if (tensor.last_group != num_groups_) {
    tensor.shared = true;
    tensor.last_group = num_groups_;
  }
  tensor.readers += reader;
}

void StageHasher::AddGroup(uint64_t group_hash, const ExternalRead* reads, int num_reads) {
  groups_sum_ += Mix64(group_hash);
  for (int i = 0; i < num_reads; ++i) {
    const ExternalRead& read = reads[i];
    auto it = std::find_if(tensors_.begin(), tensors_.end(),
                           [&](const Tensor& t) { return t.key == read.tensor; });
    if (it == tensors_.end()) {
      tensors_.push_back({read.tensor, 0, num_groups_, false});
      it = tensors_.end() - 1;
    }
    AddRead(*it, ReaderHash(group_hash, read.slot));
  }
  ++num_groups_;
}

void StageHasher::AddPreparedGroup(uint64_t group_hash, const PreparedRead* reads, int num_reads) {
  groups_sum_ += Mix64(group_hash);
  for (int i = 0; i < num_reads; ++i) {
    const PreparedRead& read = reads[i];
    if (read.tensor >= stamp_.size()) {
      stamp_.resize(read.tensor + 1, 0);
      entry_.resize(read.tensor + 1, 0);
    }
    if (stamp_[read.tensor] != stage_stamp_) {
      stamp_[read.tensor] = stage_stamp_;
      entry_[read.tensor] = static_cast<uint32_t>(tensors_.size());
      tensors_.push_back({read.tensor, 0, num_groups_, false});
    }
    AddRead(tensors_[entry_[read.tensor]], read.reader);
  }
  ++num_groups_;
}

Signature StageHasher::Finish(Strategy strategy) const {
  uint64_t sharing = 0;
  for (const Tensor& t : tensors_) {
    if (t.shared) sharing += Mix64(HashCombine(kSharedTag, t.readers));
  }
  uint64_t h = HashCombine(kStageTag, kSignatureVersion);
  h = HashCombine(h, static_cast<uint64_t>(strategy));
  h = HashCombine(h, static_cast<uint64_t>(num_groups_));
  h = HashCombine(h, groups_sum_);
  return HashCombine(h, sharing);
}

Signature SingleCoreSignature(Signature concurrent) {
  return Mix64(HashCombine(kSingleCoreTag, concurrent));
}

StatusOr<Signature> CanonicalizeStage(const graph::Graph& graph, Stage& stage) {
  if (stage.single_core && stage.strategy != Strategy::kConcurrent) {
    return absl::InvalidArgumentError("a single-core stage must be concurrent, not a merge");
  }
  std::unordered_map<graph::NodeId, int> group_of;
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    if (stage.groups[g].empty()) {
      return absl::InvalidArgumentError(StrCat("stage: group ", g, " is empty"));
    }
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
    }
  }
  struct CanonicalGroup {
    uint64_t hash;
    graph::NodeId smallest;
    std::vector<graph::NodeId> ops;
    std::vector<ExternalRead> reads;
  };
  std::vector<CanonicalGroup> groups;
  GroupCanonicalizer canonicalizer;
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    // A topological order of the group (Kahn, ties by node id).
    std::vector<graph::NodeId> ops = stage.groups[g];
    std::sort(ops.begin(), ops.end());
    std::unordered_map<graph::NodeId, int> pending;
    for (graph::NodeId id : ops) {
      int count = 0;
      for (graph::ValueId v : graph.node(id).inputs) {
        const graph::NodeId producer = graph.value(v).producer;
        if (producer == graph::kNoNode || !group_of.count(producer)) continue;
        if (group_of[producer] != static_cast<int>(g)) {
          return absl::InvalidArgumentError(
              StrCat("stage: '", graph.node(producer).name, "' feeds '", graph.node(id).name,
                     "' but they are in different groups"));
        }
        ++count;
      }
      pending[id] = count;
    }
    std::vector<graph::NodeId> topo, ready;
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
    if (topo.size() != ops.size()) return absl::InvalidArgumentError("stage contains a cycle");
    std::unordered_map<graph::NodeId, int> index_of;
    for (size_t k = 0; k < topo.size(); ++k) index_of[topo[k]] = static_cast<int>(k);
    canonicalizer.Begin();
    for (graph::NodeId id : topo) {
      const graph::Node& node = graph.node(id);
      canonicalizer.AddOp(OpContentHash(graph, node));
      for (size_t port = 0; port < node.inputs.size(); ++port) {
        const graph::Value& value = graph.value(node.inputs[port]);
        if (value.producer != graph::kNoNode && IsFreeNode(graph.node(value.producer))) continue;
        if (value.producer != graph::kNoNode && index_of.count(value.producer)) {
          canonicalizer.AddInternalInput(static_cast<int>(port), index_of[value.producer],
                                         value.producer_output);
        } else {
          canonicalizer.AddExternalInput(static_cast<int>(port), node.inputs[port]);
        }
      }
    }
    CanonicalGroup group;
    group.hash = canonicalizer.Finish();
    group.smallest = ops.front();
    for (int k : canonicalizer.canonical_order()) group.ops.push_back(topo[k]);
    group.reads = canonicalizer.external_reads();
    groups.push_back(std::move(group));
  }
  StageHasher hasher;
  hasher.Begin();
  for (const CanonicalGroup& group : groups) {
    hasher.AddGroup(group.hash, group.reads.data(), static_cast<int>(group.reads.size()));
  }
  const Signature concurrent = hasher.Finish(stage.strategy);
  const Signature signature = stage.single_core ? SingleCoreSignature(concurrent) : concurrent;
  std::sort(groups.begin(), groups.end(), [](const CanonicalGroup& a, const CanonicalGroup& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.smallest < b.smallest;
  });
  stage.groups.clear();
  for (CanonicalGroup& group : groups) stage.groups.push_back(std::move(group.ops));
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
