#include "server/job_runner.h"

#include <chrono>
#include <cmath>
#include <optional>

#include "common/strings.h"
#include "graph/model_loader.h"
#include "graph/serialize.h"
#include "nlohmann/json.hpp"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/schedule_json.h"
#include "server/stored_latencies.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace ios = scheduler::ios;

std::vector<uint64_t> SignatureClaims::Claim(const std::string& device_key, int64_t job,
                                             const std::vector<uint64_t>& signatures) {
  absl::MutexLock lock(&mu_);
  auto& holders = holder_[device_key];
  std::vector<uint64_t> claimed;
  for (uint64_t signature : signatures) {
    auto [it, inserted] = holders.try_emplace(signature, job);
    if (inserted || it->second == job) claimed.push_back(signature);
  }
  return claimed;
}

void SignatureClaims::Release(int64_t job) {
  absl::MutexLock lock(&mu_);
  for (auto& [key, holders] : holder_) {
    absl::erase_if(holders, [job](const auto& entry) { return entry.second == job; });
  }
}

void SignatureClaims::Release(const std::string& device_key, int64_t job,
                              const std::vector<uint64_t>& signatures) {
  absl::MutexLock lock(&mu_);
  auto key = holder_.find(device_key);
  if (key == holder_.end()) return;
  for (uint64_t signature : signatures) {
    auto it = key->second.find(signature);
    if (it != key->second.end() && it->second == job) key->second.erase(it);
  }
}

Status CheckFigures(const std::string& worker, const std::string& what, double median_ms,
                    double p10_ms, double p90_ms, double cv, int64_t repeats) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        StrCat("worker ", worker, " returned unusable figures for ", what, ": ", why,
               " (median ", median_ms, " ms, p10 ", p10_ms, ", p90 ", p90_ms, ", cv ", cv,
               ", repeats ", repeats, "); nothing of this answer is stored"));
  };
  for (double v : {median_ms, p10_ms, p90_ms}) {
    if (!std::isfinite(v) || v <= 0) return bad("latencies must be finite and > 0");
    if (v > kMaxLatencyMs) return bad(StrCat("latencies must be below ", kMaxLatencyMs, " ms"));
  }
  if (!(p10_ms <= median_ms && median_ms <= p90_ms)) return bad("p10 <= median <= p90 fails");
  if (!std::isfinite(cv) || cv < 0 || cv > kMaxCv) return bad(StrCat("cv must be in [0, ", kMaxCv, "]"));
  if (repeats < 1 || repeats > kMaxRepeats) {
    return bad(StrCat("repeats must be in [1, ", kMaxRepeats, "]"));
  }
  return absl::OkStatus();
}

StatusOr<graph::Graph> LoadStoredModel(const ModelRow& model) {
  graph::onnx_import::OnnxImportOptions options;
  options.batch = model.batch;
  return graph::LoadModelData(model.source, model.name, model.bytes, options);
}

graph::Graph WithoutWeightValues(const graph::Graph& graph) {
  graph::Graph copy = graph;
  for (graph::NodeId id = 0; id < static_cast<graph::NodeId>(copy.nodes().size()); ++id) {
    graph::Node& node = copy.mutable_node(id);
    if (node.type == graph::OpType::kConstant) continue;
    for (auto& [role, tensor] : node.weights) {
      tensor.data.clear();
      tensor.data.shrink_to_fit();
    }
  }
  return copy;
}

scheduler::ios::SearchBudget FarmSearchBudget() {
  scheduler::ios::SearchBudget budget;
  budget.max_states_per_pass = 2'000'000;
  // A NASNet cell's cost-to-go DP walk takes about 200 M (docs/farm.md).
  budget.max_transitions_per_pass = 1'000'000'000;
  budget.max_steps_per_pass = 1'000'000'000;
  budget.max_bytes_per_pass = int64_t{256} << 20;
  budget.max_transitions_total = 4'000'000'000;
  // Held at once; the latency cache limit keeps a search well below it.
  budget.max_signatures_total = 12'000'000;
  budget.latency_cache_bytes = int64_t{64} << 20;
  return budget;
}

