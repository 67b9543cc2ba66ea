// Stage signatures: a canonical, stable 64-bit hash of what a stage executes.
//
// The signature covers the strategy, every op's content (op_content.h: type,
// attributes, input/output shapes hence batch, weight shapes, dtype), the
// edges between the stage's ops (with input port and output index), the
// grouping into streams and the order of ops in each group, and which ops
// read the same external tensor. It never depends on node names, node ids, or
// the order in which groups or ops are listed: isomorphic stages anywhere, in
// any model, share one signature and one measurement.
//
// It is built compositionally, so that the DP can cache per-group work:
//  * Group hash (GroupCanonicalizer): labels refined Weisfeiler-Lehman style
//    over the group's DAG: up (content + labelled inputs), down (up +
//    labelled consumers), final (down + the multiset label of each external
//    tensor read, which captures sharing inside the group). The group is
//    laid out in a canonical topological order (ready op with the smallest
//    final label first) and hashed as that sequence with its internal edges.
//    Each external read gets a slot code (canonical op index, input port).
//  * Stage signature (StageHasher): version, strategy, number of groups, the
//    sum of mixed group hashes (a multiset hash: group order is irrelevant),
//    and for every external tensor read by two or more groups the multiset of
//    its (group hash, slot) readers.
// Isomorphic stages always get the same signature. Non-isomorphic ones differ
// unless the label refinement cannot tell them apart (highly symmetric
// sharing patterns, absent from CNN stages) or 64-bit hashes collide.
//
// Bump kSignatureVersion whenever the hashed content or the algorithm changes:
// it is mixed into every signature, so old database entries stop matching.
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_SIGNATURE_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_SIGNATURE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

using Signature = uint64_t;
inline constexpr uint64_t kSignatureVersion = 1;

// An external tensor read by a group: the tensor (any key identifying it,
// e.g. its ValueId) and the reading slot's code.
struct ExternalRead {
  int64_t tensor = 0;
  uint64_t slot = 0;
};

// Canonical hash of one group (a connected set of ops run in order on one
// stream). Reusable; keeps scratch memory. Not thread-safe.
//
// Usage: Begin(); for each op in a topological order of the group:
// AddOp(content) then its non-constant inputs in port order with
// AddInternalInput (producer = AddOp number of an op of this group) or
// AddExternalInput; then Finish().
class GroupCanonicalizer {
 public:
  void Begin();
  void AddOp(uint64_t content);
  void AddInternalInput(int port, int producer, int output_index);
  void AddExternalInput(int port, int64_t tensor_key);
  uint64_t Finish();

  // After Finish: op numbers in canonical execution order, and the external
  // reads with their slot codes (in canonical order).
  const std::vector<int>& canonical_order() const { return order_; }
  const std::vector<ExternalRead>& external_reads() const { return reads_; }

 private:
  struct Port {
    int op;
    int port;
    int producer;    // internal producer op, or -1 for external
    int output;      // output index of the producer
    int64_t tensor;  // external tensor key
  };
  std::vector<uint64_t> content_;
  std::vector<int> port_begin_;  // ports of op k: [port_begin_[k], port_begin_[k+1])
  std::vector<Port> ports_;
  std::vector<uint64_t> up_, down_acc_, down_, final_;
  std::vector<int64_t> ext_keys_;
  std::vector<uint64_t> ext_acc_;
  std::vector<int> ext_of_port_, pending_, canonical_index_, ready_, order_;
  std::vector<ExternalRead> reads_;
};

// Combines group hashes into a stage signature. Reusable. Not thread-safe.
//
// Usage: Begin(); AddGroup for each group (or AddPreparedGroup for each:
// one kind per stage); Finish.
class StageHasher {
 public:
  // An external read prepared once for many stages (a search caches its
  // groups): its tensor as a small dense index (any numbering of the
  // tensors, the same for every group added to one stage) and its reader
  // hash, ReaderHash(group hash, slot).
  struct PreparedRead {
    uint32_t tensor = 0;
    uint64_t reader = 0;
  };
  static uint64_t ReaderHash(uint64_t group_hash, uint64_t slot);

  void Begin();
  void AddGroup(uint64_t group_hash, const ExternalRead* reads, int num_reads);
  // AddGroup with prepared reads: the same signature, without searching the
  // stage's tensors for each read.
  void AddPreparedGroup(uint64_t group_hash, const PreparedRead* reads, int num_reads);
  // The signature for `strategy` (may be called for several strategies).
  Signature Finish(Strategy strategy) const;

 private:
  struct Tensor {
    int64_t key;
    uint64_t readers;  // sum of ReaderHash (group hash, slot)
    int last_group;
    bool shared;       // read by two or more groups
  };
  // A read of `tensor` (its entry in tensors_) by the group being added.
  void AddRead(Tensor& tensor, uint64_t reader);

  int num_groups_ = 0;
  uint64_t groups_sum_ = 0;
  std::vector<Tensor> tensors_;
  // AddPreparedGroup: per dense index, its entry in tensors_, valid where
  // its stamp is this stage's.
  uint32_t stage_stamp_ = 0;
  std::vector<uint32_t> stamp_, entry_;
};

// Signature of `stage`, and puts its groups and the ops of each group into
// canonical order (groups by group hash, ties by smallest node id; ops in the
// canonical execution order): two stages with one signature then list
// corresponding ops in the same places, and the listed order is the one the
// signature assumes. For merge stages the merged description is rebuilt in
// the canonical branch order. InvalidArgument (naming the node) when an op is
// out of range, a Constant or listed twice, or an edge joins two groups;
// FailedPrecondition when a merge stage's ops cannot merge. A single-core
// stage (Stage::single_core, concurrent only: InvalidArgument otherwise)
// gets SingleCoreSignature of its concurrent signature.
StatusOr<Signature> CanonicalizeStage(const graph::Graph& graph, Stage& stage);

// The signature of a single-core measurement (Stage::single_core) of the
// concurrent stage whose signature is `concurrent`: what CanonicalizeStage
// gives a stage with single_core set, without hashing it again.
Signature SingleCoreSignature(Signature concurrent);

// Signature of a copy of `stage` (see CanonicalizeStage).
StatusOr<Signature> StageSignature(const graph::Graph& graph, const Stage& stage);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_SIGNATURE_H_
