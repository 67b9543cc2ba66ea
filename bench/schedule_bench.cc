// schedule_bench: sequential vs greedy vs IOS schedules on one execution
// backend (cpu: oneDNN, cuda: cuDNN/cuBLAS), searched and measured in one
// process.
//
//   schedule_bench [--backend cpu|cuda] [--cuda-device N]
//                  [--models a,b.onnx,c:RxS[:B],...] [--r R] [--s S] [--block-size B]
//                  [--batch N] [--threads T] [--rounds K] [--repeats N] [--warmup N]
//                  [--search-min-repeats N] [--search-max-repeats N]
//                  [--search-budget-s S] [--schedule-dir DIR] [--latency-db FILE]
//                  [--search bounded|exhaustive] [--no-core-bound] [--no-sub-stage-bound]
//                  [--verify] [--verify-rtol X] [--json FILE]
//
// A model is a zoo name or the path of an .onnx file (graph/model_loader.h;
// imported with the batch overridden by --batch; shown as "<stem>.onnx").
//
// For each model:
//  1. Search. The IOS search (SearchWithBaselines) runs with a BackendOracle
//     over the chosen backend: every unique stage signature is built and
//     profiled once on this device. Prints search wall time, stages measured
//     and the oracle's predicted (sum of stage medians) latencies. With
//     --schedule-dir the IOS schedule is saved as DIR/<model>[_<backend>]_b
//     <batch>_r<R>_s<S>_bs<B>.json (schedule format, docs/schedule-format.md;
//     the backend part is absent for cpu) with a sidecar .search.json (search
//     report); a later run with the same settings loads it (the model digest
//     is checked) and skips the search. --search-budget-s S stops a search
//     that is still measuring after S seconds (DeadlineExceeded, exit 1), so
//     that a driver with a wall-clock limit loses one model, not the run.
//     --latency-db FILE (old name: --latency-cache) keeps every stage
//     latency measured in a SQLite latency database (the server's store,
//     created if missing; keyed by backend, device and signature version,
//     bench_latency_cache.h) and answers later searches (other models with
//     the same stages, a retry with other bounds, a rerun after a kill) from
//     it instead of measuring again. --search exhaustive runs the reference
//     DP (every candidate stage) instead of the bounded search; run after it
//     on the same --latency-db, a bounded search measures almost nothing
//     anew (the core bound's one-core group runs, the odd stage across a
//     block cut its boundary windows ask for) and works on the very same
//     latencies, so its predicted IOS latency against the exhaustive
//     one's is what the bounds' misses cost on this device, free of the
//     measurement noise between two runs.
//  2. Measure. The sequential, greedy (at most S groups per stage, as
//     SearchWithBaselines costs it) and IOS schedules run end to end with
//     RunSchedule, round-robin for K rounds (the order rotates each round),
//     each call `--repeats` timed runs after `--warmup` warm-up runs, so that
//     machine noise hits all alike. On the cuda backend two more rows run in
//     the same rotation: the sequential and the IOS schedule each captured as
//     one CUDA graph (RunOptions::cuda_graph) and replayed. Per row: median
//     over rounds of the round medians, median over rounds of the round p10 /
//     p90, and the ratios IOS/sequential and IOS/greedy of those medians;
//     "IOS wins" counts the rounds where IOS's round median beat the other
//     schedule's.
//
// Per-model bounds: "randwire:1x3" or "nasnet_a:1x3:35" overrides --r/--s
// (and --block-size) for that model. Defaults: r=3, s=8 for squeezenet,
// resnet50, inception_v3 and ONNX files; r=1, s=3 for randwire and the
// NASNets (the measured search at r=3, s=8 would profile 1-8 M unique stages
// there). Prints one markdown table at the end (and each row as it is done);
// --json FILE also writes every finished model as JSON (rewritten after each
// model, so a killed run keeps what it finished; one object per model with
// the fields of schedule_bench_report.h's Row).
//
// Exit status: 0 when every model ran, 1 on the first error (one line on
// stderr with the code, the model and the step; e.g. "schedule_bench:
// UNAVAILABLE: cuda backend: no CUDA device: ..." on a machine without a
// GPU), 2 on bad arguments.
//
// Files: schedule_bench_flags (arguments), schedule_bench_run (one model),
// schedule_bench_search (its search), schedule_bench_report (table, JSON),
// bench_latency_cache (the latency database).
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_latency_cache.h"
#include "bench/bench_status.h"
#include "bench/schedule_bench_flags.h"
#include "bench/schedule_bench_report.h"
#include "bench/schedule_bench_run.h"
#include "common/status.h"
#include "worker/backends/backend_factory.h"
#include "worker/backends/profiling.h"

