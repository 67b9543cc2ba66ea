// schedule_bench's command line: the settings of a run and the models to
// run, parsed with CLI11 (flags in schedule_bench.cc's header comment).
// Stateless; thread-safe.
#ifndef IOSFARM_BENCH_SCHEDULE_BENCH_FLAGS_H_
#define IOSFARM_BENCH_SCHEDULE_BENCH_FLAGS_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/backends/backend.h"

namespace iosfarm::bench {

// One --models entry.
struct ModelSpec {
  std::string arg;   // as given: a zoo name or an .onnx path
  std::string name;  // zoo name, or "<stem>.onnx"
  bool onnx = false;
  int r = 0, s = 0, block_size = 0;
};

struct Settings {
  std::string backend = "cpu";
  int cuda_device = 0;
  // cuda: the search times stages as CUDA graphs (schedules for running as
  // one graph; CudaExecutionOptions::graph_stages). Schedules are kept apart.
  bool cuda_graph_stages = false;
  // cuda, with cuda_graph_stages: each timed replay follows an L2 flush (an
  // experiment; CudaExecutionOptions::flush_l2). Schedules are kept apart.
  bool cuda_flush_l2 = false;
  int batch = 1;
  int threads = 0;
  int rounds = 5;
  int repeats = 0;  // after parsing: the backend's default (cpu 10, cuda 50) for 0
  int warmup = -1;  // after parsing: the backend's default (cpu 2, cuda 5) for -1
  int global_r = 0, global_s = 0, global_block_size = 0;  // 0: per-model default
  worker::ProfileOptions search_profile;
  double search_budget_s = 0;  // 0: none
  // The exhaustive DP (the reference: every candidate stage) instead of the
  // bounded search. Schedules are kept apart; with a shared --latency-db a
  // bounded run after an exhaustive one measures almost nothing (the core
  // bound's one-core runs, the odd stage its boundary windows ask for) and
  // searches the blocks' very latencies, which isolates what broken bounds
  // cost.
  bool exhaustive = false;
  // cpu: bound stages by their slowest group only, not by each group's
  // one-core run (the bounded search's core bound; iosfarm search's flag).
  bool no_core_bound = false;
  // Bounded search: no sub-stage bound (SearchOptions::sub_stage_bound).
  bool no_sub_stage_bound = false;
  std::string schedule_dir;
  std::string latency_db;  // empty: no latency database
  bool verify = false;
  double verify_rtol = 1e-3;
  std::string json_path;
};

struct ScheduleBenchArgs {
  Settings settings;
  std::vector<ModelSpec> models;
};

// Parses argv into `args`. nullopt: go on. Otherwise the exit code: 0 after
// --help, 2 after a usage error (a bad flag or value, a model that is
// neither a zoo model nor an existing file, a bad RxS[:B] bound), printed on
// `err`.
std::optional<int> ParseScheduleBenchArgs(int argc, const char* const* argv, std::ostream& err,
                                          ScheduleBenchArgs& args);

// One MODEL[:RxS[:BLOCK]] entry, with the defaults of `settings`: r=3, s=8
// for squeezenet, resnet50, inception_v3 and ONNX files; r=1, s=3 for
// randwire and the NASNets; --r/--s override them, the entry overrides both;
// block 50 unless --block-size or the entry say otherwise. The model
// loader's errors (graph/model_loader.h); InvalidArgument naming the entry
// for a bad bound (R and S in 1..64) or block size (1..100000).
StatusOr<ModelSpec> ParseModelSpec(const std::string& entry, const Settings& settings);

}  // namespace iosfarm::bench

#endif  // IOSFARM_BENCH_SCHEDULE_BENCH_FLAGS_H_
