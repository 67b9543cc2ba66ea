// BlockStages: signatures and canonical stages of a block's candidate stages.
//
// A candidate stage of a block is a set of its ops (an ending, endings.h);
// its groups are the connected components of that set. BlockStages splits a
// set into groups (bit operations over each op's neighbours), canonicalises
// each group once per block (cached: its hash, external reads and canonical
// op order) and combines the group hashes into the stage's signature for
// either strategy (signature.h); on demand it builds the canonical Stage
// (CanonicalizeStage's order) that a request for that signature carries from
// the cached orders. Blocks of one shape (SameShape) split a set into the
// same groups: HashStageAs takes another block's split.
// Both searches over a block (the exhaustive DP of block_dp.h and the
// bounded search of bounded_block_search.h) name their stages through it.
//
// Usage: HashStage(ops) (the concurrent signature), then MergeSignature() or
// CanonicalStage(strategy) for the same ops. Reusable; not thread-safe; the
// BlockGraph must outlive it.
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_BLOCK_STAGES_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_BLOCK_STAGES_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/stages/op_components.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stage.h"
#include "scheduler/ios/tables/op_bits_map.h"

namespace iosfarm::scheduler::ios {

// A merge needs two or more groups of one conv each, all of one merge class:
// whether the `num_groups` groups whose ops are `ops` are such.
template <int W>
bool IsMergeableStage(const BlockGraph& block, const OpBits<W>& ops, int num_groups) {
  if (num_groups < 2 || ops.Count() != num_groups) return false;
  const uint64_t key = block.merge_key(ops.First());
  if (key == 0) return false;
  bool same = true;
  ops.ForEach([&](int i) { same = same && block.merge_key(i) == key; });
  return same;
}

// Whether the bounded search bounds the concurrent stage of `ops`, of
// `num_groups` groups, by its measured sub-stages (BoundedSearchOptions::
// sub_stage_bound) and the bound audit checks it there: three or more
// groups (a pair's sub-stages are its groups, whose bound it has already),
// and not mergeable where merges are on (the assumption bounds a merged
// conv by its slowest conv only, so the stage's cost, the cheaper strategy,
// keeps the group bound).
template <int W>
bool TakesSubStageBound(const BlockGraph& block, const OpBits<W>& ops, int num_groups,
                        bool enable_merge) {
  return num_groups >= 3 && !(enable_merge && IsMergeableStage(block, ops, num_groups));
}

template <int W>
class BlockStages {
 public:
  explicit BlockStages(const BlockGraph& block)
      : block_(block), local_k_(block.size(), -1), adjacent_(block.size()) {
    for (int i = 0; i < block.size(); ++i) {
      adjacent_[i] =
          OpBits<W>::FromWords(block.succ_words(i)) | OpBits<W>::FromWords(block.pred_words(i));
    }
  }

  // Splits `ops` into its groups (kept until the next call) and returns the
  // concurrent signature of the stage they form. The same ops twice in a row
  // (a search bounds a stage, then costs it) are split once.
  Signature HashStage(const OpBits<W>& ops) {
    if (has_last_ && ops == last_ops_) return last_signature_;
    FindGroups(ops);
    return HashGroups(ops);
  }

  // HashStage(ops) for a block of the same shape (SameShape) as `split`'s:
  // where split's last HashStage was of `ops`, its groups are taken, not
  // found again.
  Signature HashStageAs(const OpBits<W>& ops, const BlockStages& split) {
    if (has_last_ && ops == last_ops_) return last_signature_;
    if (split.has_last_ && split.last_ops_ == ops) {
      group_bits_ = split.group_bits_;
    } else {
      FindGroups(ops);
    }
    return HashGroups(ops);
  }

  // The groups of the last HashStage's ops.
  const std::vector<OpBits<W>>& groups() const { return group_bits_; }

  // The merge signature of the last HashStage's ops.
  Signature MergeSignature() const { return hasher_.Finish(Strategy::kMerge); }

