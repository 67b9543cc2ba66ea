// ios_search_bench: cost of the IOS search itself (no GPU), per model (zoo
// name or .onnx file, graph/model_loader.h) and pruning bound, with every
// latency coming from the analytic oracle, or replayed from a latency
// database that a backend filled (--latency-db).
//
//   ios_search_bench [--models a,b,...] [--bounds 1x3,2x8,3x8] [--batch N] [--version]
//                    [--block-size B] [--window OPS] [--no-reuse] [--blocks]
//                    [--walk-only] [--search exhaustive|bounded]
//                    [--farm-batch N [--lookahead L]] [--bounded-steps N] [--bounded-max-states N]
//                    [--bound-dp-max-states N]
//                    [--threads T] [--latency-db FILE [--device-key KEY] [--cores N]]
//                    [--no-sub-stage-bound]
//                    [--markdown]
//
// --search picks the exhaustive DP (the reference, the default here) or the
// bounded search (search_options.h: what `iosfarm search` and the farm run).
// "measured" is the number of stage latencies the search asked for: every
// unique signature for the exhaustive DP, far fewer for the bounded one.
// --farm-batch N drives the search as a farm job does (NextUnknown(N), then
// every latency of the batch at once) and reports the number of batches: the
// GPU round trips, against the stages measured (--lookahead sets how many
// further candidates a waiting block asks for).
//
// Each (model, r, s) runs in a forked child so that its peak RSS is its own.
// Columns: blocks (reused identical ones in parentheses), DP states,
// transitions ((state, candidate) pairs), distinct candidate stages (summed
// per block) and the unique signatures they collapse into, CPU seconds of the
// whole search (partition, enumeration, signatures, oracle, DP), the
// sequential / greedy / IOS analytic latencies, and the child's peak RSS.
//
// --latency-db FILE replays another run's measurements: every stage latency
// comes from the database (schedule_bench --latency-db, e.g. the exhaustive
// run of tools/gpu_run's `exact` step on a GPU, bench_latency_cache.h), under
// --device-key (default: the database's only key), and a stage it lacks
// fails the model naming that stage. So bounds can be tried on a GPU's real
// latencies without the GPU. --cores N gives the search the cpu backend's
// core bound as the run it replays had it (its one-core group runs are in
// the database); the analytic model's device floor does not apply.
//
// The bounded search takes the analytic model's device floor
// (AnalyticDeviceFloor: its stage sync, issue per kernel, work at peak and
// bandwidth, and contention per extra group), an exact lower bound of every
// concurrent stage the oracle times, as the sim backend's is of its model;
// --no-device-floor leaves it out (the group and sub-stage bounds only).
//
// --walk-only measures the floor under the exact DP: for every distinct
// block of the partition (boundary windows left out) it only walks the
// reachable remaining sets, enumerating each one's endings and finding each
// child, with no signatures, latencies or ending table. Its CPU time is what
// the state space alone costs on this machine.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_latency_cache.h"
#include "common/flags/flags.h"
#include "common/strings.h"
#include "graph/model_loader.h"
#include "graph/models/zoo.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/blocks.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/search_session.h"
#include "scheduler/ios/tables/op_bits_map.h"

