#include "worker/backends/cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <set>

#include <spdlog/spdlog.h>

#include "common/strings.h"
#include "scheduler/ios/schedule.h"
#include "worker/backends/cpu/cpu_device.h"
#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compiler.h"
#include "worker/backends/cpu/stage_program.h"
#include "worker/backends/cpu/value_store.h"
#include "worker/backends/profiling.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cpu {
namespace {

// A stage compiled against its own memories; external inputs hold
// deterministic random data.
class CpuStagePlan final : public StagePlan {
 public:
  CpuStagePlan(dnnl::engine engine, ActivationLayout layout) : values(std::move(engine), layout) {}

  ValueStore values;
  std::unique_ptr<StageProgram> program;
};

}  // namespace

// A whole schedule compiled against one value store, memory planned; for
// RunPrepared also the copies between the caller's plain buffers and the
// stored layout of every graph input and output, made once.
class CpuPreparedSchedule final : public PreparedSchedule {
 public:
  CpuPreparedSchedule(dnnl::engine engine, ActivationLayout layout)
      : values(std::move(engine), layout) {}

  // A reorder between plain caller memory (its handle set per run) and a
  // value's stored memory.
  struct Copy {
    dnnl::memory plain;
    dnnl::memory stored;
    dnnl::reorder reorder;
  };

  ValueStore values;
  std::vector<std::unique_ptr<StageProgram>> programs;
  std::vector<Copy> inputs;   // plain -> stored, graph input order
  std::vector<Copy> outputs;  // stored -> plain, graph output order
};

namespace {

// Values the stage reads that none of its ops produce.
std::vector<graph::ValueId> ExternalInputs(const graph::Graph& graph,
                                           const scheduler::ios::Stage& stage) {
  std::set<graph::ValueId> produced, read;
  if (stage.strategy == scheduler::ios::Strategy::kMerge && stage.merged.has_value()) {
    read.insert(stage.merged->input);
  }
  for (const auto& group : stage.groups) {
    for (graph::NodeId id : group) {
      if (id < 0 || id >= graph.num_nodes()) continue;  // reported by the compiler
      const graph::Node& node = graph.node(id);
      produced.insert(node.outputs.begin(), node.outputs.end());
      if (stage.strategy != scheduler::ios::Strategy::kMerge) {
        read.insert(node.inputs.begin(), node.inputs.end());
      }
    }
  }
  std::vector<graph::ValueId> external;
  for (graph::ValueId v : read) {
    if (produced.count(v) == 0) external.push_back(v);
  }
  return external;
}

// For each value, the last stage of `schedule` that reads or writes it;
// -1 for values no stage touches.
std::vector<int> LastUse(const graph::Graph& graph, const scheduler::ios::Schedule& schedule) {
  std::vector<int> last(static_cast<size_t>(graph.num_values()), -1);
  for (size_t s = 0; s < schedule.stages.size(); ++s) {
    const scheduler::ios::Stage& stage = schedule.stages[s].stage;
    const int index = static_cast<int>(s);
    if (stage.merged.has_value()) last[stage.merged->input] = index;
    for (const auto& group : stage.groups) {
      for (graph::NodeId id : group) {
        for (graph::ValueId v : graph.node(id).inputs) last[v] = index;
        for (graph::ValueId v : graph.node(id).outputs) last[v] = std::max(last[v], index);
      }
    }
  }
  return last;
}

double ElapsedMs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

template <typename F>
auto CatchDnnl(const F& f) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    return absl::InternalError(StrCat("oneDNN: ", e.what()));
  }
}

}  // namespace

OpTypeSet CpuSupportedOps() { return AllOpTypes(); }

CpuBackend::CpuBackend(dnnl::engine engine, int threads, ActivationLayout layout,
                       std::string description)
    : engine_(engine),
      threads_(threads),
      layout_(layout),
      description_(std::move(description)),
      stream_(engine),
      pool_(engine) {}

StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(const CpuBackendOptions& options) {
  if (options.num_threads < 0) {
    return absl::InvalidArgumentError("cpu backend: num_threads must be >= 0");
  }
  ASSIGN_OR_RETURN(CpuDeviceInfo info, DescribeCpuDevice());
  return CatchDnnl([&]() -> StatusOr<std::unique_ptr<CpuBackend>> {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const int threads = options.num_threads > 0 ? options.num_threads : OmpMaxThreads();
    const ActivationLayout layout =
        options.layout.has_value() ? *options.layout : DetectActivationLayout(engine);
    std::string description =
        StrCat("CPU (oneDNN ", info.onednn_version, ", ", info.isa, ", ", threads, " thread",
               threads == 1 ? "" : "s", ", ", ActivationLayoutName(layout), " activations)");
    return std::unique_ptr<CpuBackend>(
        new CpuBackend(std::move(engine), threads, layout, std::move(description)));
  });
}