StatusOr<std::unique_ptr<JobRunner>> JobRunner::Load(
    JobStore& store, const JobRow& job, const scheduler::ios::SearchBudget& budget, int cores,
    const ios::DeviceFloor& device_floor, const std::atomic<bool>* stop, ImportGate* gate) {
  ASSIGN_OR_RETURN(std::optional<ModelRow> model, store.GetModel(job.model_digest));
  if (!model) return absl::NotFoundError(StrCat("model ", job.model_digest, " is not stored"));
  // Zoo models have no bytes and take nothing of the gate.
  std::optional<ImportGate::Lease> lease;
  if (gate != nullptr) lease.emplace(gate->Acquire(static_cast<int64_t>(model->bytes.size())));
  StatusOr<graph::Graph> graph = LoadStoredModel(*model);
  model.reset();  // the model's bytes
  if (!graph.ok()) return graph.status();
  return Create(job, std::move(*graph), budget, cores, device_floor, stop);
}

StatusOr<std::unique_ptr<JobRunner>> JobRunner::Create(const JobRow& job, graph::Graph graph,
                                                       const ios::SearchBudget& budget, int cores,
                                                       const ios::DeviceFloor& device_floor,
                                                       const std::atomic<bool>* stop) {
  std::unique_ptr<JobRunner> runner(new JobRunner(job));
  runner->options_.max_group_ops = job.options.r;
  runner->options_.max_groups = job.options.s;
  runner->options_.max_block_ops = job.options.block_size;
  runner->options_.budget = budget;
  runner->options_.bounded.cores = cores;
  runner->options_.bounded.device_floor = device_floor;
  RETURN_IF_ERROR(ios::ValidateSearchOptions(runner->options_));
  if (job.options.batch_size_limit < 1) {
    return absl::InvalidArgumentError(
        StrCat("batch size must be >= 1, got ", job.options.batch_size_limit));
  }
  // The job names its model's digest (ModelDigest at submission).
  runner->model_digest_ = job.model_digest.empty() ? ios::ModelDigest(graph) : job.model_digest;
  runner->graph_ = WithoutWeightValues(graph);
  graph = graph::Graph();  // the weights go now, not when the caller's copy does
  runner->graph_bytes_ = std::make_shared<const std::string>(graph::SerializeGraph(runner->graph_));
  ASSIGN_OR_RETURN(runner->session_, ios::SearchSession::Create(runner->graph_, runner->options_));
  runner->session_->SetStopFlag(stop);
  runner->stages_profiled_ = job.stages_profiled;
  return runner;
}

Status JobRunner::Resolve(std::vector<ios::StageRequest> requests, LatencyDb& store,
                          SignatureClaims& claims) {
  if (requests.empty()) return absl::OkStatus();
  const int64_t looked_up = static_cast<int64_t>(requests.size());
  ASSIGN_OR_RETURN(std::vector<ios::StageRequest> unknown,
                   ProvideStoredLatencies(store, job_.device_key, std::move(requests), *session_));
  lookups_ += looked_up;
  cache_hits_ += looked_up - static_cast<int64_t>(unknown.size());
  if (unknown.empty()) return absl::OkStatus();
  std::vector<uint64_t> signatures;
  signatures.reserve(unknown.size());
  for (const auto& request : unknown) signatures.push_back(request.signature);
  std::vector<uint64_t> claimed = claims.Claim(job_.device_key, job_.id, signatures);
  absl::flat_hash_set<uint64_t> mine(claimed.begin(), claimed.end());
  std::vector<ios::StageRequest> ours;
  for (auto& request : unknown) {
    if (mine.contains(request.signature)) {
      ours.push_back(std::move(request));
    } else {
      awaiting_.push_back(std::move(request));
    }
  }
  if (ours.empty()) return absl::OkStatus();
  // Another job may have stored some of them and released its claims since
  // the lookup above: those are known now, not ours to measure.
  const size_t ours_count = ours.size();
  ASSIGN_OR_RETURN(std::vector<ios::StageRequest> still_unknown,
                   ProvideStoredLatencies(store, job_.device_key, std::move(ours), *session_));
  if (still_unknown.size() < ours_count) {
    absl::flat_hash_set<uint64_t> unknown_now;
    for (const auto& request : still_unknown) unknown_now.insert(request.signature);
    std::vector<uint64_t> known;
    for (uint64_t signature : claimed) {
      if (!unknown_now.contains(signature)) known.push_back(signature);
    }
    cache_hits_ += static_cast<int64_t>(known.size());
    claims.Release(job_.device_key, job_.id, known);
  }
  for (auto& request : still_unknown) filling_.push_back(std::move(request));
  return absl::OkStatus();
}

