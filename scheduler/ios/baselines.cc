#include "scheduler/ios/baselines.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "common/strings.h"
#include "scheduler/ios/op_dag.h"

namespace iosfarm::scheduler::ios {

StatusOr<Schedule> SequentialSchedule(const graph::Graph& graph) {
  ASSIGN_OR_RETURN(OpDag dag, BuildOpDag(graph));
  Schedule schedule;
  for (graph::NodeId id : dag.order) {
    ScheduledStage stage;
    stage.stage.groups = {{id}};
    schedule.stages.push_back(std::move(stage));
  }
  return schedule;
}

StatusOr<Schedule> GreedySchedule(const graph::Graph& graph, int max_groups) {
  if (max_groups < 1) {
    return absl::InvalidArgumentError(StrCat("max_groups must be >= 1, got ", max_groups));
  }
  ASSIGN_OR_RETURN(OpDag dag, BuildOpDag(graph));
  const int n = dag.size();
  std::vector<int> pending(n);
  std::vector<int> ready;  // positions, ascending
  for (int p = 0; p < n; ++p) {
    pending[p] = static_cast<int>(dag.preds[p].size());
    if (pending[p] == 0) ready.push_back(p);
  }
  Schedule schedule;
  while (!ready.empty()) {
    const size_t take = std::min(ready.size(), static_cast<size_t>(max_groups));
    std::vector<int> now(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(take));
    ready.erase(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(take));
    ScheduledStage stage;
    for (int p : now) stage.stage.groups.push_back({dag.order[p]});
    schedule.stages.push_back(std::move(stage));
    for (int p : now) {
      for (int s : dag.succs[p]) {
        if (--pending[s] == 0) ready.insert(std::lower_bound(ready.begin(), ready.end(), s), s);
      }
    }
  }
  return schedule;
}

Status CostSchedule(const graph::Graph& graph, Schedule& schedule,
                    const StageLatencyFn& oracle) {
  return CostSchedule(graph, schedule, IgnoringSignature(oracle));
}

Status CostSchedule(const graph::Graph& graph, Schedule& schedule, const SignedLatencyFn& oracle) {
  std::unordered_map<Signature, double> measured;
  schedule.latency_ms = 0;
  for (ScheduledStage& scheduled : schedule.stages) {
    ASSIGN_OR_RETURN(scheduled.signature, CanonicalizeStage(graph, scheduled.stage));
    auto it = measured.find(scheduled.signature);
    if (it == measured.end()) {
      ASSIGN_OR_RETURN(double latency, oracle(scheduled.signature, scheduled.stage));
      if (!std::isfinite(latency) || latency < 0) {
        return absl::InvalidArgumentError(
            StrCat("oracle returned latency ", latency, " for ",
                   StageToString(graph, scheduled.stage)));
      }
      it = measured.emplace(scheduled.signature, latency).first;
    }
    scheduled.latency_ms = it->second;
    schedule.latency_ms += it->second;
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::scheduler::ios
