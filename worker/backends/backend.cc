#include "worker/backends/backend.h"

#include "common/strings.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/stages/stage_validation.h"
#include "worker/backends/profiling.h"

namespace iosfarm::worker {

namespace {

// "input 'data'" or "output 'prob'" (the value's name, else its id).
std::string ValueLabel(const graph::Graph& graph, const char* kind, graph::ValueId v) {
  const std::string& name = graph.value(v).name;
  return name.empty() ? StrCat(kind, " ", v) : StrCat(kind, " '", name, "'");
}

template <typename Buffers>
Status CheckBuffers(const graph::Graph& graph, const char* kind,
                    const std::vector<graph::ValueId>& values, const Buffers& buffers) {
  if (buffers.size() != values.size()) {
    return absl::InvalidArgumentError(StrCat("the model '", graph.name(), "' has ", values.size(),
                                             " ", kind, "s, got ", buffers.size()));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const graph::Shape& shape = graph.value(values[i]).shape;
    if (static_cast<int64_t>(buffers[i].size()) != graph::NumElements(shape)) {
      return absl::InvalidArgumentError(
          StrCat(ValueLabel(graph, kind, values[i]), " has ", buffers[i].size(),
                 " values, its shape ", graph::ShapeToString(shape), " holds ",
                 graph::NumElements(shape)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Status CheckGraphInputs(const graph::Graph& graph, const std::vector<graph::Tensor>& inputs) {
  if (inputs.size() != graph.inputs().size()) {
    return absl::InvalidArgumentError(StrCat("the model '", graph.name(), "' has ",
                                             graph.inputs().size(), " inputs, got ",
                                             inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::ValueId v = graph.inputs()[i];
    const graph::Shape& want = graph.value(v).shape;
    if (inputs[i].shape != want) {
      return absl::InvalidArgumentError(StrCat(ValueLabel(graph, "input", v), " has shape ",
                                               graph::ShapeToString(inputs[i].shape),
                                               ", the model wants ", graph::ShapeToString(want)));
    }
    if (inputs[i].num_elements() != static_cast<int64_t>(inputs[i].data.size())) {
      return absl::InvalidArgumentError(StrCat(ValueLabel(graph, "input", v), " of shape ",
                                               graph::ShapeToString(want), " has ",
                                               inputs[i].data.size(), " values"));
    }
  }
  return absl::OkStatus();
}

StatusOr<std::vector<std::unique_ptr<StagePlan>>> Backend::Build(
    const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) {
  RETURN_IF_ERROR(scheduler::ios::ValidateStages(graph, stages));
  if (cores() == 0) {
    for (size_t s = 0; s < stages.size(); ++s) {
      if (stages[s].single_core) {
        return absl::InvalidArgumentError(
            StrCat("stage ", s, ": the ", name(),
                   " backend does not run stages on cores, so it cannot time a single-core "
                   "stage (a measurement for cpu workers)"));
      }
    }
  }
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
  if (!options.inputs.empty()) RETURN_IF_ERROR(CheckGraphInputs(graph, options.inputs));
  absl::MutexLock lock(&device_mu_);
  return DoRunSchedule(graph, schedule, options);
}

StatusOr<std::unique_ptr<PreparedSchedule>> Backend::Prepare(
    const graph::Graph& graph, const scheduler::ios::Schedule& schedule,
    const PrepareOptions& options) {
  RETURN_IF_ERROR(CheckSupported(graph));
  RETURN_IF_ERROR(scheduler::ios::ValidateSchedule(graph, schedule));
  absl::MutexLock lock(&device_mu_);
  ASSIGN_OR_RETURN(std::unique_ptr<PreparedSchedule> prepared,
                   DoPrepare(graph, schedule, options));
  prepared->owner_ = this;
  prepared->graph_ = &graph;
  return prepared;
}

namespace {

// The placement's vectors are empty or one entry per buffer; device memory
// only on a backend that takes it.
Status CheckPlacement(const Backend& backend, const graph::Graph& graph,
                      const BufferPlacement& placement) {
  const auto check_size = [](size_t size, size_t want, std::string_view what) -> Status {
    if (size != 0 && size != want) {
      return absl::InvalidArgumentError(
          StrCat("buffer placement: ", size, " ", what, " for ", want, " graph values"));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(
      check_size(placement.device_inputs.size(), graph.inputs().size(), "input placements"));
  RETURN_IF_ERROR(
      check_size(placement.input_streams.size(), graph.inputs().size(), "input streams"));
  RETURN_IF_ERROR(
      check_size(placement.device_outputs.size(), graph.outputs().size(), "output placements"));
  if (backend.accepts_device_buffers()) return absl::OkStatus();
  const auto host_only = [&](std::string_view kind, graph::ValueId value) {
    return absl::InvalidArgumentError(
        StrCat(kind, " '", graph.value(value).name, "' is device memory, but the ", backend.name(),
               " backend reads and writes host memory only (device buffers need the cuda "
               "backend)"));
  };
  for (size_t i = 0; i < placement.device_inputs.size(); ++i) {
    if (placement.device_inputs[i]) return host_only("input", graph.inputs()[i]);
  }
  for (size_t i = 0; i < placement.device_outputs.size(); ++i) {
    if (placement.device_outputs[i]) return host_only("output", graph.outputs()[i]);
  }
  return absl::OkStatus();
}

}  // namespace

Status Backend::RunPrepared(PreparedSchedule& prepared, const InputBuffers& inputs,
                            const OutputBuffers& outputs, const BufferPlacement& placement) {
  if (prepared.owner() != this) {
    const std::string backend = name();
    return absl::InvalidArgumentError(StrCat(
        backend, " RunPrepared: the schedule was not prepared by this ", backend,
        " backend instance"));
  }
  const graph::Graph& graph = prepared.graph();
  RETURN_IF_ERROR(CheckBuffers(graph, "input", graph.inputs(), inputs));
  RETURN_IF_ERROR(CheckBuffers(graph, "output", graph.outputs(), outputs));
  RETURN_IF_ERROR(CheckPlacement(*this, graph, placement));
  absl::MutexLock lock(&device_mu_);
  return DoRunPrepared(prepared, inputs, outputs, placement);
}

StatusOr<std::unique_ptr<PreparedSchedule>> Backend::DoPrepare(const graph::Graph&,
                                                               const scheduler::ios::Schedule&,
                                                               const PrepareOptions&) {
  return absl::UnimplementedError(StrCat("the ", name(),
                                         " backend computes no tensor values: running a model "
                                         "on real inputs needs the cpu or cuda backend"));
}

Status Backend::DoRunPrepared(PreparedSchedule&, const InputBuffers&, const OutputBuffers&,
                              const BufferPlacement&) {
  return absl::UnimplementedError(
      StrCat("the ", name(), " backend cannot run a prepared schedule"));
}

}  // namespace iosfarm::worker