StatusOr<JobRunner::Next> JobRunner::Enumerate(LatencyDb& store, SignatureClaims& claims,
                                               double slice_s) {
  if (done_) return Next::kMeasure;
  session_->SetDeadline(
      slice_s > 0 ? std::optional(std::chrono::steady_clock::now() +
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(slice_s)))
                  : std::nullopt);
  session_->SetStopBetweenWalks(stop_after_walk_);
  stop_after_walk_ = false;
  const int limit = job_.options.batch_size_limit;
  session_->SetCallerBytes(HeldRequestBytes());
  if (filling_.empty()) {
    // Signatures another job was measuring: known by now, or ours to measure.
    std::vector<ios::StageRequest> retry;
    retry.swap(awaiting_);
    RETURN_IF_ERROR(Resolve(std::move(retry), store, claims));
  }
  while (static_cast<int>(filling_.size()) < limit) {
    ASSIGN_OR_RETURN(std::vector<ios::StageRequest> requests,
                     session_->NextUnknown(limit - static_cast<int>(filling_.size())));
    if (requests.empty()) break;
    RETURN_IF_ERROR(Resolve(std::move(requests), store, claims));
    session_->SetCallerBytes(HeldRequestBytes());
    if (session_->paused()) break;
  }
  // Out of time with a batch not full yet: the next slice goes on filling it.
  if (session_->paused() && static_cast<int>(filling_.size()) < limit) return Next::kContinue;
  if (!filling_.empty()) return Next::kBuild;
  // Everything unknown is being measured: by another job, or in our batches.
  if (!awaiting_.empty() || !out_.empty()) return Next::kWait;
  if (!session_->Done()) {
    return absl::InternalError(StrCat("job ", job_.id, ": search stalled with ",
                                      session_->outstanding(), " outstanding signatures"));
  }
  RETURN_IF_ERROR(FinishSearch(store));
  return Next::kMeasure;
}

Status JobRunner::FinishSearch(LatencyDb& store) {
  ASSIGN_OR_RETURN(ios::SearchResult result, session_->Result());
  final_stats_ = result.stats;
  ASSIGN_OR_RETURN(ios::Schedule sequential, ios::SequentialSchedule(graph_));
  ASSIGN_OR_RETURN(ios::Schedule greedy, ios::GreedySchedule(graph_, options_.max_groups));
  // Baselines are costed with what the database knows (0 where it knows
  // nothing: they are measured end to end anyway).
  const ios::SignedLatencyFn known_or_zero = [&](ios::Signature signature,
                                                 const ios::Stage&) -> StatusOr<double> {
    ASSIGN_OR_RETURN(auto known, store.LookupLatencies(job_.device_key, {signature}));
    auto it = known.find(signature);
    return it == known.end() ? 0.0 : it->second.median_ms;
  };
  RETURN_IF_ERROR(ios::CostSchedule(graph_, sequential, known_or_zero));
  RETURN_IF_ERROR(ios::CostSchedule(graph_, greedy, known_or_zero));
  schedules_.clear();
  schedules_.emplace_back("ios", std::move(result.schedule));
  schedules_.emplace_back("sequential", std::move(sequential));
  schedules_.emplace_back("greedy", std::move(greedy));
  blocks_total_ = static_cast<int>(session_->partition().blocks.size());
  blocks_done_ = std::min(session_->solved_blocks(), blocks_total_);
  session_.reset();
  done_ = true;
  return absl::OkStatus();
}

