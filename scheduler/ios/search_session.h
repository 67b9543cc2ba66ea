// SearchSession: an IOS search that can stop to wait for latencies.
//
// The session partitions the graph into blocks (blocks.h) and solves them in
// order with the block DP (block_dp.h). Latencies are keyed by stage
// signature. When a block needs signatures whose latency is unknown, the
// session queues one StageRequest per signature and moves on; the caller
// measures them (in batches, anywhere) and hands them back with Provide().
// Blocks whose latencies are all known are then solved. This is the enumerate
// / profile / update loop of a farm job:
//
//   auto session = SearchSession::Create(graph, options).value();
//   // Optional: session->Provide(sig, ms) for everything a database knows.
//   while (true) {
//     auto batch = session->NextUnknown(64);          // enumerate / update
//     if (!batch.ok()) return batch.status();
//     if (batch->empty()) break;
//     for (auto& request : *batch) session->Provide(request.signature, Measure(request.stage));
//   }
//   if (session->Done()) result = session->Result();
//
// Each unknown signature is requested exactly once per session; a block with
// unknowns is enumerated once to list them and solved in a second pass once
// they are known. Once every block is solved, the boundary windows
// (SearchOptions::boundary_window_ops) go through the same loop. Provide()
// accepts any signature at any time (a latency that no block needs is kept
// and harmless).
//
// Blocks of one shape (NASNet's cells repeat one structure at several sizes)
// walk their cost-to-go DPs together (bounded_block_search.h: each extra block
// adds a quarter to two fifths of a lone walk's CPU, against a whole one):
// a bounded search stops once its groups are measured until no other block
// of its shape can still join (all started and measured), or until nothing
// else is left to hand out or to wait for, and then they are walked in one
// go, on one thread as in a farm's batches.
//
// The search keeps to SearchOptions::budget: a block whose first pass runs
// over a per-pass limit is split (with the blocks of the same structure that
// wait for it) into smaller blocks, which are solved in its place; a window
// over the budget is skipped. SetStopFlag() lets another thread stop a long
// pass (NextUnknown/RunInline then return Cancelled; the session must not be
// used afterwards).
//
// The graph must outlive the session. Not thread-safe: one caller at a time.
#ifndef IOSFARM_SCHEDULER_IOS_SEARCH_SESSION_H_
#define IOSFARM_SCHEDULER_IOS_SEARCH_SESSION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/block_dp.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/blocks.h"
#include "scheduler/ios/bounded/bounded_block_search.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/tables/latency_table.h"

