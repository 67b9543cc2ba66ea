// BoundedBlockSearch: the IOS search of one block that measures only the
// stages that can still change its optimal schedule.
//
// The exhaustive DP (block_dp.h) needs the latency of every candidate stage
// of every reachable state. This search is A* over the same state graph (a
// state is the set of ops still to schedule, an edge removes one ending as
// the last stage, the goal is the empty set) with lower bounds and lazy
// edge evaluation:
//
//  * Group bounds. Every group a stage can have (a connected, convex set of
//    at most r ops) is measured first, as a one-group stage, in one wide
//    batch. A candidate stage is bounded by its slowest group alone and,
//    once a stage of some of its groups has been measured in the block
//    (sub_stage_bound), by that stage's concurrent latency.
//  * The cost to go h(S): the heaviest dependency path inside S, each op
//    weighing the least per-op latency of any group that holds it; for a
//    block of at most cost_to_go_dp_max_states states, the larger of that
//    and the cost-to-go DP (cost_to_go_dp.h): the DP over the whole state
//    graph with every ending weighed by its bound, walked once before the
//    search. Both are consistent under the assumption.
//  * A core bound (cores >= 2: a device that runs a stage's groups on cores
//    of their own, the cpu backend): every group is also measured on one
//    core; a stage is bounded by its groups' one-core latencies over the
//    cores, and by its slowest group's over the most cores one of its lanes
//    gets; the cost to go by the remaining ops' work over the cores.
//  * A device floor (device_floor, device_floor.h): a stage of two or more
//    groups that does not merge costs at least its launches, its work at the
//    device's peak and, with a known issue order, its groups' kernel chains
//    (issued_chains_floor.h); the cost to go takes the same over the
//    remaining ops.
//  * Lazy edges. A state's endings enter the open list keyed by their
//    bounds, in growing slices; a stage is measured only when its entry
//    reaches the top of the list. The first time the goal leaves the list,
//    its schedule is optimal. Every closed state also gives a fully measured
//    schedule (the incumbent); entries above it are dropped.
//
// EXACTNESS: under the assumption stated once in bounded/README.md (no stage
// is faster than any of these bounds), the schedule's latency equals the
// exhaustive DP's (ties may pick another schedule of the same latency).
// Where a measurement breaks it, the schedule is still valid, possibly
// slower; DpStats counts the stages measured below their bound and the
// largest shortfall (lower_bound_misses, largest_bound_miss_ms).
//
// Past max_open_steps (where the bounds are loose, the open list grows to
// millions of entries) the search stops with a SearchBudgetError and
// SearchSession solves that block with the exhaustive DP instead. Where the
// search pays and where it does not, with figures: bounded/README.md and
// docs/search-design.md.
//
// Batches for a farm: when the search stops at an unknown latency it also
// looks up the latencies of the next `lookahead` entries of its open list,
// so that a caller queueing requests (SearchSession) hands out batches that
// keep several GPUs busy; a wider lookahead measures more stages that turn
// out not to matter. With a source that measures on the spot it never stops.
//
// The same known latencies give the same schedule however they arrive
// (before the search or while it waits), so a search resumed after a restart
// with its latencies from a database takes the same path and asks for
// nothing again.
//
// Where it lives: the bounds (the groups, an ending's bound, the path and
// floor cost to go) in block_bounds.h, the cost-to-go DP's walk and its
// table in cost_to_go_dp.h, A* itself in a_star_search.h and
// a_star_expansion.h, instantiated by bounded_block_search.cc only, so that
// the hot loops inline across them.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_BOUNDED_BLOCK_SEARCH_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_BOUNDED_BLOCK_SEARCH_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "common/status.h"
#include "scheduler/ios/block_dp.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/stages/signature.h"

