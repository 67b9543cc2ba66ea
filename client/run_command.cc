// `iosfarm run MODEL --backend cuda|cpu|sim [--schedule FILE | --sequential |
//  --greedy] [--batch N] [--input NAME=FILE.npy ...] [--output DIR]
//  [--iterations N] [--warmup N] [--verify] [--cuda-graph] [--format text|json]`:
// executes a schedule end to end and prints latency statistics (a tuned
// model file's own schedule unless another is asked for; --iterations:
// exactly N timed runs, after --warmup untimed ones; by default the
// profiler's adaptive count, docs/profiling.md). Inputs are deterministic
// random values unless --input gives every graph input a .npy file; --output
// writes each graph output to DIR/<output name>.npy. --verify also runs the
// sequential schedule on the same input and compares the outputs (relative
// tolerance 1e-3), failing on a mismatch.
#include <cctype>
#include <filesystem>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "client/cli_usage.h"
#include "client/command.h"
#include "client/job_format.h"
#include "common/local_farm.h"
#include "common/strings.h"
#include "graph/model_loader.h"
#include "graph/npy.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/schedule_json.h"
#include "tuned_model/held_model.h"
#include "tuned_model/tuned_model_file.h"
#include "worker/backends/backend_factory.h"
#include "worker/backends/reference/compare.h"

namespace iosfarm::client {
namespace {

struct RunCommandOptions {
  std::string model;
  std::string backend = "cpu";
  std::optional<int64_t> batch;
  std::string schedule_path;
  bool sequential = false;
  bool greedy = false;
  int s = 8;
  bool verify = false;
  bool cuda_graph = false;
  bool profiler_range = false;
  std::string format = "text";
  int threads = 0;
  std::optional<int> iterations;
  std::optional<int> warmup;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string output_dir;
};

constexpr double kVerifyTolerance = 1e-3;

// MODEL's graph at --batch and, for a tuned model file, the device key it
// was tuned for and (unless --schedule, --sequential or --greedy picks
// another) its schedule of that batch (default batch: its smallest).
struct RunModel {
  graph::Graph graph;
  std::string tuned_for;
  std::optional<scheduler::ios::ParsedSchedule> held;
};

StatusOr<RunModel> LoadRunModel(const RunCommandOptions& o) {
  RunModel model;
  if (!tuned_model::IsTunedModelFile(o.model)) {
    ASSIGN_OR_RETURN(graph::LoadedModel loaded, graph::LoadModel(o.model, o.batch));
    model.graph = std::move(loaded.graph);
    return model;
  }
  ASSIGN_OR_RETURN(v1::TunedModel tuned, tuned_model::ReadTunedModelFile(o.model));
  const int64_t batch = o.batch.value_or(tuned.batches(0).batch());
  ASSIGN_OR_RETURN(model.graph, tuned_model::LoadHeldModel(tuned, batch));
  model.tuned_for = tuned.device_key();
  if (o.schedule_path.empty() && !o.sequential && !o.greedy) {
    ASSIGN_OR_RETURN(model.held, tuned_model::HeldSchedule(tuned, o.model, model.graph, batch));
  }
  return model;
}

StatusOr<scheduler::ios::Schedule> ChooseSchedule(const RunCommandOptions& o, RunModel& model,
                                                  std::string& kind) {
  if (model.held) {
    kind = model.held->metadata.kind;
    return std::move(model.held->schedule);
  }
  const graph::Graph& graph = model.graph;
  if (!o.schedule_path.empty()) {
    ASSIGN_OR_RETURN(scheduler::ios::ParsedSchedule parsed,
                     scheduler::ios::ReadScheduleFile(o.schedule_path, graph));
    kind = parsed.metadata.kind;
    return std::move(parsed.schedule);
  }
  if (o.greedy) {
    kind = "greedy";
    return scheduler::ios::GreedySchedule(graph, o.s);
  }
  kind = "sequential";
  return scheduler::ios::SequentialSchedule(graph);
}

// The graph inputs from `--input NAME=FILE.npy` arguments, in graph order;
// empty when none is given. Each graph input needs one; names and shapes are
// checked (CheckGraphInputs names the input whose shape differs).
StatusOr<std::vector<graph::Tensor>> ReadInputs(const std::vector<std::string>& arguments,
                                                const graph::Graph& graph) {
  if (arguments.empty()) return std::vector<graph::Tensor>{};
  std::vector<std::optional<graph::Tensor>> by_input(graph.inputs().size());
  std::string names;
  for (graph::ValueId v : graph.inputs()) {
    names += StrCat(names.empty() ? "" : ", ", "'", graph.value(v).name, "' ",
                    graph::ShapeToString(graph.value(v).shape));
  }
  for (const std::string& argument : arguments) {
    const size_t equals = argument.find('=');
    const bool only_input = equals == std::string::npos && by_input.size() == 1;
    if (!only_input &&
        (equals == std::string::npos || equals == 0 || equals + 1 == argument.size())) {
      return absl::InvalidArgumentError(
          StrCat("--input '", argument, "': expected NAME=FILE.npy (inputs: ", names, ")"));
    }
    // A model with one input also takes a bare FILE.npy.
    const std::string name =
        only_input ? graph.value(graph.inputs()[0]).name : argument.substr(0, equals);
    const std::string file = only_input ? argument : argument.substr(equals + 1);
    size_t index = 0;
    while (index < by_input.size() && graph.value(graph.inputs()[index]).name != name) ++index;
    if (index == by_input.size()) {
      return absl::InvalidArgumentError(
          StrCat("--input: the model has no input '", name, "'; its inputs: ", names));
    }
    if (by_input[index].has_value()) {
      return absl::InvalidArgumentError(StrCat("--input: input '", name, "' given twice"));
    }
    ASSIGN_OR_RETURN(by_input[index], graph::ReadNpy(file));
  }
  std::vector<graph::Tensor> inputs;
  for (size_t i = 0; i < by_input.size(); ++i) {
    const graph::Value& value = graph.value(graph.inputs()[i]);
    if (!by_input[i].has_value()) {
      return absl::InvalidArgumentError(StrCat("--input: input '", value.name, "' ",
                                               graph::ShapeToString(value.shape),
                                               " has no file; give every input or none"));
    }
    inputs.push_back(*std::move(by_input[i]));
  }
  RETURN_IF_ERROR(worker::CheckGraphInputs(graph, inputs));
  return inputs;
}

// "logits" -> "logits.npy"; characters a file name should not hold become '_'.
std::string OutputFileName(const std::string& name, size_t index) {
  std::string file = name.empty() ? StrCat("output", index) : name;
  for (char& c : file) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return file + ".npy";
}

StatusOr<std::vector<std::string>> WriteOutputs(const std::string& dir, const graph::Graph& graph,
                                                const std::vector<graph::Tensor>& outputs) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::UnavailableError(
        StrCat("--output: cannot create directory '", dir, "': ", error.message()));
  }
  std::vector<std::string> written;
  std::set<std::string> used;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string file = OutputFileName(graph.value(graph.outputs()[i]).name, i);
    if (!used.insert(file).second) file = OutputFileName(StrCat("output", i), i);  // a clash
    const std::string path = (std::filesystem::path(dir) / file).string();
    RETURN_IF_ERROR(graph::WriteNpy(path, outputs[i]));
    written.push_back(path);
  }
  return written;
}

