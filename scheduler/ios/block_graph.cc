#include "scheduler/ios/block_graph.h"

#include <algorithm>
#include <unordered_map>

#include "common/strings.h"
#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/stages/op_content.h"

namespace iosfarm::scheduler::ios {

StatusOr<BlockGraph> BlockGraph::Build(const graph::Graph& graph,
                                       const std::vector<graph::NodeId>& ops) {
  const int n = static_cast<int>(ops.size());
  if (n > kMaxBlockOps) {
    return absl::InvalidArgumentError(
        StrCat("block of ", n, " ops exceeds the limit of ", kMaxBlockOps));
  }
  BlockGraph b;
  b.graph_ = &graph;
  b.nodes_ = ops;
  b.words_ = OpBitsWidthFor(std::max(n, 1));
  std::unordered_map<graph::NodeId, int> local;
  for (int i = 0; i < n; ++i) {
    const graph::NodeId id = ops[i];
    if (id < 0 || id >= graph.num_nodes()) {
      return absl::InvalidArgumentError(StrCat("block lists node id ", id, " out of range"));
    }
    if (IsFreeNode(graph.node(id))) {
      return absl::InvalidArgumentError(
          StrCat("block lists Constant node '", graph.node(id).name, "'"));
    }
    if (!local.emplace(id, i).second) {
      return absl::InvalidArgumentError(
          StrCat("block lists '", graph.node(id).name, "' twice"));
    }
  }
  b.succ_bits_.assign(static_cast<size_t>(n) * b.words_, 0);
  b.pred_bits_.assign(static_cast<size_t>(n) * b.words_, 0);
  b.preds_.resize(n);
  b.succs_.resize(n);
  b.inputs_.resize(n);
  b.content_.resize(n);
  b.merge_key_.resize(n);
  // External tensors numbered by first use, for the structure key.
  std::unordered_map<graph::ValueId, int> external_index;
  for (int i = 0; i < n; ++i) {
    const graph::Node& node = graph.node(ops[i]);
    b.content_[i] = OpContentHash(graph, node);
    b.merge_key_[i] = MergeClassKey(graph, node);
    b.structure_key_.push_back(b.content_[i]);
    for (size_t port = 0; port < node.inputs.size(); ++port) {
      const graph::ValueId v = node.inputs[port];
      const graph::Value& value = graph.value(v);
      if (value.producer != graph::kNoNode && IsFreeNode(graph.node(value.producer))) continue;
      Input input;
      input.port = static_cast<int>(port);
      input.value = v;
      input.output = value.producer_output;
      auto it = value.producer == graph::kNoNode ? local.end() : local.find(value.producer);
      if (it != local.end()) {
        input.producer = it->second;
        if (input.producer >= i) {
          return absl::InvalidArgumentError(StrCat("block is not in topological order: '",
                                                   node.name, "' reads '",
                                                   graph.node(value.producer).name, "'"));
        }
        b.structure_key_.push_back((uint64_t{1} << 62) | (uint64_t(input.producer) << 32) |
                                   (uint64_t(input.output) << 16) | uint64_t(port));
        const int p = input.producer;
        if (!(b.pred_bits_[static_cast<size_t>(i) * b.words_ + p / 64] >> (p % 64) & 1)) {
          b.pred_bits_[static_cast<size_t>(i) * b.words_ + p / 64] |= uint64_t{1} << (p % 64);
          b.succ_bits_[static_cast<size_t>(p) * b.words_ + i / 64] |= uint64_t{1} << (i % 64);
          b.preds_[i].push_back(p);
          b.succs_[p].push_back(i);
        }
      } else {
        const int e = external_index.emplace(v, static_cast<int>(external_index.size()))
                          .first->second;
        b.structure_key_.push_back((uint64_t{2} << 62) | (uint64_t(e) << 16) | uint64_t(port));
      }
      b.inputs_[i].push_back(input);
    }
    b.structure_key_.push_back(~uint64_t{0});  // end of op
  }
  for (int i = 0; i < n; ++i) {
    std::sort(b.preds_[i].begin(), b.preds_[i].end());
    std::sort(b.succs_[i].begin(), b.succs_[i].end());
  }
  return b;
}

}  // namespace iosfarm::scheduler::ios