Status CpuBackend::CheckSupported(const graph::Graph& graph) const {
  static const OpTypeSet kSupported = CpuSupportedOps();
  for (const graph::Node& node : graph.nodes()) {
    RETURN_IF_ERROR(CheckOpSupported("cpu", kSupported, node));
  }
  return absl::OkStatus();
}

StatusOr<std::vector<std::unique_ptr<StagePlan>>> CpuBackend::DoBuild(
    const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) {
  RETURN_IF_ERROR(CheckSupported(graph));
  return CatchDnnl([&]() -> StatusOr<std::vector<std::unique_ptr<StagePlan>>> {
    dnnl::stream stream(engine_);  // Build's own: it may run during a Profile
    std::vector<std::unique_ptr<StagePlan>> plans;
    for (size_t s = 0; s < stages.size(); ++s) {
      const scheduler::ios::Stage& stage = stages[s];
      auto plan = std::make_unique<CpuStagePlan>(engine_, layout_);
      CompileContext ctx(graph, plan->values, stream);
      for (graph::ValueId v : ExternalInputs(graph, stage)) {
        const graph::Value& value = graph.value(v);
        if (value.producer != graph::kNoNode &&
            graph.node(value.producer).type == graph::OpType::kConstant) {
          continue;  // the compiler writes constants
        }
        if (value.shape.empty()) {
          return absl::InvalidArgumentError(
              StrCat("stage ", s, ": value '", value.name, "' has no inferred shape"));
        }
        RETURN_IF_ERROR(plan->values.Write(
            v, RandomTensor(value.shape, WeightSeed(value.name, "stage input")), stream));
      }
      // A single-core stage: one lane on one thread (lane_partition.h).
      auto program = StageProgram::Compile(ctx, stage, stage.single_core ? 1 : threads_);
      if (!program.ok()) {
        return Status(program.status().code(),
                      StrCat("stage ", s, " (", scheduler::ios::StageToString(graph, stage),
                             "): ", ToStd(program.status().message())));
      }
      plan->program = std::move(*program);
      plans.push_back(std::move(plan));
    }
    return plans;
  });
}

StatusOr<std::vector<LatencyStats>> CpuBackend::DoProfile(
    const std::vector<const StagePlan*>& plans, const ProfileOptions& options) {
  std::vector<LatencyStats> results;
  for (const StagePlan* base : plans) {
    const CpuStagePlan* plan = &PlanAs<CpuStagePlan>(base);
    ASSIGN_OR_RETURN(LatencyStats stats, MeasureLatency(
                                             [&]() -> StatusOr<double> {
                                               const auto start = std::chrono::steady_clock::now();
                                               RETURN_IF_ERROR(plan->program->Run(pool_, stream_));
                                               return ElapsedMs(start);
                                             },
                                             options));
    results.push_back(stats);
  }
  return results;
}

StatusOr<std::unique_ptr<CpuPreparedSchedule>> CpuBackend::Compile(
    const graph::Graph& graph, const scheduler::ios::Schedule& schedule) {
  auto prepared = std::make_unique<CpuPreparedSchedule>(engine_, layout_);
  ValueStore& values = prepared->values;
  // Graph inputs are written before each run: they get their buffers before
  // any is released.
  for (graph::ValueId v : graph.inputs()) values.Get(v, graph.value(v).shape);
  CompileContext ctx(graph, values, stream_);
  // Memory planning: a value's buffer is reused once the last stage that
  // touches it has run (stages run in order; within a stage nothing is
  // released). Graph inputs, outputs and constants keep theirs.
  std::vector<bool> pinned(static_cast<size_t>(graph.num_values()), false);
  for (graph::ValueId v : graph.inputs()) pinned[v] = true;
  for (graph::ValueId v : graph.outputs()) pinned[v] = true;
  const std::vector<int> last_use = LastUse(graph, schedule);
  std::vector<std::vector<graph::ValueId>> dies_after(schedule.stages.size());
  for (graph::ValueId v = 0; v < graph.num_values(); ++v) {
    const graph::NodeId producer = graph.value(v).producer;
    const bool constant =
        producer != graph::kNoNode && graph.node(producer).type == graph::OpType::kConstant;
    if (last_use[v] >= 0 && !pinned[v] && !constant) dies_after[last_use[v]].push_back(v);
  }
  // Constants are written now, at compile time: give them their buffers
  // before any is released, so that no value live earlier at run time
  // shares (and overwrites) one.
  for (const graph::Node& node : graph.nodes()) {
    if (node.type == graph::OpType::kConstant) {
      for (graph::ValueId v : node.outputs) RETURN_IF_ERROR(ctx.Value(v).status());
    }
  }
  for (size_t s = 0; s < schedule.stages.size(); ++s) {
    auto program = StageProgram::Compile(ctx, schedule.stages[s].stage, threads_);
    if (!program.ok()) {
      return Status(program.status().code(),
                    StrCat("stage ", s, ": ", ToStd(program.status().message())));
    }
    prepared->programs.push_back(std::move(*program));
    for (graph::ValueId v : dies_after[s]) values.Release(v);
  }
  // Outputs that no stage computes (graph inputs, constants) need memory.
  for (graph::ValueId v : graph.outputs()) RETURN_IF_ERROR(ctx.Value(v).status());
  spdlog::debug("cpu backend: schedule of {} stages on '{}' uses {:.1f} MB of activations",
                schedule.stages.size(), graph.name(), static_cast<double>(values.bytes()) / 1e6);
  return prepared;
}

