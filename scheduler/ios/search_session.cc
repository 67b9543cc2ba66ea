#include "scheduler/ios/search_session.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>

#include "absl/strings/match.h"
#include "common/strings.h"
#include "scheduler/ios/merge.h"
#include "scheduler/ios/op_dag.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

// FindPrefix: the later ops a block may have beyond an earlier block's, and
// the smallest prefix worth its table (smaller blocks' DP costs little).
constexpr int kMaxPrefixExtraOps = 3;
constexpr int kMinPrefixOps = 8;

// A block's floored search may take this many times bounded_steps_per_block
// (2 M by default: NASNet's cells take about that, and hand to the DP
// millions of measurements at 0.5 M; docs/benchmarks.md, 2026-11-28).
constexpr int64_t kFloorStepsFactor = 40;
// With a device floor that knows the backend's issue order, blocks of up to
// this many times bounded_max_states are attempted (NASNet's cells, about
// 146 k states: under sim:h100 the bound DP over a cell and the floor leave
// 1-170 k of its stages to measure, against about 440 k for the DP), as
// with a floor of stages timed back to back or one that declares the
// device's contention (the analytic oracle's: without it, its floor bounds
// those cells too loosely to pay for the bound DP's walk).
constexpr int64_t kDeviceFloorStatesFactor = 4;

