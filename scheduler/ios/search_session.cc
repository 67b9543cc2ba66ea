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
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/stages/merge.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

// FindPrefix: the later ops a block may have beyond an earlier block's, and
// the smallest prefix worth its table (smaller blocks' DP costs little).
constexpr int kMaxPrefixExtraOps = 3;
constexpr int kMinPrefixOps = 8;

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

bool SearchSession::WalkOutOfTime() const {
  return in_next_unknown_ && deadline_.has_value() &&
         std::chrono::steady_clock::now() >= *deadline_;
}

bool SearchSession::walking() const {
  return shared_walk_ != nullptr ||
         std::any_of(blocks_.begin(), blocks_.end(), [](const BlockState& state) {
           return state.bounded != nullptr && state.bounded->walking();
         });
}

bool SearchSession::OutOfTime() const {
  if (stats_.dp_passes <= passes_before_call_) return false;
  if (stop_between_walks_ && !walking()) return true;
  return deadline_.has_value() && std::chrono::steady_clock::now() >= *deadline_;
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
  in_next_unknown_ = true;
  struct Leave {
    bool& in;
    ~Leave() { in = false; }
  } leave{in_next_unknown_};
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
  // A walk stopped at the deadline goes on at the next call, needing no
  // latency.
  if (!paused_ && walking()) paused_ = true;
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
      report.solver = BlockSolver::kBounded;
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
