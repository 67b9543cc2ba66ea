// How the A* search (a_star_search.h) expands a state (its endings in
// growing slices, ordered by key), bounds a stage by its measured
// sub-stages, costs an entry, looks ahead for a farm's batches, reaches a
// child and reads the schedule back. Internal to bounded_block_search.cc.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_A_STAR_EXPANSION_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_A_STAR_EXPANSION_H_

#include <algorithm>
#include <optional>
#include <vector>

#include "scheduler/ios/bounded/a_star_search.h"

namespace iosfarm::scheduler::ios::a_star {

// Puts the endings of closed_[index] of rank `from` on (ordered by key:
// the group bound and the parent's cost to go, then enumeration order)
// on the open list, as many as were before them (at least kFirstSlice),
// and a kMoreEndings entry for the rest. A state has up to thousands of
// endings and few of them are ever taken: listing them in growing slices
// keeps the open list small for O(log) re-enumerations per state. An
// enumeration also keeps the next slice (slice_cache_: its next
// expansion enumerates nothing) and finds the key of the last rank the
// enumeration after that needs (Closed::slice_key), which then takes no
// more of each bound (IdsBound's cutoff) than to see that an ending ranks
// past it: for most endings that skips the issue chains. The slices and
// the least key of the rest come out as if every bound were whole. A
// first expansion has no such key yet: it takes each bound only while the
// ending's key is under the kWholeRanks-th least whole key listed so far
// (that key only falls, so every rank it needs comes out whole).
template <int W>
void Search<W>::Expand(int32_t index, int32_t from) {
  if (from > 0 && closed_[index].cached_from == from) {
    PushCachedSlice(index);
    return;
  }
  const Closed parent = closed_[index];
  ranked_.clear();
  closed_[index].slice_key = kNever;
  if (parent.g + parent.h > upper_limit_) return;  // no ending can beat the incumbent
  const double slice_limit = from == 0 ? kNever : Limit(parent.slice_key);
  const int s = options_.dp.bounds.max_groups;
  expand_ids_.resize(static_cast<size_t>(kPrefetchRingDepth) * s);
  // With the cost-to-go DP, a child's cost to go is read kPrefetchRingDepth endings
  // after its slot is prefetched (the misses were half of the expansion);
  // the bound comes after it, cut off where the key passes the incumbent
  // or the slice.
  struct Pending {
    OpBits<W> ops, child;  // child: where it has no row
    int32_t row;           // the child's in costs_ (-1: none, or empty)
    int num_groups, found;
  };
  PrefetchRing<Pending> pending;
  double least_cut = kNever;  // the least key of an ending whose bound was cut off
  // A first expansion's least whole keys (a max-heap of up to kWholeRanks).
  whole_keys_.clear();
  auto settle = [&](int slot) {
    const Pending& ending = pending[slot];
    double h = 0;
    if (ending.row >= 0) {
      h = costs_.cost(ending.row);
    } else if (!ending.child.Empty()) {
      h = CostToGo(ending.child);  // (with a walk, a state's endings go by_row)
    }
    const bool first = from == 0;
    const double slice =
        first && whole_keys_.size() == kWholeRanks ? Limit(whole_keys_.front()) : slice_limit;
    const double to_limit = upper_limit_ - parent.g - h;
    const double to_slice = slice - parent.g - h;
    const double bound =
        bounds_.IdsBound(ending.ops, &expand_ids_[static_cast<size_t>(slot) * s], ending.found,
                         ending.num_groups, std::min(to_limit, to_slice));
    if (bound >= to_limit) return;
    const double key = parent.g + bound + h;
    if (ending.num_groups > 1 && bound >= to_slice) {
      least_cut = std::min(least_cut, key);
    } else if (first && (whole_keys_.size() < kWholeRanks || key < whole_keys_.front())) {
      whole_keys_.push_back(key);
      std::push_heap(whole_keys_.begin(), whole_keys_.end());
      if (whole_keys_.size() > kWholeRanks) {
        std::pop_heap(whole_keys_.begin(), whole_keys_.end());
        whole_keys_.pop_back();
      }
    }
    ranked_.push_back({key, bound, h, static_cast<int32_t>(ranked_.size()),
                       static_cast<int8_t>(ending.num_groups == 1), ending.ops});
  };
  auto list = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups) -> Pending& {
    const int slot = pending.Next(settle);
    Pending& ending = pending[slot];
    ending.ops = ops;
    ending.num_groups = num_groups;
    ending.found =
        bounds_.GroupIds(groups, num_groups, &expand_ids_[static_cast<size_t>(slot) * s]);
    return ending;
  };
  // With the walk's rows its drops lead each ending to its child's row (no
  // hashing); without, the child is hashed into the table of costs to go.
  auto by_row = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups,
                    typename ChildRows<W>::Node child) {
    Pending& ending = list(ops, groups, num_groups);
    ending.child = OpBits<W>();
    ending.row = child.row;
    if (child.row >= 0) costs_.Prefetch(child.row);
  };
  auto by_hash = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups) {
    Pending& ending = list(ops, groups, num_groups);
    ending.child = parent.ops.Minus(ops);
    ending.row = -1;
  };
  if (parent.row >= 0) {
    const ChildRows<W>& drops = costs_.drops();
    enumerator_.EnumerateFollowing(parent.ops, drops, drops.Root(parent.row), by_row);
  } else {
    enumerator_.Enumerate(parent.ops, by_hash);
  }
  const uint64_t listed = pending.Drain(settle);  // every ending enumerated
  if (from == 0) stats_.transitions += static_cast<int64_t>(listed);
  const size_t end = std::min(ranked_.size(), SliceEnd(from));
  if (static_cast<size_t>(from) >= ranked_.size()) return;
  // Only ranks [from, end] need their place: select, then sort the slice.
  if (end < ranked_.size()) {
    std::nth_element(ranked_.begin(), ranked_.begin() + end, ranked_.end(), ByKey);
    KeepNextSlices(index, end, least_cut);
  }
  std::nth_element(ranked_.begin(), ranked_.begin() + from, ranked_.begin() + end, ByKey);
  std::sort(ranked_.begin() + from, ranked_.begin() + end, ByKey);
  for (size_t i = from; i < end; ++i) PushRanked(index, parent.g, ranked_[i]);
  // The least key of the rest (nth_element).
  if (end < ranked_.size())
    PushMore(index, parent.g, ranked_[end].key, static_cast<int32_t>(end));
}