  // IsMergeableStage of the last HashStage's ops, which must be `ops`.
  bool IsMergeable(const OpBits<W>& ops) const {
    return IsMergeableStage(block_, ops, static_cast<int>(group_bits_.size()));
  }

  // The canonical stage of the last HashStage's groups (see
  // CanonicalizeStage): groups by hash then smallest node id, ops in
  // canonical order; a merge stage carries its merged conv.
  Stage CanonicalStage(Strategy strategy) {
    const int num_groups = static_cast<int>(group_bits_.size());
    int order[kMaxSortedGroups];
    std::vector<int> more;  // a stage of more groups than kMaxSortedGroups
    int* sorted = order;
    if (num_groups > kMaxSortedGroups) {
      more.resize(num_groups);
      sorted = more.data();
    }
    for (int g = 0; g < num_groups; ++g) sorted[g] = g;
    std::sort(sorted, sorted + num_groups, [&](int a, int b) {
      return SortKey(group_infos_[a], group_bits_[a]) < SortKey(group_infos_[b], group_bits_[b]);
    });
    Stage stage;
    stage.strategy = strategy;
    stage.groups.resize(num_groups);
    for (int s = 0; s < num_groups; ++s) {
      const int g = sorted[s];
      const GroupInfo& info = group_infos_[g];
      by_k_.clear();
      group_bits_[g].ForEach([&](int i) { by_k_.push_back(block_.node(i)); });
      std::vector<graph::NodeId>& group = stage.groups[s];
      group.reserve(by_k_.size());
      for (uint32_t j = 0; j < info.order_count; ++j) {
        group.push_back(by_k_[orders_[info.order_begin + j]]);
      }
    }
    if (strategy == Strategy::kMerge) {
      std::vector<graph::NodeId> convs;
      for (const auto& group : stage.groups) convs.push_back(group[0]);
      StatusOr<MergedConv> merged = MergeConvs(block_.graph(), convs);
      if (merged.ok()) stage.merged = *std::move(merged);  // else the oracle reports it
    }
    return stage;
  }

  // The stage of `ops` under `strategy` and its signature.
  Stage BuildStage(const OpBits<W>& ops, Strategy strategy, Signature* signature) {
    *signature = HashStage(ops);
    if (strategy == Strategy::kMerge) *signature = MergeSignature();
    return CanonicalStage(strategy);
  }

  // The key CanonicalStage orders a stage's groups by (its canonical hash,
  // then its first op's node id) of the group `bits` (one connected group),
  // and its ops in the order CanonicalStage gives them (block-local
  // indices), appended to *order.
  std::pair<uint64_t, graph::NodeId> GroupOrder(const OpBits<W>& bits, std::vector<int>* order) {
    const GroupInfo info = GroupFor(bits);
    std::vector<int> by_k;
    bits.ForEach([&](int i) { by_k.push_back(i); });
    for (uint32_t j = 0; j < info.order_count; ++j) {
      order->push_back(by_k[orders_[info.order_begin + j]]);
    }
    return SortKey(info, bits);
  }

  // Bytes of the per-block group cache.
  size_t memory_bytes() const {
    return groups_.memory_bytes() + reads_.capacity() * sizeof(StageHasher::PreparedRead) +
           orders_.capacity() * sizeof(int) +
           tensor_index_.capacity() * (sizeof(std::pair<int64_t, uint32_t>) + 1);
  }

 private:
  struct GroupInfo {
    uint64_t hash = 0;
    uint32_t reads_begin = 0;  // its external reads in reads_, prepared
    uint32_t reads_count = 0;
    uint32_t order_begin = 0;  // its canonical op order in orders_
    uint32_t order_count = 0;
  };
  // CanonicalStage sorts this many groups on the stack.
  static constexpr int kMaxSortedGroups = 64;

  // Where a group goes in its stage's canonical order.
  std::pair<uint64_t, graph::NodeId> SortKey(const GroupInfo& info, const OpBits<W>& bits) const {
    return {info.hash, block_.node(bits.First())};
  }

