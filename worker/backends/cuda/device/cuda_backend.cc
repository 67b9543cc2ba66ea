#include "worker/backends/cuda/device/cuda_backend.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "common/strings.h"
#include "scheduler/ios/schedule.h"
#include "worker/backends/cuda/device/cuda_buffers.h"
#include "worker/backends/cuda/device/cuda_graph_runner.h"
#include "worker/backends/cuda/device/cuda_status.h"
#include "worker/backends/cuda/device/device_program.h"
#include "worker/backends/cuda/device/stream_timer.h"
#include "worker/backends/cuda/planner/cuda_device_floor.h"
#include "worker/backends/cuda/planner/op_support.h"
#include "worker/backends/cuda/planner/plan_builder.h"
#include "worker/backends/profiling.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {
namespace {

// A stage built by a CudaBackend: plain host data until Profile.
class CudaStagePlan final : public StagePlan {
 public:
  CudaStagePlan(ExecutionPlan plan, std::string label)
      : plan(std::move(plan)), label(std::move(label)) {}

  const ExecutionPlan plan;
  const std::string label;
};

}  // namespace

// A whole schedule instantiated on the device, optionally captured as one
// CUDA graph. Members are destroyed graph first, then program, then plan.
class CudaPreparedSchedule final : public PreparedSchedule {
 public:
  explicit CudaPreparedSchedule(ExecutionPlan plan) : plan(std::move(plan)) {}

  const ExecutionPlan plan;
  std::unique_ptr<DeviceProgram> program;  // over `plan`
  std::optional<CudaGraphRunner> graph_runner;
};

namespace {

// One eager run of `enqueue` first, waited for: libraries finish their lazy
// initialisation (and kernels load) outside the capture. Then the capture.
StatusOr<CudaGraphRunner> WarmUpAndCapture(cudaStream_t stream,
                                           const std::function<Status()>& enqueue) {
  RETURN_IF_ERROR(enqueue());
  RETURN_IF_ERROR(CudaCall(cudaStreamSynchronize(stream), "cudaStreamSynchronize (warm-up)"));
  return CudaGraphRunner::Capture(stream, enqueue);
}

Status Prefixed(const Status& status, std::string_view prefix) {
  return Status(status.code(), StrCat(prefix, ": ", ToStd(status.message())));
}

}  // namespace

StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(const CudaBackendOptions& options) {
  if (options.execution.flush_l2 && !options.execution.graph_stages) {
    return absl::InvalidArgumentError(
        "flushing the L2 cache before each timed replay needs stages timed as CUDA graphs");
  }
  ASSIGN_OR_RETURN(std::vector<CudaDeviceInfo> devices, ListCudaDevices());
  if (options.device < 0 || options.device >= static_cast<int>(devices.size())) {
    return absl::NotFoundError(StrCat("CUDA device ", options.device, " not found (",
                                      devices.size(), " device", devices.size() == 1 ? "" : "s",
                                      ")"));
  }
  RETURN_IF_ERROR(ProbeDevice(options.device));
  const CudaDeviceInfo& info = devices[options.device];
  std::string description =
      StrCat(info.name, " (sm_", info.compute_capability_major, info.compute_capability_minor, ", ",
             info.multiprocessors, " SMs, CUDA runtime ", info.runtime_version, ", cuDNN ",
             info.cudnn_version, options.execution.allow_tf32 ? ", TF32" : ", fp32",
             options.execution.graph_stages ? ", stages timed as CUDA graphs" : "",
             options.execution.flush_l2 ? ", L2 flushed before each replay" : "", ")");
  // Stages timed as graphs pay no host launch: no floor for them.
  scheduler::ios::DeviceFloor floor;
  if (!options.execution.graph_stages) {
    StatusOr<double> launch_us = MeasureLeastLaunchUs(options.device);
    if (launch_us.ok()) {
      floor = CudaDeviceFloor(*launch_us);
      spdlog::debug("cuda device floor: least launch {:.2f} us, {}", *launch_us,
                    scheduler::ios::DescribeDeviceFloor(floor));
    } else {
      spdlog::warn("cuda backend: no device floor, the launch cost was not measured: {}",
                   std::string(launch_us.status().message()));
    }
  }
  return std::unique_ptr<CudaBackend>(
      new CudaBackend(options, info, std::move(description), floor));
}

CudaBackend::~CudaBackend() {
  absl::MutexLock lock(&device_mu_);
  if (profile_breakdown_.stages() > 0) spdlog::debug("{}", profile_breakdown_.Summary());
  if (context_ != nullptr) {
    (void)cudaSetDevice(options_.device);
    context_.reset();
  }
}

StatusOr<CudaDeviceContext*> CudaBackend::Activate() {
  RETURN_IF_ERROR(
      CudaCall(cudaSetDevice(options_.device), StrCat("cudaSetDevice(", options_.device, ")")));
  if (context_ == nullptr) {
    ASSIGN_OR_RETURN(context_, CudaDeviceContext::Create(options_.device, options_.execution));
  }
  return context_.get();
}

Status CudaBackend::CheckSupported(const graph::Graph& graph) const {
  return CheckGraphSupported(graph);
}

