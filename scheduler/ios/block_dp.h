// The IOS dynamic program over one block (or several blocks of one shape,
// SolveBlocks).
//
// cost[S] = min over endings S' of S (endings.h, within the r/s bounds) of
// cost[S - S'] + latency(S'), cost[{}] = 0, where latency(S') is the cheaper
// of the concurrent stage and, when legal (merge.h), the merge stage. States
// are the remaining sets reachable from the whole block, memoised in a hash
// map keyed by OpBits (the narrowest width that holds the block); each
// distinct candidate stage is canonicalised and looked up once per block.
// The schedule is read back from the per-state argmins. Ties keep the first
// candidate in enumeration order and prefer concurrent over merge, so results
// are deterministic.
//
// Latencies come from a LatencySource. When some are unknown the DP still
// visits every reachable state (the state space does not depend on
// latencies), so one pass lists every stage the block needs; the solution is
// then marked incomplete and must be recomputed once the latencies are known.
#ifndef IOSFARM_SCHEDULER_IOS_BLOCK_DP_H_
#define IOSFARM_SCHEDULER_IOS_BLOCK_DP_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "common/status.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

// What the DP asks for latencies. Not required to be thread-safe.
class LatencySource {
 public:
  virtual ~LatencySource() = default;
  // The latency (ms) of stages with signature `signature`, or nullopt while
  // unknown. `stage` builds the canonical stage; call it only when needed
  // (to measure it or to queue a request), during this call.
  virtual std::optional<double> Lookup(Signature signature,
                                       absl::FunctionRef<Stage()> stage) = 0;
  // Lookup of several signatures at once (a DP state's new candidates):
  // latencies[i] for signatures[i], with stage(i) building its stage as
  // above. The default asks Lookup for each in order; a source shared by
  // threads takes its lock once for the batch.
  virtual void LookupBatch(absl::Span<const Signature> signatures,
                           absl::FunctionRef<Stage(size_t)> stage,
                           absl::Span<std::optional<double>> latencies) {
    for (size_t i = 0; i < signatures.size(); ++i) {
      latencies[i] = Lookup(signatures[i], [&]() { return stage(i); });
    }
  }
  // A hint that `signature` will be looked up soon (e.g. to prefetch its
  // slot in a table far larger than the caches). Optional.
  virtual void Prefetch(Signature /*signature*/) const {}
  // The first error the source hit (e.g. a failing oracle); the DP stops
  // and returns it.
  virtual Status status() const = 0;
  // Bytes the source holds for the running pass (e.g. queued requests),
  // counted against DpOptions::max_bytes. Optional.
  virtual int64_t memory_bytes() const { return 0; }
};

struct DpOptions {
  EndingBounds bounds;
  bool enable_merge = true;
  // Budget of this pass (0: no limit). Past one the DP stops with a
  // SearchBudgetError (search_options.h) naming the limit and the block.
  int64_t max_states = 0;
  int64_t max_transitions = 0;  // (state, ending) pairs
  int64_t max_steps = 0;        // ending enumeration steps (EndingEnumerator::steps)
  int64_t max_bytes = 0;        // tables + the source's memory_bytes()
  // When set, read at every state and every 64 Ki endings: true stops the DP
  // with Cancelled (a cancelled job, a server shutting down).
  const std::atomic<bool>* stop = nullptr;
  // A complete solution then also keeps every state's cost and best last
  // stage (BlockSolution::states), for a block that extends this one.
  bool keep_states = false;
};

struct DpStats {
  int64_t states = 0;           // reachable remaining sets (the empty set excluded)
  int64_t transitions = 0;      // (state, ending) pairs evaluated
  int64_t distinct_stages = 0;  // distinct candidate stages (concurrent + merge)
  int64_t merge_stages = 0;     // of which merge stages
  // Bounded search only (bounded_block_search.h): group timings for the
  // bounds (each group alone; with the core bound also on one core), and
  // stages measured faster than their lower bound (the
  // exactness assumption broken) with the largest shortfall.
  int64_t bound_groups = 0;
  int64_t tightened_bounds = 0;  // raised by a measured sub-stage
  // States whose cost-to-go DP cost came from a prefix block's table
  // (BoundedSearchOptions::prefix_bounds), not walked.
  int64_t prefix_bound_states = 0;
  int64_t lower_bound_misses = 0;
  double largest_bound_miss_ms = 0;

  DpStats& operator+=(const DpStats& o) {
    states += o.states;
    transitions += o.transitions;
    distinct_stages += o.distinct_stages;
    merge_stages += o.merge_stages;
    bound_groups += o.bound_groups;
    tightened_bounds += o.tightened_bounds;
    prefix_bound_states += o.prefix_bound_states;
    lower_bound_misses += o.lower_bound_misses;
    largest_bound_miss_ms = largest_bound_miss_ms > o.largest_bound_miss_ms
                                ? largest_bound_miss_ms
                                : o.largest_bound_miss_ms;
    return *this;
  }
};