  // The canonical hash and external reads of a group, cached per block.
  GroupInfo GroupFor(const OpBits<W>& bits) {
    const uint64_t key = bits.Hash();
    if (const GroupInfo* info = groups_.Find(bits, key)) return *info;
    GroupInfo info;
    info.hash = CanonicalizeGroup(bits);
    info.reads_begin = static_cast<uint32_t>(reads_.size());
    info.reads_count = static_cast<uint32_t>(canonicalizer_.external_reads().size());
    for (const ExternalRead& read : canonicalizer_.external_reads()) {
      const auto [it, inserted] =
          tensor_index_.try_emplace(read.tensor, static_cast<uint32_t>(tensor_index_.size()));
      reads_.push_back({it->second, StageHasher::ReaderHash(info.hash, read.slot)});
    }
    info.order_begin = static_cast<uint32_t>(orders_.size());
    info.order_count = static_cast<uint32_t>(canonicalizer_.canonical_order().size());
    orders_.insert(orders_.end(), canonicalizer_.canonical_order().begin(),
                   canonicalizer_.canonical_order().end());
    groups_.Insert(bits, key, info);
    return info;
  }

  // Runs the canonicaliser over the group `bits` (ops in local, hence
  // topological, order) and returns its hash.
  uint64_t CanonicalizeGroup(const OpBits<W>& bits) {
    canonicalizer_.Begin();
    int k = 0;
    bits.ForEach([&](int i) {
      local_k_[i] = k++;
      canonicalizer_.AddOp(block_.content_hash(i));
      for (const BlockGraph::Input& input : block_.inputs(i)) {
        if (input.producer >= 0 && bits.Test(input.producer)) {
          canonicalizer_.AddInternalInput(input.port, local_k_[input.producer], input.output);
        } else {
          canonicalizer_.AddExternalInput(input.port, input.value);
        }
      }
    });
    return canonicalizer_.Finish();
  }

  // The signature of `ops`, split into group_bits_.
  Signature HashGroups(const OpBits<W>& ops) {
    const int num_groups = static_cast<int>(group_bits_.size());
    group_infos_.resize(num_groups);
    hasher_.Begin();
    for (int g = 0; g < num_groups; ++g) {
      const GroupInfo info = GroupFor(group_bits_[g]);
      group_infos_[g] = info;
      hasher_.AddPreparedGroup(info.hash, reads_.data() + info.reads_begin,
                               static_cast<int>(info.reads_count));
    }
    last_ops_ = ops;
    last_signature_ = hasher_.Finish(Strategy::kConcurrent);
    has_last_ = true;
    return last_signature_;
  }

  // The connected components of `ops` into group_bits_, ordered by their
  // smallest op.
  void FindGroups(const OpBits<W>& ops) {
    group_bits_.clear();
    OpBits<W> rest = ops;
    while (!rest.Empty()) {
      const OpBits<W> group = ComponentOf(rest.First(), rest, adjacent_);
      group_bits_.push_back(group);
      rest = rest.Minus(group);
    }
  }

  const BlockGraph& block_;
  GroupCanonicalizer canonicalizer_;
  StageHasher hasher_;
  OpBitsMap<W, GroupInfo> groups_;
  std::vector<StageHasher::PreparedRead> reads_;
  absl::flat_hash_map<int64_t, uint32_t> tensor_index_;  // tensor -> dense index
  // The canonical op orders of the cached groups.
  std::vector<int> orders_;
  std::vector<OpBits<W>> group_bits_;
  std::vector<GroupInfo> group_infos_;  // of the last HashStage's groups
  std::vector<graph::NodeId> by_k_;
  // The last HashStage (see there).
  OpBits<W> last_ops_;
  Signature last_signature_ = 0;
  bool has_last_ = false;
  std::vector<int> local_k_;
  std::vector<OpBits<W>> adjacent_;  // per op: its predecessors and successors
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_BLOCK_STAGES_H_