Status RunRunCommand(const RunCommandOptions& o, CommandContext& context) {
  if (o.profiler_range && o.backend != "cuda") {
    return UsageError("--profiler-range needs --backend cuda");
  }
  ASSIGN_OR_RETURN(RunModel model, LoadRunModel(o));
  worker::BackendConfig config;
  config.cpu_threads = o.threads;
  ASSIGN_OR_RETURN(std::unique_ptr<worker::Backend> backend,
                   worker::CreateBackend(o.backend, config));
  RETURN_IF_ERROR(backend->CheckSupported(model.graph));
  const std::string device_key = DefaultDeviceKey(o.backend, backend->device_description(),
                                                  o.backend == "cuda" && o.cuda_graph);
  if (!model.tuned_for.empty() && !tuned_model::CompatibleDeviceKeys(model.tuned_for, device_key)) {
    context.err << "iosfarm: note: " << o.model << " was tuned for device key " << model.tuned_for
                << "; this backend's is " << device_key
                << ": its schedule may not be the fastest here\n";
  }
  std::string kind;
  ASSIGN_OR_RETURN(scheduler::ios::Schedule schedule, ChooseSchedule(o, model, kind));
  worker::RunOptions run;
  if (o.iterations) {
    run.profile.min_repeats = *o.iterations;
    run.profile.max_repeats = *o.iterations;
    run.profile.max_seconds = 1e9;  // exactly N, however long they take
  }
  if (o.warmup) run.profile.warmup = *o.warmup;
  run.cuda_graph = o.cuda_graph;
  run.profiler_range = o.profiler_range;
  run.return_outputs = o.verify || !o.output_dir.empty();
  ASSIGN_OR_RETURN(run.inputs, ReadInputs(o.inputs, model.graph));
  ASSIGN_OR_RETURN(worker::RunResult result, backend->RunSchedule(model.graph, schedule, run));

  std::string verified = "not requested";
  if (o.verify) {
    ASSIGN_OR_RETURN(scheduler::ios::Schedule sequential,
                     scheduler::ios::SequentialSchedule(model.graph));
    worker::RunOptions reference_run;
    reference_run.return_outputs = true;
    reference_run.inputs = run.inputs;
    reference_run.profile.warmup = 0;
    reference_run.profile.min_repeats = 1;
    reference_run.profile.max_repeats = 1;
    ASSIGN_OR_RETURN(worker::RunResult expected,
                     backend->RunSchedule(model.graph, sequential, reference_run));
    RETURN_IF_ERROR(worker::reference::CompareTensorLists(
        result.outputs, expected.outputs, kVerifyTolerance,
        StrCat(kind, " schedule output vs sequential")));
    verified = StrCat("outputs match the sequential schedule (rtol ", kVerifyTolerance, ")");
  }

  std::vector<std::string> written;
  if (!o.output_dir.empty()) {
    ASSIGN_OR_RETURN(written, WriteOutputs(o.output_dir, model.graph, result.outputs));
  }
  const std::string input_kind = run.inputs.empty() ? "random (seeded)" : "from --input files";

  const auto& l = result.latency;
  if (o.format == "json") {
    nlohmann::json j;
    j["format_version"] = 1;
    j["model"] = model.graph.name();
    j["backend"] = backend->name();
    j["device"] = backend->device_description();
    j["schedule"] = kind;
    j["stages"] = schedule.stages.size();
    j["cuda_graph"] = o.cuda_graph;
    j["latency_ms"] = {{"median", l.median_ms}, {"p10", l.p10_ms}, {"p90", l.p90_ms},
                       {"cv", l.cv}, {"repeats", l.repeats}};
    j["verified"] = o.verify;
    j["inputs"] = run.inputs.empty() ? "random" : "files";
    j["outputs"] = written;
    context.out << j.dump(2) << "\n";
  } else {
    context.out << "model     " << model.graph.name() << "\n"
                << "backend   " << backend->name() << ": " << backend->device_description()
                << "\n"
                << "schedule  " << kind << ", " << schedule.stages.size() << " stages"
                << (o.cuda_graph ? ", one CUDA graph" : "") << "\n"
                << StrCat("latency   median ", l.median_ms, " ms, p10 ", l.p10_ms, " ms, p90 ",
                          l.p90_ms, " ms, cv ", l.cv, ", ", l.repeats, " runs\n")
                << "inputs    " << input_kind << "\n"
                << "verify    " << verified << "\n";
    if (!written.empty()) {
      context.out << "outputs   " << written.size() << " written to " << o.output_dir << ":";
      for (const std::string& path : written) {
        context.out << " " << std::filesystem::path(path).filename().string();
      }
      context.out << "\n";
    }
  }
  context.err << NoisyRunWarning(kind, l.cv);
  return absl::OkStatus();
}

}  // namespace

void AddRunCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("run", "Execute a schedule end to end and time it");
  auto o = std::make_shared<RunCommandOptions>();
  cmd->add_option("MODEL", o->model,
                  "Zoo model name, path to an .onnx file, or a tuned model file (.iosfarm: its "
                  "schedule for --batch, default its smallest)")
      ->required();
  cmd->add_option("--backend", o->backend,
                  "cuda, cpu, sim, sim:<preset> or sim:<preset>:back-to-back")
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "Batch size")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  auto* file = cmd->add_option("--schedule", o->schedule_path, "Schedule JSON (iosfarm search -o)");
  auto* seq = cmd->add_flag("--sequential", o->sequential, "One op per stage (default)");
  auto* greedy = cmd->add_flag("--greedy", o->greedy, "Every ready op in one stage");
  file->excludes(seq)->excludes(greedy);
  seq->excludes(greedy);
  cmd->add_option("--s", o->s, "Greedy: most groups per stage")->check(CLI::Range(1, 64));
  cmd->add_option("--input", o->inputs,
                  "NAME=FILE.npy: a graph input's values (repeat for each input; FILE.npy "
                  "alone for a model with one input; default: seeded random values)");
  cmd->add_option("--output", o->output_dir, "Write each graph output to DIR/<name>.npy");
  cmd->add_flag("--verify", o->verify,
                "Compare outputs with the sequential schedule on the same input");
  cmd->add_flag("--cuda-graph", o->cuda_graph, "cuda: capture the schedule as one CUDA graph");
  cmd->add_flag("--profiler-range", o->profiler_range,
                "cuda: one more run after timing, between cudaProfilerStart and "
                "cudaProfilerStop (for ncu --profile-from-start off)");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--threads", o->threads, "cpu backend: threads (0 = all)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--iterations", o->iterations,
                  "Exactly N timed runs (default: until the median is stable)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--warmup", o->warmup, "Untimed runs before timing (default 3)")
      ->check(CLI::Range(0, 1000000));
  cmd->callback([&context, o] { context.result = RunRunCommand(*o, context); });
}

}  // namespace iosfarm::client