// After an enumeration whose ranks up to `end` have their place (ranked_,
// by key; least_cut: the least key whose bound was cut off): keeps the
// slice from `end` (with the least of the rest after it) for the state's
// next expansion where its bounds are whole, and records the key of the
// last rank the enumeration after that one needs whole.
template <int W>
void Search<W>::KeepNextSlices(int32_t index, size_t end, double least_cut) {
  auto whole_through = [&](size_t rank) { return ranked_[rank].key < least_cut; };
  const size_t size = ranked_.size();
  const size_t cache_end = SliceEnd(end);  // the kept slice: [end, cache_end)
  // The enumeration after it lists [cache_end, next_end) and keeps the
  // slice to key_end; without a kept slice the next one lists
  // [end, cache_end) and keeps the slice to next_end.
  const size_t next_end = SliceEnd(cache_end);
  const size_t key_end = SliceEnd(next_end);
  Closed& state = closed_[index];
  if (cache_end < size) {
    std::nth_element(ranked_.begin() + end + 1, ranked_.begin() + cache_end, ranked_.end(),
                     ByKey);
  }
  const bool keep = cache_end < size ? whole_through(cache_end) : least_cut == kNever;
  const size_t needed_end = keep ? key_end : next_end;
  if (needed_end < size) {
    const size_t after = cache_end < size ? cache_end + 1 : size;
    if (after < needed_end) {
      std::nth_element(ranked_.begin() + after, ranked_.begin() + needed_end, ranked_.end(),
                       ByKey);
    }
    if (whole_through(needed_end)) state.slice_key = ranked_[needed_end].key;
  }
  if (!keep) return;
  const size_t last = std::min(cache_end + 1, size);  // with the least of the rest
  std::sort(ranked_.begin() + end, ranked_.begin() + std::min(cache_end, size), ByKey);
  std::vector<Ranked>& slice = slice_cache_[index];
  slice.assign(ranked_.begin() + end, ranked_.begin() + last);
  slice_cache_bytes_ += static_cast<int64_t>(slice.capacity() * sizeof(Ranked));
  state.cached_from = static_cast<int32_t>(end);
}

