#include "worker/phase_executor.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "common/strings.h"
#include "graph/serialize.h"
#include "scheduler/ios/schedule_json.h"
#include "worker/stage_spec.h"

namespace iosfarm::worker {
namespace {

// `text` on one line (newlines become "; ").
std::string OneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\n') {
      out.append("; ");
    } else if (c != '\r') {
      out.push_back(c);
    }
  }
  return out;
}

v1::PhaseResult Failed(int64_t phase_id, std::string_view phase, const Status& status) {
  v1::PhaseResult result;
  result.set_phase_id(phase_id);
  result.set_ok(false);
  result.set_error(OneLine(StrCat(phase, ": ", absl::StatusCodeToString(status.code()), ": ",
                                  ToStd(status.message()))));
  return result;
}

StatusOr<graph::Graph> ParseAssignedGraph(const std::string& bytes) {
  if (bytes.empty()) return absl::InvalidArgumentError("the assignment carries no graph");
  StatusOr<graph::Graph> graph = graph::ParseGraph(bytes);
  if (!graph.ok()) {
    return Status(graph.status().code(),
                  StrCat("graph: ", ToStd(graph.status().message())));
  }
  return graph;
}

template <typename Latency>
void FillLatency(const LatencyStats& stats, Latency& out) {
  out.set_median_ms(stats.median_ms);
  out.set_p10_ms(stats.p10_ms);
  out.set_p90_ms(stats.p90_ms);
  out.set_cv(stats.cv);
  out.set_repeats(stats.repeats);
}

}  // namespace

ProfileOptions ProfileOptionsFromProto(const v1::ProfileOptions& options) {
  ProfileOptions out;
  if (options.warmup() != 0) out.warmup = options.warmup();
  if (options.min_repeats() != 0) out.min_repeats = options.min_repeats();
  if (options.max_repeats() != 0) out.max_repeats = options.max_repeats();
  if (options.stable_fraction() != 0) out.stable_fraction = options.stable_fraction();
  if (options.max_seconds() != 0) out.max_seconds = options.max_seconds();
  return out;
}

v1::PhaseResult PhaseExecutor::Execute(const v1::PhaseAssignment& assignment) {
  try {
    return Dispatch(assignment);
  } catch (const std::exception& e) {
    return Failed(assignment.phase_id(), "phase",
                  absl::InternalError(StrCat("unexpected exception: ", e.what())));
  } catch (...) {
    return Failed(assignment.phase_id(), "phase",
                  absl::InternalError("unexpected exception of unknown type"));
  }
}

v1::PhaseResult PhaseExecutor::Dispatch(const v1::PhaseAssignment& assignment) {
  switch (assignment.kind_case()) {
    case v1::PhaseAssignment::kBuild:
      return Build(assignment);
    case v1::PhaseAssignment::kProfile:
      return Profile(assignment);
    case v1::PhaseAssignment::kMeasure:
      return Measure(assignment);
    case v1::PhaseAssignment::KIND_NOT_SET:
      break;
  }
  return Failed(assignment.phase_id(), "assignment",
                absl::InvalidArgumentError("no build, profile or measure in the assignment"));
}

v1::PhaseResult PhaseExecutor::Build(const v1::PhaseAssignment& assignment) {
  int plans_built = 0;
  Status status = BuildBatch(assignment, &plans_built);
  if (!status.ok()) return Failed(assignment.phase_id(), "build", status);
  v1::PhaseResult result;
  result.set_phase_id(assignment.phase_id());
  result.set_ok(true);
  result.set_plans_built(plans_built);
  return result;
}

v1::PhaseResult PhaseExecutor::Profile(const v1::PhaseAssignment& assignment) {
  v1::PhaseResult result;
  Status status = ProfileBatch(assignment, result);
  if (!status.ok()) return Failed(assignment.phase_id(), "profile", status);
  result.set_phase_id(assignment.phase_id());
  result.set_ok(true);
  return result;
}

v1::PhaseResult PhaseExecutor::Measure(const v1::PhaseAssignment& assignment) {
  v1::PhaseResult result;
  Status status = MeasureSchedules(assignment, result);
  if (!status.ok()) return Failed(assignment.phase_id(), "measure", status);
  result.set_phase_id(assignment.phase_id());
  result.set_ok(true);
  return result;
}