namespace iosfarm::scheduler::ios {

// The cost-to-go DP's costs to go of a solved search (BoundedBlockSearch::
// bound_table()), for a later block whose first ops are that block's
// (BoundedSearchOptions::prefix_bounds).
class BoundTable {
 public:
  virtual ~BoundTable() = default;
  // Ops of the block it was walked for.
  virtual int ops() const = 0;
};

// How far the cost-to-go DP's walks have come, over every walk that counts into
// it (BoundedSearchOptions::walk_progress): the states of the walks begun,
// and of those the states walked (a walk that stops early counts the rest
// as walked). Read from any thread, e.g. by a progress line.
struct WalkProgress {
  std::atomic<int64_t> states_total{0};
  std::atomic<int64_t> states_walked{0};
};

// A cost-to-go DP walk under way (BoundedBlockSearch::StartCostToGoDpWalk,
// or a search's own walk): it walks its states in order and can stop
// between two of them, keeping its tables, so that a caller with a time
// slice (a farm's enumerate phase) gives its CPU back without losing the
// walk. The schedule does not depend on where it stopped.
class CostToGoDpWalkInProgress {
 public:
  virtual ~CostToGoDpWalkInProgress() = default;
  // Walks on until the walk ends (true) or, after at least one state,
  // `pause` (if set) says to stop (false: call again).
  virtual bool Continue(const std::function<bool()>& pause) = 0;
};

struct BoundedSearchOptions {
  // Bounds, merge and the budget of the whole block search (max_states
  // counts expanded states, max_transitions enumerated endings, max_bytes
  // the open list, the closed states, the group tables, the cost-to-go DP's
  // table and, while it runs, its walk's own tables).
  DpOptions dp;
  // Further open-list entries whose latencies are looked up when the search
  // stops at an unknown one (0: only the one it needs).
  int lookahead = 0;
  // Groups measured for the bounds, at most (a block at large r has too
  // many); past it a SearchBudgetError.
  int64_t max_groups = 1'000'000;
  // Entries taken off the open list, at most (0: no limit); past it a
  // SearchBudgetError. Where the bounds are loose the open list grows to
  // millions of entries and the search costs more CPU than the exhaustive
  // DP: SearchSession then solves the block with the DP instead.
  int64_t max_open_steps = 0;
  // The device's cores where it runs a stage's groups on cores of their own
  // (SearchOptions::cores): with 2 or more, the core bound below. 0: none.
  int cores = 0;
  // A concurrent stage of three or more groups is also bounded by the
  // stages of some of its groups measured so far (SearchOptions::
  // sub_stage_bound).
  bool sub_stage_bound = true;
  // A block of at most this many DP states (CountStates) takes as its cost
  // to go the cost-to-go DP (above) where it is more than the critical path.
  // 0: the critical path (and work) bound only.
  int64_t cost_to_go_dp_max_states = 0;
  // What the device never beats (device_floor.h; all zeros: nothing): a
  // concurrent stage of two or more groups that does not merge is bounded by
  // its floor too, and the cost to go by the remaining ops' floor (their
  // kernels' issue and work, and a stage's floor for each stage they need at
  // least). Exact under the assumption that no stage beats it.
  DeviceFloor device_floor;
  // Advance stops once the groups are measured, before the cost-to-go DP's walk
  // (paused_before_cost_to_go_dp()), so that WalkCostToGoDps can walk it for
  // several blocks of one shape at once; the next Advance goes on (and
  // walks it alone if WalkCostToGoDps did not). Only with cost_to_go_dp_max_states.
  bool pause_before_cost_to_go_dp = false;
  // The bound table of an earlier block identical to this block's first
  // prefix_bounds->ops() ops (which no later op of this block precedes:
  // SearchSession::FindPrefix), searched with these options and the same
  // latencies. The cost-to-go DP takes each state made of those ops alone from
  // it, the larger of its cost and this block's path bound, and walks only
  // the states that hold a later op (NASNet-A's size cut leaves a cell and
  // the next cell's first op: one state of its own instead of a walk of
  // 200 M transitions). That cost is a lower bound of the state's schedule
  // under the assumption (the earlier block's bounds are of the same ops'
  // stages), and consistent (the earlier block's recurrence), so the search
  // stays exact; its schedule can differ from the one its own walk gives
  // only among schedules of equal latency. Ignored for a table of another
  // width, or of as many ops as this block or more.
  std::shared_ptr<const BoundTable> prefix_bounds;
  // Where the cost-to-go DP's walks count their states (null: nowhere). Must
  // outlive the search; a shared walk counts into its first search's.
  WalkProgress* walk_progress = nullptr;
  // A search's own cost-to-go DP walk stops between two states once this
  // says so (null: never), and Advance returns with walking() true: the
  // next Advance goes on with the walk.
  std::function<bool()> pause_walk;
};

class BoundedBlockSearch {
 public:
  virtual ~BoundedBlockSearch() = default;