StatusOr<std::vector<std::unique_ptr<StagePlan>>> CudaBackend::DoBuild(
    const graph::Graph& graph, const std::vector<scheduler::ios::Stage>& stages) {
  std::vector<std::unique_ptr<StagePlan>> plans;
  PlanOptions options;
  options.external = ExternalValues::kRandomData;
  options.weight_cache = &weight_cache_;
  for (size_t s = 0; s < stages.size(); ++s) {
    auto plan = BuildExecutionPlan(graph, {&stages[s]}, options);
    if (!plan.ok()) return Prefixed(plan.status(), StrCat("stage ", s));
    std::string label = scheduler::ios::StageToString(graph, stages[s]);
    plans.push_back(std::make_unique<CudaStagePlan>(std::move(*plan), std::move(label)));
  }
  return plans;
}

StatusOr<std::vector<LatencyStats>> CudaBackend::DoProfile(
    const std::vector<const StagePlan*>& plans, const ProfileOptions& options) {
  ASSIGN_OR_RETURN(CudaDeviceContext * context, Activate());
  ASSIGN_OR_RETURN(StreamTimer timer, StreamTimer::Create());
  const cudaStream_t main = context->lanes().lane(0).stream;
  // flush_l2: a write over twice the L2 cache before each timed replay.
  DeviceBuffer flush_buffer;
  if (context->options().flush_l2) {
    int l2_bytes = 0;
    RETURN_IF_ERROR(
        CudaCall(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, context->device()),
                 "cudaDeviceGetAttribute (L2 cache size)"));
    ASSIGN_OR_RETURN(flush_buffer, DeviceBuffer::Allocate(2 * static_cast<size_t>(l2_bytes),
                                                          "the L2 flush buffer"));
  }
  int flushes = 0;
  const auto flush = [&] {
    return CudaCall(
        cudaMemsetAsync(flush_buffer.data(), ++flushes & 0xff, flush_buffer.bytes(), main),
        "cudaMemsetAsync (L2 flush)");
  };
  std::vector<LatencyStats> results;
  using Clock = std::chrono::steady_clock;
  ProfileBreakdown& breakdown = profile_breakdown_;
  Clock::time_point mark = Clock::now();
  // Adds the time since the last mark to `part`.
  const auto lap = [&](ProfileBreakdown::Part part) {
    const Clock::time_point now = Clock::now();
    breakdown.Add(part, std::chrono::duration<double>(now - mark).count());
    mark = now;
  };
  for (size_t i = 0; i < plans.size(); ++i) {
    const CudaStagePlan& own = PlanAs<CudaStagePlan>(plans[i]);
    const std::string what = StrCat("plan ", i, " (", own.label, ")");
    mark = Clock::now();
    auto program = DeviceProgram::Create(*context, own.plan);
    if (!program.ok()) return Prefixed(program.status(), what);
    const DeviceProgram& run = **program;
    lap(ProfileBreakdown::kInstantiate);
    std::optional<CudaGraphRunner> graph;
    if (context->options().graph_stages) {
      auto captured = WarmUpAndCapture(main, [&] { return run.Enqueue(); });
      if (!captured.ok()) return Prefixed(captured.status(), what);
      graph.emplace(std::move(*captured));
      lap(ProfileBreakdown::kCapture);
    }
    const auto enqueue = [&] { return graph ? graph->Launch(main) : run.Enqueue(); };
    // Samples time runs back to back (stream_timer.h): the host's latency to
    // a stage's first kernel is paid once per schedule, not once per stage,
    // so stage latencies measured alone add up to the schedule's. How many
    // runs a sample holds follows from the faster of two one-run samples
    // (the first may include lazy initialisation).
    double single_ms = 0;
    for (int i = 0; i < 2; ++i) {
      auto once = timer.Time(main, enqueue);
      if (!once.ok()) return Prefixed(once.status(), what);
      single_ms = i == 0 ? *once : std::min(single_ms, *once);
    }
    const int launches = StreamTimer::LaunchesPerSample(single_ms);
    lap(ProfileBreakdown::kSizing);
    // A graph-timed stage costs a schedule's graph its GPU time alone: no
    // host enqueues it there (at most 16 graph launches stay well inside the
    // hold kernel's time).
    auto stats = MeasureLatency(
        [&]() -> StatusOr<double> {
          if (graph && flush_buffer.bytes() > 0) {
            return timer.TimeEachDeviceOnly(main, flush, enqueue, launches);
          }
          return graph ? timer.TimeDeviceOnly(main, enqueue, launches)
                       : timer.Time(main, enqueue, launches);
        },
        options);
    if (!stats.ok()) return Prefixed(stats.status(), what);
    results.push_back(*stats);
    lap(ProfileBreakdown::kSamples);
    graph.reset();  // before the program it runs
    program->reset();
    lap(ProfileBreakdown::kRelease);
    if (breakdown.StageDone()) spdlog::debug("{}", breakdown.Summary());
  }
  return results;
}