namespace iosfarm::bench {
namespace {

Status Run(Settings& settings, const std::vector<ModelSpec>& specs) {
  RETURN_IF_ERROR(Prefixed("search profile options",
                           worker::ValidateProfileOptions(settings.search_profile)));
  if (!settings.schedule_dir.empty()) {
    std::error_code ignored;  // a directory that cannot be made: warnings at each write
    std::filesystem::create_directories(settings.schedule_dir, ignored);
  }
  worker::BackendConfig config;
  config.cpu_threads = settings.threads;
  config.cuda_device = settings.cuda_device;
  config.cuda_graph_stages = settings.cuda_graph_stages;
  config.cuda_flush_l2 = settings.cuda_flush_l2;
  StatusOr<std::unique_ptr<worker::Backend>> backend =
      worker::CreateBackend(settings.backend, config);
  if (!backend.ok()) return Prefixed(settings.backend + " backend", backend.status());
  const bool cuda_graph_rows = (*backend)->name() == "cuda";
  const std::string device = (*backend)->device_description();
  std::unique_ptr<BenchLatencyCache> latencies;
  if (!settings.latency_db.empty()) {
    StatusOr<std::unique_ptr<BenchLatencyCache>> opened =
        BenchLatencyCache::Open(settings.latency_db, settings.backend, device);
    if (!opened.ok()) return Prefixed("--latency-db", opened.status());
    latencies = *std::move(opened);
  }
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M", std::localtime(&now));
  std::printf(
      "%s backend: %s; batch %d; %d rounds x %d timed runs (%d warm-up) per schedule; %s\n",
      settings.backend.c_str(), device.c_str(), settings.batch, settings.rounds,
      settings.repeats, settings.warmup, date);
  std::fflush(stdout);
  const nlohmann::json header = {
      {"tool", "schedule_bench"},
      {"backend", settings.backend},
      {"device", device},
      {"date", date},
      {"batch", settings.batch},
      {"rounds", settings.rounds},
      {"repeats", settings.repeats},
      {"warmup", settings.warmup},
      {"stage_timing", settings.cuda_flush_l2       ? "cuda_graph_flush_l2"
                       : settings.cuda_graph_stages ? "cuda_graph"
                                                    : "eager"},
  };

  std::vector<Row> rows;
  for (const ModelSpec& spec : specs) {
    ASSIGN_OR_RETURN(Row row,
                     RunModel(spec, settings, **backend, latencies.get(), cuda_graph_rows));
    rows.push_back(std::move(row));
    if (!settings.json_path.empty()) {
      WriteJson(settings.json_path, header, rows, settings.batch, cuda_graph_rows);
    }
    PrintHeader(cuda_graph_rows);
    PrintRow(rows.back(), settings.rounds, cuda_graph_rows);
    std::fflush(stdout);
  }
  std::printf("\n");
  PrintHeader(cuda_graph_rows);
  for (const Row& row : rows) PrintRow(row, settings.rounds, cuda_graph_rows);
  return absl::OkStatus();
}

}  // namespace
}  // namespace iosfarm::bench

int main(int argc, char** argv) {
  iosfarm::bench::ScheduleBenchArgs args;
  if (std::optional<int> exit =
          iosfarm::bench::ParseScheduleBenchArgs(argc, argv, std::cerr, args)) {
    return *exit;
  }
  const iosfarm::Status status = iosfarm::bench::Run(args.settings, args.models);
  if (!status.ok()) {
    std::fprintf(stderr, "schedule_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