namespace iosfarm::scheduler::ios {

struct SearchStats {
  int blocks = 0;
  int reused_blocks = 0;          // solved by mapping an identical earlier block
  // Solved by the DP over the states that hold their last ops only, their
  // first ops being identical to an earlier block whose DP table they took
  // (SearchOptions::reuse_identical_blocks; SolveBlock's prefix).
  int prefix_blocks = 0;
  // Bounded search: blocks whose cost-to-go DP took the states of their first
  // ops from such an earlier block's bound table (its bounded search solved
  // it; BoundedSearchOptions::prefix_bounds) and walked only their own.
  int prefix_bound_blocks = 0;
  int64_t dp_states = 0;          // over the blocks actually solved
  int64_t transitions = 0;        // (state, candidate) pairs evaluated
  // Distinct candidate stages per block (concurrent and merge), summed over
  // all blocks (a reused block counts its twin's), and how many of them are
  // merge stages.
  int64_t candidate_stages = 0;
  int64_t merge_stages = 0;
  // Distinct signatures looked up (or provided). With a latency cache limit
  // (SearchBudget::latency_cache_bytes), one forgotten and looked up again
  // counts again.
  int64_t unique_signatures = 0;
  int64_t forgotten_latencies = 0;  // known latencies dropped over the cache limit
  int64_t requests = 0;           // StageRequests handed out by NextUnknown
  // Latencies the search obtained from its caller: requests handed out plus
  // stages measured on the spot by RunInline (what a farm profiles, less
  // what its database already knew).
  int64_t stages_measured = 0;
  // Bounded search (SearchOptions::exhaustive off): group timings for the
  // bounds (twice per group with SearchOptions::cores), and measured stages
  // faster than their lower bound (the exactness assumption broken), with
  // the largest shortfall.
  int64_t bound_groups = 0;
  // Stage bounds raised by a measured sub-stage before the stage was costed
  // (how often the sub-stage bound spared or postponed a measurement).
  int64_t tightened_bounds = 0;
  int64_t lower_bound_misses = 0;
  double largest_bound_miss_ms = 0;
  int64_t dp_passes = 0;          // block DP runs (a block with unknowns takes two)
  int windows = 0;                // boundary windows re-solved
  int improved_windows = 0;       // of which replaced their stages
  int skipped_windows = 0;        // left as they were: over the search budget
  // Blocks and windows the bounded search handed to the exhaustive DP (over
  // SearchOptions::bounded.max_open_steps).
  int exhaustive_blocks = 0;
  // Of the blocks the exhaustive DP solved, those that shared a walk with
  // blocks of the same shape (SolveBlocks; searches on several threads).
  int shared_walk_blocks = 0;
  // Of the blocks the bounded search solved or tried, those whose cost-to-go DP
  // was walked together with blocks of the same shape (WalkCostToGoDps).
  int shared_bound_walk_blocks = 0;
  int split_blocks = 0;           // blocks split for being over the budget
  int smallest_split = 0;         // ops limit of the smallest split (0: none)
  int64_t total_transitions = 0;  // of every completed pass (the total budget)
  double window_gain_ms = 0;      // latency saved by boundary windows
};

// How a block was solved.
enum class BlockSolver : uint8_t {
  kBounded,         // the bounded search (bounded_block_search.h)
  kExhaustive,      // the exhaustive DP (asked for, over the bounded search's
                    // budget, or on an earlier block's DP table: `prefix`)
  kTwin,            // mapped from an identical earlier block (`twin`)
};

// "bounded", "exhaustive" or "twin".
std::string_view BlockSolverName(BlockSolver solver);

// What the search did for one block.
struct BlockReport {
  int num_ops = 0;
  BlockSolver solver = BlockSolver::kBounded;
  int twin = -1;         // the earlier identical block it was mapped from, or -1
  // The earlier block identical to its first ops whose DP table it reused,
  // or -1; `dp` then counts only the states holding its later ops.
  int prefix = -1;
  DpStats dp;            // of the block's first DP pass (its twin's when mapped)
  int num_stages = 0;    // in the block's schedule
  double latency_ms = 0; // of the block's schedule
};

struct SearchResult {
  Schedule schedule;  // stages carry block index, signature and latency
  SearchStats stats;
  std::vector<BlockReport> blocks;  // one per block of the partition
};

// Estimated heap bytes of a request (its stage's vectors), as counted
// against the pass budget.
int64_t StageRequestBytes(const StageRequest& request);

class SearchSession {
 public:
  // InvalidArgument for bad options or a graph that cannot be partitioned
  // (cycle); shapes must be inferred.
  static StatusOr<std::unique_ptr<SearchSession>> Create(const graph::Graph& graph,
                                                         const SearchOptions& options);

  // Advances the search as far as the known latencies allow and returns up to
  // `max_batch` (>= 1) requests for signatures whose latency is unknown and
  // that were never handed out before. Empty: either Done(), or paused() (a
  // deadline passed), or every unknown is already handed out and awaits
  // Provide(). Errors: InvalidArgument for
  // max_batch < 1, ResourceExhausted when a block exceeds the state cap.
  StatusOr<std::vector<StageRequest>> NextUnknown(int max_batch);

  // Records the latency (ms) of stages with `signature`. InvalidArgument for
  // a negative or non-finite latency; a second value for a known signature
  // is ignored (the first measurement wins, keeping results reproducible).
  Status Provide(Signature signature, double latency_ms);

  // Solves every remaining block, measuring unknown signatures on the spot
  // with `measure` (each at most once). Used by RunSearch; also finishes a
  // session that was driven with NextUnknown/Provide for a while. With
  // SearchOptions::threads > 1 (see there) blocks are solved side by side
  // and `measure` is called from several threads at once (never twice for
  // one signature), so it must be thread-safe.
  Status RunInline(const SignedLatencyFn& measure);

  // True once every block and boundary window is solved (after NextUnknown
  // returned empty with nothing outstanding, or after RunInline).
  bool Done() const {
    return windows_created_ && solved_blocks_ == static_cast<int>(blocks_.size());
  }

  // The schedule; FailedPrecondition until Done().
  StatusOr<SearchResult> Result() const;

