#include "scheduler/ios/search_session.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "common/strings.h"
#include "scheduler/ios/merge.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

Status CheckLatency(Signature signature, double latency_ms) {
  if (!std::isfinite(latency_ms) || latency_ms < 0) {
    return absl::InvalidArgumentError(StrCat("latency of signature ", Hex64(signature),
                                             " must be finite and >= 0, got ", latency_ms));
  }
  return absl::OkStatus();
}

}  // namespace

// Looks latencies up; queues a request for each unknown one.
class SearchSession::CollectingSource : public LatencySource {
 public:
  CollectingSource(SearchSession& session, std::vector<Signature>& unknown)
      : session_(session), unknown_(unknown) {}

  std::optional<double> Lookup(Signature signature,
                               absl::FunctionRef<Stage()> stage) override {
    auto [it, inserted] = session_.latencies_.try_emplace(signature, kUnknown);
    if (!std::isnan(it->second)) return it->second;
    if (inserted) {
      session_.requested_.insert(signature);
      session_.queue_.push_back({signature, stage()});
    }
    unknown_.push_back(signature);
    return std::nullopt;
  }
  Status status() const override { return absl::OkStatus(); }

 private:
  SearchSession& session_;
  std::vector<Signature>& unknown_;
};

// Measures unknown latencies on the spot.
class SearchSession::InlineSource : public LatencySource {
 public:
  InlineSource(SearchSession& session, const StageLatencyFn& measure)
      : session_(session), measure_(measure) {}

  std::optional<double> Lookup(Signature signature,
                               absl::FunctionRef<Stage()> stage) override {
    auto [it, inserted] = session_.latencies_.try_emplace(signature, kUnknown);
    if (!std::isnan(it->second)) return it->second;
    if (!status_.ok()) return std::nullopt;
    StatusOr<double> latency = measure_(stage());
    if (latency.ok()) {
      status_ = CheckLatency(signature, *latency);
    } else {
      status_ = latency.status();
    }
    if (!status_.ok()) return std::nullopt;
    // The map may have grown during measure_ (it does not touch it today).
    session_.latencies_[signature] = *latency;
    if (!inserted) session_.requested_.erase(signature);
    return *latency;
  }
  Status status() const override { return status_; }

 private:
  SearchSession& session_;
  const StageLatencyFn& measure_;
  Status status_;
};

StatusOr<std::unique_ptr<SearchSession>> SearchSession::Create(const graph::Graph& graph,
                                                               const SearchOptions& options) {
  RETURN_IF_ERROR(ValidateSearchOptions(options));
  std::unique_ptr<SearchSession> session(new SearchSession(graph, options));
  ASSIGN_OR_RETURN(session->partition_,
                   PartitionIntoBlocks(graph, BlockOptions{options.max_block_ops}));
  std::map<std::vector<uint64_t>, int> first_with_structure;
  for (const Block& block : session->partition_.blocks) {
    BlockState state;
    ASSIGN_OR_RETURN(state.graph, BlockGraph::Build(graph, block.ops));
    if (options.reuse_identical_blocks) {
      const int index = static_cast<int>(session->blocks_.size());
      auto [it, inserted] = first_with_structure.emplace(state.graph.structure_key(), index);
      if (!inserted) state.twin = it->second;
    }
    session->blocks_.push_back(std::move(state));
  }
  session->stats_.blocks = static_cast<int>(session->blocks_.size());
  return session;
}

Status SearchSession::SolveWith(int b, LatencySource& source) {
  BlockState& state = blocks_[b];
  const bool first_pass = state.phase == BlockPhase::kNotStarted;
  state.unknown.clear();
  DpOptions dp;
  dp.bounds = {options_.max_group_ops, options_.max_groups};
  dp.enable_merge = options_.enable_merge;
  dp.max_states = options_.max_states_per_block;
  ASSIGN_OR_RETURN(BlockSolution solution, SolveBlock(state.graph, dp, source));
  RETURN_IF_ERROR(source.status());
  ++stats_.dp_passes;
  if (first_pass) {
    stats_.dp_states += solution.stats.states;
    stats_.transitions += solution.stats.transitions;
    stats_.candidate_stages += solution.stats.distinct_stages;
    stats_.merge_stages += solution.stats.merge_stages;
  }
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
  stats_.unique_signatures = static_cast<int64_t>(latencies_.size());
  return absl::OkStatus();
}

