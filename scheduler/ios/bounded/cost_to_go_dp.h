// The cost-to-go DP of the bounded search (bounded_block_search.h, "The bound
// DP"): one walk of a block's whole state graph that gives every state the
// shortest remaining schedule where each ending costs its group bound
// (BlockBounds::IdsBound), raised to the critical-path and floor terms
// (BlockBounds::PathCostToGo) where they are larger. A* takes it as its
// cost to go (BoundCosts), and several blocks of one shape share one walk
// (BoundedBlockSearch::WalkCostToGoDps).
//
// Why its own room: the walk is the search's largest CPU cost (NASNet-A's
// cells: hundreds of millions of endings), with its own tables, its own
// prefetching and its own budget, and it only reads the bounds. It is a
// template inlined into bounded_block_search.cc, the one file that
// instantiates it.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_COST_TO_GO_DP_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_COST_TO_GO_DP_H_

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/status.h"
#include "scheduler/ios/block_dp.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/bounded/best_ending_candidates.h"
#include "scheduler/ios/bounded/block_bounds.h"
#include "scheduler/ios/bounded/bounded_block_search.h"
#include "scheduler/ios/bounded/child_rows.h"
#include "scheduler/ios/bounded/prefetch_ring.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/op_bits.h"
#include "scheduler/ios/tables/op_bits_map.h"
#include "scheduler/ios/tables/table_mapping.h"

namespace iosfarm::scheduler::ios {

// What a walk leaves for A*: its states' rows and drops (shared by the
// searches of one walk).
template <int W>
struct WalkRows {
  OpBitsMap<W, int32_t> rows;
  std::optional<ChildRows<W>> drops;
  size_t memory_bytes() const { return rows.memory_bytes() + (drops ? drops->memory_bytes() : 0); }
};

// One search's cost-to-go DP costs to go, by the walk's row (every non-empty
// state has one). A*'s expansions follow an ending's child through the
// drops instead of hashing it (Row once, then drops()).
template <int W>
class BoundCosts {
 public:
  // Whether a walk gave this search its costs.
  bool walked() const { return rows_ != nullptr; }
  // The row of state `ops`, or -1 (no walk, or no such state).
  int32_t Row(const OpBits<W>& ops) const {
    if (rows_ == nullptr || ops.Empty()) return -1;
    const int32_t* row = rows_->rows.Find(ops, ops.Hash());
    return row != nullptr ? *row : -1;
  }
  double cost(int32_t row) const { return costs_[row]; }
  void Prefetch(int32_t row) const { __builtin_prefetch(&costs_[row], 0, 3); }
  // walked() only.
  const ChildRows<W>& drops() const { return *rows_->drops; }

  // The walk's result for this search.
  void Set(std::shared_ptr<const WalkRows<W>> rows, std::vector<double> costs) {
    rows_ = std::move(rows);
    costs_ = std::move(costs);
  }

  // The same costs by state, for a later block (of more than `ops` ops)
  // whose first ops are this block's (BoundedSearchOptions::prefix_bounds):
  // made at the first call; null before a walk. It outlives the search.
  std::shared_ptr<const BoundTable> Table(int ops) {
    if (!walked()) return nullptr;
    if (table_ == nullptr) {
      table_ = std::make_shared<TableOf>(ops);
      rows_->rows.ForEach([&](const OpBits<W>& state, int32_t row) {
        table_->costs.Insert(state, state.Hash(), costs_[row]);
      });
    }
    return table_;
  }

  // The costs of prefix_bounds `table` where it serves a block of `ops`
  // ops (of this width, of fewer ops), else null.
  static const OpBitsMap<W, double>* PrefixCosts(const BoundTable* table, int ops) {
    const auto* of_width = dynamic_cast<const TableOf*>(table);
    return of_width != nullptr && of_width->size < ops ? &of_width->costs : nullptr;
  }

  int64_t memory_bytes() const {
    return static_cast<int64_t>(costs_.capacity() * sizeof(double) +
                                (rows_ != nullptr ? rows_->memory_bytes() : 0));
  }

 private:
  struct TableOf final : BoundTable {
    explicit TableOf(int size) : size(size) {}
    int ops() const override { return size; }
    const int size;
    OpBitsMap<W, double> costs;
  };