  const BlockPartition& partition() const { return partition_; }
  const SearchStats& stats() const { return stats_; }
  // Blocks and windows solved (while SolveInParallel runs, those its
  // threads finished too). Safe to read from any thread (a progress line).
  int solved_blocks() const {
    return solved_blocks_ + threads_solved_.load(std::memory_order_relaxed);
  }
  // The boundary windows made once every block is solved (0 before, and
  // where there are none): solved_blocks() beyond the partition's blocks
  // counts those solved. Safe to read from any thread.
  int windows_total() const { return windows_total_.load(std::memory_order_relaxed); }
  // How far the cost-to-go DP's walks have come (bounded search): safe to read
  // from any thread.
  const WalkProgress& walk_progress() const { return walk_progress_; }
  // `stop` (may be null; must outlive the session) is read during long
  // passes; when it reads true the running call returns Cancelled.
  void SetStopFlag(const std::atomic<bool>* stop) { stop_ = stop; }

  // Signatures handed out and not yet provided.
  int64_t outstanding() const { return static_cast<int64_t>(requested_.size()); }
  // Latencies (known or awaited) the session holds now.
  int64_t held_latencies() const { return static_cast<int64_t>(latencies_.size()); }

  // Bytes the caller holds for the session's requests (e.g. handed-out
  // batches not answered yet). With a latency cache limit they count against
  // the pass budget, so that it bounds all of a search's memory.
  void SetCallerBytes(int64_t bytes) { caller_bytes_ = bytes; }

  // Time slicing (a farm job's enumerate phase shares the server's CPU slots
  // with other jobs). With a deadline set, NextUnknown starts or re-solves no
  // further block once it has passed and at least one DP pass ran in that
  // call (so every call makes progress), and returns the requests it has;
  // paused() then says that it stopped for time, not because it needs
  // latencies: call NextUnknown again to go on. A pass that has begun runs to
  // its end (its length is bounded by the search budget), but for a
  // cost-to-go DP walk: that stops between two of its states and goes on at
  // the next call (walking()). nullopt: no limit.
  void SetDeadline(std::optional<std::chrono::steady_clock::time_point> deadline) {
    deadline_ = deadline;
  }
  bool paused() const { return paused_; }
  // A cost-to-go DP walk (a block's own or a shared one) stopped at the
  // deadline and goes on at the next NextUnknown: dropping the session now
  // loses it (the walk, not a measurement).
  bool walking() const;
  // With `stop`, NextUnknown also stops (paused()) at its first point
  // between passes where no walk is under way, once a pass ran in that call:
  // a farm job whose turn is over goes on with the walk it is in, and yields
  // as soon as that walk ends.
  void SetStopBetweenWalks(bool stop) { stop_between_walks_ = stop; }

 private:
  enum class BlockPhase { kNotStarted, kWaiting, kSolved };
  // A latency (NaN while unknown), the last DP pass that looked it up, and
  // whether a thread of SolveInParallel is measuring it.
  using CachedLatency = LatencyTable::Entry;
  // A block of the partition, or a boundary window (after the blocks).
  struct BlockState {
    BlockGraph graph;
    BlockPhase phase = BlockPhase::kNotStarted;
    int twin = -1;                   // earlier block with an identical structure
    // The earlier block identical to this block's first ops (FindPrefix),
    // whose DP table this block's DP takes once it is solved; -1: none.
    int prefix = -1;
    bool provides_prefix = false;    // a later block's prefix: its DP keeps its table
    // A block providing a prefix that its bounded search solved: that
    // search's bound table, kept (as the DP's table) until every block is.
    std::shared_ptr<const BoundTable> bound_table;
    // Its prefix block's bound table, for its own bounded search.
    std::shared_ptr<const BoundTable> prefix_bounds;
    std::vector<Signature> unknown;  // what a waiting block needs
    uint32_t first_pass = 0;         // the pass that started it (pass_ numbering)
    BlockSolution solution;
    // The bounded search of the block while it runs (exhaustive off).
    std::unique_ptr<BoundedBlockSearch> bounded;
    // The bounded search went over its budget: the exhaustive DP solves it.
    bool exhaustive = false;
    // Its DP states as SizeBlock counted them (up to its limit), or 0.
    int64_t states = 0;
    // Its bounded search stops before its cost-to-go DP, to walk
    // it with the blocks of its shape (WalkPausedBlocks); cleared once
    // walked.
    bool walk_pending = false;
    // Transitions of its bounded search counted in total_transitions.
    int64_t counted_transitions = 0;
    // Its bounded search was created with what was left of the total
    // transitions budget, less than a pass's: over it, the search is over
    // the total (not handed to the DP).
    bool total_binds = false;
    // Windows: the boundary between blocks right - 1 and right, the number
    // of stages taken from the end of the left block and from the start of
    // the right one, and their latency before re-solving.
    int right = -1;
    int left_stages = 0;
    int right_stages = 0;
    double old_latency_ms = 0;
  };
  class CollectingSource;
  class InlineSource;