bool SearchSession::IsKnown(Signature signature) const {
  auto it = latencies_.find(signature);
  return it != latencies_.end() && !std::isnan(it->second);
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

Status SearchSession::SolveReadyBlocks() {
  for (int b = 0; b < next_block_; ++b) {
    BlockState& state = blocks_[b];
    if (state.phase != BlockPhase::kWaiting || state.twin >= 0) continue;
    const bool ready = std::all_of(state.unknown.begin(), state.unknown.end(),
                                   [&](Signature s) { return IsKnown(s); });
    if (!ready) continue;
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
  RETURN_IF_ERROR(SolveReadyBlocks());
  while (static_cast<int>(queue_.size()) < max_batch &&
         next_block_ < static_cast<int>(blocks_.size())) {
    const int b = next_block_++;
    if (blocks_[b].twin >= 0) {
      blocks_[b].phase = BlockPhase::kWaiting;
      continue;
    }
    CollectingSource source(*this, blocks_[b].unknown);
    RETURN_IF_ERROR(SolveWith(b, source));
  }
  ResolveTwins();
  std::vector<StageRequest> batch;
  while (!queue_.empty() && static_cast<int>(batch.size()) < max_batch) {
    StageRequest request = std::move(queue_.front());
    queue_.pop_front();
    if (IsKnown(request.signature)) continue;  // measured meanwhile
    batch.push_back(std::move(request));
  }
  stats_.requests += static_cast<int64_t>(batch.size());
  return batch;
}

Status SearchSession::Provide(Signature signature, double latency_ms) {
  RETURN_IF_ERROR(CheckLatency(signature, latency_ms));
  auto [it, inserted] = latencies_.try_emplace(signature, latency_ms);
  if (!inserted && std::isnan(it->second)) it->second = latency_ms;
  requested_.erase(signature);
  return absl::OkStatus();
}

Status SearchSession::RunInline(const StageLatencyFn& measure) {
  InlineSource source(*this, measure);
  for (int b = 0; b < static_cast<int>(blocks_.size()); ++b) {
    BlockState& state = blocks_[b];
    if (state.phase == BlockPhase::kSolved) continue;
    if (state.twin >= 0) {
      state.phase = BlockPhase::kWaiting;
      continue;
    }
    RETURN_IF_ERROR(SolveWith(b, source));
  }
  next_block_ = static_cast<int>(blocks_.size());
  queue_.clear();
  ResolveTwins();
  return absl::OkStatus();
}

StatusOr<SearchResult> SearchSession::Result() const {
  if (!Done()) {
    return absl::FailedPreconditionError(StrCat("search not done: ", solved_blocks_, " of ",
                                                blocks_.size(), " blocks solved, ",
                                                requested_.size(), " latencies outstanding"));
  }
  SearchResult result;
  for (int b = 0; b < static_cast<int>(blocks_.size()); ++b) {
    BlockReport report;
    report.num_ops = blocks_[b].graph.size();
    report.twin = blocks_[b].twin;
    report.dp = blocks_[b].solution.stats;
    report.num_stages = static_cast<int>(blocks_[b].solution.stages.size());
    report.latency_ms = blocks_[b].solution.latency_ms;
    result.blocks.push_back(report);
    for (const PlannedStage& planned : blocks_[b].solution.stages) {
      ScheduledStage stage;
      stage.stage = planned.stage;
      stage.block = b;
      stage.signature = planned.signature;
      stage.latency_ms = planned.latency_ms;
      result.schedule.latency_ms += planned.latency_ms;
      result.schedule.stages.push_back(std::move(stage));
    }
  }
  result.stats = stats_;
  result.stats.unique_signatures = static_cast<int64_t>(latencies_.size());
  return result;
}

}  // namespace iosfarm::scheduler::ios
