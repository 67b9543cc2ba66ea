// bound_audit_bench: how often and by how much a backend's measurements
// break the bounded search's assumption (scheduler/ios/bounded_block_search.h),
// on every candidate stage of a model's blocks, not only on the stages a
// search evaluates (scheduler/ios/bound_audit.h).
//
//   bound_audit_bench [--models a,b,...] [--backend cpu|cuda|sim[:preset]] [--batch N]
//                     [--block-size B] [--r R] [--s S] [--no-merge] [--no-device-floor]
//                     [--no-core-bound] [--threads T] [--min-repeats N] [--max-repeats N]
//                     [--stages FILE] [--version]
//
// The model is cut into blocks of at most --block-size ops (every candidate
// stage of every block is measured once: keep blocks small on a real
// backend); each block is audited with the backend's own device
// floor and, on the cpu backend, its core bound, as `iosfarm search` bounds
// stages. One row per model: endings (candidate stages), bounds the floors
// or cores raise above the slowest group, concurrent stages and merges
// measured below their bound (how many, the largest shortfall in us and as a
// share of the bound), concurrent stages of three or more groups measured
// below a stage of all but one of their groups (the search's sub-stage
// bound; the shortfall's share is of that stage), endings where the cost to
// go is not consistent, and the stages measured.
//
// --stages FILE keeps every distinct stage measured, one JSON object a
// line, for studying other bounds offline: a first
// line {"backend", "device", "floor" (the audit's), "batch", "r", "s",
// "block_size"}, then per stage {"model", "signature", "strategy"
// (concurrent, merge, single-core), "groups" (node ids), "ms", and per group
// "kernels" (as the backend's device floor counts them, with or without
// --no-device-floor; a backend that declares no floor counts every op that
// is not a view), "gflop" and "mbytes" (graph/cost.h)}. A single group's
// stage is that group timed alone. Identical blocks repeat their stages
// under other node ids and the signatures of the first, measured once.
//
// Exit 0 when the audit ran (a broken assumption is a finding, not an
// error), 1 on a backend or model error, 2 on a usage error.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/flags/flags.h"
#include "common/strings.h"
#include "graph/cost.h"
#include "graph/model_loader.h"
#include "nlohmann/json.hpp"
#include "scheduler/ios/bounded/audit/bound_audit.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/backend_factory.h"
#include "worker/backends/backend_oracle.h"
#include "worker/backends/profiling.h"

