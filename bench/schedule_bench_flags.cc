#include "bench/schedule_bench_flags.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "common/flags/flags.h"
#include "common/strings.h"
#include "graph/model_loader.h"

namespace iosfarm::bench {

namespace {

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

void DefaultBounds(const std::string& model, int* r, int* s) {
  const bool large = model == "randwire" || model == "nasnet_a" || model == "nasnet_a_mobile";
  *r = large ? 1 : 3;
  *s = large ? 3 : 8;
}

void AddFlags(CLI::App& app, Settings& settings, std::string& models_text) {
  app.add_option("--backend", settings.backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--cuda-device", settings.cuda_device, "CUDA device index")
      ->check(CLI::Range(0, 1024));
  app.add_flag("--cuda-graph-stages", settings.cuda_graph_stages,
               "cuda: the search times each stage as a CUDA graph (for schedules run as one "
               "graph); its schedules and latencies are kept apart from eager ones");
  app.add_flag("--cuda-flush-l2", settings.cuda_flush_l2,
               "cuda, with --cuda-graph-stages: flush the L2 cache before each timed replay "
               "(do warm caches explain graph-timed stages adding up to less than the graph?)");
  app.add_option("--models", models_text,
                 "comma-separated MODEL[:RxS[:BLOCK]], MODEL a zoo name or an ONNX file");
  app.add_option("--r", settings.global_r, "ops per group (0: per-model default)")
      ->check(CLI::Range(0, 64));
  app.add_option("--s", settings.global_s, "groups per stage (0: per-model default)")
      ->check(CLI::Range(0, 64));
  app.add_option("--block-size", settings.global_block_size, "ops per block (0: 50)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--batch", settings.batch, "batch size")->check(CLI::Range(1, 4096));
  app.add_option("--threads", settings.threads, "cpu threads (0: all)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--rounds", settings.rounds, "round-robin rounds over the schedules")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--repeats", settings.repeats, "timed runs per round (0: cpu 10, cuda 50)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--warmup", settings.warmup, "untimed runs first (default: cpu 2, cuda 5)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--search-min-repeats", settings.search_profile.min_repeats,
                 "stage profiling during the search: fewest timed runs")
      ->capture_default_str();
  app.add_option("--search-max-repeats", settings.search_profile.max_repeats,
                 "stage profiling during the search: most timed runs")
      ->capture_default_str();
  app.add_option("--search-budget-s", settings.search_budget_s, "search time budget (0: none)")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option_function<std::string>(
         "--search",
         [&settings](const std::string& kind) { settings.exhaustive = kind == "exhaustive"; },
         "bounded (measures only the stages that can change the optimum; the default) or "
         "exhaustive (every candidate stage: the reference DP)")
      ->check(CLI::IsMember({"bounded", "exhaustive"}));
  app.add_flag("--no-core-bound", settings.no_core_bound,
               "cpu, bounded search: bound stages by their slowest group only, without measuring "
               "each group on one core (the core bound)");
  app.add_flag("--no-sub-stage-bound", settings.no_sub_stage_bound,
               "bounded search: do not bound a stage by the measured stages of some of its groups");
  app.add_option("--schedule-dir", settings.schedule_dir, "keep (and reuse) schedules here");
  app.add_option("--latency-db,--latency-cache", settings.latency_db,
                 "SQLite latency database of measured stages (created if missing)");
  app.add_flag("--verify", settings.verify, "compare every schedule's outputs with the reference");
  app.add_option("--verify-rtol", settings.verify_rtol, "relative tolerance of --verify")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--json", settings.json_path, "also write the results as JSON");
}

}  // namespace

StatusOr<ModelSpec> ParseModelSpec(const std::string& entry, const Settings& settings) {
  const std::vector<std::string> parts = Split(entry, ':');
  ASSIGN_OR_RETURN(graph::ModelRef ref, graph::ResolveModel(parts[0]));
  ModelSpec spec;
  spec.arg = parts[0];
  spec.onnx = ref.source == graph::kOnnxSource;
  const std::string stem = std::filesystem::path(spec.arg).stem().string();
  spec.name = spec.onnx ? stem + ".onnx" : ref.name;
  DefaultBounds(spec.onnx ? stem : spec.name, &spec.r, &spec.s);
  if (settings.global_r > 0) spec.r = settings.global_r;
  if (settings.global_s > 0) spec.s = settings.global_s;
  spec.block_size = settings.global_block_size > 0 ? settings.global_block_size : 50;
  if (parts.size() >= 2) {
    char extra = 0;
    if (std::sscanf(parts[1].c_str(), "%dx%d%c", &spec.r, &spec.s, &extra) != 2 || spec.r < 1 ||
        spec.s < 1 || spec.r > 64 || spec.s > 64) {
      return absl::InvalidArgumentError(
          StrCat("bad bound '", parts[1], "' (want RxS, both in 1..64)"));
    }
  }
  if (parts.size() >= 3) {
    char* end = nullptr;
    const long block = std::strtol(parts[2].c_str(), &end, 10);
    if (parts[2].empty() || *end != '\0' || block < 1 || block > 100000) {
      return absl::InvalidArgumentError(
          StrCat("bad block size '", parts[2], "' in '", entry, "' (want 1..100000)"));
    }
    spec.block_size = static_cast<int>(block);
  }
  return spec;
}

std::optional<int> ParseScheduleBenchArgs(int argc, const char* const* argv, std::ostream& err,
                                          ScheduleBenchArgs& args) {
  Settings& settings = args.settings;
  // Stage profiling during the search: a lighter protocol than the default
  // (first stop after 10 samples, at most 0.5 s a stage) so that thousands of
  // stages fit in minutes on 2 cores.
  settings.search_profile.warmup = 2;
  settings.search_profile.min_repeats = 5;
  settings.search_profile.max_repeats = 40;
  settings.search_profile.max_seconds = 0.5;
  std::string models_text;
  CLI::App app{"schedule_bench: sequential, greedy and IOS schedules run end to end on a "
               "backend, per model (figures in docs/results.md)",
               "schedule_bench"};
  AddFlags(app, settings, models_text);
  app.set_version_flag("--version", std::string("schedule_bench ") + IOSFARM_VERSION);
  if (std::optional<int> exit = ParseFlags(app, argc, argv, err)) return exit;
  std::vector<std::string> entries = {"squeezenet", "resnet50",        "inception_v3",
                                      "randwire",   "nasnet_a_mobile", "nasnet_a"};
  if (!models_text.empty()) entries = Split(models_text, ',');
  const bool cuda = settings.backend == "cuda";
  if (settings.cuda_graph_stages && !cuda) {
    err << "schedule_bench: --cuda-graph-stages needs --backend cuda\n";
    return 2;
  }
  if (settings.cuda_flush_l2 && !settings.cuda_graph_stages) {
    err << "schedule_bench: --cuda-flush-l2 needs --cuda-graph-stages\n";
    return 2;
  }
  if (settings.repeats == 0) settings.repeats = cuda ? 50 : 10;
  if (settings.warmup < 0) settings.warmup = cuda ? 5 : 2;
  for (const std::string& entry : entries) {
    StatusOr<ModelSpec> spec = ParseModelSpec(entry, settings);
    if (!spec.ok()) {
      err << "schedule_bench: --models: " << spec.status().message() << "\n";
      return 2;
    }
    args.models.push_back(*std::move(spec));
  }
  return std::nullopt;
}

}  // namespace iosfarm::bench
