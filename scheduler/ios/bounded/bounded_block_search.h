// BoundedBlockSearch: the IOS search of one block that measures only the
// stages that can still change its optimal schedule.
//
// The exhaustive DP (block_dp.h) needs the latency of every candidate stage
// of every reachable state: millions of GPU measurements for RandWire or
// NASNet. This search finds the same optimum from fewer where its bounds
// are tight (see "How many stages it measures" below). It is A* over
// the DP's state graph (a state is the set of ops still to schedule, an edge
// removes one ending as the last stage, the goal is the empty set) with two
// kinds of lower bounds and lazy edge evaluation:
//
//  * Group bounds. Every group a stage can have (a connected, convex set of
//    at most r ops) is measured first, as a one-group stage: a few hundred
//    per block, one wide batch. The lower bound of a candidate stage is its
//    slowest group alone; once a stage made of some of its groups (two or
//    more; of all but one where it has more than eight) has been measured
//    in the block, that concurrent latency raises the bound (not for a
//    mergeable stage, whose merge is bounded by its slowest conv only).
//  * A critical-path bound for the cost to go: each op weighs the least
//    per-op latency of any group that holds it (latency / ops), and h(S) is
//    the heaviest dependency path inside S. It is consistent: a path's ops
//    inside the last stage lie in one of its groups, which weigh no more
//    than that group's latency.
//  * The cost-to-go DP for the cost to go of a small block
//    (BoundedSearchOptions::cost_to_go_dp_max_states; SearchSession passes
//    SearchOptions::cost_to_go_dp_max_states, 20 k states by default):
//    before the search, the DP over the block's whole state graph with
//    every ending weighed by its group bound (with cores, the core bound
//    too) gives each state the shortest remaining schedule if every stage
//    cost its bound, and h(S) is the larger of that and the critical path.
//    It is consistent (the DP's own recurrence, over weights that are lower
//    bounds under the assumption; each state's value is raised to its
//    critical path and floor terms where those are larger, which the states
//    above it inherit), and far tighter where a state has many
//    orders of one branch's ops: a path bound sees one branch, the DP every
//    op. The walk bounds a state's endings against a cutoff that starts
//    just above its least guessed ending (best_ending_candidates.h: a child's best
//    ending plus the op it lacks), which changes no value and spares about
//    a third of the walks' bounds (docs/benchmarks.md). It is what a lazy
//    shortest path over the same bounds gets in its first round, for one
//    walk of the block (inception_v3's blocks: 1,208 DP states in all): on
//    inception_v3 the search measures 21 % fewer stages
//    under the analytic oracle, 41 % fewer under sim:h100 and about half
//    on the cpu backend (docs/benchmarks.md, 2026-11-27).
//  * A core bound (BoundedSearchOptions::cores >= 2, a device that runs a
//    stage's groups on cores of their own: the cpu backend). Every group is
//    also measured on one core (Stage::single_core); a stage of two or more
//    groups is bounded by their one-core latencies added over the P cores
//    (its lanes cannot finish sooner than that unless some core runs faster
//    than alone) and, unless it merges, by its slowest group's one-core
//    latency over ceil(P / k), the most cores the lanes give one of its k
//    groups (cpu/lane_partition.h); the cost to go is the ops' work over P
//    (each op weighs the least one-core latency per op of any group that
//    holds it) where that is more than the critical path. On a few cores,
//    where concurrent groups barely overlap, the slowest-group bound is
//    about half a stage's latency; this one is as tight as the lanes are
//    free of a shared bottleneck (memory bandwidth: see below).
//  * A device floor (BoundedSearchOptions::device_floor, device_floor.h:
//    what the device never beats, declared by the latency source's device
//    model or measured). A stage of two or more groups that does not merge
//    costs at least stage_ms + max(K * launch_ms + its last kernel's time,
//    one launch + its work at peak): one host thread issues its K kernels
//    one after another, the last starts only once issued and runs at least
//    as long as the fastest of the stage's kernels alone (their groups'
//    measurements), nothing runs before the first is issued, and the device
//    does the work no faster than its peak. Where the backend issues a
//    stage's kernels in a known order (DeviceFloor::issue_order; the sim:
//    round-robin over the groups CanonicalStage orders), also as long as its
//    groups' kernels take one after another from their issue slots, each at
//    its time alone (IssuedChainsFloorMs). Where the model charges
//    concurrent groups for each other (DeviceFloor::contention: the
//    analytic oracle's), a stage of g groups does its work no faster than
//    (1 + contention * (g - 1)) times it. Unlike the slowest group these
//    grow with each group added, which is what stages of many small kernels
//    cost. The cost to go takes the same over the remaining ops (a stage's
//    floor for each stage they need at least, a merge-capable convolution
//    weighed as its share of a merged kernel; no contention); the cost-to-go DP
//    takes the stages' floors. Under sim:h100, RandWire measures 5,143
//    stages instead of 1.04 M and NASNet-A 71,523 instead of 7.95 M, at the
//    exhaustive DP's latency per block (docs/benchmarks.md, 2026-11-28, "The
//    issue order"). Under the analytic oracle, whose floor declares every
//    term of its model, RandWire measures 349 stages instead of 1.07 M and
//    NASNet-A 896 instead of 7.96 M (2026-11-30); without the contention
//    term its floor changed little.
//  * Lazy edges. A state's endings enter the open list keyed by their bounds
//    (in growing slices: a state has thousands of endings and few are ever
//    taken); a stage is measured only when its entry reaches the top of the
//    list, i.e. only when no schedule known to be cheaper remains. The first
//    time the goal leaves the list, its schedule is optimal. Every closed
//    state also gives a fully measured schedule (its ops one by one, then
//    the stages after it), the incumbent; entries above it are dropped.
//
// Why A* and not branch and bound or a repeated lazy shortest path: the DP's
// state graph is acyclic and its states are few next to its edges (0.15 M
// states, 100 M edges for a NASNet block); A* with a consistent heuristic
// expands each state once, evaluates an edge only when it is the cheapest
// thing left, and pauses at exactly one missing latency, which is what a farm
// needs to interleave searches with profiling. A lazy shortest path would
// re-run the whole DP per round of measurements (the walk alone costs 48 s of
// CPU for NASNet-A) and, measured, asks for about as many stages (13-17 %
// fewer on inception_v3, 84-99 % of a RandWire block's signatures:
// docs/benchmarks.md), and branch and bound needs a good schedule before it can
// prune, which costs measurements of its own. A* with the cost-to-go DP as its
// cost to go takes a lazy shortest path's first-round knowledge for one
// walk; on large blocks that walk costs as much as the search (RandWire's:
// only 10-15 % above the critical path, 56 % of the optimum), so only small
// blocks get it.
//
// ASSUMPTION (exactness): adding a group to a concurrent stage never makes
// it faster, so a stage is never faster than its slowest group run alone or
// than any stage made of some of its groups; a merged convolution is never
// faster than the slowest of the convolutions it merges run alone; with a
// device floor, no stage is faster than its floor (above, contention
// included), a kernel never
// runs faster than alone, and a merged convolution does at least its
// branches' multiply-accumulates and reads their weights; with
// cores, P cores never run a group, a stage's lanes or a merged convolution
// more than P times faster than one core runs its groups (or the
// convolutions it merges) one after another, and a concurrent stage of k
// groups gives none of them more than ceil(P / k) cores, which run it no
// more than that many times faster than one. Where
// every measured latency respects that, the schedule's latency equals the
// exhaustive DP's (ties may pick another schedule of the same latency).
// Where a measurement breaks it, the schedule is still valid, possibly
// slower than the exhaustive one; DpStats counts the stages measured below
// their bound and the largest shortfall (lower_bound_misses,
// largest_bound_miss_ms).
//
// How many stages it measures depends on how loose the bounds are. The
// group bound is exact where groups overlap for free (large kernels, few
// groups) and low where a stage's kernels queue behind each other (host
// launch issue): a stage of eight one-op groups of small kernels costs about
// eight launches but is bounded by one. The critical-path cost to go is
// loose for the same reason. With the cost-to-go DP as cost to go, inception_v3
// measures 10x fewer stages than the exhaustive DP under sim:h100, 3.6x
// under the analytic oracle and 3.9-4.9x on the 2-core build machine's cpu
// backend, with the same latency under the two models (without it: 6x,
// 2.8x and 2.1-2.4x); on the cpu
// backend the core bound alone gave 2.1-2.4x, no
// more than without it beyond the run-to-run noise (two lanes share the
// memory bandwidth there, so the core bound sits at a median 0.82 of a
// stage's latency). With the cost-to-go DP it pays: on one latency database
// (schedule_bench, 2026-11-30) inception_v3 asks for 994 stage latencies
// with it and 2,622 without, and comes within 0.014 % of the exhaustive
// latency. On RandWire's and
// NASNet's wide blocks of small ops the open list grows to millions of
// entries and it costs more CPU than the DP does: past
// BoundedSearchOptions::max_open_steps it stops with a SearchBudgetError
// and SearchSession solves that block with the exhaustive DP instead
// (docs/profiling.md, docs/benchmarks.md). A device floor changes that
// under sim:h100: every block of RandWire and NASNet-A is solved, with
// 111-205x fewer stages measured (SearchSession attempts blocks of up to
// four times max_block_states with a floor that knows the issue order:
// NASNet's cells, 146 k states, whose cost-to-go DP walk costs about 12 s of CPU
// each alone; cells of one shape share it, WalkCostToGoDps below).
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
// floor cost to go) in block_bounds.h, the cost-to-go DP's walk and its table of
// costs to go in cost_to_go_dp.h, A* itself in bounded_block_search.cc.
// The first two are templates included by the third only, so the hot
// loops inline across them as they did in one file.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_BOUNDED_BLOCK_SEARCH_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_BOUNDED_BLOCK_SEARCH_H_

#include <atomic>
#include <cstdint>
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

  virtual bool solved() const = 0;
  // True between an Advance that paused before the cost-to-go DP
  // (BoundedSearchOptions::pause_before_cost_to_go_dp) and the next one.
  virtual bool paused_before_cost_to_go_dp() const = 0;
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
