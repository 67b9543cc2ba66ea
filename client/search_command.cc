// `iosfarm search MODEL --backend sim|cpu|cuda [--batch N] [--r R] [--s S]
//  [--block-size B] [--no-merge] [--exhaustive] [--no-core-bound] [--no-bound-dp]
//  [--no-sub-stage-bound]
//  [--search-threads N] [-o FILE] [--format text|json] [--stages]`:
// runs the IOS search in-process, measuring stages on the backend (progress
// on stderr), and prints the predicted sequential, greedy and IOS latencies
// with the search statistics.
#include <algorithm>
#include <optional>
#include <thread>

#include "client/cli_usage.h"
#include "client/command.h"
#include "client/progress_line.h"
#include "client/search_progress.h"
#include "client/search_summary.h"
#include "common/strings.h"
#include "graph/model_loader.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/search_report.h"
#include "worker/backends/backend_factory.h"
#include "worker/backends/backend_oracle.h"
#include "worker/backends/profiling.h"

namespace iosfarm::client {
namespace {

struct SearchCommandOptions {
  std::string model;
  std::string backend = "sim";
  std::optional<int64_t> batch;
  int r = 3;
  int s = 8;
  int block_size = 50;
  bool no_merge = false;
  bool exhaustive = false;
  std::string output;
  std::string format = "text";
  bool list_stages = false;
  int threads = 0;
  std::optional<int> search_threads;
  bool cuda_graph_stages = false;
  bool no_core_bound = false;
  bool no_bound_dp = false;
  bool no_sub_stage_bound = false;
  bool no_device_floor = false;
  bool back_to_back_floor = false;
  int min_repeats = 10;
  int max_repeats = 200;
};

// Threads of the search's DP by default: every core where latencies come
// from a model (sim), one where they are measured on this machine (the cpu
// backend needs the cores for its measurements; the cuda backend's are
// host-bound and made on the thread that set the device up).
int DefaultSearchThreads(const std::string& backend) {
  if (backend != "sim" && !backend.starts_with("sim:")) return 1;
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
}

Status RunSearchCommand(const SearchCommandOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(graph::LoadedModel model, graph::LoadModel(o.model, o.batch));
  if (o.cuda_graph_stages && o.backend != "cuda") {
    return UsageError("--cuda-graph-stages needs --backend cuda");
  }
  worker::BackendConfig config;
  config.cpu_threads = o.threads;
  config.cuda_graph_stages = o.cuda_graph_stages;
  ASSIGN_OR_RETURN(std::unique_ptr<worker::Backend> backend,
                   worker::CreateBackend(o.backend, config));
  RETURN_IF_ERROR(backend->CheckSupported(model.graph));
  scheduler::ios::SearchOptions options;
  options.max_group_ops = o.r;
  options.max_groups = o.s;
  options.max_block_ops = o.block_size;
  options.enable_merge = !o.no_merge;
  options.exhaustive = o.exhaustive;
  options.threads = o.search_threads.value_or(DefaultSearchThreads(o.backend));
  options.bounded.cores = o.no_core_bound ? 0 : backend->cores();
  if (o.no_bound_dp) options.bounded.cost_to_go_dp_max_states = 0;
  options.bounded.sub_stage_bound = !o.no_sub_stage_bound;
  if (!o.no_device_floor) options.bounded.device_floor = backend->device_floor();
  if (o.back_to_back_floor) {
    // What the floor keeps where stages are timed back to back: no issue
    // order's chains, no last kernel (device_floor.h).
    options.bounded.device_floor.back_to_back = true;
    options.bounded.device_floor.issue_order = scheduler::ios::DeviceFloor::IssueOrder::kUnknown;
  }
  RETURN_IF_ERROR(scheduler::ios::ValidateSearchOptions(options));
  worker::ProfileOptions profile;
  profile.min_repeats = o.min_repeats;
  profile.max_repeats = o.max_repeats;
  RETURN_IF_ERROR(worker::ValidateProfileOptions(profile));
  ProgressLines progress(context.err, context.err_is_tty, context.err_width);
  ASSIGN_OR_RETURN(scheduler::ios::SearchReport report,
                   SearchWithProgress(model.graph, options,
                                      worker::MakeBackendOracle(model.graph, *backend, profile),
                                      &progress));
  const scheduler::ios::ScheduleMetadata metadata =
      scheduler::ios::MakeScheduleMetadata(model.graph, o.backend, "ios", &options);
  if (!o.output.empty()) {
    RETURN_IF_ERROR(
        scheduler::ios::WriteScheduleFile(o.output, model.graph, report.ios.schedule, metadata));
  }
  if (o.format == "json") {
    context.out << SearchSummaryJson(model.graph, report, metadata).dump(2) << "\n";
  } else {
    context.out << "backend   " << backend->name() << ": " << backend->device_description()
                << "\n"
                << SearchSummaryText(model.graph, report, o.list_stages);
  }
  return absl::OkStatus();
}

}  // namespace

void AddSearchCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand(
      "search", "Run the IOS search in-process, measuring stages on a backend");
  auto o = std::make_shared<SearchCommandOptions>();
  cmd->add_option("MODEL", o->model, "Zoo model name or path to an .onnx file")->required();
  cmd->add_option("--backend", o->backend,
                  "cuda, cpu, sim, sim:<preset> or sim:<preset>:back-to-back")
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "Batch size")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--r", o->r, "Most ops per group")->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--s", o->s, "Most groups per stage")->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--block-size", o->block_size, "Largest block (ops)")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_flag("--no-merge", o->no_merge, "Do not consider merged convolutions");
  cmd->add_flag("--exhaustive", o->exhaustive,
                "Measure every candidate stage (the reference DP) instead of only those that "
                "can change the optimum");
  cmd->add_option("-o,--output", o->output, "Write the schedule JSON to FILE");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--stages", o->list_stages, "List the IOS stages (text format)");
  cmd->add_option("--threads", o->threads, "cpu backend: threads (0 = all)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--search-threads", o->search_threads,
                  "Threads that solve blocks side by side (default: all cores with a sim "
                  "backend, 1 otherwise); the schedule is the same")
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--cuda-graph-stages", o->cuda_graph_stages,
                "cuda backend: time each stage as a CUDA graph (for a schedule run as one graph, "
                "`iosfarm run --cuda-graph` or the runtime)");
  cmd->add_flag("--no-core-bound", o->no_core_bound,
                "cpu backend: bound stages by their slowest group only, without measuring "
                "each group on one core (the bounded search's core bound)");
  cmd->add_flag("--no-bound-dp", o->no_bound_dp,
                "Bounded search: take the critical path as every block's cost to go, not the "
                "DP over its group bounds (which small blocks get; it measures fewer stages)");
  cmd->add_flag("--no-sub-stage-bound", o->no_sub_stage_bound,
                "Bounded search: do not bound a stage of three or more groups by the measured "
                "stages of some of its groups (the bound real measurements break most often)");
  cmd->add_flag("--no-device-floor", o->no_device_floor,
                "Bounded search: do not bound stages by the device's floor (its launches and "
                "work; the sim backend declares one)");
  cmd->add_flag("--back-to-back-floor", o->back_to_back_floor,
                "Bounded search: keep only the device floor's terms that hold where stages are "
                "timed back to back, as the cuda backend times them (no issue order, no last "
                "kernel); with a sim backend, what its floor would prune on a GPU")
      ->excludes("--no-device-floor");
  cmd->add_option("--min-repeats", o->min_repeats, "Profiling: fewest timed runs per stage")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--max-repeats", o->max_repeats, "Profiling: most timed runs per stage")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->callback([&context, o] { context.result = RunSearchCommand(*o, context); });
}

}  // namespace iosfarm::client
