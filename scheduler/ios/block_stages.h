// BlockStages: signatures and canonical stages of a block's candidate stages.
//
// A candidate stage of a block is a set of its ops (an ending, endings.h);
// its groups are the connected components of that set. BlockStages splits a
// set into groups, hashes each group once per block (cached, with its
// external reads) and combines the group hashes into the stage's signature
// for either strategy (signature.h); on demand it builds the canonical Stage
// (CanonicalizeStage's order) that a request for that signature carries.
// Both searches over a block (the exhaustive DP of block_dp.h and the
// bounded search of bounded_block_search.h) name their stages through it.
//
// Usage: HashStage(ops) (the concurrent signature), then MergeSignature() or
// CanonicalStage(strategy) for the same ops. Reusable; not thread-safe; the
// BlockGraph must outlive it.
#ifndef IOSFARM_SCHEDULER_IOS_BLOCK_STAGES_H_
#define IOSFARM_SCHEDULER_IOS_BLOCK_STAGES_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/merge.h"
#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/op_bits_map.h"
#include "scheduler/ios/signature.h"
#include "scheduler/ios/stage.h"

namespace iosfarm::scheduler::ios {

template <int W>
class BlockStages {
 public:
  explicit BlockStages(const BlockGraph& block)
      : block_(block), local_k_(block.size(), -1), group_of_(block.size(), -1) {}

  // Splits `ops` into its groups (kept until the next call) and returns the
  // concurrent signature of the stage they form. The same ops twice in a row
  // (a search bounds a stage, then costs it) are split once.
  Signature HashStage(const OpBits<W>& ops) {
    if (has_last_ && ops == last_ops_) return last_signature_;
    const int num_groups = FindGroups(ops);
    group_bits_.assign(num_groups, OpBits<W>());
    ops.ForEach([&](int i) { group_bits_[group_of_[i]].Set(i); });
    group_hashes_.resize(num_groups);
    hasher_.Begin();
    for (int g = 0; g < num_groups; ++g) {
      const GroupInfo info = GroupFor(group_bits_[g]);
      group_hashes_[g] = info.hash;
      hasher_.AddGroup(info.hash, reads_.data() + info.reads_begin,
                       static_cast<int>(info.reads_count));
    }
    last_ops_ = ops;
    last_signature_ = hasher_.Finish(Strategy::kConcurrent);
    has_last_ = true;
    return last_signature_;
  }

  // The groups of the last HashStage's ops.
  const std::vector<OpBits<W>>& groups() const { return group_bits_; }

  // The merge signature of the last HashStage's ops.
  Signature MergeSignature() const { return hasher_.Finish(Strategy::kMerge); }

  // A merge needs two or more groups of one conv each, all of one merge
  // class (of the last HashStage's ops, which must be `ops`).
  bool IsMergeable(const OpBits<W>& ops) const {
    const int num_groups = static_cast<int>(group_bits_.size());
    if (num_groups < 2 || ops.Count() != num_groups) return false;
    const uint64_t key = block_.merge_key(ops.First());
    if (key == 0) return false;
    bool same = true;
    ops.ForEach([&](int i) { same = same && block_.merge_key(i) == key; });
    return same;
  }

  // The canonical stage of the last HashStage's groups (see
  // CanonicalizeStage): groups by hash then smallest node id, ops in
  // canonical order; a merge stage carries its merged conv.
  Stage CanonicalStage(Strategy strategy) {
    std::vector<int> order(group_bits_.size());
    for (size_t g = 0; g < order.size(); ++g) order[g] = static_cast<int>(g);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      if (group_hashes_[a] != group_hashes_[b]) return group_hashes_[a] < group_hashes_[b];
      return block_.node(group_bits_[a].First()) < block_.node(group_bits_[b].First());
    });
    Stage stage;
    stage.strategy = strategy;
    for (int g : order) {
      CanonicalizeGroup(group_bits_[g]);
      std::vector<graph::NodeId> by_k;
      group_bits_[g].ForEach([&](int i) { by_k.push_back(block_.node(i)); });
      std::vector<graph::NodeId> group;
      for (int k : canonicalizer_.canonical_order()) group.push_back(by_k[k]);
      stage.groups.push_back(std::move(group));
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

  // Bytes of the per-block group cache.
  size_t memory_bytes() const {
    return groups_.memory_bytes() + reads_.capacity() * sizeof(ExternalRead);
  }

 private:
  struct GroupInfo {
    uint64_t hash = 0;
    uint32_t reads_begin = 0;  // its external reads in reads_
    uint32_t reads_count = 0;
  };

  // The canonical hash and external reads of a group, cached per block.
  GroupInfo GroupFor(const OpBits<W>& bits) {
    const uint64_t key = bits.Hash();
    if (const GroupInfo* info = groups_.Find(bits, key)) return *info;
    GroupInfo info;
    info.hash = CanonicalizeGroup(bits);
    info.reads_begin = static_cast<uint32_t>(reads_.size());
    info.reads_count = static_cast<uint32_t>(canonicalizer_.external_reads().size());
    reads_.insert(reads_.end(), canonicalizer_.external_reads().begin(),
                  canonicalizer_.external_reads().end());
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

  // Labels the connected components of `ops` in group_of_; returns their
  // number.
  int FindGroups(const OpBits<W>& ops) {
    int num_groups = 0;
    ops.ForEach([&](int i) { group_of_[i] = -1; });
    ops.ForEach([&](int i) {
      if (group_of_[i] >= 0) return;
      stack_.assign(1, i);
      group_of_[i] = num_groups;
      while (!stack_.empty()) {
        const int x = stack_.back();
        stack_.pop_back();
        for (const std::vector<int>* adjacent : {&block_.preds(x), &block_.succs(x)}) {
          for (int y : *adjacent) {
            if (ops.Test(y) && group_of_[y] < 0) {
              group_of_[y] = num_groups;
              stack_.push_back(y);
            }
          }
        }
      }
      ++num_groups;
    });
    return num_groups;
  }

  const BlockGraph& block_;
  GroupCanonicalizer canonicalizer_;
  StageHasher hasher_;
  OpBitsMap<W, GroupInfo> groups_;
  std::vector<ExternalRead> reads_;
  std::vector<OpBits<W>> group_bits_;
  std::vector<uint64_t> group_hashes_;
  // The last HashStage (see there).
  OpBits<W> last_ops_;
  Signature last_signature_ = 0;
  bool has_last_ = false;
  std::vector<int> local_k_, group_of_, stack_;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BLOCK_STAGES_H_