int64_t JobRunner::HeldRequestBytes() const {
  int64_t bytes = 0;
  for (const auto& request : filling_) bytes += ios::StageRequestBytes(request);
  for (const auto& [id, batch] : out_) {
    for (const auto& request : batch) bytes += ios::StageRequestBytes(request);
  }
  for (const auto& request : awaiting_) bytes += ios::StageRequestBytes(request);
  return bytes;
}

StatusOr<BuildRequest> JobRunner::TakeBatch(int64_t id) {
  if (filling_.empty()) {
    return absl::FailedPreconditionError(StrCat("job ", job_.id, ": no batch to hand out"));
  }
  if (id <= 0 || out_.contains(id)) {
    return absl::FailedPreconditionError(
        StrCat("job ", job_.id, ": batch id ", id, " is invalid or already out"));
  }
  std::vector<ios::StageRequest>& batch = out_[id];
  batch.swap(filling_);
  BuildRequest build;
  build.graph = graph_bytes_;
  build.stages = batch;
  return build;
}

Status JobRunner::ApplyProfile(int64_t id, const PhaseReport& result, const std::string& worker,
                               const std::string& backend, LatencyDb& store,
                               SignatureClaims& claims, int64_t now_unix_ms) {
  auto out = out_.find(id);
  if (out == out_.end()) {
    return absl::NotFoundError(StrCat("job ", job_.id, ": batch ", id, " is not out"));
  }
  const std::vector<ios::StageRequest>& batch = out->second;
  if (result.latencies.size() != batch.size()) {
    return absl::InvalidArgumentError(StrCat("worker ", worker, " returned ",
                                             result.latencies.size(), " latencies for ",
                                             batch.size(), " stages"));
  }
  std::vector<std::pair<uint64_t, StoredLatency>> rows;
  rows.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const StageLatencyReport& l = result.latencies[i];
    if (l.signature != batch[i].signature) {
      return absl::InvalidArgumentError(StrCat("worker ", worker, " answered stage ", i,
                                               " with signature ", l.signature, ", expected ",
                                               batch[i].signature));
    }
    const ReportedFigures& f = l.figures;
    RETURN_IF_ERROR(CheckFigures(worker, StrCat("stage ", i, " (signature ", l.signature, ")"),
                                 f.median_ms, f.p10_ms, f.p90_ms, f.cv, f.repeats));
    StoredLatency stored;
    stored.median_ms = f.median_ms;
    stored.p10_ms = f.p10_ms;
    stored.p90_ms = f.p90_ms;
    stored.cv = f.cv;
    stored.repeats = static_cast<int>(f.repeats);
    stored.worker = worker;
    stored.backend = backend;
    stored.measured_unix_ms = now_unix_ms;
    rows.emplace_back(l.signature, stored);
  }
  ASSIGN_OR_RETURN(int64_t fresh, store.PutLatencies(job_.device_key, rows));
  if (fresh < static_cast<int64_t>(rows.size())) {
    // Measured twice (the first measurement stays): claims should prevent it.
    spdlog::warn("job {}: {} of the {} latencies of batch {} from {} were stored already", job_.id,
                 static_cast<int64_t>(rows.size()) - fresh, rows.size(), id, worker);
  }
  for (const auto& [signature, stored] : rows) {
    RETURN_IF_ERROR(session_->Provide(signature, stored.median_ms));
  }
  stages_profiled_ += static_cast<int64_t>(rows.size());
  std::vector<uint64_t> signatures;
  signatures.reserve(rows.size());
  for (const auto& [signature, stored] : rows) signatures.push_back(signature);
  out_.erase(out);
  claims.Release(job_.device_key, job_.id, signatures);
  return absl::OkStatus();
}