namespace iosfarm::bench {
namespace {

namespace ios = scheduler::ios;

struct Settings {
  std::vector<std::string> models = {"squeezenet", "inception_v3"};
  std::string backend = "cpu";
  int batch = 1;
  int block_size = 8;
  int r = 3;
  int s = 8;
  bool no_merge = false;
  bool no_device_floor = false;
  bool no_core_bound = false;
  bool cuda_graph_stages = false;
  int threads = 0;
  std::string stages_path;  // --stages: every distinct stage measured, JSON lines
  worker::ProfileOptions profile;
};

// "concurrent", "merge" or "single-core".
std::string StrategyOf(const ios::Stage& stage) {
  return stage.single_core ? "single-core" : std::string(ios::StrategyName(stage.strategy));
}

// One stage measured, as a --stages line: its groups' node ids, its latency,
// and each group's kernels (as `floor` counts them), GFLOP and MB.
nlohmann::json StageRecord(const graph::Graph& graph, const std::string& model,
                           ios::Signature signature, const ios::Stage& stage, double ms,
                           const ios::DeviceFloor& floor) {
  nlohmann::json groups = nlohmann::json::array(), kernels = nlohmann::json::array(),
                 gflop = nlohmann::json::array(), mbytes = nlohmann::json::array();
  for (const auto& group : stage.groups) {
    double k = 0, flops = 0, bytes = 0;
    for (graph::NodeId id : group) {
      const graph::Node& node = graph.node(id);
      k += ios::ComputeOpFloor(graph, node, floor).kernels;
      const graph::OpCost cost = graph::ComputeOpCost(graph, node);
      flops += static_cast<double>(cost.flops);
      bytes += static_cast<double>(cost.bytes_read + cost.bytes_written);
    }
    groups.push_back(group);
    kernels.push_back(k);
    gflop.push_back(flops / 1e9);
    mbytes.push_back(bytes / 1e6);
  }
  return {{"model", model},
          {"signature", signature},
          {"strategy", StrategyOf(stage)},
          {"groups", groups},
          {"ms", ms},
          {"kernels", kernels},
          {"gflop", gflop},
          {"mbytes", mbytes}};
}

// The audit of every block of `model` (AuditGraphBounds; the oracle
// remembers signatures, so identical blocks measure nothing again).
StatusOr<ios::BoundAudit> AuditModel(const Settings& settings, const std::string& model,
                                     worker::Backend& backend, int64_t* measured,
                                     std::ofstream* stages_out) {
  ASSIGN_OR_RETURN(graph::LoadedModel loaded, graph::LoadModel(model, settings.batch));
  const graph::Graph& graph = loaded.graph;
  RETURN_IF_ERROR(backend.CheckSupported(graph));
  ios::BoundedSearchOptions options;
  options.dp.bounds = {settings.r, settings.s};
  options.dp.enable_merge = !settings.no_merge;
  options.cores = settings.no_core_bound ? 0 : backend.cores();
  if (!settings.no_device_floor) options.device_floor = backend.device_floor();
  const ios::SignedLatencyFn oracle = worker::MakeBackendOracle(graph, backend, settings.profile);
  std::set<ios::Signature> seen;
  std::set<std::pair<std::string, std::vector<std::vector<graph::NodeId>>>> recorded;
  const ios::SignedLatencyFn counted = [&](ios::Signature signature,
                                           const ios::Stage& stage) -> StatusOr<double> {
    *measured += seen.insert(signature).second;
    StatusOr<double> ms = oracle(signature, stage);
    // Identical blocks share signatures, not node ids: each block's stages
    // are kept, so that a stage and its groups are found in one block.
    if (ms.ok() && stages_out != nullptr &&
        recorded.insert({StrategyOf(stage), stage.groups}).second) {
      *stages_out << StageRecord(graph, model, signature, stage, *ms, backend.device_floor()).dump()
                  << '\n';
      if (!*stages_out) return absl::UnavailableError("--stages: cannot write the file");
    }
    return ms;
  };
  return ios::AuditGraphBounds(graph, settings.block_size, options, counted);
}

int Run(const Settings& settings) {
  worker::BackendConfig config;
  config.cpu_threads = settings.threads;
  config.cuda_graph_stages = settings.cuda_graph_stages;
  StatusOr<std::unique_ptr<worker::Backend>> backend =
      worker::CreateBackend(settings.backend, config);
  if (!backend.ok()) {
    std::fprintf(stderr, "bound_audit_bench: %s backend: %s\n", settings.backend.c_str(),
                 std::string(backend.status().message()).c_str());
    return 1;
  }
  std::printf("backend %s: %s; floor: %s; cores %d; r=%d s=%d, blocks of %d ops, batch %d%s\n",
              settings.backend.c_str(), (*backend)->device_description().c_str(),
              settings.no_device_floor
                  ? "none"
                  : ios::DescribeDeviceFloor((*backend)->device_floor()).c_str(),
              settings.no_core_bound ? 0 : (*backend)->cores(), settings.r, settings.s,
              settings.block_size, settings.batch, settings.no_merge ? ", no merge" : "");
  std::ofstream stages_out;
  if (!settings.stages_path.empty()) {
    stages_out.open(settings.stages_path);
    const ios::DeviceFloor floor =
        settings.no_device_floor ? ios::DeviceFloor{} : (*backend)->device_floor();
    stages_out << nlohmann::json{{"backend", settings.backend},
                                 {"device", (*backend)->device_description()},
                                 {"floor", ios::DescribeDeviceFloor(floor)},
                                 {"batch", settings.batch},
                                 {"r", settings.r},
                                 {"s", settings.s},
                                 {"block_size", settings.block_size}}
                      .dump()
               << '\n';
    if (!stages_out) {
      std::fprintf(stderr, "bound_audit_bench: --stages: cannot write %s\n",
                   settings.stages_path.c_str());
      return 1;
    }
  }
  std::printf(
      "| model | endings | bound above the slowest group | concurrent below its bound "
      "(largest: us, share) | merges below their bound (largest: us, share) | concurrent "
      "below a stage of all but one of its groups (largest: us, share) | cost to go "
      "inconsistent | stages measured |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const std::string& model : settings.models) {
    int64_t measured = 0;
    StatusOr<ios::BoundAudit> audit = AuditModel(settings, model, **backend, &measured,
                                                 stages_out.is_open() ? &stages_out : nullptr);
    if (!audit.ok()) {
      std::fprintf(stderr, "bound_audit_bench: %s: %s\n", model.c_str(),
                   std::string(audit.status().message()).c_str());
      return 1;
    }
    std::printf(
        "| %s | %lld | %lld | %lld (%.3f us, %.1f %%) | %lld (%.3f us, %.1f %%) | %lld (%.3f us, "
        "%.1f %%) | %lld | %lld |\n",
        model.c_str(), static_cast<long long>(audit->endings),
        static_cast<long long>(audit->raised), static_cast<long long>(audit->below),
        audit->largest_below_ms * 1e3, audit->largest_below_share * 100,
        static_cast<long long>(audit->merge_below), audit->largest_merge_shortfall_ms * 1e3,
        audit->largest_merge_shortfall_share * 100, static_cast<long long>(audit->sub_below),
        audit->largest_sub_shortfall_ms * 1e3, audit->largest_sub_shortfall_share * 100,
        static_cast<long long>(audit->inconsistent), static_cast<long long>(measured));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace iosfarm::bench

int main(int argc, char** argv) {
  using iosfarm::StrCat;
  iosfarm::bench::Settings settings;
  std::string models_text;
  CLI::App app{
      "bound_audit_bench: every candidate stage of a model's blocks measured on a "
      "backend against the bounded search's bounds (scheduler/ios/bounded/README.md)",
      "bound_audit_bench"};
  app.add_option("--models", models_text,
                 "comma-separated zoo models or ONNX files (default: squeezenet,inception_v3)");
  app.add_option("--backend", settings.backend, "cpu, cuda, sim or sim:<preset>")
      ->capture_default_str();
  app.add_option("--batch", settings.batch, "batch size")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--block-size", settings.block_size,
                 "operators per block (every candidate stage is measured: keep it small)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--r", settings.r, "most ops per group")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--s", settings.s, "most groups per stage")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_flag("--no-merge", settings.no_merge, "no merged convolutions");
  app.add_flag("--no-device-floor", settings.no_device_floor,
               "audit without the backend's device floor");
  app.add_flag("--no-core-bound", settings.no_core_bound, "cpu backend: without the core bound");
  app.add_flag("--cuda-graph-stages", settings.cuda_graph_stages,
               "cuda backend: time each stage as a CUDA graph (its device floor is none)");
  app.add_option("--threads", settings.threads, "cpu backend: threads (0 = all)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--stages", settings.stages_path,
                 "write every distinct stage measured to FILE, one JSON object a line (for "
                 "studies offline)");
  app.add_option("--min-repeats", settings.profile.min_repeats, "fewest timed runs per stage")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--max-repeats", settings.profile.max_repeats, "most timed runs per stage")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.set_version_flag("--version", StrCat("bound_audit_bench ", IOSFARM_VERSION));
  if (std::optional<int> exit = iosfarm::ParseFlags(app, argc, argv, std::cerr)) return *exit;
  if (iosfarm::Status valid = iosfarm::worker::ValidateProfileOptions(settings.profile);
      !valid.ok()) {
    std::fprintf(stderr, "bound_audit_bench: %s\n", std::string(valid.message()).c_str());
    return 2;
  }
  if (!models_text.empty()) {
    settings.models = absl::StrSplit(models_text, ',', absl::SkipEmpty());
  }
  if (settings.cuda_graph_stages && settings.backend != "cuda") {
    std::fprintf(stderr, "bound_audit_bench: --cuda-graph-stages needs --backend cuda\n");
    return 2;
  }
  return iosfarm::bench::Run(settings);
}
