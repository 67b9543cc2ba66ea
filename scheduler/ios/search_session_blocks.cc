// SearchSession, block by block: how one block or boundary window is
// solved (the bounded search, its hand-over to the exhaustive DP, a block
// on its prefix block's table, a split over the pass budget), the boundary
// windows created once every block is solved, and the cost-to-go DP walks
// shared by paused blocks of one shape. The session's queue, latency table
// and result are in search_session.cc; several threads in
// search_session_threads.cc.
#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "common/strings.h"
#include "scheduler/ios/search_session.h"

namespace iosfarm::scheduler::ios {

Status SearchSession::CreateWindows() {
  windows_created_ = true;
  // Every block is solved: no block needs a prefix block's table any more.
  for (BlockState& state : blocks_) {
    state.solution.states.reset();
    state.bound_table.reset();
    state.prefix_bounds.reset();
  }
  if (options_.boundary_window_ops <= 0) return absl::OkStatus();
  const int half = std::max(1, options_.boundary_window_ops / 2);
  std::vector<int> claimed(num_blocks_, 0);  // stages taken from each block's start
  for (int right = 1; right < num_blocks_; ++right) {
    if (partition_.blocks[right].start != BlockStart::kSizeSplit) continue;
    const std::vector<PlannedStage>& left_stages = blocks_[right - 1].solution.stages;
    const std::vector<PlannedStage>& right_stages = blocks_[right].solution.stages;
    BlockState window;
    window.right = right;
    int left_ops = 0, right_ops = 0;
    const int left_available = static_cast<int>(left_stages.size()) - claimed[right - 1];
    while (window.left_stages < left_available) {
      const int ops = left_stages[left_stages.size() - 1 - window.left_stages].stage.num_ops();
      if (window.left_stages > 0 && left_ops + ops > half) break;
      left_ops += ops;
      ++window.left_stages;
    }
    while (window.right_stages < static_cast<int>(right_stages.size())) {
      const int ops = right_stages[window.right_stages].stage.num_ops();
      if (window.right_stages > 0 && right_ops + ops > half) break;
      right_ops += ops;
      ++window.right_stages;
    }
    if (window.left_stages == 0 || window.right_stages == 0) continue;
    std::vector<graph::NodeId> ops;
    auto take = [&](const PlannedStage& planned) {
      window.old_latency_ms += planned.latency_ms;
      for (const auto& group : planned.stage.groups) ops.insert(ops.end(), group.begin(), group.end());
    };
    for (int i = 0; i < window.left_stages; ++i) {
      take(left_stages[left_stages.size() - 1 - i]);
    }
    for (int i = 0; i < window.right_stages; ++i) take(right_stages[i]);
    std::sort(ops.begin(), ops.end(),
              [&](graph::NodeId a, graph::NodeId b) { return position_[a] < position_[b]; });
    ASSIGN_OR_RETURN(window.graph, BlockGraph::Build(graph_, ops));
    claimed[right] = window.right_stages;
    AddBlock(std::move(window));
    ++stats_.windows;
  }
  windows_total_.store(static_cast<int>(stats_.windows), std::memory_order_relaxed);
  return absl::OkStatus();
}

DpOptions SearchSession::PassOptions(bool* total_binds) const {
  const SearchBudget& budget = options_.budget;
  DpOptions dp;
  dp.bounds = {options_.max_group_ops, options_.max_groups};
  dp.enable_merge = options_.enable_merge;
  dp.max_states = budget.max_states_per_pass;
  dp.max_transitions = budget.max_transitions_per_pass;
  dp.max_steps = budget.max_steps_per_pass;
  dp.max_bytes = budget.max_bytes_per_pass;
  dp.stop = stop_;
  *total_binds = false;
  if (budget.max_transitions_total > 0) {
    const int64_t left = std::max<int64_t>(1, budget.max_transitions_total - stats_.total_transitions);
    if (dp.max_transitions == 0 || left < dp.max_transitions) {
      dp.max_transitions = left;
      *total_binds = true;
    }
  }
  return dp;
}

Status SearchSession::OverBudget(int b, const Status& error, bool total_binds, bool can_split) {
  const SearchBudget& budget = options_.budget;
  BlockState& state = blocks_[b];
  const std::string what(error.message());
  if (total_binds && absl::StrContains(what, "transitions")) {
    return SearchBudgetError(StrCat("the search needs more than ", budget.max_transitions_total,
                                    " DP transitions in all (the search budget; a smaller "
                                    "block size or r/s needs fewer)"));
  }
  if (b >= num_blocks_) {
    // A boundary window is an optional improvement: keep the blocks' stages.
    state.solution = BlockSolution();
    state.solution.complete = true;
    state.solution.latency_ms = std::numeric_limits<double>::infinity();
    state.unknown.clear();
    state.bounded.reset();
    ++stats_.skipped_windows;
    MarkSolved(b);
    return absl::OkStatus();
  }
  if (!can_split || state.graph.size() <= budget.min_block_ops) {
    return SearchBudgetError(StrCat(what, "; blocks of ", budget.min_block_ops,
                                    " ops are the smallest it splits into"));
  }
  return SplitBlock(b);
}

void SearchSession::CountSolved(const DpStats& stats) {
  stats_.dp_states += stats.states;
  stats_.transitions += stats.transitions;
  stats_.candidate_stages += stats.distinct_stages;
  stats_.merge_stages += stats.merge_stages;
  stats_.bound_groups += stats.bound_groups;
  stats_.tightened_bounds += stats.tightened_bounds;
  stats_.prefix_bound_blocks += stats.prefix_bound_states > 0 ? 1 : 0;
  stats_.lower_bound_misses += stats.lower_bound_misses;
  stats_.largest_bound_miss_ms = std::max(stats_.largest_bound_miss_ms, stats.largest_bound_miss_ms);
}

Status SearchSession::SolveBounded(int b, LatencySource& source) {
  BlockState& state = blocks_[b];
  ++pass_;
  if (state.phase == BlockPhase::kNotStarted) state.first_pass = pass_;
  if (state.bounded == nullptr) {
    BoundedSearchOptions options = BoundedOptions(PassOptions(&state.total_binds));
    options.prefix_bounds = state.prefix_bounds;
    // With what was left of the total, it searches on its own; on its
    // prefix block's bound table, it walks only its own states, alone.
    options.pause_before_cost_to_go_dp =
        !state.total_binds && options.prefix_bounds == nullptr;
    state.walk_pending = options.pause_before_cost_to_go_dp && options.cost_to_go_dp_max_states > 0;
    state.counted_transitions = 0;
    ASSIGN_OR_RETURN(state.bounded, BoundedBlockSearch::Create(state.graph, options));
  }
  const Status advanced = state.bounded->Advance(source);
  return FinishBounded(b, advanced, state.total_binds, source, nullptr);
}

BoundedSearchOptions SearchSession::BoundedOptions(const DpOptions& dp) const {
  BoundedSearchOptions options;
  options.dp = dp;
  const BoundedSearchKnobs& knobs = options_.bounded;
  options.lookahead = knobs.lookahead;
  options.max_open_steps = knobs.max_open_steps;
  options.cores = knobs.cores;
  options.sub_stage_bound = knobs.sub_stage_bound;
  options.device_floor = knobs.device_floor;
  options.cost_to_go_dp_max_states = knobs.cost_to_go_dp_max_states;
  options.walk_progress = &walk_progress_;
  options.pause_walk = [this] { return WalkOutOfTime(); };
  if (knobs.device_floor.bounds_anything()) {
    // A floor pays off through the cost-to-go DP: it weighs every state. Its
    // steps are cheap next to the DP's millions of measurements. (Without
    // the cost-to-go DP, cost_to_go_dp_max_states 0, a device floor only bounds.)
    options.max_open_steps *= knobs.device_floor_steps_factor;
    if (options.cost_to_go_dp_max_states > 0) {
      options.cost_to_go_dp_max_states = std::max<int64_t>(
          options.cost_to_go_dp_max_states, dp.max_states > 0 ? dp.max_states : int64_t{1} << 40);
    }
  }
  return options;
}

bool SearchSession::HandsOverToDp(const Status& advanced, bool total_binds) {
  return IsSearchBudgetError(advanced) &&
         !(total_binds && absl::StrContains(advanced.message(), "transitions"));
}

Status SearchSession::FinishBounded(int b, const Status& advanced, bool total_binds,
                                    LatencySource& source, StatusOr<BlockSolution>* dp_solution) {
  BlockState& state = blocks_[b];
  // (A shared walk's transitions are the search's too.)
  const int64_t transitions = state.bounded->stats().transitions;
  stats_.total_transitions += transitions - state.counted_transitions;
  state.counted_transitions = transitions;
  if (!advanced.ok() && IsSearchBudgetError(advanced)) {
    if (!HandsOverToDp(advanced, total_binds)) {
      return OverBudget(b, advanced, total_binds, /*can_split=*/true);
    }
    state.bounded.reset();
    // Too loose bounds (or too large a block) for the bounded search: the
    // exhaustive DP solves the block, splitting it over its own budget.
    state.exhaustive = true;
    ++stats_.exhaustive_blocks;
    return SolveExhaustive(b, source, /*first_pass=*/true, dp_solution);
  }
  RETURN_IF_ERROR(advanced);
  RETURN_IF_ERROR(source.status());
  RETURN_IF_ERROR(CheckSignatureBudget());
  // A pause for a shared walk is no pass: the walk and the search after it
  // are (as they are one pass when the search does not pause).
  if (!state.bounded->paused_before_cost_to_go_dp()) ++stats_.dp_passes;
  if (state.bounded->solved()) {
    state.solution = state.bounded->solution();
    if (state.provides_prefix) state.bound_table = state.bounded->bound_table();
    state.bounded.reset();
    CountSolved(state.solution.stats);
    MarkSolved(b);
  } else {
    state.unknown = state.bounded->waiting_for();
    state.phase = BlockPhase::kWaiting;
  }
  ForgetIfOverCache();
  return absl::OkStatus();
}

Status SearchSession::SolveWith(int b, LatencySource& source) {
  BlockState& state = blocks_[b];
  if (state.prefix >= 0) return SolvePrefixed(b, source);
  SizeBlock(b);
  if (!options_.exhaustive && !state.exhaustive) return SolveBounded(b, source);
  const bool first_pass = state.phase == BlockPhase::kNotStarted;
  ++pass_;
  if (first_pass) state.first_pass = pass_;
  return SolveExhaustive(b, source, first_pass);
}

void SearchSession::SizeBlock(int b) {
  BlockState& state = blocks_[b];
  // A floor that knows the issue order, or of stages timed back to back
  // (whose launches rule a stage of small kernels), or that charges
  // concurrent groups their contention, is tight enough to take larger
  // blocks.
  const BoundedSearchKnobs& knobs = options_.bounded;
  const DeviceFloor& device = knobs.device_floor;
  const bool tight =
      device.bounds_anything() && (device.issue_order != DeviceFloor::IssueOrder::kUnknown ||
                                   device.back_to_back || device.contention > 0);
  const int64_t limit =
      knobs.max_block_states * (tight ? knobs.device_floor_states_factor : 1);
  if (options_.exhaustive || state.exhaustive || state.phase != BlockPhase::kNotStarted ||
      limit <= 0) {
    return;
  }
  const int64_t states = CountStates(state.graph, limit + 1);
  state.states = states;
  if (states <= limit) return;
  state.exhaustive = true;
  ++stats_.exhaustive_blocks;
}

Status SearchSession::SolvePrefixed(int b, LatencySource& source) {
  BlockState& state = blocks_[b];
  const BlockState& provider = blocks_[state.prefix];
  if (provider.phase != BlockPhase::kSolved) {
    state.phase = BlockPhase::kWaiting;  // SolveReadyBlocks comes back to it
    return absl::OkStatus();
  }
  if (provider.solution.states == nullptr) {
    // The bounded search solved it: no DP table, perhaps a bound table.
    state.prefix_bounds = provider.bound_table;
    state.prefix = -1;
    state.phase = BlockPhase::kNotStarted;
    return SolveWith(b, source);
  }
  // Waiting for the prefix block ran no pass.
  const bool first_pass = state.first_pass == 0;
  ++pass_;
  if (first_pass) state.first_pass = pass_;
  RETURN_IF_ERROR(SolveExhaustive(b, source, first_pass));
  const BlockState& solved = blocks_[b];  // (b is a split's first piece after a split)
  if (solved.phase == BlockPhase::kSolved && solved.prefix >= 0) {
    ++stats_.prefix_blocks;
    // The candidate stages of its states made of the prefix's ops are the
    // prefix block's (as a twin counts its twin's).
    stats_.candidate_stages += blocks_[solved.prefix].solution.stats.distinct_stages;
    stats_.merge_stages += blocks_[solved.prefix].solution.stats.merge_stages;
  }
  return absl::OkStatus();
}

Status SearchSession::SolveExhaustive(int b, LatencySource& source, bool first_pass,
                                      StatusOr<BlockSolution>* precomputed) {
  BlockState& state = blocks_[b];
  state.unknown.clear();
  bool total_binds = false;
  DpOptions dp = PassOptions(&total_binds);
  dp.keep_states = state.provides_prefix;
  const SolvedStates* prefix =
      state.prefix >= 0 ? blocks_[state.prefix].solution.states.get() : nullptr;
  StatusOr<BlockSolution> solved = precomputed != nullptr
                                       ? std::move(*precomputed)
                                       : SolveBlock(state.graph, dp, source, prefix);
  if (!solved.ok() && IsSearchBudgetError(solved.status())) {
    return OverBudget(b, solved.status(), total_binds, first_pass);
  }
  ASSIGN_OR_RETURN(BlockSolution solution, std::move(solved));
  RETURN_IF_ERROR(source.status());
  RETURN_IF_ERROR(CheckSignatureBudget());
  ++stats_.dp_passes;
  stats_.total_transitions += solution.stats.transitions;
  if (first_pass) CountSolved(solution.stats);
  if (!state.provides_prefix) solution.states.reset();  // kept for a shared walk's other blocks
  if (solution.complete) {
    state.solution = std::move(solution);
    MarkSolved(b);
  } else {
    std::sort(state.unknown.begin(), state.unknown.end());
    state.unknown.erase(std::unique(state.unknown.begin(), state.unknown.end()),
                        state.unknown.end());
    state.solution.stats = solution.stats;
    state.phase = BlockPhase::kWaiting;
  }
  ForgetIfOverCache();
  return absl::OkStatus();
}

Status SearchSession::SplitBlock(int b) {
  const int max_ops =
      std::max(options_.budget.min_block_ops, blocks_[b].graph.size() * 7 / 10);
  const std::vector<uint64_t> key = blocks_[b].graph.structure_key();
  std::vector<BlockState> old_blocks;
  old_blocks.swap(blocks_);
  std::vector<Block> old_partition;
  old_partition.swap(partition_.blocks);
  first_with_structure_.clear();
  int first_piece = -1;
  for (int i = 0; i < static_cast<int>(old_blocks.size()); ++i) {
    // Blocks of b's structure after b wait for b (twins are never earlier
    // than their original): they are split the same way.
    if (i == b || (i > b && old_blocks[i].graph.structure_key() == key)) {
      ASSIGN_OR_RETURN(std::vector<Block> pieces, ::iosfarm::scheduler::ios::SplitBlock(graph_, old_partition[i], max_ops));
      if (i == b) first_piece = static_cast<int>(blocks_.size());
      for (Block& piece : pieces) {
        BlockState state;
        ASSIGN_OR_RETURN(state.graph, BlockGraph::Build(graph_, piece.ops));
        AddBlock(std::move(state));
        partition_.blocks.push_back(std::move(piece));
      }
      ++stats_.split_blocks;
    } else {
      // AddBlock finds them again under the new indices.
      old_blocks[i].twin = old_blocks[i].prefix = -1;
      old_blocks[i].provides_prefix = false;
      AddBlock(std::move(old_blocks[i]));
      partition_.blocks.push_back(std::move(old_partition[i]));
    }
  }
  stats_.smallest_split =
      stats_.smallest_split == 0 ? max_ops : std::min(stats_.smallest_split, max_ops);
  num_blocks_ = static_cast<int>(blocks_.size());
  stats_.blocks = num_blocks_;
  partition_.size_cuts = partition_.articulation_cuts = partition_.largest_block = 0;
  for (const Block& block : partition_.blocks) {
    partition_.size_cuts += block.start == BlockStart::kSizeSplit;
    partition_.articulation_cuts += block.start == BlockStart::kArticulation;
    partition_.largest_block =
        std::max(partition_.largest_block, static_cast<int>(block.ops.size()));
  }
  next_block_ = first_piece;
  return absl::OkStatus();
}

bool SearchSession::PausedForWalk(int b) const {
  const BlockState& state = blocks_[b];
  return state.walk_pending && state.bounded != nullptr && state.bounded->paused_before_cost_to_go_dp();
}

StatusOr<int> SearchSession::WalkPausedBlocks(bool all, bool timed,
                                              const std::function<Status(int)>& resume) {
  if (shared_walk_searches_.empty()) {
    // Paused blocks, by shape, in block order.
    const std::vector<std::vector<size_t>> shapes = GroupByShape(
        blocks_.size(), [&](size_t b) { return PausedForWalk(b) ? &blocks_[b].graph : nullptr; });
    // A block that could still pause: not started (and not waiting for a
    // twin or a prefix block), or started and waiting for its bounds'
    // latencies.
    auto could_join = [&](const BlockState& state) {
      if (state.twin >= 0 || state.prefix >= 0) return false;
      return state.phase == BlockPhase::kNotStarted ||
             (state.phase == BlockPhase::kWaiting && state.walk_pending &&
              state.bounded != nullptr && !state.bounded->paused_before_cost_to_go_dp());
    };
    const auto complete = std::find_if(shapes.begin(), shapes.end(), [&](const auto& shape) {
      return all || std::none_of(blocks_.begin(), blocks_.end(), [&](const BlockState& state) {
               return could_join(state) && SameShape(blocks_[shape[0]].graph, state.graph);
             });
    });
    if (complete == shapes.end()) return 0;
    if (timed && OutOfTime()) {
      paused_ = true;
      return 0;
    }
    std::vector<BoundedBlockSearch*> searches;
    for (size_t b : *complete) searches.push_back(blocks_[b].bounded.get());
    if (searches.size() > 1) {
      ASSIGN_OR_RETURN(shared_walk_, BoundedBlockSearch::StartCostToGoDpWalk(searches));
    }
    shared_walk_searches_.assign(searches.begin(), searches.end());
  }
  if (shared_walk_ != nullptr) {
    // Stopped at the deadline, it goes on at the next call (its blocks stay
    // paused for it).
    if (!shared_walk_->Continue(timed ? [this] { return WalkOutOfTime(); }
                                      : std::function<bool()>())) {
      paused_ = true;
      return 0;
    }
    shared_walk_.reset();
    stats_.shared_bound_walk_blocks += static_cast<int>(shared_walk_searches_.size());
  }
  // The walk's blocks, in block order (a pass since it began may have split
  // an earlier block, renumbering them).
  std::vector<size_t> shape;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    if (std::find(shared_walk_searches_.begin(), shared_walk_searches_.end(),
                  blocks_[b].bounded.get()) != shared_walk_searches_.end()) {
      shape.push_back(b);
      blocks_[b].walk_pending = false;
    }
  }
  shared_walk_searches_.clear();
  // Later blocks first: a block's pass may split it, renumbering the
  // blocks after it. Those left at the deadline are SolveReadyBlocks'
  // (walked, they wait for nothing).
  for (auto b = shape.rbegin(); b != shape.rend(); ++b) {
    if (timed && OutOfTime()) {
      paused_ = true;
      break;
    }
    RETURN_IF_ERROR(resume(static_cast<int>(*b)));
  }
  ResolveTwins();
  return static_cast<int>(shape.size());
}

}  // namespace iosfarm::scheduler::ios