struct PlannedStage {
  Stage stage;  // canonical order
  Signature signature = 0;
  double latency_ms = 0;
};

// A solved block's DP table: every state's optimal cost and the last stage
// of its best schedule (about 40 bytes a state; no pass budget counts it).
// The cost of a state depends only on the ops it holds, so a block whose
// first ops are identical to this block (BlockGraph::structure_key) and
// whose other ops come after them has those costs too for its states made
// of them alone: SolveBlock's `prefix` (NASNet-A's size cut leaves a cell
// plus the next cell's first op: that block is this table and one state).
// Immutable; shared by the solutions that map it (twins).
class SolvedStates {
 public:
  virtual ~SolvedStates() = default;
  virtual int size() const = 0;   // ops of the block
  virtual int words() const = 0;  // BlockGraph::words of the block
  virtual int64_t states() const = 0;
};

struct BlockSolution {
  bool complete = false;  // every latency was known; the fields below are valid
  double latency_ms = 0;
  std::vector<PlannedStage> stages;  // in execution order
  DpStats stats;
  // With DpOptions::keep_states, of a complete DP pass (null otherwise).
  std::shared_ptr<const SolvedStates> states;
};

// Runs the DP over the whole block. Errors: InvalidArgument for bounds < 1,
// a SearchBudgetError past a budget (naming the block's first op),
// Cancelled when `stop` reads true, or the source's error.
//
// `prefix` (may be null): the kept states of a block identical to this
// block's first prefix->size() ops, which no later op of this block
// precedes (they come first in a topological order). The DP then takes the
// cost and best last stage of every state made of those ops alone from it
// instead of walking them, so this pass costs only the states that hold a
// later op; the solution is the one SolveBlock gives without it (the same
// states, endings and latencies in the same order, hence the same ties),
// given a prefix solved with the same bounds, merge setting and latencies.
// The stats count this pass's own work. InvalidArgument when `prefix` is of
// another width, not smaller than the block, or lacks a state made of the
// block's first ops (it is another block's).
StatusOr<BlockSolution> SolveBlock(const BlockGraph& block, const DpOptions& options,
                                   LatencySource& latencies, const SolvedStates* prefix = nullptr);

// True when `a` and `b` have the same local structure (size and edges op
// by op; their contents may differ): the same remaining sets and endings,
// so one DP walk serves both.
bool SameShape(const BlockGraph& a, const BlockGraph& b);

// Items 0..count-1 grouped by their blocks' shape (SameShape): each group
// in item order, the groups in the order of their first items. `block(i)`
// is item i's block, or null to leave item i out.
std::vector<std::vector<size_t>> GroupByShape(size_t count,
                                              absl::FunctionRef<const BlockGraph*(size_t)> block);

// The DP's states of `block` (its non-empty remaining sets: the op sets
// closed under successors), counted up to `cap`: what a DP pass over the
// block will cost, at a small fraction of that cost.
int64_t CountStates(const BlockGraph& block, int64_t cap);

// Blocks SolveBlocks walks together, at most.
inline constexpr size_t kMaxSharedBlocks = 6;

// How SolveBlocks cuts `count` blocks of one shape into walks: the fewest
// pieces of at most kMaxSharedBlocks, as even as can be; the end index of
// each piece, in order.
std::vector<size_t> SharedPieceEnds(size_t count);

// SolveBlock for each of `blocks` (all SameShape as the first, else
// InvalidArgument), result i for blocks[i], each equal to what SolveBlock
// gives for that block alone (schedule, latency, statistics). Blocks of up
// to 128 ops share walks of the state graph, in pieces of at most
// kMaxSharedBlocks: the enumeration and the table probes, the DP's main
// cost, are paid once per piece, with each block's latencies side by side in
// the tables; the stages' signatures and latencies stay per block. Every
// budget applies as to one block's pass (the walk's states, transitions and
// steps are each block's; max_bytes is checked against what the largest of
// its blocks' passes would hold, so the walk stops where one of them would;
// the walk itself holds less than its blocks' passes together, one key per
// slot for K values: its ending table, the largest, up to (K + 1) / 2 times
// a pass's, 3.5 times at six blocks). Wider blocks are solved one after
// the other.
// A budget error or the source's error ends the call.
StatusOr<std::vector<BlockSolution>> SolveBlocks(absl::Span<const BlockGraph* const> blocks,
                                                 const DpOptions& options,
                                                 LatencySource& latencies);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BLOCK_DP_H_
