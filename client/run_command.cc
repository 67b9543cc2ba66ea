// `iosfarm run MODEL --backend cuda|cpu|sim [--schedule FILE | --sequential |
//  --greedy] [--batch N] [--iterations N] [--warmup N] [--verify] [--cuda-graph]
//  [--format text|json]`: executes a schedule end to end and prints latency
// statistics (--iterations: exactly N timed runs, after --warmup untimed
// ones; by default the profiler's adaptive count, docs/profiling.md). --verify also
// runs the sequential schedule on the same input and compares the outputs
// (relative tolerance 1e-3), failing on a mismatch.
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "client/command.h"
#include "client/job_format.h"
#include "common/strings.h"
#include "graph/model_loader.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/schedule_json.h"
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
  std::string format = "text";
  int threads = 0;
  std::optional<int> iterations;
  std::optional<int> warmup;
};

constexpr double kVerifyTolerance = 1e-3;

StatusOr<scheduler::ios::Schedule> ChooseSchedule(const RunCommandOptions& o,
                                                  const graph::Graph& graph,
                                                  std::string& kind) {
  if (!o.schedule_path.empty()) {
    std::ifstream file(o.schedule_path);
    if (!file) {
      return absl::NotFoundError(StrCat("cannot read schedule file '", o.schedule_path, "'"));
    }
    std::stringstream text;
    text << file.rdbuf();
    auto parsed = scheduler::ios::ParseScheduleJson(text.str(), graph);
    if (!parsed.ok()) {
      return absl::Status(parsed.status().code(),
                          StrCat("schedule file '", o.schedule_path, "': ",
                                 parsed.status().message()));
    }
    kind = parsed->metadata.kind;
    return std::move(parsed->schedule);
  }
  if (o.greedy) {
    kind = "greedy";
    return scheduler::ios::GreedySchedule(graph, o.s);
  }
  kind = "sequential";
  return scheduler::ios::SequentialSchedule(graph);
}

Status RunRunCommand(const RunCommandOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(graph::LoadedModel model, graph::LoadModel(o.model, o.batch));
  worker::BackendConfig config;
  config.cpu_threads = o.threads;
  ASSIGN_OR_RETURN(std::unique_ptr<worker::Backend> backend,
                   worker::CreateBackend(o.backend, config));
  RETURN_IF_ERROR(backend->CheckSupported(model.graph));
  std::string kind;
  ASSIGN_OR_RETURN(scheduler::ios::Schedule schedule, ChooseSchedule(o, model.graph, kind));
  worker::RunOptions run;
  if (o.iterations) {
    run.profile.min_repeats = *o.iterations;
    run.profile.max_repeats = *o.iterations;
    run.profile.max_seconds = 1e9;  // exactly N, however long they take
  }
  if (o.warmup) run.profile.warmup = *o.warmup;
  run.cuda_graph = o.cuda_graph;
  run.return_outputs = o.verify;
  ASSIGN_OR_RETURN(worker::RunResult result, backend->RunSchedule(model.graph, schedule, run));

  std::string verified = "not requested";
  if (o.verify) {
    ASSIGN_OR_RETURN(scheduler::ios::Schedule sequential,
                     scheduler::ios::SequentialSchedule(model.graph));
    worker::RunOptions reference_run;
    reference_run.return_outputs = true;
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
    context.out << j.dump(2) << "\n";
  } else {
    context.out << "model     " << model.graph.name() << "\n"
                << "backend   " << backend->name() << ": " << backend->device_description()
                << "\n"
                << "schedule  " << kind << ", " << schedule.stages.size() << " stages"
                << (o.cuda_graph ? ", one CUDA graph" : "") << "\n"
                << StrCat("latency   median ", l.median_ms, " ms, p10 ", l.p10_ms, " ms, p90 ",
                          l.p90_ms, " ms, cv ", l.cv, ", ", l.repeats, " runs\n")
                << "verify    " << verified << "\n";
  }
  context.err << NoisyRunWarning(kind, l.cv);
  return absl::OkStatus();
}

}  // namespace

void AddRunCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("run", "Execute a schedule end to end and time it");
  auto o = std::make_shared<RunCommandOptions>();
  cmd->add_option("MODEL", o->model, "Zoo model name or path to an .onnx file")->required();
  cmd->add_option("--backend", o->backend, "cuda, cpu, sim or sim:<preset>")
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "Batch size")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  auto* file = cmd->add_option("--schedule", o->schedule_path, "Schedule JSON (iosfarm search -o)");
  auto* seq = cmd->add_flag("--sequential", o->sequential, "One op per stage (default)");
  auto* greedy = cmd->add_flag("--greedy", o->greedy, "Every ready op in one stage");
  file->excludes(seq)->excludes(greedy);
  seq->excludes(greedy);
  cmd->add_option("--s", o->s, "Greedy: most groups per stage")->check(CLI::Range(1, 64));
  cmd->add_flag("--verify", o->verify,
                "Compare outputs with the sequential schedule on the same input");
  cmd->add_flag("--cuda-graph", o->cuda_graph, "cuda: capture the schedule as one CUDA graph");
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