  SearchSession(const graph::Graph& graph, const SearchOptions& options)
      : graph_(graph), options_(options) {}

  // Appends a block or window, noting an identical earlier one as its twin
  // or, for a block, an earlier one identical to its first ops (FindPrefix).
  void AddBlock(BlockState state);
  // Sets state.prefix to the first block of the structure of state's ops
  // but its last 1..kMaxPrefixExtraOps (which no other op precedes: the
  // block's order is topological), if there is one, and marks that block
  // as providing its table.
  void FindPrefix(BlockState& state);
  // SolveWith for a block with a prefix: waits until the prefix block is
  // solved, then runs the DP on its table; where the bounded search solved
  // it, the block's own bounded search takes its bound table
  // (BlockState::prefix_bounds).
  Status SolvePrefixed(int b, LatencySource& source);
  // Solves or re-solves block b with `source`; updates its phase.
  Status SolveWith(int b, LatencySource& source);
  // Before block b's first pass in the bounded search: hands a block of
  // more than SearchOptions::bounded.max_block_states states (times
  // device_floor_states_factor with a tight device floor) to the exhaustive
  // DP (counted in exhaustive_blocks). Only a block not started yet.
  void SizeBlock(int b);
  // SolveWith for the bounded search: starts or advances it.
  Status SolveBounded(int b, LatencySource& source);
  // The rest of SolveBounded once block b's bounded search has advanced
  // (`advanced`: what Advance returned): counts it, and hands the block to
  // the exhaustive DP when the search went over its steps. `dp_solution`:
  // that DP's result when it already ran (SolveInParallel), else null.
  Status FinishBounded(int b, const Status& advanced, bool total_binds, LatencySource& source,
                       StatusOr<BlockSolution>* dp_solution);
  // The bounded search's options for a pass with DP options `dp`.
  BoundedSearchOptions BoundedOptions(const DpOptions& dp) const;
  // Whether a bounded search that stopped with `advanced` goes to the
  // exhaustive DP (rather than over the search's total budget).
  static bool HandsOverToDp(const Status& advanced, bool total_binds);
  // SolveWith for the exhaustive DP; `first_pass`: the block's first DP pass
  // (its stats are counted, it may be split). `precomputed`: the pass's
  // result when it already ran with the same options (SolveInParallel),
  // else null.
  Status SolveExhaustive(int b, LatencySource& source, bool first_pass,
                         StatusOr<BlockSolution>* precomputed = nullptr);
  // RunInline with SearchOptions::threads > 1: solves every block (or
  // window) not started yet and without a twin on the threads, then applies
  // the passes in block order as the sequential loop would. It stops
  // applying at a pass that splits its block (the later ones are solved
  // again by the sequential loop, their latencies known by then); an error
  // of a pass is returned once the passes before it are applied.
  Status SolveInParallel(LatencySource& source);
  // Runs task(0..count-1) on up to options_.threads threads (this one among
  // them), each index once, starting no more once `failed` reads true.
  void RunOnThreads(size_t count, const std::atomic<bool>& failed,
                    const std::function<void(size_t)>& task) const;
  // RunInline may use SolveInParallel (see SearchOptions::threads): not
  // with a total transitions budget (each pass takes what the passes before
  // it left) or a latency cache limit (it forgets what no running pass
  // needs).
  bool ParallelInline() const;
  // Block b's bounded search is paused before its cost-to-go DP for a shared walk.
  bool PausedForWalk(int b) const;
  // Walks the cost-to-go DPs of the first shape's blocks paused for one
  // (PausedForWalk) in one walk (BoundedBlockSearch::WalkCostToGoDps), and goes
  // on with each: resume(b) (block b's next pass, which may split it; later
  // blocks go first). Only a shape of which no other block could still
  // pause (one not started, or waiting for the latencies of its bounds),
  // unless `all`. `timed`: walks and resumes nothing once OutOfTime (then
  // sets paused_; SolveReadyBlocks resumes the walked ones left). Returns
  // the blocks walked (0: none; call again for the next shape).
  StatusOr<int> WalkPausedBlocks(bool all, bool timed, const std::function<Status(int)>& resume);
  // The DP options of a pass of block b; *total_binds: the search's total
  // transitions budget is the tighter limit.
  DpOptions PassOptions(bool* total_binds) const;
  // A budget error of block b's pass: skips a window, splits a block, or
  // returns the error for the caller.
  Status OverBudget(int b, const Status& error, bool total_binds, bool can_split);
  // A SearchBudgetError when the session holds more signatures than
  // budget.max_signatures_total.
  Status CheckSignatureBudget() const;
  // ForgetSolvedLatencies when the table is over the latency cache limit.
  void ForgetIfOverCache();
  // Adds a solved block's work to the search's stats.
  void CountSolved(const DpStats& stats);
  // Marks twins of solved blocks solved. Returns true if anything changed.
  bool ResolveTwins();
  // Re-solves waiting blocks whose unknowns are all known now (until the
  // deadline: then sets paused_), but those paused for a shared walk.
  Status SolveReadyBlocks();
  // The deadline passed and a pass ran since the current NextUnknown began.
  bool OutOfTime() const;
  // Within NextUnknown, the deadline passed (where walks stop: each walks
  // some states per call).
  bool WalkOutOfTime() const;
  void MarkSolved(int b);
  bool IsKnown(Signature signature) const;
  // Finds or adds `signature` (unknown) and stamps it with the current pass.
  // Returns the entry and whether it was added.
  std::pair<CachedLatency*, bool> Touch(Signature signature);
  // Bytes of the latency table.
  int64_t LatencyTableBytes() const;
  // Over the latency cache limit: drops known latencies that no waiting
  // block looked up (every lookup of a waiting block is stamped with a pass
  // at or after its first).
  void ForgetSolvedLatencies();
  // Appends the boundary windows (all blocks of the partition are solved).
  Status CreateWindows();
  // Starts block or window b (its first DP pass, or waits for its twin).
  // When the pass is over the budget, block b is split: index b then holds
  // the first of its pieces, not started yet.
  Status StartBlock(int b, LatencySource& source);
  // Replaces block b and the later blocks of its structure by their pieces
  // of at most 70 % of b's size (b: a partition block larger than
  // budget.min_block_ops, in its first pass).
  Status SplitBlock(int b);

