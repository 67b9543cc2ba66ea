#include "tests/conformance/conformance_util.h"

#include <map>
#include <utility>

#include "common/strings.h"
#include "worker/backends/reference/compare.h"
#include "worker/backends/reference/executor.h"
#include "worker/backends/weights.h"

namespace iosfarm::conformance {

worker::ProfileOptions QuickProfile() {
  worker::ProfileOptions options;
  options.warmup = 1;
  options.min_repeats = 2;
  options.max_repeats = 3;
  options.max_seconds = 1.0;
  return options;
}

namespace {

StatusOr<std::vector<graph::Tensor>> ReferenceOutputs(const graph::Graph& graph, uint64_t seed,
                                                      const std::string& key) {
  if (key.empty()) {
    return worker::reference::ExecuteGraph(graph, worker::MakeGraphInputs(graph, seed));
  }
  static auto* const cache =
      new std::map<std::pair<std::string, uint64_t>, std::vector<graph::Tensor>>();
  auto it = cache->find({key, seed});
  if (it == cache->end()) {
    ASSIGN_OR_RETURN(std::vector<graph::Tensor> outputs,
                     worker::reference::ExecuteGraph(graph, worker::MakeGraphInputs(graph, seed)));
    it = cache->emplace(std::make_pair(key, seed), std::move(outputs)).first;
  }
  return it->second;
}

}  // namespace

Status RunAndCompare(worker::Backend& backend, const graph::Graph& graph,
                     const scheduler::ios::Schedule& schedule, const std::string& what,
                     uint64_t seed, const std::string& reference_key) {
  RETURN_IF_ERROR(backend.CheckSupported(graph));
  worker::RunOptions options;
  options.profile = QuickProfile();
  options.return_outputs = true;
  options.input_seed = seed;
  ASSIGN_OR_RETURN(worker::RunResult result, backend.RunSchedule(graph, schedule, options));
  if (!(result.latency.median_ms > 0) || result.latency.repeats < 1) {
    return absl::InternalError(StrCat(what, ": implausible latency ", result.latency.median_ms,
                                      " ms over ", result.latency.repeats, " repeats"));
  }
  ASSIGN_OR_RETURN(std::vector<graph::Tensor> expected,
                   ReferenceOutputs(graph, seed, reference_key));
  return worker::reference::CompareTensorLists(result.outputs, expected, kTolerance, what);
}

StatusOr<scheduler::ios::Schedule> OneOpPerStage(const graph::Graph& graph) {
  ASSIGN_OR_RETURN(std::vector<graph::NodeId> order, graph.TopologicalOrder());
  scheduler::ios::Schedule schedule;
  for (graph::NodeId id : order) {
    if (graph.node(id).type == graph::OpType::kConstant) continue;
    scheduler::ios::ScheduledStage stage;
    stage.stage.groups = {{id}};
    schedule.stages.push_back(std::move(stage));
  }
  return schedule;
}

}  // namespace iosfarm::conformance
