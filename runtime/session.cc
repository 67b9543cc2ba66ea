// The public Session (include/iosfarm/runtime.h) over the internals: the
// model loader, the schedule file and the IOS search, and a backend's
// prepared schedule (worker/backends/backend.h).
#include <algorithm>
#include <filesystem>
#include <optional>

#include "absl/synchronization/mutex.h"

#include "common/local_farm.h"
#include "common/strings.h"
#include "graph/model_loader.h"
#include "graph/npy.h"
#include "iosfarm/runtime.h"
#include "runtime/first_use_tuning.h"
#include "runtime/status_error.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/schedule_json.h"
#include "tuned_model/held_model.h"
#include "tuned_model/tuned_model_file.h"
#include "worker/backends/backend_factory.h"

#ifndef IOSFARM_VERSION
#define IOSFARM_VERSION "dev"
#endif

namespace iosfarm {

using runtime::ThrowIfError;
using runtime::ValueOrThrow;

std::string Version() { return IOSFARM_VERSION; }

Tensor ReadNpy(const std::string& path) {
  graph::Tensor tensor = ValueOrThrow(graph::ReadNpy(path));
  return Tensor{std::move(tensor.shape), std::move(tensor.data)};
}

void WriteNpy(const std::string& path, const Tensor& tensor) {
  ThrowIfError(graph::WriteNpy(path, graph::Tensor{tensor.shape, tensor.data}));
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(message), code_(code) {}
Error::~Error() = default;  // the key function: vtable and typeinfo live in the library

namespace {

// One batch size a session runs: the model's graph at that batch, its
// schedule, and the schedule prepared on the session's backend.
struct Plan {
  graph::Graph graph;
  scheduler::ios::Schedule schedule;
  std::string kind;
  std::unique_ptr<worker::PreparedSchedule> prepared;  // over graph
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
};

// A tuned model file's session: the file, and what it needs to prepare a
// batch the file lacks on first use (with sequential_fallback).
struct TunedSource {
  std::string file;
  v1::TunedModel model;  // without sequential_fallback, its ONNX bytes are dropped
  bool sequential_fallback = false;
  std::string fallback;  // why its tuned schedules do not run ("" when they do)
};

}  // namespace

struct Session::Impl {
  std::unique_ptr<worker::Backend> backend;
  bool cuda_graph = false;
  std::string device;
  TuningReport tuning;
  std::optional<TunedSource> tuned;  // a tuned model file's session
  std::vector<int64_t> batches;      // what batches() says
  // Plans by batch. Every session but a tuned model file's has one and runs
  // it whatever the input's batch (its checks name a wrong shape).
  absl::Mutex plans_mutex;  // sequential fallback adds plans while others run
  std::map<int64_t, std::unique_ptr<Plan>> plans ABSL_GUARDED_BY(plans_mutex);
  Plan* plan = nullptr;  // the session's batch, what inputs() and the rest describe
};

namespace {

// "cpu", "cuda" or "cuda:N" as a backend.
StatusOr<std::unique_ptr<worker::Backend>> OpenBackend(const SessionOptions& options) {
  worker::BackendConfig config;
  config.cpu_threads = options.cpu_threads;
  std::string_view name = options.backend;
  if (name.starts_with("cuda:")) {
    const std::string index(name.substr(5));
    char* end = nullptr;
    const long device = std::strtol(index.c_str(), &end, 10);
    if (index.empty() || *end != '\0' || device < 0 || device > 1024) {
      return absl::InvalidArgumentError(
          StrCat("backend '", name, "': the device must be a GPU index, e.g. cuda:0"));
    }
    config.cuda_device = static_cast<int>(device);
    name = "cuda";
  }
  // A session replayed as one CUDA graph tunes with stages timed as graphs:
  // eager stage latencies carry host enqueueing a graph never pays, and
  // schedules searched with them run slower as one graph (docs/results.md).
  // Running is the same either way;
  // only a session that may tune says so in its device description.
  config.cuda_graph_stages = name == "cuda" && options.cuda_graph && options.tune_if_missing;
  if (name != "cpu" && name != "cuda") {
    return absl::InvalidArgumentError(
        StrCat("backend '", options.backend, "': the runtime runs on cpu, cuda or cuda:N"));
  }
  if (options.cpu_threads < 0) {
    return absl::InvalidArgumentError(
        StrCat("cpu_threads ", options.cpu_threads, " is negative (0 means every core)"));
  }
  return worker::CreateBackend(name, config);
}

// Tune on first use, with the latency database and device key the options
// name (their defaults: those of `iosfarm tune` on this machine).
StatusOr<scheduler::ios::Schedule> TuneSchedule(const SessionOptions& options,
                                                const graph::Graph& graph,
                                                worker::Backend& backend, TuningReport& report) {
  runtime::FirstUseTuning tuning;
  tuning.backend = options.backend.starts_with("cuda") ? "cuda" : "cpu";
  if (options.latency_db != "none") {
    if (options.latency_db.empty()) {
      ASSIGN_OR_RETURN(tuning.latency_db, DefaultDatabasePath());
    } else {
      tuning.latency_db = options.latency_db;
    }
  }
  tuning.device_key = options.device_key.empty()
                          ? DefaultDeviceKey(tuning.backend, backend.device_description(),
                                             backend.times_stages_as_graphs())
                          : options.device_key;
  ASSIGN_OR_RETURN(runtime::TunedSchedule tuned,
                   runtime::TuneOnFirstUse(graph, backend, tuning, options.schedule));
  report.tuned = true;
  report.stages_from_database = tuned.stages_from_database;
  report.stages_measured = tuned.stages_measured;
  report.latency_db = tuning.latency_db;
  report.device_key = tuning.device_key;
  return std::move(tuned.schedule);
}

StatusOr<scheduler::ios::Schedule> ChooseSchedule(const SessionOptions& options,
                                                  const graph::Graph& graph,
                                                  worker::Backend& backend, std::string& kind,
                                                  TuningReport& tuning) {
  const std::string& spec = options.schedule;
  if (spec.empty() || spec == "sequential") {
    kind = "sequential";
    return scheduler::ios::SequentialSchedule(graph);
  }
  if (spec == "greedy") {
    kind = "greedy";
    return scheduler::ios::GreedySchedule(graph, scheduler::ios::SearchOptions{}.max_groups);
  }
  if (spec.front() == '{') {  // the schedule's JSON text itself
    ASSIGN_OR_RETURN(scheduler::ios::ParsedSchedule parsed,
                     scheduler::ios::ParseScheduleJson(spec, graph));
    kind = parsed.metadata.kind;
    return std::move(parsed.schedule);
  }
  if (!std::filesystem::exists(spec)) {
    if (!options.tune_if_missing) {
      return absl::NotFoundError(StrCat("schedule file '", spec,
                                        "' does not exist (set tune_if_missing to tune the "
                                        "model on this backend and write it there)"));
    }
    kind = "ios";
    return TuneSchedule(options, graph, backend, tuning);
  }
  ASSIGN_OR_RETURN(scheduler::ios::ParsedSchedule parsed,
                   scheduler::ios::ReadScheduleFile(spec, graph));
  kind = parsed.metadata.kind;
  return std::move(parsed.schedule);
}

std::vector<TensorInfo> Describe(const graph::Graph& graph,
                                 const std::vector<graph::ValueId>& values) {
  std::vector<TensorInfo> infos;
  for (graph::ValueId v : values) infos.push_back({graph.value(v).name, graph.value(v).shape});
  return infos;
}

// "input [1,3,224,224], mask [1,1]".
std::string ListTensors(const std::vector<TensorInfo>& infos) {
  std::string text;
  for (const TensorInfo& info : infos) {
    if (!text.empty()) text += ", ";
    text += StrCat("'", info.name, "' ", graph::ShapeToString(info.shape));
  }
  return text;
}

// Orders `named` as `infos`, checking that every name is there once and
// nothing else; `kind` is "input" or "output".
template <typename T, typename Describe>
StatusOr<std::vector<const T*>> InGraphOrder(const std::map<std::string, T>& named,
                                             const std::vector<TensorInfo>& infos,
                                             std::string_view kind, const Describe& size_of) {
  std::vector<const T*> ordered;
  for (const TensorInfo& info : infos) {
    auto it = named.find(info.name);
    if (it == named.end()) {
      return absl::InvalidArgumentError(
          StrCat(kind, " '", info.name, "' ", graph::ShapeToString(info.shape),
                 " is missing; the model's ", kind, "s: ", ListTensors(infos)));
    }
    RETURN_IF_ERROR(size_of(info, it->second));
    ordered.push_back(&it->second);
  }
  if (named.size() != infos.size()) {
    for (const auto& [name, unused] : named) {
      bool known = false;
      for (const TensorInfo& info : infos) known = known || info.name == name;
      if (!known) {
        return absl::InvalidArgumentError(StrCat("the model has no ", kind, " '", name, "'; its ",
                                                 kind, "s: ", ListTensors(infos)));
      }
    }
  }
  return ordered;
}

Status CheckInput(const TensorInfo& info, const TensorView& view) {
  if (view.shape != info.shape) {
    return absl::InvalidArgumentError(StrCat("input '", info.name, "' has shape ",
                                             graph::ShapeToString(view.shape), ", the model wants ",
                                             graph::ShapeToString(info.shape)));
  }
  if (static_cast<int64_t>(view.data.size()) != graph::NumElements(info.shape)) {
    return absl::InvalidArgumentError(
        StrCat("input '", info.name, "' of shape ", graph::ShapeToString(info.shape), " has ",
               view.data.size(), " values, its shape holds ", graph::NumElements(info.shape)));
  }
  return absl::OkStatus();
}

Status CheckOutput(const TensorInfo& info, const OutputBuffer& buffer) {
  if (static_cast<int64_t>(buffer.data.size()) != graph::NumElements(info.shape)) {
    return absl::InvalidArgumentError(
        StrCat("output '", info.name, "' of shape ", graph::ShapeToString(info.shape), " needs ",
               graph::NumElements(info.shape), " values, its buffer has ", buffer.data.size()));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

std::optional<int64_t> BatchOverride(const SessionOptions& options) {
  if (options.batch < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                StrCat("batch ", options.batch, " is negative (0 keeps the model's own)"));
  }
  if (options.batch == 0) return std::nullopt;
  return options.batch;
}

// The batch of a graph: its first input's first dimension (0 without one).
int64_t GraphBatch(const graph::Graph& graph) {
  if (graph.inputs().empty()) return 0;
  const std::vector<int64_t>& shape = graph.value(graph.inputs().front()).shape;
  return shape.empty() ? 0 : shape.front();
}

// `schedule` over `graph`, prepared on `backend`.
StatusOr<std::unique_ptr<Plan>> PreparePlan(graph::Graph graph, scheduler::ios::Schedule schedule,
                                            std::string kind, worker::Backend& backend,
                                            bool cuda_graph) {
  auto plan = std::make_unique<Plan>();
  plan->graph = std::move(graph);
  plan->schedule = std::move(schedule);
  plan->kind = std::move(kind);
  RETURN_IF_ERROR(backend.CheckSupported(plan->graph));
  worker::PrepareOptions prepare;
  prepare.cuda_graph = cuda_graph;
  ASSIGN_OR_RETURN(plan->prepared, backend.Prepare(plan->graph, plan->schedule, prepare));
  plan->inputs = Describe(plan->graph, plan->graph.inputs());
  plan->outputs = Describe(plan->graph, plan->graph.outputs());
  return plan;
}

// The held model at `batch` with the sequential schedule.
StatusOr<std::unique_ptr<Plan>> SequentialPlan(const v1::TunedModel& model, int64_t batch,
                                               worker::Backend& backend, bool cuda_graph) {
  ASSIGN_OR_RETURN(graph::Graph graph, tuned_model::LoadHeldModel(model, batch));
  ASSIGN_OR_RETURN(scheduler::ios::Schedule schedule, scheduler::ios::SequentialSchedule(graph));
  return PreparePlan(std::move(graph), std::move(schedule), "sequential", backend, cuda_graph);
}

// What a user does about a tuned model file that does not serve this session.
std::string TuneAdvice(const TunedSource& source, std::string_view batches) {
  return StrCat("tune it here with `iosfarm tune ", source.file, " --batch ", batches,
                " --save FILE`, or set sequential_fallback to run the sequential schedule");
}

// Why the file's schedules do not suit this session ("" when they do): a
// device key or version they were not tuned for.
std::string Unsuited(const v1::TunedModel& model, std::string_view file,
                     std::string_view device_key) {
  if (!tuned_model::CompatibleDeviceKeys(model.device_key(), device_key)) {
    return StrCat("tuned model file '", file, "' was tuned for device key ", model.device_key(),
                  model.tuned_on().empty() ? "" : StrCat(" (", model.tuned_on(), ")"),
                  "; this session's is ", device_key);
  }
  if (!tuned_model::CompatibleVersions(model.iosfarm_version(), IOSFARM_VERSION)) {
    return StrCat("tuned model file '", file, "' was written by iosfarm ", model.iosfarm_version(),
                  ", whose schedules iosfarm ", IOSFARM_VERSION, " does not run");
  }
  return "";
}

}  // namespace

// Opens sessions and picks the plan of each Run (a friend of Session, for
// Impl).
struct SessionOpener {
  static std::unique_ptr<Session::Impl> Open(StatusOr<graph::Graph> loaded,
                                             const SessionOptions& options);
  static std::unique_ptr<Session::Impl> OpenTuned(const std::string& file,
                                                  const SessionOptions& options);
  // The plan of `batch` (a tuned model file's session), preparing it
  // sequentially on first use with sequential_fallback.
  static Plan& PlanForBatch(Session::Impl& impl, int64_t batch);
  // The plan a Run with `inputs` takes.
  static Plan& PlanFor(Session::Impl& impl, const std::map<std::string, TensorView>& inputs);
};

std::unique_ptr<Session::Impl> SessionOpener::Open(StatusOr<graph::Graph> loaded,
                                                   const SessionOptions& options) {
  auto impl = std::make_unique<Session::Impl>();
  graph::Graph graph = ValueOrThrow(std::move(loaded));
  impl->backend = ValueOrThrow(OpenBackend(options));
  ThrowIfError(impl->backend->CheckSupported(graph));
  std::string kind;
  scheduler::ios::Schedule schedule =
      ValueOrThrow(ChooseSchedule(options, graph, *impl->backend, kind, impl->tuning));
  impl->cuda_graph = options.cuda_graph;
  const int64_t batch = GraphBatch(graph);
  std::unique_ptr<Plan> plan = ValueOrThrow(PreparePlan(
      std::move(graph), std::move(schedule), std::move(kind), *impl->backend, options.cuda_graph));
  impl->plan = plan.get();
  impl->batches = {batch};
  absl::MutexLock lock(&impl->plans_mutex);
  impl->plans.emplace(batch, std::move(plan));
  impl->device = StrCat(impl->backend->name(), ": ", impl->backend->device_description());
  return impl;
}

std::unique_ptr<Session::Impl> SessionOpener::OpenTuned(const std::string& file,
                                                        const SessionOptions& options) {
  if (!options.schedule.empty() || options.tune_if_missing) {
    throw Error(ErrorCode::kInvalidArgument,
                StrCat("'", file,
                       "' is a tuned model file, which holds its schedules: open it "
                       "without schedule and tune_if_missing"));
  }
  const std::optional<int64_t> batch_option = BatchOverride(options);
  TunedSource source{file, ValueOrThrow(tuned_model::ReadTunedModelFile(file)),
                     options.sequential_fallback, ""};
  const v1::TunedModel& model = source.model;
  auto impl = std::make_unique<Session::Impl>();
  impl->backend = ValueOrThrow(OpenBackend(options));
  impl->cuda_graph = options.cuda_graph;
  impl->device = StrCat(impl->backend->name(), ": ", impl->backend->device_description());
  const std::string device_key =
      options.device_key.empty()
          ? DefaultDeviceKey(impl->backend->name(), impl->backend->device_description(),
                             impl->backend->name() == "cuda" && options.cuda_graph)
          : options.device_key;
  const std::string unsuited = Unsuited(model, file, device_key);
  if (!unsuited.empty() && !source.sequential_fallback) {
    throw Error(ErrorCode::kFailedPrecondition,
                StrCat(unsuited, ": ",
                       TuneAdvice(source, tuned_model::BatchesWith(  // its own batches
                                              model, model.batches(0).batch()))));
  }
  source.fallback = unsuited;
  for (const v1::TunedBatch& entry : model.batches()) impl->batches.push_back(entry.batch());
  const int64_t batch = batch_option.value_or(impl->batches.front());
  {
    absl::MutexLock lock(&impl->plans_mutex);
    for (const v1::TunedBatch& entry : model.batches()) {
      std::unique_ptr<Plan> plan;
      if (!unsuited.empty()) {
        plan =
            ValueOrThrow(SequentialPlan(model, entry.batch(), *impl->backend, options.cuda_graph));
      } else {
        graph::Graph graph = ValueOrThrow(tuned_model::LoadHeldModel(model, entry.batch()));
        scheduler::ios::ParsedSchedule parsed =
            ValueOrThrow(tuned_model::HeldSchedule(model, file, graph, entry.batch()));
        plan = ValueOrThrow(PreparePlan(std::move(graph), std::move(parsed.schedule),
                                        parsed.metadata.kind, *impl->backend, options.cuda_graph));
      }
      impl->plans.emplace(entry.batch(), std::move(plan));
    }
  }
  if (!source.sequential_fallback) source.model.clear_onnx();  // no batch is prepared later
  impl->tuned = std::move(source);
  impl->plan = &PlanForBatch(*impl, batch);
  return impl;
}

Plan& SessionOpener::PlanForBatch(Session::Impl& impl, int64_t batch) {
  absl::MutexLock lock(&impl.plans_mutex);
  if (auto it = impl.plans.find(batch); it != impl.plans.end()) return *it->second;
  const TunedSource& source = *impl.tuned;
  if (!source.sequential_fallback) {
    throw Error(ErrorCode::kFailedPrecondition,
                StrCat("tuned model file '", source.file, "' holds schedules for batch",
                       impl.batches.size() == 1 ? " " : "es ",
                       tuned_model::ListBatches(source.model), ", not ", batch, ": ",
                       TuneAdvice(source, tuned_model::BatchesWith(source.model, batch))));
  }
  std::unique_ptr<Plan> plan =
      ValueOrThrow(SequentialPlan(source.model, batch, *impl.backend, impl.cuda_graph));
  return *impl.plans.emplace(batch, std::move(plan)).first->second;
}

// The plan a Run with `inputs` takes: a tuned model file's session picks it
// by the batch of the first graph input when that input has the session's
// shape but for its first dimension; any other input is checked against the
// session's batch (whose checks name what is wrong).
Plan& SessionOpener::PlanFor(Session::Impl& impl, const std::map<std::string, TensorView>& inputs) {
  Plan& plan = *impl.plan;
  if (!impl.tuned || plan.inputs.empty()) return plan;
  auto it = inputs.find(plan.inputs.front().name);
  if (it == inputs.end()) return plan;
  const std::vector<int64_t>& shape = it->second.shape;
  const std::vector<int64_t>& wanted = plan.inputs.front().shape;
  if (shape.empty() || shape.size() != wanted.size() || shape.front() < 1 ||
      shape.front() == wanted.front() ||
      !std::equal(shape.begin() + 1, shape.end(), wanted.begin() + 1)) {
    return plan;
  }
  return PlanForBatch(impl, shape.front());
}

Session::Session(const std::string& model, const SessionOptions& options)
    : impl_(tuned_model::IsTunedModelFile(model)
                ? SessionOpener::OpenTuned(model, options)
                : SessionOpener::Open(
                      [&]() -> StatusOr<graph::Graph> {
                        ASSIGN_OR_RETURN(graph::LoadedModel loaded,
                                         graph::LoadModel(model, BatchOverride(options)));
                        return std::move(loaded.graph);
                      }(),
                      options)) {}

Session Session::FromOnnxBytes(std::string_view bytes, std::string_view name,
                               const SessionOptions& options) {
  graph::onnx_import::OnnxImportOptions import;
  import.batch = BatchOverride(options);
  return Session(
      SessionOpener::Open(graph::LoadModelData(graph::kOnnxSource, name, bytes, import), options));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const std::vector<TensorInfo>& Session::inputs() const { return impl_->plan->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->plan->outputs; }
std::vector<int64_t> Session::batches() const { return impl_->batches; }
const std::string& Session::fallback() const {
  static const std::string kNone;
  return impl_->tuned ? impl_->tuned->fallback : kNone;
}
const std::string& Session::model_name() const { return impl_->plan->graph.name(); }
const std::string& Session::schedule_kind() const { return impl_->plan->kind; }
int Session::num_stages() const { return static_cast<int>(impl_->plan->schedule.stages.size()); }
const std::string& Session::device() const { return impl_->device; }
const TuningReport& Session::tuning() const { return impl_->tuning; }

std::map<std::string, Tensor> Session::Run(const std::map<std::string, TensorView>& inputs) {
  std::map<std::string, Tensor> outputs;
  std::map<std::string, std::span<float>> buffers;
  for (const TensorInfo& info : SessionOpener::PlanFor(*impl_, inputs).outputs) {
    Tensor& out = outputs[info.name];
    out.shape = info.shape;
    out.data.resize(static_cast<size_t>(graph::NumElements(info.shape)));
    buffers.emplace(info.name, out.data);
  }
  Run(inputs, buffers);
  return outputs;
}

std::vector<TensorInfo> Session::OutputsFor(const std::map<std::string, TensorView>& inputs) {
  return SessionOpener::PlanFor(*impl_, inputs).outputs;
}

void Session::Run(const std::map<std::string, TensorView>& inputs,
                  const std::map<std::string, std::span<float>>& outputs) {
  std::map<std::string, OutputBuffer> host;
  for (const auto& [name, span] : outputs) host.emplace(name, OutputBuffer(span));
  Run(inputs, host);
}

void Session::Run(const std::map<std::string, TensorView>& inputs,
                  const std::map<std::string, OutputBuffer>& outputs) {
  const Plan& plan = SessionOpener::PlanFor(*impl_, inputs);
  const std::vector<const TensorView*> in =
      ValueOrThrow(InGraphOrder(inputs, plan.inputs, "input", CheckInput));
  const std::vector<const OutputBuffer*> out =
      ValueOrThrow(InGraphOrder(outputs, plan.outputs, "output", CheckOutput));
  worker::InputBuffers input_buffers;
  worker::BufferPlacement placement;
  for (const TensorView* view : in) {
    input_buffers.push_back(view->data);
    placement.device_inputs.push_back(view->memory == Memory::kCuda);
    placement.input_streams.push_back(view->memory == Memory::kCuda ? view->cuda_stream : 0);
  }
  worker::OutputBuffers output_buffers;
  for (const OutputBuffer* buffer : out) {
    output_buffers.push_back(buffer->data);
    placement.device_outputs.push_back(buffer->memory == Memory::kCuda);
  }
  ThrowIfError(
      impl_->backend->RunPrepared(*plan.prepared, input_buffers, output_buffers, placement));
}

ScheduleTiming Session::TimeSchedule(int runs, int warmup) {
  if (runs < 1 || warmup < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                StrCat("TimeSchedule: runs must be at least 1 and warmup at least 0 (got ", runs,
                       " and ", warmup, ")"));
  }
  worker::RunOptions run;
  run.profile.warmup = warmup;
  run.profile.min_repeats = runs;
  run.profile.max_repeats = runs;
  run.profile.max_seconds = 1e9;  // exactly `runs`
  run.cuda_graph = impl_->cuda_graph;
  const worker::RunResult result =
      ValueOrThrow(impl_->backend->RunSchedule(impl_->plan->graph, impl_->plan->schedule, run));
  return ScheduleTiming{result.latency.median_ms, result.latency.p10_ms, result.latency.p90_ms,
                        result.latency.repeats};
}

}  // namespace iosfarm