namespace {

using iosfarm::StrCat;
namespace ios = iosfarm::scheduler::ios;

struct Row {
  int blocks = 0, reused = 0;
  long long states = 0, transitions = 0, candidates = 0, merges = 0, signatures = 0;
  long long measured = 0, batches = 0, misses = 0;
  int stages = 0, merged_stages = 0, exhaustive_blocks = 0;
  double cpu_s = 0, wall_s = 0, seq_ms = 0, greedy_ms = 0, ios_ms = 0;
  int ok = 0;
  char error[512] = {0};
};

double WallSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool g_show_blocks = false;
bool g_walk_only = false;
int g_window_ops = -1;
bool g_exhaustive = true;
int g_farm_batch = 0;
int g_lookahead = -1;
int64_t g_bounded_steps = -1;
int64_t g_max_block_states = -1;
int64_t g_bound_dp_max_states = -1;
bool g_device_floor = true;
int g_threads = 1;
std::string g_latency_db;  // --latency-db: replay its latencies
std::string g_device_key;
int g_cores = 0;
bool g_no_sub_stage_bound = false;

// The replay's oracle: the stored latency of each stage's signature, or
// NotFound naming the stage. One lookup at a time (--threads may ask from
// several threads; the cache is thread-compatible).
iosfarm::StatusOr<ios::SignedLatencyFn> ReplayOracle(const iosfarm::graph::Graph& graph) {
  struct Replay {
    std::mutex mu;
    std::unique_ptr<iosfarm::bench::BenchLatencyCache> cache;
  };
  auto replay = std::make_shared<Replay>();
  ASSIGN_OR_RETURN(replay->cache,
                   iosfarm::bench::BenchLatencyCache::OpenForReplay(g_latency_db, g_device_key));
  return [&graph, replay](ios::Signature signature,
                          const ios::Stage& stage) -> iosfarm::StatusOr<double> {
    std::lock_guard<std::mutex> lock(replay->mu);
    ASSIGN_OR_RETURN(std::optional<double> ms, replay->cache->Find(signature));
    if (!ms) {
      return absl::NotFoundError(StrCat("stage ", ios::StageToString(graph, stage),
                                        " is not in the latency database under '",
                                        replay->cache->device_key(), "'"));
    }
    return *ms;
  };
}

// Drives a search as a farm job does: batches of at most g_farm_batch
// requests, each answered whole before the next; counts the batches.
iosfarm::StatusOr<ios::SearchResult> RunBatched(const iosfarm::graph::Graph& graph,
                                                const ios::SearchOptions& options,
                                                const ios::SignedLatencyFn& oracle,
                                                long long* batches) {
  ASSIGN_OR_RETURN(auto session, ios::SearchSession::Create(graph, options));
  while (true) {
    ASSIGN_OR_RETURN(std::vector<ios::StageRequest> requests, session->NextUnknown(g_farm_batch));
    if (requests.empty()) break;
    ++*batches;
    for (const ios::StageRequest& request : requests) {
      ASSIGN_OR_RETURN(double latency, oracle(request.signature, request.stage));
      RETURN_IF_ERROR(session->Provide(request.signature, latency));
    }
  }
  return session->Result();
}

// Walks the reachable remaining sets of `block` (see --walk-only); adds to
// the row's states and transitions.
template <int W>
void WalkBlock(const ios::BlockGraph& block, const ios::EndingBounds& bounds, Row& row) {
  ios::EndingEnumerator<W> enumerator(block, bounds);
  ios::OpBitsMap<W, char> seen;
  std::vector<ios::OpBits<W>> stack = {ios::OpBits<W>::FirstN(block.size())};
  seen.Insert(stack.back(), stack.back().Hash(), 1);
  std::vector<ios::OpBits<W>> children;
  while (!stack.empty()) {
    const ios::OpBits<W> remaining = stack.back();
    stack.pop_back();
    children.clear();
    enumerator.Enumerate(remaining, [&](const ios::OpBits<W>& ending,
                                        const ios::EndingGroup<W>*, int) {
      children.push_back(remaining.Minus(ending));
    });
    row.transitions += static_cast<long long>(children.size());
    for (const ios::OpBits<W>& child : children) {
      if (child.Empty()) continue;
      const uint64_t hash = child.Hash();
      if (seen.Find(child, hash) != nullptr) continue;
      seen.Insert(child, hash, 1);
      stack.push_back(child);
    }
  }
  row.states += static_cast<long long>(seen.size());
}

Row WalkOnly(const iosfarm::graph::Graph& graph, int r, int s, int block_size) {
  Row row;
  const double start = CpuSeconds();
  const double wall_start = WallSeconds();
  auto partition = ios::PartitionIntoBlocks(graph, ios::BlockOptions{block_size});
  if (!partition.ok()) {
    std::snprintf(row.error, sizeof(row.error), "%s", partition.status().ToString().c_str());
    return row;
  }
  const ios::EndingBounds bounds{r, s};
  std::vector<std::vector<uint64_t>> walked;  // structure keys of distinct blocks
  for (const ios::Block& b : partition->blocks) {
    auto block = ios::BlockGraph::Build(graph, b.ops);
    if (!block.ok()) {
      std::snprintf(row.error, sizeof(row.error), "%s", block.status().ToString().c_str());
      return row;
    }
    ++row.blocks;
    if (std::find(walked.begin(), walked.end(), block->structure_key()) != walked.end()) {
      ++row.reused;
      continue;
    }
    walked.push_back(block->structure_key());
    if (block->size() == 0) continue;
    switch (block->words()) {
      case 1: WalkBlock<1>(*block, bounds, row); break;
      case 2: WalkBlock<2>(*block, bounds, row); break;
      default:
        std::snprintf(row.error, sizeof(row.error), "block of %d ops: too wide for --walk-only",
                      block->size());
        return row;
    }
  }
  row.cpu_s = CpuSeconds() - start;
  row.wall_s = WallSeconds() - wall_start;
  row.ok = 1;
  return row;
}

Row RunOne(const std::string& model, int r, int s, int batch, int block_size, bool reuse) {
  Row row;
  auto loaded = iosfarm::graph::LoadModel(model, batch);
  if (!loaded.ok()) {
    std::snprintf(row.error, sizeof(row.error), "%s", loaded.status().ToString().c_str());
    return row;
  }
  const iosfarm::graph::Graph* graph = &loaded->graph;
  if (g_walk_only) return WalkOnly(*graph, r, s, block_size);
  ios::SearchOptions options;
  options.max_group_ops = r;
  options.max_groups = s;
  options.max_block_ops = block_size;
  options.reuse_identical_blocks = reuse;
  if (g_window_ops >= 0) options.boundary_window_ops = g_window_ops;
  options.exhaustive = g_exhaustive;
  if (g_lookahead >= 0) options.bounded.lookahead = g_lookahead;
  if (g_bounded_steps >= 0) options.bounded.max_open_steps = g_bounded_steps;
  if (g_max_block_states >= 0) options.bounded.max_block_states = g_max_block_states;
  if (g_bound_dp_max_states >= 0) options.bounded.cost_to_go_dp_max_states = g_bound_dp_max_states;
  if (g_device_floor && g_latency_db.empty()) options.bounded.device_floor = ios::AnalyticDeviceFloor();
  options.threads = g_threads;
  options.bounded.cores = g_cores;
  options.bounded.sub_stage_bound = !g_no_sub_stage_bound;
  ios::SignedLatencyFn oracle = ios::IgnoringSignature(ios::MakeAnalyticOracle(*graph));
  if (!g_latency_db.empty()) {
    auto replay = ReplayOracle(*graph);
    if (!replay.ok()) {
      std::snprintf(row.error, sizeof(row.error), "%s", replay.status().ToString().c_str());
      return row;
    }
    oracle = *std::move(replay);
  }
  const double start = CpuSeconds();
  const double wall_start = WallSeconds();
  auto result = g_farm_batch > 0 ? RunBatched(*graph, options, oracle, &row.batches)
                                 : ios::RunSearch(*graph, options, oracle);
  row.cpu_s = CpuSeconds() - start;
  row.wall_s = WallSeconds() - wall_start;
  if (!result.ok()) {
    std::snprintf(row.error, sizeof(row.error), "%s", result.status().ToString().c_str());
    return row;
  }
  if (auto status = ios::ValidateSchedule(*graph, result->schedule); !status.ok()) {
    std::snprintf(row.error, sizeof(row.error), "invalid schedule: %s",
                  status.ToString().c_str());
    return row;
  }
  auto sequential = ios::SequentialSchedule(*graph);
  auto greedy = ios::GreedySchedule(*graph, s);
  iosfarm::Status baselines = !sequential.ok() ? sequential.status()
                              : !greedy.ok()   ? greedy.status()
                                               : ios::CostSchedule(*graph, *sequential, oracle);
  if (baselines.ok()) baselines = ios::CostSchedule(*graph, *greedy, oracle);
  if (!baselines.ok()) {
    std::snprintf(row.error, sizeof(row.error), "baselines: %s", baselines.ToString().c_str());
    return row;
  }
  if (g_show_blocks) {
    for (size_t b = 0; b < result->blocks.size(); ++b) {
      const ios::BlockReport& br = result->blocks[b];
      std::printf(
          "  block %3zu: %3d ops  twin %3d  prefix %3d  states %9lld  transitions %11lld  "
          "stages %9lld  -> %d stages, %.4f ms\n",
          b, br.num_ops, br.twin, br.prefix, static_cast<long long>(br.dp.states),
          static_cast<long long>(br.dp.transitions), static_cast<long long>(br.dp.distinct_stages),
          br.num_stages, br.latency_ms);
    }
    std::fflush(stdout);
  }
  const ios::SearchStats& st = result->stats;
  row.blocks = st.blocks;
  row.reused = st.reused_blocks;
  row.states = st.dp_states;
  row.transitions = st.transitions;
  row.candidates = st.candidate_stages;
  row.merges = st.merge_stages;
  row.signatures = st.unique_signatures;
  row.measured = st.stages_measured;
  row.exhaustive_blocks = st.exhaustive_blocks;
  row.misses = st.lower_bound_misses;
  row.seq_ms = sequential->latency_ms;
  row.greedy_ms = greedy->latency_ms;
  row.ios_ms = result->schedule.latency_ms;
  row.stages = static_cast<int>(result->schedule.stages.size());
  for (const auto& stage : result->schedule.stages) {
    row.merged_stages += stage.stage.strategy == ios::Strategy::kMerge ? 1 : 0;
  }
  row.ok = 1;
  return row;
}

// Runs RunOne in a child; returns its row and peak RSS in MiB.
bool RunInChild(const std::string& model, int r, int s, int batch, int block_size, bool reuse,
                Row* row, double* rss_mib) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    close(fds[0]);
    Row result = RunOne(model, r, s, batch, block_size, reuse);
    const ssize_t written = write(fds[1], &result, sizeof(result));
    _exit(written == static_cast<ssize_t>(sizeof(result)) ? 0 : 1);
  }
  close(fds[1]);
  size_t got = 0;
  while (got < sizeof(Row)) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(row) + got, sizeof(Row) - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  *rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  if (got != sizeof(Row)) {
    std::snprintf(row->error, sizeof(row->error), "child died (status %d)", status);
    row->ok = 0;
  }
  return true;
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models;
  for (const auto& m : iosfarm::graph::models::ZooModels()) models.emplace_back(m.name);
  std::vector<std::pair<int, int>> bounds = {{1, 3}, {2, 8}, {3, 8}};
  int batch = 1, block_size = 50;
  bool no_reuse = false, markdown = false;
  std::string models_text, bounds_text;
  CLI::App app{
      "ios_search_bench: the IOS search's own cost per zoo model and bound, "
      "latencies from the analytic oracle or replayed from a latency database "
      "(figures in docs/results.md)",
      "ios_search_bench"};
  app.add_option("--models", models_text,
                 "comma-separated zoo models or ONNX files (default: the zoo)");
  app.add_option("--bounds", bounds_text, "comma-separated RxS pruning bounds (default 1x3,2x8,3x8)");
  app.add_option("--batch", batch, "batch size")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--block-size", block_size, "operators per search block")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--window", g_window_ops, "boundary window ops (default: the search option's)")
      ->check(CLI::Range(0, 100000));
  app.add_flag("--no-reuse", no_reuse, "solve identical blocks again");
  app.add_flag("--walk-only", g_walk_only, "only walk the reachable remaining sets");
  app.add_flag("--blocks", g_show_blocks, "print each block");
  std::string search = "exhaustive";
  app.add_option("--search", search, "exhaustive (the reference DP) or bounded")
      ->check(CLI::IsMember({"exhaustive", "bounded"}))
      ->capture_default_str();
  app.add_option("--farm-batch", g_farm_batch,
                 "drive the search in batches of N requests, as a farm job (0: inline)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--lookahead", g_lookahead, "bounded search: further candidates per wait")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--bounded-steps", g_bounded_steps,
                 "bounded search: open-list steps per block before the DP takes it (0: never; "
                 "default: the search option's)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--bounded-max-states", g_max_block_states,
                 "bounded search: a block of more DP states goes to the DP without an attempt "
                 "(0: never; default: the search option's)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--bound-dp-max-states", g_bound_dp_max_states,
                 "bounded search: a block of at most this many DP states takes the DP over its "
                 "group bounds as cost to go (0: never; default: the search option's)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  CLI::Option* device_floor_flag = app.add_flag(
      "--device-floor,!--no-device-floor", g_device_floor,
      "bounded search: bound stages by the analytic model's device floor (its stage sync, "
      "launches, work and contention; on by default)");
  app.add_option("--threads", g_threads,
                 "threads that solve blocks side by side (SearchOptions::threads; cpu_s is "
                 "then the process's CPU over all of them)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--latency-db", g_latency_db,
                 "replay the stage latencies of this latency database (schedule_bench "
                 "--latency-db) instead of the analytic oracle");
  app.add_option("--device-key", g_device_key,
                 "with --latency-db: its device key to replay (default: its only one)");
  app.add_option("--cores", g_cores,
                 "with --latency-db: the cpu backend's cores, for its core bound (0: none)")
      ->check(CLI::Range(0, 1024));
  app.add_flag("--no-sub-stage-bound", g_no_sub_stage_bound,
               "bounded search: without the sub-stage bound (SearchOptions::sub_stage_bound)");
  app.add_flag("--markdown", markdown, "markdown table");
  app.set_version_flag("--version", StrCat("ios_search_bench ", IOSFARM_VERSION));
  if (std::optional<int> exit = iosfarm::ParseFlags(app, argc, argv, std::cerr)) return *exit;
  const bool reuse = !no_reuse;
  g_exhaustive = search == "exhaustive";
  if (g_latency_db.empty() && (!g_device_key.empty() || g_cores > 0)) {
    std::fprintf(stderr, "ios_search_bench: --device-key and --cores need --latency-db\n");
    return 2;
  }
  if (!g_latency_db.empty() &&
      ((g_device_floor && device_floor_flag->count() > 0) || g_walk_only)) {
    std::fprintf(stderr,
                 "ios_search_bench: --latency-db excludes --device-floor (the analytic "
                 "model's) and --walk-only\n");
    return 2;
  }
  if (!models_text.empty()) models = Split(models_text);
  for (const std::string& model : models) {
    if (auto ref = iosfarm::graph::ResolveModel(model); !ref.ok()) {
      std::fprintf(stderr, "ios_search_bench: --models: %s\n",
                   std::string(ref.status().message()).c_str());
      return 2;
    }
  }
  if (!bounds_text.empty()) {
    bounds.clear();
    for (const std::string& b : Split(bounds_text)) {
      int r = 0, s = 0;
      char extra = 0;
      if (std::sscanf(b.c_str(), "%dx%d%c", &r, &s, &extra) != 2 || r < 1 || s < 1) {
        std::fprintf(stderr, "ios_search_bench: --bounds: bad bound '%s' (want RxS, both >= 1)\n",
                     b.c_str());
        return 2;
      }
      bounds.emplace_back(r, s);
    }
  }
  if (markdown) {
    std::printf(
        "| model | r,s | search | blocks (reused) | DP states | transitions | candidate stages "
        "(merge) | unique signatures | measured (exhaustive blocks) | batches | search CPU s "
        "| search wall s | peak RSS MiB | sequential ms | greedy ms | IOS ms | IOS stages (merge) "
        "|\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- | --- | --- |\n");
  } else {
    std::printf("%-16s %-5s %-10s %-10s %12s %14s %20s %10s %14s %8s %9s %8s %8s %8s %8s %8s %s\n",
                "model", "r,s", "search", "blocks", "states", "transitions", "stages(merge)",
                "sigs", "measured(exh)", "batches", "cpu_s", "wall_s", "rss_MiB", "seq_ms",
                "greedy", "ios_ms", "ios_stages(merge)");
  }
  std::fflush(stdout);
  int failures = 0;
  for (const std::string& model : models) {
    for (auto [r, s] : bounds) {
      Row row;
      double rss = 0;
      if (!RunInChild(model, r, s, batch, block_size, reuse, &row, &rss)) {
        std::fprintf(stderr, "fork failed\n");
        return 1;
      }
      if (!row.ok) {
        ++failures;
        std::printf("%s r=%d s=%d: FAILED: %s (cpu %.2f s, rss %.0f MiB)\n", model.c_str(), r, s,
                    row.error, row.cpu_s, rss);
        std::fflush(stdout);
        continue;
      }
      const std::string blocks = StrCat(row.blocks, " (", row.reused, ")");
      const std::string stages = StrCat(row.candidates, " (", row.merges, ")");
      // Stages measured below their bound, if any, after the exhaustive blocks.
      const std::string measured =
          StrCat(row.measured, " (", row.exhaustive_blocks,
                 row.misses > 0 ? StrCat("; ", row.misses, " misses") : std::string(), ")");
      const std::string batches = g_farm_batch > 0 ? StrCat(row.batches) : std::string("-");
      if (markdown) {
        std::printf(
            "| %s | %d,%d | %s | %s | %lld | %lld | %s | %lld | %s | %s | %.3f | %.3f | %.0f | "
            "%.3f "
            "| %.3f | %.4f | %d (%d) |\n",
            model.c_str(), r, s, search.c_str(), blocks.c_str(), row.states, row.transitions,
            stages.c_str(), row.signatures, measured.c_str(), batches.c_str(), row.cpu_s,
            row.wall_s, rss, row.seq_ms, row.greedy_ms, row.ios_ms, row.stages, row.merged_stages);
      } else {
        std::printf(
            "%-16s %d,%-3d %-10s %-10s %12lld %14lld %20s %10lld %14s %8s %9.3f %8.3f %8.0f "
            "%8.3f %8.3f %8.4f %d (%d)\n",
            model.c_str(), r, s, search.c_str(), blocks.c_str(), row.states, row.transitions,
            stages.c_str(), row.signatures, measured.c_str(), batches.c_str(), row.cpu_s,
            row.wall_s, rss, row.seq_ms, row.greedy_ms, row.ios_ms, row.stages, row.merged_stages);
      }
      std::fflush(stdout);
    }
  }
  return failures == 0 ? 0 : 1;
}
