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
// Canonical form. Labels are refined Weisfeiler-Lehman style over the stage
// DAG: up (content + labelled inputs), down (up + labelled consumers), then
// final (down + the consumers-multiset label of every external tensor read).
// Each group is laid out in a canonical topological order (ready op with the
// smallest final label first) and hashed as that sequence with its internal
// edges; groups are sorted by their hash. Isomorphic stages always get the
// same signature; non-isomorphic ones differ unless the label refinement
// cannot tell them apart (only highly symmetric sharing patterns, absent from
// CNN stages) or 64-bit hashes collide.
//
// Bump kSignatureVersion whenever the hashed content or the algorithm changes:
// it is mixed into every signature, so old database entries stop matching.
#ifndef IOSFARM_SCHEDULER_IOS_SIGNATURE_H_
#define IOSFARM_SCHEDULER_IOS_SIGNATURE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stage.h"

namespace iosfarm::scheduler::ios {

using Signature = uint64_t;
inline constexpr uint64_t kSignatureVersion = 1;

// Incremental canonicaliser, reused across stages to avoid allocation (the
// DP calls it once per distinct candidate stage). Not thread-safe.
//
// Usage: Begin(strategy); for each op in a topological order of the stage:
// AddOp(content, group) then its inputs in port order with AddInternalInput /
// AddExternalInput (constant inputs are part of the content and are not
// added); then Finish(). Ops are numbered 0.. in AddOp order; groups are any
// small non-negative ids, and must be unions of connected components (an
// internal edge between groups is a programmer error).
class SignatureBuilder {
 public:
  void Begin(Strategy strategy);
  void AddOp(uint64_t content, int group);
  void AddInternalInput(int port, int producer, int output_index);
  void AddExternalInput(int port, int64_t tensor_key);
  Signature Finish();

  // After Finish: the group ids in canonical order, and for each group id
  // its ops (AddOp numbers) in canonical execution order.
  const std::vector<int>& canonical_groups() const { return group_order_; }
  const std::vector<int>& canonical_ops(int group) const { return group_ops_[group]; }

 private:
  struct Port {
    int op;
    int port;
    int producer;     // internal producer op, or -1 for external
    int output;       // output index of the producer
    int64_t tensor;   // external tensor key
  };
  Strategy strategy_ = Strategy::kConcurrent;
  std::vector<uint64_t> content_;
  std::vector<int> group_;
  std::vector<int> port_begin_;  // ports of op k: [port_begin_[k], port_begin_[k+1])
  std::vector<Port> ports_;
  // Scratch.
  std::vector<uint64_t> up_, down_acc_, down_, final_;
  std::vector<int64_t> ext_keys_;
  std::vector<uint64_t> ext_acc_;
  std::vector<int> ext_of_port_;
  std::vector<std::vector<int>> group_ops_;
  std::vector<uint64_t> group_hash_;
  std::vector<int> group_order_;
  std::vector<int> pending_preds_, canonical_index_, ready_;
};

// Signature of `stage`, and puts its groups and the ops of each group into
// canonical order (so two stages with one signature list corresponding ops in
// the same places, and the execution order the signature assumes is the
// listed one). For merge stages the merged description is rebuilt in the
// canonical branch order. InvalidArgument (naming the node) when an op is
// out of range, a Constant, listed twice, when an edge joins two groups or a
// group lists an op before one it reads, or (FailedPrecondition) when a merge
// stage's ops cannot merge.
StatusOr<Signature> CanonicalizeStage(const graph::Graph& graph, Stage& stage);

// Signature of a copy of `stage` (see CanonicalizeStage).
StatusOr<Signature> StageSignature(const graph::Graph& graph, const Stage& stage);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_SIGNATURE_H_