  std::shared_ptr<const WalkRows<W>> rows_;
  std::vector<double> costs_;
  std::shared_ptr<TableOf> table_;
};

// A search's part in a walk: what the walk reads and where its results go.
template <int W>
struct CostToGoDpPart {
  const BlockGraph* block;
  const BoundedSearchOptions* options;
  BlockBounds<W>* bounds;  // prepared
  BoundCosts<W>* costs;    // the walk's result
  DpStats* stats;          // transitions, prefix_bound_states
  // The first part's only: it lists the endings (its budget check stops the
  // enumeration and sets *status), and its budget sees the walk's tables
  // (*walk_bytes) while it runs.
  EndingEnumerator<W>* enumerator;
  const Status* status;
  int64_t* walk_bytes;
};

template <int W>
class CostToGoDpWalk final : public CostToGoDpWalkInProgress {
 public:
  // The cost-to-go DP of `parts` (blocks of one shape; one where `alone`: a
  // search's own walk) in one walk of their state graph: every state's
  // shortest remaining schedule where each ending costs its group bound,
  // raised to the other terms of the cost to go (PathCostToGo) where they
  // are larger, in order of growing size (an ending's child is smaller).
  // Its states are ForEachRemainingSet's. The endings are enumerated and
  // the children's costs read once for all parts, each one's bounds taken
  // side by side. A walk `alone` takes the states its prefix block's table
  // holds from it (BoundCosts::PrefixCosts) and counts its transitions as
  // it goes (its budget sees them); a shared walk adds them to each part
  // once done. A walk stopped by the first's budget or the stop flag leaves
  // every part's costs untouched (the first has the error in *status), as
  // does a block of more states than cost_to_go_dp_max_states.
  static void Run(std::span<const CostToGoDpPart<W>> parts, bool alone) {
    std::unique_ptr<CostToGoDpWalk> walk = Start(parts, alone);
    if (walk != nullptr) walk->Continue(nullptr);
  }

  // Run in steps: the walk's tables, made here, then Continue. Null where
  // there is nothing to walk (no cost_to_go_dp_max_states, a block over
  // it, or billions of (state, sink) pairs). The parts' searches must
  // outlive the walk.
  static std::unique_ptr<CostToGoDpWalk> Start(std::span<const CostToGoDpPart<W>> parts,
                                               bool alone) {
    const CostToGoDpPart<W>& first = parts[0];
    const int64_t cap = first.options->cost_to_go_dp_max_states;
    if (cap <= 0) return nullptr;
    std::vector<OpBits<W>> states;
    ForEachRemainingSet<W>(*first.block, cap + 1,
                           [&](const OpBits<W>& set) { states.push_back(set); });
    if (static_cast<int64_t>(states.size()) > cap) return nullptr;
    std::stable_sort(states.begin(), states.end(),
                     [](const OpBits<W>& a, const OpBits<W>& b) { return a.Count() < b.Count(); });
    // The rows of every state are known before the walk, and their drops
    // (ChildRows) lead each ending to its child's row; both are kept for
    // A*'s expansions (WalkRows).
    auto walk_rows = std::make_shared<WalkRows<W>>();
    OpBitsMap<W, int32_t>& rows = walk_rows->rows;
    for (size_t row = 0; row < states.size(); ++row) {
      rows.Insert(states[row], states[row].Hash(), static_cast<int32_t>(row));
    }
    const ChildRows<W>& drops = walk_rows->drops.emplace(
        *first.block, states, [&](const OpBits<W>& set) { return *rows.Find(set, set.Hash()); });
    if (!drops.ok()) return nullptr;  // billions of (state, sink) pairs: as over the cap
    return std::unique_ptr<CostToGoDpWalk>(
        new CostToGoDpWalk(parts, alone, std::move(states), std::move(walk_rows)));
  }