// Expand from the slice KeepNextSlices kept: the entries still under the
// incumbent, and the rest's kMoreEndings entry.
template <int W>
void Search<W>::PushCachedSlice(int32_t index) {
  auto it = slice_cache_.find(index);
  const std::vector<Ranked> slice = std::move(it->second);
  slice_cache_.erase(it);
  slice_cache_bytes_ -= static_cast<int64_t>(slice.capacity() * sizeof(Ranked));
  Closed& state = closed_[index];
  const int32_t from = state.cached_from;
  state.cached_from = -1;
  // The slice from `from`, and the least of the rest where it has more.
  const size_t listed = std::min(slice.size(), SliceEnd(from) - from);
  auto under_limit = [&](const Ranked& ranked) {
    return ranked.bound < upper_limit_ - state.g - ranked.h;  // as the enumeration keeps it
  };
  for (size_t i = 0; i < listed; ++i) {
    if (under_limit(slice[i])) PushRanked(index, state.g, slice[i]);
  }
  if (slice.size() > listed && under_limit(slice.back())) {
    PushMore(index, state.g, slice.back().key, from + static_cast<int32_t>(listed));
  }
}

// The largest concurrent latency known in this block of a stage made of
// some of `stage`'s groups (of all but one where it has many): a lower
// bound of its concurrent latency when adding a group never makes a stage
// faster. 0 for a stage that takes no such bound (TakesSubStageBound).
template <int W>
double Search<W>::SubStageBound(const OpBits<W>& stage) {
  if (!options_.sub_stage_bound) return 0;
  stages_.HashStage(stage);
  const std::vector<OpBits<W>>& groups = stages_.groups();
  const int k = static_cast<int>(groups.size());
  if (!TakesSubStageBound(block_, stage, k, options_.dp.enable_merge)) return 0;
  double bound = 0;
  if (k > kMaxSubsetGroups) {  // all but one group only
    for (const OpBits<W>& group : groups) {
      const OpBits<W> rest = stage.Minus(group);
      if (const double* known = evaluated_.Find(rest, rest.Hash())) {
        bound = std::max(bound, *known);
      }
    }
    return bound;
  }
  // Every proper subset of two or more groups (Gray-code order: one group
  // in or out per step).
  OpBits<W> subset;
  int count = 0;
  for (uint32_t i = 1; i < (1u << k) - 1; ++i) {
    const int flip = __builtin_ctz(i);
    const bool in = ((i ^ (i >> 1)) >> flip) & 1;
    if (in) {
      subset |= groups[flip];
      ++count;
    } else {
      subset = subset.Minus(groups[flip]);
      --count;
    }
    if (count < 2) continue;
    if (const double* known = evaluated_.Find(subset, subset.Hash())) {
      bound = std::max(bound, *known);
    }
  }
  return bound;
}

// The latency of the entry's stage (the cheaper strategy; *merge says
// which, *concurrent_ms gives the concurrent one), or nullopt while one is
// unknown (waiting_ names them).
template <int W>
std::optional<double> Search<W>::Evaluate(const Entry& entry, LatencySource& source, bool* merge, double* concurrent_ms) {
  const Signature concurrent = stages_.HashStage(entry.stage);
  const bool mergeable = options_.dp.enable_merge && stages_.IsMergeable(entry.stage);
  const Signature merged = mergeable ? stages_.MergeSignature() : 0;
  const uint64_t hash = entry.stage.Hash();
  if (looked_up_.Find(entry.stage, hash) == nullptr) {
    looked_up_.Insert(entry.stage, hash, 1);
    stats_.distinct_stages += 1 + mergeable;
    stats_.merge_stages += mergeable;
  }
  std::optional<double> latency = Lookup(entry.stage, concurrent, Strategy::kConcurrent, source);
  std::optional<double> merge_latency;
  if (mergeable) merge_latency = Lookup(entry.stage, merged, Strategy::kMerge, source);
  if (!latency) waiting_.push_back(concurrent);
  if (mergeable && !merge_latency) waiting_.push_back(merged);
  if (!latency || (mergeable && !merge_latency)) return std::nullopt;
  *concurrent_ms = *latency;
  *merge = mergeable && *merge_latency < *latency;
  return *merge ? *merge_latency : *latency;
}