Status CheckLatency(Signature signature, double latency_ms) {
  if (!std::isfinite(latency_ms) || latency_ms < 0) {
    return absl::InvalidArgumentError(StrCat("latency of signature ", Hex64(signature),
                                             " must be finite and >= 0, got ", latency_ms));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view BlockSolverName(BlockSolver solver) {
  switch (solver) {
    case BlockSolver::kBounded:
      return "bounded";
    case BlockSolver::kBoundedFloored:
      return "bounded_floored";
    case BlockSolver::kExhaustive:
      return "exhaustive";
    case BlockSolver::kTwin:
      return "twin";
  }
  return "bounded";
}

// A merged conv's description is small and counted as a fixed size.
int64_t StageRequestBytes(const StageRequest& request) {
  int64_t bytes = sizeof(StageRequest) + 64;
  for (const auto& group : request.stage.groups) {
    bytes += sizeof(group) + static_cast<int64_t>(group.size() * sizeof(graph::NodeId));
  }
  if (request.stage.merged) bytes += 256;
  return bytes;
}

// Looks latencies up; queues a request for each unknown one.
class SearchSession::CollectingSource : public LatencySource {
 public:
  CollectingSource(SearchSession& session, std::vector<Signature>& unknown)
      : session_(session), unknown_(unknown) {}

  std::optional<double> Lookup(Signature signature,
                               absl::FunctionRef<Stage()> stage) override {
    auto [entry, inserted] = session_.Touch(signature);
    if (!std::isnan(entry->ms)) return entry->ms;
    if (inserted) {
      session_.requested_.insert(signature);
      session_.queue_.push_back({signature, stage()});
      session_.queue_bytes_ += StageRequestBytes(session_.queue_.back());
    }
    unknown_.push_back(signature);
    return std::nullopt;
  }
  void Prefetch(Signature signature) const override { session_.latencies_.Prefetch(signature); }
  Status status() const override { return absl::OkStatus(); }
  int64_t memory_bytes() const override {
    int64_t bytes = session_.queue_bytes_ +
                    static_cast<int64_t>(unknown_.capacity() * sizeof(Signature));
    if (session_.options_.budget.latency_cache_bytes > 0) {
      bytes += session_.LatencyTableBytes() + session_.caller_bytes_;
    }
    return bytes;
  }

 private:
  SearchSession& session_;
  std::vector<Signature>& unknown_;
};

// Measures unknown latencies on the spot. With a mutex it may be shared by
// SolveInParallel's threads: the mutex then guards the session's latency
// table (and its statistics) only. A thread claims the unknown signatures of
// its batch under it, measures them without it (the latency function runs on
// several threads at once, never twice for one signature), then records
// them; a signature another thread is measuring is waited for.
class SearchSession::InlineSource : public LatencySource {
 public:
  InlineSource(SearchSession& session, const SignedLatencyFn& measure, std::mutex* mu)
      : session_(session), measure_(measure), mu_(mu) {}

  std::optional<double> Lookup(Signature signature,
                               absl::FunctionRef<Stage()> stage) override {
    std::optional<double> latency;
    LookupBatch(
        absl::MakeConstSpan(&signature, 1), [&](size_t) { return stage(); },
        absl::MakeSpan(&latency, 1));
    return latency;
  }
  void LookupBatch(absl::Span<const Signature> signatures, absl::FunctionRef<Stage(size_t)> stage,
                   absl::Span<std::optional<double>> latencies) override {
    if (mu_ == nullptr) {
      for (size_t i = 0; i < signatures.size(); ++i) {
        auto [entry, inserted] = session_.Touch(signatures[i]);
        if (!std::isnan(entry->ms)) {
          latencies[i] = entry->ms;
        } else if (status_.ok()) {
          ++session_.stats_.stages_measured;
          StatusOr<double> latency = Measure(signatures[i], stage(i));
          status_ = latency.status();
          if (status_.ok()) latencies[i] = Record(signatures[i], inserted, *latency);
        }
      }
      return;
    }
    // Claim what is unknown; note what others are measuring.
    std::vector<size_t> claimed, awaited;
    std::vector<uint8_t> inserted;
    {
      std::unique_lock<std::mutex> lock(*mu_);
      for (Signature signature : signatures) session_.latencies_.Prefetch(signature);
      for (size_t i = 0; i < signatures.size(); ++i) {
        auto [entry, fresh] = session_.Touch(signatures[i]);
        if (!std::isnan(entry->ms)) {
          latencies[i] = entry->ms;
        } else if (entry->measuring) {
          awaited.push_back(i);
        } else if (status_.ok()) {
          entry->measuring = true;
          ++session_.stats_.stages_measured;
          claimed.push_back(i);
          inserted.push_back(fresh);
        }
      }
    }
    // Measure. A failure is recorded at once, before failed_ tells the
    // other threads to measure no more.
    std::vector<std::optional<double>> measured(claimed.size());
    for (size_t c = 0; c < claimed.size() && !failed_.load(std::memory_order_acquire); ++c) {
      const size_t i = claimed[c];
      StatusOr<double> latency = Measure(signatures[i], stage(i));
      if (latency.ok()) {
        measured[c] = *latency;
        continue;
      }
      {
        std::unique_lock<std::mutex> lock(*mu_);
        if (status_.ok()) status_ = latency.status();
      }
      failed_.store(true, std::memory_order_release);
    }
    // Record, and wait for what others measure.
    std::unique_lock<std::mutex> lock(*mu_);
    for (size_t c = 0; c < claimed.size(); ++c) {
      const Signature signature = signatures[claimed[c]];
      if (measured[c]) {
        latencies[claimed[c]] = Record(signature, inserted[c] != 0, *measured[c]);
      } else {
        session_.latencies_.Find(signature)->measuring = false;
      }
    }
    if (!claimed.empty()) measured_cv_.notify_all();
    for (size_t i : awaited) {
      // Entries stay: no thread forgets latencies (ParallelInline).
      CachedLatency* entry = nullptr;
      measured_cv_.wait(lock, [&] {
        entry = session_.latencies_.Find(signatures[i]);
        return !entry->measuring;
      });
      if (!std::isnan(entry->ms)) latencies[i] = entry->ms;
    }
  }
  // Shared, the table may be growing under another thread.
  void Prefetch(Signature signature) const override {
    if (mu_ == nullptr) session_.latencies_.Prefetch(signature);
  }
  Status status() const override {
    std::unique_lock<std::mutex> lock =
        mu_ != nullptr ? std::unique_lock<std::mutex>(*mu_) : std::unique_lock<std::mutex>();
    return status_;
  }

 private:
  // The latency function's answer, checked.
  StatusOr<double> Measure(Signature signature, const Stage& stage) const {
    StatusOr<double> latency = measure_(signature, stage);
    if (latency.ok()) RETURN_IF_ERROR(CheckLatency(signature, *latency));
    return latency;
  }

  // Stores a measured latency (under the mutex when shared) and returns it.
  double Record(Signature signature, bool inserted, double latency) {
    const CachedLatency value{latency, session_.pass_, false};
    *session_.latencies_.FindOrInsert(signature, value).first = value;
    if (!inserted) session_.requested_.erase(signature);
    return latency;
  }

  SearchSession& session_;
  const SignedLatencyFn& measure_;
  std::mutex* mu_;
  Status status_;
  // Shared use: a wake-up when measured latencies are recorded.
  std::condition_variable measured_cv_;
  std::atomic<bool> failed_{false};
};

StatusOr<std::unique_ptr<SearchSession>> SearchSession::Create(const graph::Graph& graph,
                                                               const SearchOptions& options) {
  RETURN_IF_ERROR(ValidateSearchOptions(options));
  std::unique_ptr<SearchSession> session(new SearchSession(graph, options));
  ASSIGN_OR_RETURN(session->partition_,
                   PartitionIntoBlocks(graph, BlockOptions{options.max_block_ops}));
  ASSIGN_OR_RETURN(OpDag dag, BuildOpDag(graph));
  session->position_ = std::move(dag.position);
  for (const Block& block : session->partition_.blocks) {
    BlockState state;
    ASSIGN_OR_RETURN(state.graph, BlockGraph::Build(graph, block.ops));
    session->AddBlock(std::move(state));
  }
  session->num_blocks_ = static_cast<int>(session->blocks_.size());
  session->stats_.blocks = session->num_blocks_;
  if (session->num_blocks_ == 0) session->windows_created_ = true;
  return session;
}

void SearchSession::AddBlock(BlockState state) {
  if (options_.reuse_identical_blocks) {
    const int index = static_cast<int>(blocks_.size());
    auto [it, inserted] = first_with_structure_.emplace(state.graph.structure_key(), index);
    if (!inserted) {
      state.twin = it->second;
    } else if (state.right < 0) {
      FindPrefix(state);
    }
  }
  blocks_.push_back(std::move(state));
}

void SearchSession::FindPrefix(BlockState& state) {
  const std::vector<graph::NodeId>& nodes = state.graph.nodes();
  const int n = state.graph.size();
  for (int extra = 1; extra <= kMaxPrefixExtraOps && n - extra >= kMinPrefixOps; ++extra) {
    const std::vector<graph::NodeId> first(nodes.begin(), nodes.end() - extra);
    StatusOr<BlockGraph> prefix = BlockGraph::Build(graph_, first);
    if (!prefix.ok() || prefix->words() != state.graph.words()) continue;
    const auto it = first_with_structure_.find(prefix->structure_key());
    if (it == first_with_structure_.end() || blocks_[it->second].right >= 0) continue;
    state.prefix = it->second;
    blocks_[it->second].provides_prefix = true;
    return;
  }
}

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
    BoundedSearchOptions options = BoundedOptions(PassOptions(&state.total_binds), state.floored);
    if (!state.floored) options.prefix_bounds = state.prefix_bounds;
    // With what was left of the total, it searches on its own; on its
    // prefix block's bound table, it walks only its own states, alone.
    options.pause_before_bound_dp =
        SharesWalks() && !state.total_binds && options.prefix_bounds == nullptr;
    state.walk_pending = options.pause_before_bound_dp && options.bound_dp_max_states > 0;
    state.counted_transitions = 0;
    ASSIGN_OR_RETURN(state.bounded, BoundedBlockSearch::Create(state.graph, options));
  }
  const Status advanced = state.bounded->Advance(source);
  return FinishBounded(b, advanced, state.total_binds, source, nullptr);
}