  // Walks on, state by state, until the walk ends (true: each part has its
  // costs, or none has where the first's budget or stop flag stopped it)
  // or, after at least one state, `pause` (if any) says to stop (false:
  // call again; the tables stay and count against the first's budget).
  bool Continue(const std::function<bool()>& pause) override {
    const size_t first_row = next_row_;
    while (next_row_ < states_.size()) {
      if (pause && next_row_ > first_row && next_row_ % kRowsBetweenPauses == 0 && pause()) {
        return false;
      }
      if (counted_.progress != nullptr) {
        counted_.progress->states_walked.fetch_add(1, std::memory_order_relaxed);
        --counted_.left;
      }
      if (!WalkRow(next_row_++)) return true;
    }
    const size_t k_count = parts_.size();
    for (size_t k = 0; k < k_count; ++k) {
      std::vector<double> own(states_.size());
      for (size_t row = 0; row < states_.size(); ++row) own[row] = costs_[row * k_count + k];
      parts_[k].costs->Set(walk_rows_, std::move(own));
      parts_[k].stats->transitions += transitions_;
    }
    return true;
  }

  ~CostToGoDpWalk() override {
    *parts_[0].walk_bytes = 0;
    // The states left when it stops early count as walked.
    if (counted_.progress != nullptr) {
      counted_.progress->states_walked.fetch_add(counted_.left, std::memory_order_relaxed);
    }
  }

 private:
  // Rows walked between two looks at the pause callback (a row is a state:
  // microseconds to a tenth of a millisecond).
  static constexpr size_t kRowsBetweenPauses = 32;

  CostToGoDpWalk(std::span<const CostToGoDpPart<W>> parts, bool alone,
                 std::vector<OpBits<W>> states, std::shared_ptr<WalkRows<W>> walk_rows)
      : parts_(parts.begin(), parts.end()),
        alone_(alone),
        options_(*parts_[0].options),
        states_(std::move(states)),
        walk_rows_(std::move(walk_rows)),
        drops_(*walk_rows_->drops),
        costs_(states_.size() * parts_.size()),
        best_ending_(states_.size() * parts_.size()),
        best_(parts_.size()),
        limit_(parts_.size()),
        cut_(parts_.size()),
        no_costs_(parts_.size(), 0.0),
        s_(options_.dp.bounds.max_groups),
        pending_ids_(static_cast<size_t>(kPrefetchRingDepth) * s_),
        guesses_(*parts_[0].block, options_.dp.bounds),
        guess_ids_(static_cast<size_t>(s_)) {
    const CostToGoDpPart<W>& first = parts_[0];
    prefix_ = alone_ ? BoundCosts<W>::PrefixCosts(options_.prefix_bounds.get(), first.block->size())
                     : nullptr;
    if (prefix_ != nullptr) prefix_ops_ = OpBits<W>::FirstN(options_.prefix_bounds->ops());
    // A bound under every part's (LeastBound), taken first: for one
    // search it is the cheap part of its own, and drops most endings before
    // the call (NASNet-A's walks alone: 221 M calls become 9.9 M).
    std::vector<BlockBounds<W>*> bounds;
    for (const CostToGoDpPart<W>& part : parts_) bounds.push_back(part.bounds);
    shared_bound_ = BlockBounds<W>::SameKernels(bounds);
    if (shared_bound_) least_ = BlockBounds<W>::LeastTerms(bounds);
    // The walk's own tables count against the first's budget while it runs.
    *first.walk_bytes = static_cast<int64_t>(
        (states_.capacity() + best_ending_.capacity()) * sizeof(OpBits<W>) +
        costs_.memory_bytes() + walk_rows_->rows.memory_bytes() + drops_.memory_bytes());
    // The walk's states count into walk_progress as they are walked, and
    // those left when it stops early as well.
    counted_ = {options_.walk_progress, static_cast<int64_t>(states_.size())};
    if (counted_.progress != nullptr) {
      counted_.progress->states_total.fetch_add(counted_.left, std::memory_order_relaxed);
    }
  }

