#include "worker/phase_executor.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "common/strings.h"
#include "scheduler/ios/schedule_json.h"

namespace iosfarm::worker {
namespace {

Status NoGraph() { return absl::InvalidArgumentError("the order carries no graph"); }

}  // namespace

PhaseReport PhaseExecutor::Execute(const PhaseOrder& order) {
  try {
    PhaseReport report;
    Status status = Run(order, report);
    if (!status.ok()) return FailedReport(order.phase_id, PhaseName(order), status);
    report.phase_id = order.phase_id;
    report.ok = true;
    return report;
  } catch (const std::exception& e) {
    return FailedReport(order.phase_id, "phase",
                        absl::InternalError(StrCat("unexpected exception: ", e.what())));
  } catch (...) {
    return FailedReport(order.phase_id, "phase",
                        absl::InternalError("unexpected exception of unknown type"));
  }
}

Status PhaseExecutor::Run(const PhaseOrder& order, PhaseReport& report) {
  if (const auto* build = std::get_if<BuildOrder>(&order.work)) {
    return BuildBatch(order, *build, report);
  }
  if (const auto* profile = std::get_if<ProfileOrder>(&order.work)) {
    return ProfileBatch(order, *profile, report);
  }
  return MeasureSchedules(std::get<MeasureOrder>(order.work), report);
}

Status PhaseExecutor::BuildBatch(const PhaseOrder& order, const BuildOrder& build,
                                 PhaseReport& report) {
  if (order.batch_id.empty()) return absl::InvalidArgumentError("no batch_id");
  if (build.graph == nullptr) return NoGraph();
  if (build.signatures.size() != build.stages.size()) {
    return absl::InvalidArgumentError(StrCat("the order has ", build.stages.size(),
                                             " stages but ", build.signatures.size(),
                                             " signatures"));
  }
  auto batch = std::make_shared<Batch>();
  batch->job_id = order.job_id;
  batch->graph = build.graph;
  RETURN_IF_ERROR(backend_.CheckSupported(*batch->graph));
  batch->signatures = build.signatures;
  ASSIGN_OR_RETURN(batch->plans, backend_.Build(*batch->graph, build.stages));
  if (batch->plans.size() != build.stages.size()) {
    return absl::InternalError(StrCat("backend ", backend_.name(), " built ", batch->plans.size(),
                                      " plans for ", build.stages.size(), " stages"));
  }
  report.plans_built = static_cast<int>(batch->plans.size());
  Store(order.batch_id, std::move(batch));
  return absl::OkStatus();
}

void PhaseExecutor::Store(const std::string& batch_id, std::shared_ptr<Batch> batch) {
  absl::MutexLock lock(&mutex_);
  // A rebuilt batch replaces its old plans; the job's profiled batches are
  // done with. (Its other unprofiled batches stay: a job may have several
  // batches out at once, each profiled where it was built.)
  for (auto it = batches_.begin(); it != batches_.end();) {
    if (it->first == batch_id ||
        (it->second->job_id == batch->job_id && it->second->profiled.load())) {
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

Status PhaseExecutor::ProfileBatch(const PhaseOrder& order, const ProfileOrder& profile,
                                   PhaseReport& report) {
  std::shared_ptr<const Batch> batch;
  {
    absl::MutexLock lock(&mutex_);
    auto it = batches_.find(order.batch_id);
    if (it != batches_.end()) batch = it->second;
  }
  if (batch == nullptr) {
    return absl::NotFoundError(StrCat("unknown batch '", order.batch_id,
                                      "' (not built on this worker, or the worker restarted "
                                      "since the build)"));
  }
  std::vector<const StagePlan*> plans;
  plans.reserve(batch->plans.size());
  for (const auto& plan : batch->plans) plans.push_back(plan.get());
  ASSIGN_OR_RETURN(std::vector<LatencyStats> latencies, backend_.Profile(plans, profile.options));
  if (latencies.size() != plans.size()) {
    return absl::InternalError(StrCat("backend ", backend_.name(), " returned ", latencies.size(),
                                      " latencies for ", plans.size(), " plans"));
  }
  report.stages.reserve(latencies.size());
  for (size_t i = 0; i < latencies.size(); ++i) {
    report.stages.push_back(MeasuredStage{batch->signatures[i], latencies[i]});
  }
  batch->profiled = true;
  return absl::OkStatus();
}

Status PhaseExecutor::MeasureSchedules(const MeasureOrder& measure, PhaseReport& report) {
  if (measure.graph == nullptr) return NoGraph();
  const graph::Graph& graph = *measure.graph;
  RETURN_IF_ERROR(backend_.CheckSupported(graph));
  RunOptions options;
  options.profile = measure.options;
  // Schedules searched with graph-timed stages are compared as graphs: run
  // eagerly they pay host enqueueing their stages were not timed with.
  options.cuda_graph = backend_.times_stages_as_graphs();
  // Parse everything before running anything: a bad schedule fails at once.
  std::vector<scheduler::ios::Schedule> schedules;
  for (const NamedSchedule& named : measure.schedules) {
    StatusOr<scheduler::ios::ParsedSchedule> parsed =
        scheduler::ios::ParseScheduleJson(named.schedule_json, graph);
    if (!parsed.ok()) {
      return Status(parsed.status().code(), StrCat("schedule '", named.name, "': ",
                                                   ToStd(parsed.status().message())));
    }
    schedules.push_back(std::move(parsed->schedule));
  }
  for (size_t i = 0; i < measure.schedules.size(); ++i) {
    const std::string& name = measure.schedules[i].name;
    StatusOr<RunResult> run = backend_.RunSchedule(graph, schedules[i], options);
    if (!run.ok()) {
      return Status(run.status().code(),
                    StrCat("schedule '", name, "': ", ToStd(run.status().message())));
    }
    report.schedules.push_back(MeasuredSchedule{name, run->latency});
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