StatusOr<std::unique_ptr<CudaPreparedSchedule>> CudaBackend::Instantiate(
    const graph::Graph& graph, const scheduler::ios::Schedule& schedule) {
  std::vector<const scheduler::ios::Stage*> stages;
  for (const auto& scheduled : schedule.stages) stages.push_back(&scheduled.stage);
  PlanOptions plan_options;
  plan_options.external = ExternalValues::kGraphInputs;
  plan_options.keep_graph_outputs = true;
  ASSIGN_OR_RETURN(ExecutionPlan plan, BuildExecutionPlan(graph, stages, plan_options));
  ASSIGN_OR_RETURN(CudaDeviceContext * context, Activate());
  auto prepared = std::make_unique<CudaPreparedSchedule>(std::move(plan));
  ASSIGN_OR_RETURN(prepared->program, DeviceProgram::Create(*context, prepared->plan));
  return prepared;
}

StatusOr<RunResult> CudaBackend::DoRunSchedule(const graph::Graph& graph,
                                               const scheduler::ios::Schedule& schedule,
                                               const RunOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaPreparedSchedule> prepared,
                   Instantiate(graph, schedule));
  DeviceProgram& program = *prepared->program;
  RETURN_IF_ERROR(program.WriteRuntimeInputs(
      options.inputs.empty() ? MakeGraphInputs(graph, options.input_seed) : options.inputs));
  ASSIGN_OR_RETURN(StreamTimer timer, StreamTimer::Create());
  const cudaStream_t main = context_->lanes().lane(0).stream;
  const auto enqueue = [&] { return program.Enqueue(); };
  RunResult result;
  if (options.cuda_graph) {
    ASSIGN_OR_RETURN(CudaGraphRunner graph_runner, WarmUpAndCapture(main, enqueue));
    ASSIGN_OR_RETURN(result.latency,
                     MeasureLatency(
                         [&]() -> StatusOr<double> {
                           return timer.Time(main, [&] { return graph_runner.Launch(main); });
                         },
                         options.profile));
  } else {
    ASSIGN_OR_RETURN(result.latency,
                     MeasureLatency([&]() -> StatusOr<double> { return timer.Time(main, enqueue); },
                                    options.profile));
  }
  if (options.profiler_range) {
    RETURN_IF_ERROR(CudaCall(cudaProfilerStart(), "cudaProfilerStart"));
    Status ran = enqueue();
    const Status synced =
        CudaCall(cudaStreamSynchronize(main), "cudaStreamSynchronize (profiler range)");
    const Status stopped = CudaCall(cudaProfilerStop(), "cudaProfilerStop");
    RETURN_IF_ERROR(ran);
    RETURN_IF_ERROR(synced);
    RETURN_IF_ERROR(stopped);
  }
  if (options.return_outputs) {
    ASSIGN_OR_RETURN(result.outputs, program.ReadOutputs());
  }
  return result;
}

StatusOr<std::unique_ptr<PreparedSchedule>> CudaBackend::DoPrepare(
    const graph::Graph& graph, const scheduler::ios::Schedule& schedule,
    const PrepareOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaPreparedSchedule> prepared,
                   Instantiate(graph, schedule));
  if (options.cuda_graph) {
    const cudaStream_t main = context_->lanes().lane(0).stream;
    const DeviceProgram& program = *prepared->program;
    const auto enqueue = [&] { return program.Enqueue(); };
    // The arena holds zeros here: whatever the warm-up computes is overwritten.
    ASSIGN_OR_RETURN(CudaGraphRunner runner, WarmUpAndCapture(main, enqueue));
    prepared->graph_runner.emplace(std::move(runner));
  }
  return std::unique_ptr<PreparedSchedule>(std::move(prepared));
}

Status CudaBackend::DoRunPrepared(PreparedSchedule& base, const InputBuffers& inputs,
                                  const OutputBuffers& outputs, const BufferPlacement& placement) {
  auto& prepared = static_cast<CudaPreparedSchedule&>(base);
  ASSIGN_OR_RETURN(CudaDeviceContext * context, Activate());
  const cudaStream_t main = context->lanes().lane(0).stream;
  const graph::Graph& graph = prepared.graph();
  for (size_t i = 0; i < placement.device_inputs.size(); ++i) {
    if (!placement.device_inputs[i]) continue;
    RETURN_IF_ERROR(CheckDeviceMemory(inputs[i].data(), context->device(),
                                      StrCat("input '", graph.value(graph.inputs()[i]).name, "'")));
  }
  for (size_t i = 0; i < placement.device_outputs.size(); ++i) {
    if (!placement.device_outputs[i]) continue;
    RETURN_IF_ERROR(
        CheckDeviceMemory(outputs[i].data(), context->device(),
                          StrCat("output '", graph.value(graph.outputs()[i]).name, "'")));
  }
  RETURN_IF_ERROR(prepared.program->WriteRuntimeInputs(inputs, placement.device_inputs,
                                                       placement.input_streams));
  if (prepared.graph_runner.has_value()) {
    RETURN_IF_ERROR(prepared.graph_runner->Launch(main));
  } else {
    RETURN_IF_ERROR(prepared.program->Enqueue());
  }
  return prepared.program->ReadOutputsInto(outputs, placement.device_outputs);
}

}  // namespace iosfarm::worker::cuda