  // The costs of state `row`, one per part. False where the first's budget
  // stopped the walk.
  bool WalkRow(size_t row) {
    const CostToGoDpPart<W>& first = parts_[0];
    const std::vector<CostToGoDpPart<W>>& parts = parts_;
    const size_t k_count = parts.size();
    const OpBitsMap<W, int32_t>& rows = walk_rows_->rows;
    MappedArray<double>& costs = costs_;
    std::vector<OpBits<W>>& best_ending = best_ending_;
    // Locals, not members, in the loops below: the compiler keeps them in
    // registers across the stores of best endings (a member could alias them).
    double* const best = best_.data();
    double* const limit = limit_.data();
    double* const cut = cut_.data();
    const double* const no_costs = no_costs_.data();
    int32_t* const pending_ids = pending_ids_.data();
    int32_t* const guess_ids = guess_ids_.data();
    const bool shared_bound = shared_bound_;
    const std::vector<typename BlockBounds<W>::GroupTerms>& least = least_;
    PrefetchRing<Pending> pending;  // drained by the row's end
    BlockBounds<W>& first_bounds = *first.bounds;
    const int s = s_;
    const OpBits<W>& state = states_[row];
    const uint64_t state_hash = state.Hash();
    if (prefix_ != nullptr && state.SubsetOf(prefix_ops_)) {
      if (const double* cost = prefix_->Find(state, state_hash)) {
        costs[row] = std::max(*cost, first_bounds.PathCostToGo(state));
        ++first.stats->prefix_bound_states;
        return true;
      }
    }
    std::fill(best, best + k_count, kNever);
    // Each part's cutoff starts just above its least guess: the ending
    // its cost comes from stays under it (a guess is an ending listed
    // below too), and most others are dropped from the first on.
    std::fill(limit, limit + k_count, kNever);
    guesses_.ForEach(
        state,
        [&](const OpBits<W>& child) -> std::span<const OpBits<W>> {
          const int32_t* found = rows.Find(child, child.Hash());
          if (found == nullptr) return {};
          return {&best_ending[*found * k_count], k_count};
        },
        [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups) {
          const int found = first_bounds.GroupIds(groups, num_groups, guess_ids);
          const OpBits<W> child = state.Minus(ops);
          const int32_t* child_row = child.Empty() ? nullptr : rows.Find(child, child.Hash());
          if (found < num_groups || (!child.Empty() && child_row == nullptr)) return;
          for (size_t k = 0; k < k_count; ++k) {
            const double after = child_row ? costs[*child_row * k_count + k] : 0.0;
            limit[k] = std::min(limit[k], parts[k].bounds->IdsBound(ops, guess_ids, found,
                                                                    num_groups, limit[k] - after) +
                                              after);
          }
        });
    for (size_t k = 0; k < k_count; ++k) limit[k] = RoundingLimit(limit[k]);
    std::copy(limit, limit + k_count, cut);
    OpBits<W>* best_ops = &best_ending[row * k_count];
    // As an ending is listed, its child's costs are prefetched (a row of
    // a large table: a miss per ending was a third of the walk), and a
    // bound of the ending's for every block (LeastBound) is taken once: a
    // block whose cutoff it already reaches needs no bound of its own (it
    // would not lower the best). Taken here, kPrefetchRingDepth endings before
    // settle reads it, its chain of terms overlaps the enumeration.
    auto listed = [&](int slot) {
      Pending& ending = pending[slot];
      if (ending.row >= 0) {
        const char* begin = reinterpret_cast<const char*>(&costs[ending.row * k_count]);
        for (size_t line = 0; line < k_count * sizeof(double); line += 64) {
          __builtin_prefetch(begin + line, 0, 3);
        }
        __builtin_prefetch(begin + k_count * sizeof(double) - 1, 0, 3);
      }
      ending.shared = shared_bound ? first_bounds.LeastBound(least, &pending_ids[slot * s],
                                                             ending.found, ending.num_groups)
                                   : 0.0;
    };
    auto settle = [&](int slot) {
      const Pending& ending = pending[slot];
      const int32_t* ids = &pending_ids[slot * s];
      const double shared = ending.shared;
      const double* after = ending.row >= 0 ? &costs[ending.row * k_count] : no_costs;
      // The blocks the ending may lower, as bits, without a branch per
      // block: most endings lower none.
      for (size_t base = 0; base < k_count; base += 64) {
        const size_t end = std::min(k_count, base + 64);
        uint64_t lower = 0;
        for (size_t k = base; k < end; ++k) {
          lower |= uint64_t{shared + after[k] < cut[k]} << (k - base);
        }
        for (; lower != 0; lower &= lower - 1) {
          const size_t k = base + static_cast<size_t>(std::countr_zero(lower));
          const double value = parts[k].bounds->IdsBound(ending.ops, ids, ending.found,
                                                         ending.num_groups, cut[k] - after[k]) +
                               after[k];
          if (value < best[k]) {
            best[k] = value;
            best_ops[k] = ending.ops;
            cut[k] = std::min(value, limit[k]);
          }
        }
      }
    };
    const auto count = static_cast<int64_t>(ListEndings(first, state, drops_,
                                                        drops_.Root(static_cast<int32_t>(row)),
                                                        pending, pending_ids, settle, listed));
    (alone_ ? first.stats->transitions : transitions_) += count;
    if (!first.status->ok()) return false;
    for (size_t k = 0; k < k_count; ++k) {
      costs[row * k_count + k] = std::max(best[k], parts[k].bounds->PathCostToGo(state));
    }
    return true;
  }

