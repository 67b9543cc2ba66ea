// BlockGraph: the block-local view of a block's operators that the ending
// enumeration, the signatures and the DP work on.
//
// Ops are numbered 0..size()-1 in the block's topological order. Direct
// predecessor/successor sets inside the block are kept as bit rows of
// words() 64-bit words each (OpBits<W>::FromWords reads them). Immutable
// after Build; refers to the graph, which must outlive it.
#ifndef IOSFARM_SCHEDULER_IOS_BLOCK_GRAPH_H_
#define IOSFARM_SCHEDULER_IOS_BLOCK_GRAPH_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::scheduler::ios {

class BlockGraph {
 public:
  // One non-constant input port of an op.
  struct Input {
    int port = 0;           // index into node.inputs
    int producer = -1;      // local index of the producer, -1 outside the block
    int output = 0;         // producer's output index
    graph::ValueId value = -1;
  };

  // `ops`: the block's operators in a topological order (no Constants, no
  // duplicates, at most kMaxBlockOps). InvalidArgument otherwise.
  static StatusOr<BlockGraph> Build(const graph::Graph& graph,
                                    const std::vector<graph::NodeId>& ops);

  const graph::Graph& graph() const { return *graph_; }
  int size() const { return static_cast<int>(nodes_.size()); }
  int words() const { return words_; }
  graph::NodeId node(int i) const { return nodes_[i]; }
  const std::vector<graph::NodeId>& nodes() const { return nodes_; }

  const uint64_t* succ_words(int i) const { return &succ_bits_[static_cast<size_t>(i) * words_]; }
  const uint64_t* pred_words(int i) const { return &pred_bits_[static_cast<size_t>(i) * words_]; }
  const std::vector<int>& preds(int i) const { return preds_[i]; }
  const std::vector<int>& succs(int i) const { return succs_[i]; }
  const std::vector<Input>& inputs(int i) const { return inputs_[i]; }
  uint64_t content_hash(int i) const { return content_[i]; }
  uint64_t merge_key(int i) const { return merge_key_[i]; }

  // A key equal for two blocks iff their local structures are identical op
  // by op (contents, internal edges with ports, which inputs share an
  // external tensor): then local index i of one corresponds to local index i
  // of the other and their DP solutions map onto each other.
  const std::vector<uint64_t>& structure_key() const { return structure_key_; }

 private:
  const graph::Graph* graph_ = nullptr;
  std::vector<graph::NodeId> nodes_;
  int words_ = 1;
  std::vector<uint64_t> succ_bits_, pred_bits_;
  std::vector<std::vector<int>> preds_, succs_;
  std::vector<std::vector<Input>> inputs_;
  std::vector<uint64_t> content_, merge_key_;
  std::vector<uint64_t> structure_key_;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BLOCK_GRAPH_H_
