#include "worker/backends/backend.h"

#include "common/strings.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/stage_validation.h"
#include "worker/backends/profiling.h"

namespace iosfarm::worker {

StatusOr<std::vector<std::unique_ptr<StagePlan>>> Backend::Build(
    const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) {
  RETURN_IF_ERROR(scheduler::ios::ValidateStages(graph, stages));
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<StagePlan>> plans, DoBuild(graph, stages));
  for (const std::unique_ptr<StagePlan>& plan : plans) plan->owner_ = this;
  return plans;
}

StatusOr<std::vector<LatencyStats>> Backend::Profile(const std::vector<const StagePlan*>& plans,
                                                     const ProfileOptions& options) {
  RETURN_IF_ERROR(ValidateProfileOptions(options));
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i] == nullptr || plans[i]->owner() != this) {
      const std::string backend = name();
      return absl::InvalidArgumentError(StrCat(backend, " Profile: plan ", i,
                                               " was not built by this ", backend,
                                               " backend instance"));
    }
  }
  absl::MutexLock lock(&device_mu_);
  return DoProfile(plans, options);
}

StatusOr<RunResult> Backend::RunSchedule(const graph::Graph& graph,
                                         const scheduler::ios::Schedule& schedule,
                                         const RunOptions& options) {
  RETURN_IF_ERROR(ValidateProfileOptions(options.profile));
  RETURN_IF_ERROR(CheckSupported(graph));
  RETURN_IF_ERROR(scheduler::ios::ValidateSchedule(graph, schedule));
  absl::MutexLock lock(&device_mu_);
  return DoRunSchedule(graph, schedule, options);
}

}  // namespace iosfarm::worker