Status PhaseExecutor::BuildBatch(const v1::PhaseAssignment& assignment, int* plans_built) {
  if (assignment.batch_id().empty()) return absl::InvalidArgumentError("no batch_id");
  const v1::BuildAssignment& build = assignment.build();
  auto batch = std::make_shared<Batch>();
  batch->job_id = assignment.job_id();
  ASSIGN_OR_RETURN(graph::Graph parsed, ParseAssignedGraph(build.graph()));
  batch->graph = std::make_unique<graph::Graph>(std::move(parsed));
  ASSIGN_OR_RETURN(std::vector<scheduler::ios::Stage> stages,
                   StagesFromSpecs(*batch->graph, build.stages()));
  RETURN_IF_ERROR(backend_.CheckSupported(*batch->graph));
  for (const v1::StageSpec& spec : build.stages()) batch->signatures.push_back(spec.signature());
  ASSIGN_OR_RETURN(batch->plans, backend_.Build(*batch->graph, stages));
  if (batch->plans.size() != stages.size()) {
    return absl::InternalError(StrCat("backend ", backend_.name(), " built ", batch->plans.size(),
                                      " plans for ", stages.size(), " stages"));
  }
  *plans_built = static_cast<int>(batch->plans.size());
  Store(assignment.batch_id(), std::move(batch));
  return absl::OkStatus();
}

void PhaseExecutor::Store(const std::string& batch_id, std::shared_ptr<Batch> batch) {
  absl::MutexLock lock(&mutex_);
  // A job has one phase in flight, so its older batches are done with.
  for (auto it = batches_.begin(); it != batches_.end();) {
    if (it->second->job_id == batch->job_id || it->first == batch_id) {
      it = batches_.erase(it);
    } else {
      ++it;
    }
  }
  // Batches already profiled go first (the server holds back builds so that
  // unprofiled ones fit), then the least recently built.
  while (static_cast<int>(batches_.size()) >= kMaxBatches) {
    auto victim = std::min_element(batches_.begin(), batches_.end(), [](const auto& a, const auto& b) {
      return std::make_pair(!a.second->profiled.load(), a.second->sequence) <
             std::make_pair(!b.second->profiled.load(), b.second->sequence);
    });
    batches_.erase(victim);
  }
  batch->sequence = next_sequence_++;
  batches_.emplace(batch_id, std::move(batch));
}

Status PhaseExecutor::ProfileBatch(const v1::PhaseAssignment& assignment,
                                   v1::PhaseResult& result) {
  std::shared_ptr<const Batch> batch;
  {
    absl::MutexLock lock(&mutex_);
    auto it = batches_.find(assignment.batch_id());
    if (it != batches_.end()) batch = it->second;
  }
  if (batch == nullptr) {
    return absl::NotFoundError(StrCat("unknown batch '", assignment.batch_id(),
                                      "' (not built on this worker, or the worker restarted "
                                      "since the build)"));
  }
  std::vector<const StagePlan*> plans;
  plans.reserve(batch->plans.size());
  for (const auto& plan : batch->plans) plans.push_back(plan.get());
  ASSIGN_OR_RETURN(std::vector<LatencyStats> latencies,
                   backend_.Profile(plans, ProfileOptionsFromProto(assignment.profile().options())));
  if (latencies.size() != plans.size()) {
    return absl::InternalError(StrCat("backend ", backend_.name(), " returned ", latencies.size(),
                                      " latencies for ", plans.size(), " plans"));
  }
  for (size_t i = 0; i < latencies.size(); ++i) {
    v1::StageLatency* latency = result.add_latencies();
    latency->set_signature(batch->signatures[i]);
    FillLatency(latencies[i], *latency);
  }
  batch->profiled = true;
  return absl::OkStatus();
}

Status PhaseExecutor::MeasureSchedules(const v1::PhaseAssignment& assignment,
                                       v1::PhaseResult& result) {
  const v1::MeasureAssignment& measure = assignment.measure();
  ASSIGN_OR_RETURN(graph::Graph graph, ParseAssignedGraph(measure.graph()));
  RETURN_IF_ERROR(backend_.CheckSupported(graph));
  RunOptions options;
  options.profile = ProfileOptionsFromProto(measure.options());
  // Parse everything before running anything: a bad schedule fails at once.
  std::vector<scheduler::ios::Schedule> schedules;
  for (const v1::NamedSchedule& named : measure.schedules()) {
    StatusOr<scheduler::ios::ParsedSchedule> parsed =
        scheduler::ios::ParseScheduleJson(named.schedule_json(), graph);
    if (!parsed.ok()) {
      return Status(parsed.status().code(), StrCat("schedule '", named.name(), "': ",
                                                   ToStd(parsed.status().message())));
    }
    schedules.push_back(std::move(parsed->schedule));
  }
  for (int i = 0; i < measure.schedules_size(); ++i) {
    const std::string& name = measure.schedules(i).name();
    StatusOr<RunResult> run = backend_.RunSchedule(graph, schedules[i], options);
    if (!run.ok()) {
      return Status(run.status().code(),
                    StrCat("schedule '", name, "': ", ToStd(run.status().message())));
    }
    v1::ScheduleLatency* latency = result.add_schedules();
    latency->set_name(name);
    FillLatency(run->latency, *latency);
  }
  return absl::OkStatus();
}

bool PhaseExecutor::HasBatch(const std::string& batch_id) const {
  absl::MutexLock lock(&mutex_);
  return batches_.count(batch_id) != 0;
}

int PhaseExecutor::num_batches() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int>(batches_.size());
}

}  // namespace iosfarm::worker