Status CpuBackend::RunPrograms(const CpuPreparedSchedule& prepared) {
  for (const auto& program : prepared.programs) RETURN_IF_ERROR(program->Run(pool_, stream_));
  return absl::OkStatus();
}

StatusOr<RunResult> CpuBackend::DoRunSchedule(const graph::Graph& graph,
                                              const scheduler::ios::Schedule& schedule,
                                              const RunOptions& options) {
  return CatchDnnl([&]() -> StatusOr<RunResult> {
    ASSIGN_OR_RETURN(std::unique_ptr<CpuPreparedSchedule> prepared, Compile(graph, schedule));
    const std::vector<graph::Tensor> inputs =
        options.inputs.empty() ? MakeGraphInputs(graph, options.input_seed) : options.inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      RETURN_IF_ERROR(prepared->values.Write(graph.inputs()[i], inputs[i], stream_));
    }
    RunResult result;
    ASSIGN_OR_RETURN(result.latency, MeasureLatency(
                                         [&]() -> StatusOr<double> {
                                           const auto start = std::chrono::steady_clock::now();
                                           RETURN_IF_ERROR(RunPrograms(*prepared));
                                           return ElapsedMs(start);
                                         },
                                         options.profile));
    if (options.return_outputs) {
      for (graph::ValueId v : graph.outputs()) {
        ASSIGN_OR_RETURN(graph::Tensor t,
                         prepared->values.Read(v, graph.value(v).shape, stream_));
        result.outputs.push_back(std::move(t));
      }
    }
    return result;
  });
}

StatusOr<std::unique_ptr<PreparedSchedule>> CpuBackend::DoPrepare(
    const graph::Graph& graph, const scheduler::ios::Schedule& schedule,
    const PrepareOptions& /*options: cuda only*/) {
  return CatchDnnl([&]() -> StatusOr<std::unique_ptr<PreparedSchedule>> {
    ASSIGN_OR_RETURN(std::unique_ptr<CpuPreparedSchedule> prepared, Compile(graph, schedule));
    for (graph::ValueId v : graph.inputs()) {
      dnnl::memory plain(PlainDesc(graph.value(v).shape), engine_, DNNL_MEMORY_NONE);
      dnnl::memory stored = prepared->values.Get(v, graph.value(v).shape);
      prepared->inputs.push_back({plain, stored, dnnl::reorder(plain, stored)});
    }
    for (graph::ValueId v : graph.outputs()) {
      dnnl::memory plain(PlainDesc(graph.value(v).shape), engine_, DNNL_MEMORY_NONE);
      dnnl::memory stored = prepared->values.Get(v, graph.value(v).shape);
      prepared->outputs.push_back({plain, stored, dnnl::reorder(stored, plain)});
    }
    return std::unique_ptr<PreparedSchedule>(std::move(prepared));
  });
}

Status CpuBackend::DoRunPrepared(PreparedSchedule& base, const InputBuffers& inputs,
                                 const OutputBuffers& outputs,
                                 const BufferPlacement& /*placement: host only*/) {
  auto& prepared = static_cast<CpuPreparedSchedule&>(base);
  return CatchDnnl([&]() -> Status {
    for (size_t i = 0; i < inputs.size(); ++i) {
      CpuPreparedSchedule::Copy& copy = prepared.inputs[i];
      copy.plain.set_data_handle(const_cast<float*>(inputs[i].data()));
      copy.reorder.execute(stream_, copy.plain, copy.stored);
    }
    stream_.wait();
    RETURN_IF_ERROR(RunPrograms(prepared));
    for (size_t i = 0; i < outputs.size(); ++i) {
      CpuPreparedSchedule::Copy& copy = prepared.outputs[i];
      copy.plain.set_data_handle(outputs[i].data());
      copy.reorder.execute(stream_, copy.stored, copy.plain);
    }
    stream_.wait();
    return absl::OkStatus();
  });
}

std::vector<std::string> CpuBackend::DescribePlan(const StagePlan& plan) const {
  if (plan.owner() != this) return {};
  return PlanAs<CpuStagePlan>(&plan).program->Describe();
}

}  // namespace iosfarm::worker::cpu