  const graph::Graph& graph_;
  SearchOptions options_;
  BlockPartition partition_;
  std::vector<BlockState> blocks_;  // the partition's blocks, then windows
  int num_blocks_ = 0;               // of the partition
  bool windows_created_ = false;
  std::vector<int> position_;        // node id -> topological position
  std::map<std::vector<uint64_t>, int> first_with_structure_;
  int next_block_ = 0;  // first block never started
  // Written by the session's own thread, read by solved_blocks() from any.
  std::atomic<int> solved_blocks_{0};
  std::atomic<int> windows_total_{0};  // stats_.windows once CreateWindows ran
  // Every bounded search's walks count into it (a counter, not the
  // session's state: BoundedOptions hands it out).
  mutable WalkProgress walk_progress_;
  // Every signature looked up or provided (but those forgotten); NaN while
  // unknown.
  LatencyTable latencies_;
  uint32_t pass_ = 0;            // DP passes begun (numbering for the stamps)
  int64_t forget_at_bytes_ = 0;  // the table size that triggers forgetting next
  int64_t caller_bytes_ = 0;
  absl::flat_hash_set<Signature> requested_;  // queued or handed out, not provided
  std::deque<StageRequest> queue_;            // requests not handed out yet
  int64_t queue_bytes_ = 0;                   // estimated bytes of queue_
  const std::atomic<bool>* stop_ = nullptr;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  int64_t passes_before_call_ = 0;  // stats_.dp_passes when NextUnknown began
  bool paused_ = false;
  bool in_next_unknown_ = false;
  bool stop_between_walks_ = false;
  std::atomic<int> threads_solved_{0};  // passes SolveInParallel's threads finished
  SearchStats stats_;
  // A shared walk stopped at the deadline (WalkPausedBlocks), and the
  // searches it walks (their blocks stay PausedForWalk until it ends).
  // After blocks_, which own the searches it points into.
  std::unique_ptr<CostToGoDpWalkInProgress> shared_walk_;
  std::vector<const BoundedBlockSearch*> shared_walk_searches_;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_SEARCH_SESSION_H_