StatusOr<MeasureRequest> JobRunner::MakeMeasure() const {
  if (!done_) return absl::FailedPreconditionError("the search is not done");
  MeasureRequest measure;
  measure.graph = graph_bytes_;
  for (const auto& [name, schedule] : schedules_) {
    ios::ScheduleMetadata metadata = ios::MakeScheduleMetadata(
        graph_, job_.device_key, name, name == "ios" ? &options_ : nullptr);
    measure.schedules.push_back({name, ios::ScheduleToJson(graph_, schedule, metadata).dump()});
  }
  return measure;
}

size_t JobRunner::ChooseMeasured(const PhaseReport& result) {
  size_t chosen = 0;  // the IOS schedule
  const double ios = result.schedules[0].figures.median_ms;
  for (size_t i = 1; i < result.schedules.size(); ++i) {
    const double median = result.schedules[i].figures.median_ms;
    if (median < (1.0 - kSwitchMargin) * ios &&
        median < result.schedules[chosen].figures.median_ms) {
      chosen = i;
    }
  }
  return chosen;
}

StatusOr<ResultRow> JobRunner::ApplyMeasure(const PhaseReport& result,
                                            const std::string& worker,
                                            const std::string& backend,
                                            double search_seconds) const {
  if (!done_) return absl::FailedPreconditionError("the search is not done");
  if (result.schedules.size() != schedules_.size()) {
    return absl::InvalidArgumentError(StrCat("worker ", worker, " measured ",
                                             result.schedules.size(), " schedules, expected ",
                                             schedules_.size()));
  }
  std::vector<MeasuredSchedule> measured;
  for (size_t i = 0; i < result.schedules.size(); ++i) {
    const ScheduleLatencyReport& l = result.schedules[i];
    const ReportedFigures& f = l.figures;
    if (l.name != schedules_[i].first) {
      return absl::InvalidArgumentError(StrCat("worker ", worker, " measured schedule '", l.name,
                                               "' at position ", i, ", expected '",
                                               schedules_[i].first, "'"));
    }
    RETURN_IF_ERROR(CheckFigures(worker, StrCat("schedule '", l.name, "'"), f.median_ms,
                                 f.p10_ms, f.p90_ms, f.cv, f.repeats));
    measured.push_back({l.name, f.median_ms, f.p10_ms, f.p90_ms, f.cv, f.repeats});
  }
  const auto& [chosen_name, best] = schedules_[ChooseMeasured(result)];
  ios::ScheduleMetadata metadata = ios::MakeScheduleMetadata(
      graph_, job_.device_key, chosen_name, chosen_name == "sequential" ? nullptr : &options_);
  metadata.model_digest = model_digest_;  // of the model as submitted, weights included
  ResultRow row;
  row.job_id = job_.id;
  row.schedule_json = ios::ScheduleToJson(graph_, best, metadata).dump(2);
  row.measured = std::move(measured);
  row.chosen = chosen_name;
  row.predicted_ms = best.latency_ms;
  row.search_s = search_seconds;
  row.stages_profiled = stages_profiled_;
  row.cache_hits = cache_hits_;
  row.candidates = final_stats_.candidate_stages;
  row.unique_signatures = final_stats_.unique_signatures;
  row.stages_measured = final_stats_.stages_measured;
  row.lower_bound_misses = final_stats_.lower_bound_misses;
  row.largest_bound_miss_ms = final_stats_.largest_bound_miss_ms;
  row.search_cores = search_cores();
  row.stages = static_cast<int64_t>(best.stages.size());
  row.worker = worker;
  row.backend = backend;
  row.device_key = job_.device_key;
  return row;
}

void JobRunner::FillProgress(JobRow& row) const {
  if (session_) {
    row.blocks_total = static_cast<int>(session_->partition().blocks.size());
    row.blocks_done = std::min(session_->solved_blocks(), row.blocks_total);
  } else {
    row.blocks_total = blocks_total_;
    row.blocks_done = blocks_done_;
  }
  row.stages_profiled = stages_profiled_;
  row.cache_hits = cache_hits_;
  const ios::SearchStats& stats = done_ ? final_stats_ : session_->stats();
  row.candidates = stats.candidate_stages;
  row.unique_signatures = stats.unique_signatures;
  row.stages_measured = stats.stages_measured;
}

}  // namespace iosfarm::server