BoundedSearchOptions SearchSession::BoundedOptions(const DpOptions& dp, bool floored) const {
  BoundedSearchOptions options;
  options.dp = dp;
  options.lookahead = options_.lookahead;
  options.max_open_steps = options_.bounded_steps_per_block;
  options.cores = options_.cores;
  options.sub_stage_bound = options_.sub_stage_bound;
  options.device_floor = options_.device_floor;
  options.bound_dp_max_states = options_.bound_dp_max_states;
  options.walk_progress = &walk_progress_;
  if (floored || options_.device_floor.bounds_anything()) {
    // A floor pays off through the bound DP: it weighs every state. Its
    // steps are cheap next to the DP's millions of measurements. (Without
    // the bound DP, bound_dp_max_states 0, a device floor only bounds.)
    if (floored) options.floor_samples = options_.floor_samples;
    options.max_open_steps *= kFloorStepsFactor;
    if (floored || options.bound_dp_max_states > 0) {
      options.bound_dp_max_states = std::max<int64_t>(
          options.bound_dp_max_states, dp.max_states > 0 ? dp.max_states : int64_t{1} << 40);
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
    if (options_.floor_samples > 0 && !state.floored && dp_solution == nullptr) {
      // Too loose bounds for the exact search: the calibrated floor next.
      state.floored = true;
      ++stats_.floored_blocks;
      return SolveBounded(b, source);
    }
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
  if (!state.bounded->paused_before_bound_dp()) ++stats_.dp_passes;
  if (state.bounded->solved()) {
    state.solution = state.bounded->solution();
    // (A calibrated floor's bounds are fitted, not the assumption's.)
    if (state.provides_prefix && !state.floored) state.bound_table = state.bounded->bound_table();
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
  const DeviceFloor& device = options_.device_floor;
  const bool tight =
      device.bounds_anything() && (device.issue_order != DeviceFloor::IssueOrder::kUnknown ||
                                   device.back_to_back || device.contention > 0);
  const int64_t limit = options_.bounded_max_states * (tight ? kDeviceFloorStatesFactor : 1);
  const bool floor = options_.floor_samples > 0;
  if (options_.exhaustive || state.exhaustive || state.phase != BlockPhase::kNotStarted ||
      (limit <= 0 && !floor)) {
    return;
  }
  const int64_t states =
      CountStates(state.graph, std::max(limit, floor ? options_.floor_min_states : 0) + 1);
  state.states = states;
  if (floor && states > options_.floor_min_states) {
    state.floored = true;
    ++stats_.floored_blocks;
    return;
  }
  if (limit <= 0 || states <= limit) return;
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

Status SearchSession::CheckSignatureBudget() const {
  const SearchBudget& budget = options_.budget;
  if (budget.max_signatures_total > 0 &&
      static_cast<int64_t>(latencies_.size()) > budget.max_signatures_total) {
    return SearchBudgetError(StrCat(
        "the search needs more than ", budget.max_signatures_total,
        " distinct stage signatures at once (the search budget: their latencies are held "
        "in memory; a smaller block size or r/s needs fewer)"));
  }
  return absl::OkStatus();
}

void SearchSession::ForgetIfOverCache() {
  const SearchBudget& budget = options_.budget;
  if (budget.latency_cache_bytes > 0 &&
      LatencyTableBytes() > std::max(budget.latency_cache_bytes, forget_at_bytes_)) {
    ForgetSolvedLatencies();
  }
}

std::pair<SearchSession::CachedLatency*, bool> SearchSession::Touch(Signature signature) {
  auto [entry, inserted] = latencies_.FindOrInsert(signature, {kUnknown, pass_, false});
  // Written only when it changes: most lookups are of a signature this pass
  // has seen, and a clean line need not be written back.
  if (entry->last_pass != pass_) entry->last_pass = pass_;
  stats_.unique_signatures += inserted;
  return {entry, inserted};
}

int64_t SearchSession::LatencyTableBytes() const {
  return static_cast<int64_t>(latencies_.memory_bytes());
}

void SearchSession::ForgetSolvedLatencies() {
  uint32_t keep_from = pass_ + 1;
  for (const BlockState& state : blocks_) {
    // A block waiting for its prefix block (first_pass 0) looked nothing up.
    if (state.phase == BlockPhase::kWaiting && state.twin < 0 && state.first_pass > 0) {
      keep_from = std::min(keep_from, state.first_pass);
    }
  }
  stats_.forgotten_latencies +=
      static_cast<int64_t>(latencies_.EraseIf([keep_from](const CachedLatency& entry) {
        return !std::isnan(entry.ms) && entry.last_pass < keep_from;
      }));
  // What the waiting blocks need stays; forget again only once the table
  // has grown well past it (each forgetting costs a walk of the table).
  forget_at_bytes_ = 2 * LatencyTableBytes();
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

bool SearchSession::IsKnown(Signature signature) const {
  const CachedLatency* entry = latencies_.Find(signature);
  return entry != nullptr && !std::isnan(entry->ms);
}

void SearchSession::MarkSolved(int b) {
  blocks_[b].phase = BlockPhase::kSolved;
  blocks_[b].unknown.clear();
  ++solved_blocks_;
}

bool SearchSession::ResolveTwins() {
  bool changed = false;
  for (int b = 0; b < static_cast<int>(blocks_.size()); ++b) {
    BlockState& state = blocks_[b];
    if (state.twin < 0 || state.phase != BlockPhase::kWaiting) continue;
    const BlockState& twin = blocks_[state.twin];
    if (twin.phase != BlockPhase::kSolved) continue;
    // Local index i of the twin corresponds to local index i here.
    std::unordered_map<graph::NodeId, graph::NodeId> map;
    for (int i = 0; i < twin.graph.size(); ++i) map[twin.graph.node(i)] = state.graph.node(i);
    state.solution = twin.solution;
    for (PlannedStage& planned : state.solution.stages) {
      for (auto& group : planned.stage.groups) {
        for (graph::NodeId& id : group) id = map.at(id);
      }
      if (planned.stage.merged) {
        std::vector<graph::NodeId> convs;
        for (const auto& group : planned.stage.groups) convs.push_back(group[0]);
        StatusOr<MergedConv> merged = MergeConvs(graph_, convs);
        if (merged.ok()) planned.stage.merged = *std::move(merged);
      }
    }
    stats_.candidate_stages += twin.solution.stats.distinct_stages;
    stats_.merge_stages += twin.solution.stats.merge_stages;
    ++stats_.reused_blocks;
    MarkSolved(b);
    changed = true;
  }
  return changed;
}

bool SearchSession::OutOfTime() const {
  return deadline_.has_value() && stats_.dp_passes > passes_before_call_ &&
         std::chrono::steady_clock::now() >= *deadline_;
}

Status SearchSession::SolveReadyBlocks() {
  for (int b = 0; b < next_block_; ++b) {
    BlockState& state = blocks_[b];
    if (state.phase != BlockPhase::kWaiting || state.twin >= 0 || PausedForWalk(b)) continue;
    const bool ready = std::all_of(state.unknown.begin(), state.unknown.end(),
                                   [&](Signature s) { return IsKnown(s); });
    if (!ready) continue;
    if (OutOfTime()) {
      paused_ = true;
      break;
    }
    CollectingSource source(*this, state.unknown);
    RETURN_IF_ERROR(SolveWith(b, source));
  }
  ResolveTwins();
  return absl::OkStatus();
}

StatusOr<std::vector<StageRequest>> SearchSession::NextUnknown(int max_batch) {
  if (max_batch < 1) {
    return absl::InvalidArgumentError(StrCat("max_batch must be >= 1, got ", max_batch));
  }
  paused_ = false;
  passes_before_call_ = stats_.dp_passes;
  RETURN_IF_ERROR(SolveReadyBlocks());
  const auto resume = [this](int b) {
    CollectingSource source(*this, blocks_[b].unknown);
    return SolveWith(b, source);
  };
  while (!paused_) {
    while (static_cast<int>(queue_.size()) < max_batch &&
           next_block_ < static_cast<int>(blocks_.size())) {
      if (OutOfTime()) {
        paused_ = true;
        break;
      }
      const int b = next_block_++;
      // A split of a block that was far into its bounded search can leave
      // later blocks started.
      if (blocks_[b].phase != BlockPhase::kNotStarted) continue;
      CollectingSource source(*this, blocks_[b].unknown);
      RETURN_IF_ERROR(StartBlock(b, source));
    }
    ResolveTwins();
    if (paused_) break;
    // Blocks paused for a shared walk wait for the rest of their shape while
    // its latencies are being measured; with nothing else to hand out or to
    // wait for, they walk.
    const bool idle =
        queue_.empty() && requested_.empty() && next_block_ >= static_cast<int>(blocks_.size());
    ASSIGN_OR_RETURN(const int walked, WalkPausedBlocks(idle, /*timed=*/true, resume));
    if (paused_) break;
    if (walked > 0) {
      // Blocks that waited for a block the walk solved (its prefix) go on,
      // then what the walked blocks need next, or the windows.
      RETURN_IF_ERROR(SolveReadyBlocks());
      continue;
    }
    if (windows_created_ || solved_blocks_ < num_blocks_) break;
    RETURN_IF_ERROR(CreateWindows());
  }
  std::vector<StageRequest> batch;
  while (!queue_.empty() && static_cast<int>(batch.size()) < max_batch) {
    StageRequest request = std::move(queue_.front());
    queue_.pop_front();
    queue_bytes_ -= StageRequestBytes(request);
    if (IsKnown(request.signature)) continue;  // measured meanwhile
    batch.push_back(std::move(request));
  }
  stats_.requests += static_cast<int64_t>(batch.size());
  stats_.stages_measured += static_cast<int64_t>(batch.size());
  return batch;
}

Status SearchSession::Provide(Signature signature, double latency_ms) {
  RETURN_IF_ERROR(CheckLatency(signature, latency_ms));
  auto [entry, inserted] = latencies_.FindOrInsert(signature, {latency_ms, pass_, false});
  if (!inserted && std::isnan(entry->ms)) entry->ms = latency_ms;
  stats_.unique_signatures += inserted;
  requested_.erase(signature);
  return absl::OkStatus();
}

Status SearchSession::RunInline(const SignedLatencyFn& measure) {
  std::mutex mu;
  const bool parallel = ParallelInline();
  InlineSource source(*this, measure, parallel ? &mu : nullptr);
  const auto resume = [&](int b) { return SolveWith(b, source); };
  while (true) {
    if (parallel) RETURN_IF_ERROR(SolveInParallel(source));
    const int solved_before = solved_blocks_;
    const size_t blocks_before = blocks_.size();
    int walked_in_sweep = 0;
    for (int b = 0; b < static_cast<int>(blocks_.size()); ++b) {
      if (blocks_[b].phase == BlockPhase::kSolved) continue;
      if (blocks_[b].phase == BlockPhase::kNotStarted) {
        RETURN_IF_ERROR(StartBlock(b, source));
        if (blocks_[b].phase == BlockPhase::kNotStarted) {  // split: start its first piece
          --b;
          continue;
        }
      } else if (blocks_[b].twin < 0 && !PausedForWalk(b)) {
        RETURN_IF_ERROR(SolveWith(b, source));
      }
      ResolveTwins();
      // A block paused for a shared walk waits for the later blocks of its
      // shape (a walk's split of a block before b is swept up below).
      while (true) {
        ASSIGN_OR_RETURN(const int walked,
                         WalkPausedBlocks(/*all=*/false, /*timed=*/false, resume));
        if (walked == 0) break;
        walked_in_sweep += walked;
      }
    }
    ASSIGN_OR_RETURN(const int walked, WalkPausedBlocks(/*all=*/true, /*timed=*/false, resume));
    if (solved_blocks_ < static_cast<int>(blocks_.size())) {
      // Another sweep, unless this one did nothing (no walk, no block solved
      // or split).
      if (walked + walked_in_sweep == 0 && solved_blocks_ == solved_before &&
          blocks_.size() == blocks_before) {
        return absl::InternalError(StrCat(
            "search stalled with ", blocks_.size() - solved_blocks_.load(), " blocks unsolved"));
      }
      continue;
    }
    next_block_ = static_cast<int>(blocks_.size());
    if (windows_created_) break;
    RETURN_IF_ERROR(CreateWindows());
  }
  queue_.clear();
  queue_bytes_ = 0;
  return absl::OkStatus();
}

bool SearchSession::SharesWalks() const { return options_.floor_samples == 0; }

bool SearchSession::PausedForWalk(int b) const {
  const BlockState& state = blocks_[b];
  return state.walk_pending && state.bounded != nullptr && state.bounded->paused_before_bound_dp();
}

StatusOr<int> SearchSession::WalkPausedBlocks(bool all, bool timed,
                                              const std::function<Status(int)>& resume) {
  // Paused blocks, by shape, in block order.
  const std::vector<std::vector<size_t>> shapes = GroupByShape(
      blocks_.size(), [&](size_t b) { return PausedForWalk(b) ? &blocks_[b].graph : nullptr; });
  if (shapes.empty()) return 0;
  // A block that could still pause: not started (and not waiting for a twin
  // or a prefix block), or started and waiting for its bounds' latencies.
  auto could_join = [&](const BlockState& state) {
    if (state.twin >= 0 || state.prefix >= 0) return false;
    return state.phase == BlockPhase::kNotStarted ||
           (state.phase == BlockPhase::kWaiting && state.walk_pending && state.bounded != nullptr &&
            !state.bounded->paused_before_bound_dp());
  };
  for (const std::vector<size_t>& shape : shapes) {
    const bool complete =
        all || std::none_of(blocks_.begin(), blocks_.end(), [&](const BlockState& state) {
          return could_join(state) && SameShape(blocks_[shape[0]].graph, state.graph);
        });
    if (!complete) continue;
    if (timed && OutOfTime()) {
      paused_ = true;
      return 0;
    }
    std::vector<BoundedBlockSearch*> searches;
    for (size_t b : shape) {
      searches.push_back(blocks_[b].bounded.get());
      blocks_[b].walk_pending = false;
    }
    if (searches.size() > 1) {
      RETURN_IF_ERROR(BoundedBlockSearch::WalkBoundDps(searches));
      stats_.shared_bound_walk_blocks += static_cast<int>(searches.size());
    }
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
  return 0;
}

Status SearchSession::StartBlock(int b, LatencySource& source) {
  if (blocks_[b].twin >= 0) {
    blocks_[b].phase = BlockPhase::kWaiting;  // for its twin
    return absl::OkStatus();
  }
  return SolveWith(b, source);
}

StatusOr<SearchResult> SearchSession::Result() const {
  if (!Done()) {
    return absl::FailedPreconditionError(StrCat("search not done: ", solved_blocks_.load(), " of ",
                                                blocks_.size(), " blocks solved, ",
                                                requested_.size(), " latencies outstanding"));
  }
  SearchResult result;
  result.stats = stats_;
  // Windows by the block they start, and how many stages they take from
  // each side.
  std::vector<int> window_at(num_blocks_, -1);
  std::vector<int> skip_front(num_blocks_, 0), skip_back(num_blocks_, 0);
  for (int w = num_blocks_; w < static_cast<int>(blocks_.size()); ++w) {
    const BlockState& window = blocks_[w];
    window_at[window.right] = w;
    skip_back[window.right - 1] = window.left_stages;
    skip_front[window.right] = window.right_stages;
  }
  auto emit = [&](const PlannedStage& planned, int block) {
    ScheduledStage stage;
    stage.stage = planned.stage;
    stage.block = block;
    stage.signature = planned.signature;
    stage.latency_ms = planned.latency_ms;
    result.schedule.latency_ms += planned.latency_ms;
    result.schedule.stages.push_back(std::move(stage));
  };
  for (int b = 0; b < num_blocks_; ++b) {
    const BlockState& state = blocks_[b];
    BlockReport report;
    report.num_ops = state.graph.size();
    report.twin = state.twin;
    report.prefix = state.prefix;
    if (state.twin >= 0) {
      report.solver = BlockSolver::kTwin;
    } else if (options_.exhaustive || state.exhaustive || state.prefix >= 0) {
      report.solver = BlockSolver::kExhaustive;
    } else {
      report.solver = state.floored ? BlockSolver::kBoundedFloored : BlockSolver::kBounded;
    }
    report.dp = state.solution.stats;
    report.num_stages = static_cast<int>(state.solution.stages.size());
    report.latency_ms = state.solution.latency_ms;
    result.blocks.push_back(report);
    if (window_at[b] >= 0) {
      const BlockState& window = blocks_[window_at[b]];
      const std::vector<PlannedStage>& left = blocks_[b - 1].solution.stages;
      if (window.solution.latency_ms < window.old_latency_ms - 1e-12) {
        for (const PlannedStage& planned : window.solution.stages) emit(planned, b - 1);
        ++result.stats.improved_windows;
        result.stats.window_gain_ms += window.old_latency_ms - window.solution.latency_ms;
      } else {
        for (size_t i = left.size() - window.left_stages; i < left.size(); ++i) {
          emit(left[i], b - 1);
        }
        for (int i = 0; i < window.right_stages; ++i) emit(state.solution.stages[i], b);
      }
    }
    const auto& stages = state.solution.stages;
    for (size_t i = skip_front[b]; i + skip_back[b] < stages.size(); ++i) emit(stages[i], b);
  }
  return result;
}

}  // namespace iosfarm::scheduler::ios