// Looks up the latencies of the next `lookahead` entries after the top
// (queueing requests for the unknown ones) and leaves the list as it was.
template <int W>
void Search<W>::LookAhead(LatencySource& source) {
  std::vector<Entry> taken;
  while (static_cast<int>(taken.size()) <= options_.lookahead && !open_.empty()) {
    taken.push_back(open_.front());
    PopTop();
  }
  for (size_t i = 1; i < taken.size(); ++i) {
    if (taken[i].kind != Kind::kUnevaluated) continue;
    bool merge = false;
    double concurrent_ms = 0;
    std::vector<Signature> keep;
    keep.swap(waiting_);
    Evaluate(taken[i], source, &merge, &concurrent_ms);
    keep.swap(waiting_);
  }
  for (const Entry& entry : taken) Restore(entry);
}

// Takes the evaluated entry's child off the open list: closes it the
// first time (its g is then optimal) and expands it, or finishes.
template <int W>
void Search<W>::Reach(const Entry& entry) {
  const OpBits<W> child = closed_[entry.parent].ops.Minus(entry.stage);
  Closed state;
  state.ops = child;
  state.g = entry.g;
  state.h = entry.h;
  state.parent = entry.parent;
  state.stage = entry.stage;
  state.cost = entry.cost;
  state.merge = entry.merge;
  state.sequential = closed_[entry.parent].sequential;
  entry.stage.ForEach([&](int v) { state.sequential -= bounds_.single_latency(v); });
  // The stages after the state, then its ops one by one: a schedule whose
  // every latency is known, so the open list can drop what costs more.
  const double incumbent = Limit(state.g + std::max(0.0, state.sequential));
  const bool better = incumbent < upper_limit_;
  if (better) upper_limit_ = incumbent;
  if (child.Empty()) {
    closed_.push_back(state);
    Finish(static_cast<int32_t>(closed_.size()) - 1);
    return;
  }
  const uint64_t hash = child.Hash();
  if (closed_index_.Find(child, hash) != nullptr) return;
  state.row = costs_.Row(child);
  closed_.push_back(state);
  const int32_t index = static_cast<int32_t>(closed_.size()) - 1;
  if (better) incumbent_ = index;
  closed_index_.Insert(child, hash, index);
  Expand(index);
}

// Reads the schedule back from closed_[last] (the goal, or the incumbent
// when nothing cheaper is left): its ops one by one in block order, then
// the stages that lead from it back to the root (the walk gives them in
// execution order: the root's stage is the schedule's last). -1: an
// empty block.
template <int W>
void Search<W>::Finish(int32_t last) {
  solution_ = BlockSolution();
  solution_.complete = true;
  auto add = [&](const OpBits<W>& ops, bool merge, double latency) {
    PlannedStage planned;
    planned.stage = stages_.BuildStage(ops, merge ? Strategy::kMerge : Strategy::kConcurrent,
                                       &planned.signature);
    planned.latency_ms = latency;
    solution_.latency_ms += latency;
    solution_.stages.push_back(std::move(planned));
  };
  if (last >= 0) {
    closed_[last].ops.ForEach([&](int v) {
      OpBits<W> op;
      op.Set(v);
      add(op, false, bounds_.single_latency(v));
    });
  }
  for (int32_t at = last; at >= 0 && closed_[at].parent >= 0; at = closed_[at].parent) {
    add(closed_[at].stage, closed_[at].merge, closed_[at].cost);
  }
  Solved();
}

}  // namespace iosfarm::scheduler::ios::a_star

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_A_STAR_EXPANSION_H_
