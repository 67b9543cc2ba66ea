// cuda_plan_bench: the host's share of measuring a stage on the cuda backend.
//
// Before a stage is timed on a GPU, the cuda backend plans it on the CPU
// (worker/backends/cuda/plan_builder.h): buffers, steps, and the stage's
// weights drawn and packed for upload. A search measures thousands of stages,
// so that host work is paid thousands of times. This bench plans exactly the
// stages an IOS search of a model asks for with an empty latency database
// (SearchSession::NextUnknown, latencies from the analytic oracle), one plan
// per stage as CudaBackend::Build makes them, and reports the CPU time per
// stage and the weight values per stage, with and without a weight cache
// (worker/backends/weights.h: WeightCache) shared by the plans, side by side
// in one run. Runs on any machine: planning needs no GPU.
//
//   cuda_plan_bench [--models inception_v3,randwire] [--bounds 3x8] [--batch N]
//                   [--max-stages N] [--rounds R] [--markdown]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/flags/flags.h"
#include "common/strings.h"
#include "graph/model_loader.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/search_session.h"
#include "worker/backends/cuda/planner/plan_builder.h"
#include "worker/backends/weights.h"

namespace {

using iosfarm::StrCat;
namespace ios = iosfarm::scheduler::ios;
namespace cuda = iosfarm::worker::cuda;

// The first `max_stages` stages the search requests, in the order it requests
// them (the search stops there).
iosfarm::StatusOr<std::vector<ios::Stage>> RequestedStages(const iosfarm::graph::Graph& graph,
                                                           const ios::SearchOptions& options,
                                                           size_t max_stages) {
  ASSIGN_OR_RETURN(auto session, ios::SearchSession::Create(graph, options));
  const ios::StageLatencyFn oracle = ios::MakeAnalyticOracle(graph);
  std::vector<ios::Stage> stages;
  while (stages.size() < max_stages) {
    ASSIGN_OR_RETURN(std::vector<ios::StageRequest> requests, session->NextUnknown(256));
    if (requests.empty()) break;
    for (const ios::StageRequest& request : requests) {
      ASSIGN_OR_RETURN(double latency, oracle(request.stage));
      RETURN_IF_ERROR(session->Provide(request.signature, latency));
      if (stages.size() < max_stages) stages.push_back(request.stage);
    }
  }
  return stages;
}

struct Pass {
  double seconds = 0;
  double weight_values = 0;
};

// Plans every stage once; `cache` may be null.
iosfarm::StatusOr<Pass> PlanAll(const iosfarm::graph::Graph& graph,
                                const std::vector<ios::Stage>& stages,
                                iosfarm::worker::WeightCache* cache) {
  cuda::PlanOptions options;
  options.external = cuda::ExternalValues::kRandomData;
  options.weight_cache = cache;
  Pass pass;
  const auto start = std::chrono::steady_clock::now();
  for (const ios::Stage& stage : stages) {
    ASSIGN_OR_RETURN(cuda::ExecutionPlan plan, cuda::BuildExecutionPlan(graph, {&stage}, options));
    pass.weight_values += static_cast<double>(plan.weights.size());
  }
  pass.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return pass;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The CPU cost of planning the stages an IOS search measures on the cuda backend",
               "cuda_plan_bench");
  std::string models = "inception_v3,randwire";
  std::string bounds = "3x8";
  int64_t batch = 1;
  int max_stages = 3000;
  int rounds = 3;
  bool markdown = false;
  app.add_option("--models", models, "Comma-separated zoo names or .onnx paths")
      ->capture_default_str();
  app.add_option("--bounds", bounds, "Search bounds RxS (ops per group x groups per stage)")
      ->capture_default_str();
  app.add_option("--batch", batch, "Batch size")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app.add_option("--max-stages", max_stages, "Plan at most the first N requested stages")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  app.add_option("--rounds", rounds, "Rounds of (no cache, cache) side by side; medians")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_flag("--markdown", markdown, "Print a markdown table");
  app.set_version_flag("--version", std::string("cuda_plan_bench ") + IOSFARM_VERSION);
  if (std::optional<int> exit = iosfarm::ParseFlags(app, argc, argv, std::cerr)) return *exit;

  int r = 0, s = 0;
  if (std::sscanf(bounds.c_str(), "%dx%d", &r, &s) != 2 || r < 1 || s < 1) {
    std::cerr << "cuda_plan_bench: error: --bounds '" << bounds << "' is not RxS, e.g. 3x8\n";
    return 2;
  }
  if (markdown) {
    std::cout << "| model | r x s | stages planned | weight MB / stage | ms / stage, no cache | "
                 "ms / stage, cache | ratio |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  }
  const std::vector<std::string> names = absl::StrSplit(models, ',', absl::SkipEmpty());
  for (const std::string& name : names) {
    auto model = iosfarm::graph::LoadModel(name, batch);
    if (!model.ok()) {
      std::cerr << "cuda_plan_bench: " << name << ": " << model.status() << "\n";
      return 1;
    }
    ios::SearchOptions options;
    options.max_group_ops = r;
    options.max_groups = s;
    auto stages = RequestedStages(model->graph, options, static_cast<size_t>(max_stages));
    if (!stages.ok()) {
      std::cerr << "cuda_plan_bench: " << name << ": search: " << stages.status() << "\n";
      return 1;
    }
    std::vector<double> plain_s, cached_s;
    double values = 0;
    for (int round = 0; round < rounds; ++round) {
      // A fresh cache per round: its first use of each weight draws it.
      iosfarm::worker::WeightCache cache;
      auto plain = PlanAll(model->graph, *stages, nullptr);
      auto cached = PlanAll(model->graph, *stages, &cache);
      if (!plain.ok() || !cached.ok()) {
        std::cerr << "cuda_plan_bench: " << name
                  << ": plan: " << (plain.ok() ? cached.status() : plain.status()) << "\n";
        return 1;
      }
      if (plain->weight_values != cached->weight_values) {
        std::cerr << "cuda_plan_bench: " << name << ": the cached plans hold "
                  << cached->weight_values << " weight values, the plain ones "
                  << plain->weight_values << "\n";
        return 1;
      }
      values = plain->weight_values;
      plain_s.push_back(plain->seconds);
      cached_s.push_back(cached->seconds);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double n = static_cast<double>(stages->size());
    const double plain_ms = 1e3 * median(plain_s) / n;
    const double cached_ms = 1e3 * median(cached_s) / n;
    const double mb = values * sizeof(float) / n / 1e6;
    if (markdown) {
      std::printf("| %s | %dx%d | %zu | %.2f | %.3f | %.3f | %.1fx |\n", name.c_str(), r, s,
                  stages->size(), mb, plain_ms, cached_ms, plain_ms / cached_ms);
    } else {
      std::printf(
          "%s %dx%d: %zu stages, %.2f MB of weights a stage; %.3f ms a stage without "
          "a weight cache, %.3f with one (%.1fx)\n",
          name.c_str(), r, s, stages->size(), mb, plain_ms, cached_ms, plain_ms / cached_ms);
    }
  }
  return 0;
}