  // Copies `block` (its graph must outlive the search). InvalidArgument for
  // bounds < 1 or lookahead < 0.
  static StatusOr<std::unique_ptr<BoundedBlockSearch>> Create(const BlockGraph& block,
                                                              const BoundedSearchOptions& options);

  // Goes on until the block is solved or a latency it needs is unknown
  // (source.Lookup gave nullopt; waiting_for() names it): call again once it
  // is known. Errors: a SearchBudgetError past a budget, Cancelled when the
  // stop flag reads true, the source's error. After an error the search must
  // not be used again.
  virtual Status Advance(LatencySource& source) = 0;

  // The cost-to-go DP of each of `searches` (each paused before it, of blocks of
  // one shape: SameShape) in one walk of their state graph: the endings are
  // enumerated and the children's costs read once for all, each block's
  // bounds taken side by side (NASNet's cells repeat one structure at
  // several sizes). Each search gets the table and the transitions its own
  // walk gives, and goes on at its next Advance. A block of more than
  // cost_to_go_dp_max_states states (the first's), or a walk stopped by the
  // first's budget, leaves each to walk alone (the first then reports its
  // error). A search on its prefix block's table (prefix_bounds) has no
  // walk to share: it should not pause (SearchSession does not ask it to);
  // walked here, it walks every state. InvalidArgument where one is not
  // paused or of another shape.
  static Status WalkCostToGoDps(absl::Span<BoundedBlockSearch* const> searches);
  // The same walk in steps: null where there is nothing to walk together
  // (as WalkCostToGoDps leaves each to walk alone), else a walk to Continue
  // until it ends. The searches stay paused and must outlive it; they must
  // not be advanced before it ended (or was destroyed: then each walks
  // alone).
  static StatusOr<std::unique_ptr<CostToGoDpWalkInProgress>> StartCostToGoDpWalk(
      absl::Span<BoundedBlockSearch* const> searches);

  virtual bool solved() const = 0;
  // True between an Advance that paused before the cost-to-go DP
  // (BoundedSearchOptions::pause_before_cost_to_go_dp) and the next one.
  virtual bool paused_before_cost_to_go_dp() const = 0;
  // True between an Advance that stopped in its own cost-to-go DP walk
  // (BoundedSearchOptions::pause_walk) and the Advance that ends it.
  virtual bool walking() const = 0;
  virtual const BlockGraph& block() const = 0;
  // The signatures the search stopped for (empty once solved).
  virtual const std::vector<Signature>& waiting_for() const = 0;
  // Valid once solved(): complete, with the block's stages and latency.
  // stats: states = states expanded, transitions = endings enumerated,
  // distinct_stages / merge_stages = candidate stages whose latency was
  // looked up (the groups measured for the bounds included), plus the bound
  // misses.
  virtual const BlockSolution& solution() const = 0;
  // So far (the solution's once solved).
  virtual DpStats stats() const = 0;
  // The cost-to-go DP's table once it ran (null before, or without one: no
  // cost_to_go_dp_max_states, or a block over it), for a later block's
  // prefix_bounds: made at the first call, from the walk's costs. It
  // outlives the search.
  virtual std::shared_ptr<const BoundTable> bound_table() = 0;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_BOUNDED_BLOCK_SEARCH_H_