  static constexpr double kNever = std::numeric_limits<double>::infinity();

  // An ending whose child's cost is still to be read.
  struct Pending {
    OpBits<W> ops;
    int num_groups, found;
    int32_t row;    // the child's row of costs, or -1 (empty)
    double shared;  // a bound under every part's
  };

  // Lists the endings of `state` (node `root` of `drops`) with the first
  // part's enumerator: each one's groups (by index: into ids, max_groups
  // per slot) and child's row go into a slot of `pending`, listed(slot) is
  // called, and settle(slot) kPrefetchRingDepth endings later (the table of costs is
  // far larger than the caches), and for the last ones at the end. Returns
  // the number of endings.
  template <typename Settle, typename Listed>
  static uint64_t ListEndings(const CostToGoDpPart<W>& first, const OpBits<W>& state,
                              const ChildRows<W>& drops, typename ChildRows<W>::Node root,
                              PrefetchRing<Pending>& pending, int32_t* ids,
                              Settle&& settle, Listed&& listed) {
    const int s = first.options->dp.bounds.max_groups;
    BlockBounds<W>& bounds = *first.bounds;
    auto list = [&](const OpBits<W>& ops, EndingGroup<W>* groups, int num_groups,
                    typename ChildRows<W>::Node child) {
      const int slot = pending.Next(settle);
      Pending& ending = pending[slot];
      ending.ops = ops;
      ending.row = child.row;
      ending.num_groups = num_groups;
      ending.found = bounds.GroupIds(groups, num_groups, &ids[slot * s]);
      listed(slot);
    };
    first.enumerator->EnumerateFollowing(state, drops, root, list);
    return pending.Drain(settle);
  }

  const std::vector<CostToGoDpPart<W>> parts_;
  const bool alone_;
  const BoundedSearchOptions& options_;  // the first's
  const std::vector<OpBits<W>> states_;  // in the order walked (by size)
  const std::shared_ptr<WalkRows<W>> walk_rows_;
  const ChildRows<W>& drops_;  // walk_rows_'s
  // Each state's row of costs, one per part, and per part the ending its
  // cost comes from (empty: none).
  MappedArray<double> costs_;
  std::vector<OpBits<W>> best_ending_;
  // Per part: the state's best so far, the cutoff its guesses give,
  // and the lesser of the two (an ending at or above it lowers nothing).
  std::vector<double> best_, limit_, cut_;
  const std::vector<double> no_costs_;  // the empty child's
  const int s_;                         // most groups per stage
  std::vector<int32_t> pending_ids_;
  const OpBitsMap<W, double>* prefix_ = nullptr;  // the prefix block's costs (alone only)
  OpBits<W> prefix_ops_;
  bool shared_bound_ = false;
  std::vector<typename BlockBounds<W>::GroupTerms> least_;
  BestEndingCandidates<W> guesses_;
  std::vector<int32_t> guess_ids_;
  int64_t transitions_ = 0;  // a shared walk's, added to each part once done
  struct Counted {
    WalkProgress* progress = nullptr;
    int64_t left = 0;  // states not walked yet
  } counted_;
  size_t next_row_ = 0;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_COST_TO_GO_DP_H_
