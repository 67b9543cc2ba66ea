// schedule_bench: sequential vs greedy vs IOS schedules on one execution
// backend (cpu: oneDNN, cuda: cuDNN/cuBLAS), searched and measured in one
// process.
//
//   schedule_bench [--backend cpu|cuda] [--cuda-device N]
//                  [--models a,b.onnx,c:RxS[:B],...] [--r R] [--s S] [--block-size B]
//                  [--batch N] [--threads T] [--rounds K] [--repeats N] [--warmup N]
//                  [--search-min-repeats N] [--search-max-repeats N]
//                  [--search-budget-s S] [--schedule-dir DIR] [--latency-cache FILE]
//                  [--verify] [--verify-rtol X] [--json FILE]
//
// A model is a zoo name (graph/models/zoo.h) or the path of an .onnx file
// (imported with the batch overridden by --batch; shown as "<stem>.onnx").
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
//     --latency-cache FILE keeps every stage latency measured, one line per
//     signature tagged with the backend, the device description and the
//     signature version, and answers later searches (other models with the
//     same stages, a retry with other bounds, a rerun after a kill) from it
//     instead of measuring again; lines of another device are ignored.
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
// model, so a killed run keeps what it finished; format in
// docs/benchmarks.md).
//
// Exit status: 0 when every model ran, 1 on the first error (message on
// stderr; e.g. "cuda backend: UNAVAILABLE: no CUDA device: ..." on a machine
// without a GPU), 2 on bad arguments.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "common/flags/flags.h"
#include "common/strings.h"
#include "graph/models/zoo.h"
#include "graph/onnx/onnx_importer.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/search_report.h"
#include "scheduler/ios/signature.h"
#include "worker/backends/backend_factory.h"
#include "worker/backends/backend_oracle.h"
#include "worker/backends/profiling.h"
#include "worker/backends/reference/compare.h"

namespace {

using iosfarm::StrCat;
namespace ios = iosfarm::scheduler::ios;
namespace worker = iosfarm::worker;

struct ModelSpec {
  std::string arg;   // as given: a zoo name or an .onnx path
  std::string name;  // zoo name, or "<stem>.onnx"
  bool onnx = false;
  int r = 0, s = 0, block_size = 0;  // 0: the global default
};

struct Settings {
  std::string backend = "cpu";
  int cuda_device = 0;
  int batch = 1;
  int threads = 0;
  int rounds = 5;
  int repeats = 0;  // 0: the backend's default (cpu 10, cuda 50)
  int warmup = -1;  // -1: the backend's default (cpu 2, cuda 5)
  int global_r = 0, global_s = 0, global_block_size = 0;  // 0: per-model default
  worker::ProfileOptions search_profile;
  double search_budget_s = 0;  // 0: none
  std::string schedule_dir;
  std::string latency_cache;
  std::string device;  // the backend's device description
  bool verify = false;
  double verify_rtol = 1e-3;
  std::string json_path;
};

// One measured configuration: a schedule, run eagerly or as one CUDA graph.
enum Config { kSequential, kGreedy, kIos, kSequentialGraph, kIosGraph, kNumConfigs };
constexpr const char* kConfigKeys[kNumConfigs] = {"sequential", "greedy", "ios",
                                                  "sequential_cuda_graph", "ios_cuda_graph"};
constexpr const char* kConfigTitles[kNumConfigs] = {"sequential", "greedy", "IOS",
                                                    "sequential CUDA graph", "IOS CUDA graph"};

struct Measured {
  std::vector<double> medians, p10s, p90s;
};

struct Row {
  std::string model, source, path;
  int r = 0, s = 0, block_size = 0;
  std::string search;  // "123 s, 4613 stages" or "... (earlier run)"
  double search_seconds = 0;
  long long stages_measured = 0;
  long long stages_cached = 0;  // answered by --latency-cache
  bool search_reused = false;
  size_t seq_stages = 0, greedy_stages = 0, ios_stages = 0;
  double pred_seq = 0, pred_greedy = 0, pred_ios = 0;
  Measured measured[kNumConfigs];
  int wins_vs_seq = 0, wins_vs_greedy = 0;
  std::string loadavg_before, loadavg_after;
  std::string verified = "-";
};

std::string LoadAvg() {
  std::ifstream file("/proc/loadavg");
  std::string a, b, c;
  file >> a >> b >> c;
  return StrCat(a, " ", b, " ", c);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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

bool IsZooModel(const std::string& name) {
  for (const auto& zoo : iosfarm::graph::models::ZooModels()) {
    if (zoo.name == name) return true;
  }
  return false;
}

[[noreturn]] void Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

std::string ReadFile(const std::string& path, bool* found) {
  std::ifstream file(path);
  *found = static_cast<bool>(file);
  std::stringstream text;
  if (*found) text << file.rdbuf();
  return text.str();
}

// The zoo model or the imported ONNX file of `spec`, at `batch`.
iosfarm::graph::Graph LoadModel(const ModelSpec& spec, int batch) {
  if (!spec.onnx) {
    auto graph = iosfarm::graph::models::BuildZooModel(spec.name, batch);
    if (!graph.ok()) Fail(spec.name, graph.status());
    return std::move(*graph);
  }
  iosfarm::graph::onnx_import::OnnxImportOptions options;
  options.batch = batch;
  auto graph = iosfarm::graph::onnx_import::ImportOnnxFile(spec.arg, options);
  if (!graph.ok()) Fail(spec.arg, graph.status());
  return std::move(*graph);
}

// The --latency-cache file: "<tag>\t<signature hex>\t<ms>" lines, where the
// tag names the backend, the device and the signature version. Lines with
// another tag are kept in the file and ignored here.
class LatencyCache {
 public:
  explicit LatencyCache(const Settings& settings)
      : path_(settings.latency_cache),
        tag_(StrCat(settings.backend, "|", settings.device, "|v", ios::kSignatureVersion)) {
    if (path_.empty()) return;
    std::ifstream file(path_);
    std::string line;
    while (std::getline(file, line)) {
      const std::vector<std::string> fields = Split(line, '\t');
      if (fields.size() != 3 || fields[0] != tag_) continue;
      char* end = nullptr;
      const unsigned long long signature = std::strtoull(fields[1].c_str(), &end, 16);
      const double ms = std::atof(fields[2].c_str());
      if (end != fields[1].c_str() && ms > 0) latencies_[signature] = ms;
    }
  }

  bool enabled() const { return !path_.empty(); }
  size_t size() const { return latencies_.size(); }

  const double* Find(ios::Signature signature) const {
    auto it = latencies_.find(signature);
    return it == latencies_.end() ? nullptr : &it->second;
  }

  // Appends one measurement (flushed at once, so a killed run keeps it).
  void Add(ios::Signature signature, double ms) {
    if (path_.empty()) return;
    latencies_[signature] = ms;
    if (!out_.is_open()) out_.open(path_, std::ios::app);
    char hex[32];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(signature));
    out_ << tag_ << '\t' << hex << '\t' << StrCat(ms) << '\n';
    out_.flush();
  }

 private:
  std::string path_, tag_;
  absl::flat_hash_map<ios::Signature, double> latencies_;
  std::ofstream out_;
};

// Searches (or loads) the IOS schedule of `graph`; fills the search columns.
ios::Schedule SearchOrLoad(const iosfarm::graph::Graph& graph, const ModelSpec& spec,
                           const Settings& settings, worker::Backend& backend, Row& row) {
  ios::SearchOptions options;
  options.max_group_ops = spec.r;
  options.max_groups = spec.s;
  options.max_block_ops = spec.block_size;
  if (auto status = ios::ValidateSearchOptions(options); !status.ok()) Fail(spec.name, status);
  std::string stem;
  if (!settings.schedule_dir.empty()) {
    // cpu schedules keep the names of cpu_schedule_bench's; other backends
    // name themselves so that a cpu schedule is never reused on a GPU.
    const std::string backend_part = settings.backend == "cpu" ? "" : "_" + settings.backend;
    stem = StrCat(settings.schedule_dir, "/", spec.name, backend_part, "_b", settings.batch, "_r",
                  spec.r, "_s", spec.s, "_bs", spec.block_size);
    bool found = false;
    const std::string text = ReadFile(stem + ".json", &found);
    if (found) {
      auto parsed = ios::ParseScheduleJson(text, graph);
      if (!parsed.ok()) Fail(stem + ".json", parsed.status());
      bool have_report = false;
      const std::string report_text = ReadFile(stem + ".search.json", &have_report);
      row.search = "reused";
      row.search_reused = true;
      if (have_report) {
        const nlohmann::json report = nlohmann::json::parse(report_text, nullptr, false);
        if (!report.is_discarded()) {
          row.pred_seq = report.value("/latency_ms/sequential"_json_pointer, 0.0);
          row.pred_greedy = report.value("/latency_ms/greedy"_json_pointer, 0.0);
          row.pred_ios = report.value("/latency_ms/ios"_json_pointer, 0.0);
          row.search_seconds = report.value("search_seconds", 0.0);
          row.stages_measured = report.value("/stats/unique_signatures"_json_pointer, 0LL);
          char buf[96];
          std::snprintf(buf, sizeof(buf), "%.0f s, %lld stages (earlier run)",
                        row.search_seconds, row.stages_measured);
          row.search = buf;
        }
      }
      std::printf("%s: loaded %s.json (%s)\n", spec.name.c_str(), stem.c_str(),
                  row.search.c_str());
      std::fflush(stdout);
      return std::move(parsed->schedule);
    }
  }
  // Count the distinct signatures asked for (search and both baselines): one
  // per stage the backend oracle builds and profiles, unless the latency
  // cache has it.
  LatencyCache cache(settings);
  if (cache.enabled()) {
    std::printf("%s: latency cache %s: %zu stages of this device\n", spec.name.c_str(),
                settings.latency_cache.c_str(), cache.size());
  }
  long long measured = 0, cached = 0;
  absl::flat_hash_set<ios::Signature> seen;
  const ios::StageLatencyFn inner =
      worker::MakeBackendOracle(graph, backend, settings.search_profile);
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const ios::StageLatencyFn counting = [&](const ios::Stage& stage) -> iosfarm::StatusOr<double> {
    auto signature = ios::StageSignature(graph, stage);
    if (!signature.ok()) return signature.status();
    if (const double* ms = cache.Find(*signature)) {
      if (seen.insert(*signature).second) ++cached;
      return *ms;
    }
    if (!seen.insert(*signature).second) return inner(stage);  // memoised
    ++measured;
    if (settings.search_budget_s > 0 && elapsed() > settings.search_budget_s) {
      return absl::DeadlineExceededError(StrCat("search budget of ", settings.search_budget_s,
                                                " s exceeded after ", measured - 1,
                                                " stages measured; lower r/s or raise "
                                                "--search-budget-s"));
    }
    if (measured % 500 == 0) {
      std::fprintf(stderr, "  %s: %lld stages measured, %.0f s\n", spec.name.c_str(), measured,
                   elapsed());
    }
    auto ms = inner(stage);
    if (ms.ok()) cache.Add(*signature, *ms);
    return ms;
  };
  std::printf("%s: searching r=%d s=%d block %d on the %s backend (load %s)\n", spec.name.c_str(),
              spec.r, spec.s, spec.block_size, settings.backend.c_str(), LoadAvg().c_str());
  std::fflush(stdout);
  auto report = ios::SearchWithBaselines(graph, options, counting);
  if (!report.ok()) Fail(spec.name + " search", report.status());
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.0f s, %lld stages", report->search_seconds, measured);
  row.search = buf;
  if (cached > 0) row.search += StrCat(" (+", cached, " cached)");
  row.search_seconds = report->search_seconds;
  row.stages_measured = measured;
  row.stages_cached = cached;
  row.pred_seq = report->sequential.latency_ms;
  row.pred_greedy = report->greedy.latency_ms;
  row.pred_ios = report->ios.schedule.latency_ms;
  std::printf(
      "%s: search %.1f s wall, %lld stages measured, %lld from the latency cache (IOS search: "
      "%lld unique signatures), %d blocks; "
      "predicted ms: sequential %.3f, greedy %.3f, IOS %.3f\n",
      spec.name.c_str(), report->search_seconds, measured, cached,
      static_cast<long long>(report->ios.stats.unique_signatures), report->ios.stats.blocks,
      row.pred_seq, row.pred_greedy, row.pred_ios);
  std::fflush(stdout);
  if (!stem.empty()) {
    const ios::ScheduleMetadata metadata =
        ios::MakeScheduleMetadata(graph, settings.backend, "ios", &options);
    std::ofstream file(stem + ".json");
    file << ios::ScheduleToJson(graph, report->ios.schedule, metadata).dump(2) << "\n";
    std::ofstream side(stem + ".search.json");
    side << ios::SearchReportJson(graph, *report, metadata).dump(2) << "\n";
    if (!file.good() || !side.good()) {
      std::fprintf(stderr, "warning: cannot write %s.json\n", stem.c_str());
    }
  }
  return std::move(report->ios.schedule);
}

Row RunModel(const ModelSpec& spec, const Settings& settings, worker::Backend& backend,
             bool cuda_graph_rows) {
  Row row;
  row.model = spec.name;
  row.source = spec.onnx ? "onnx" : "zoo";
  row.path = spec.onnx ? spec.arg : "";
  row.r = spec.r;
  row.s = spec.s;
  row.block_size = spec.block_size;
  const iosfarm::graph::Graph graph = LoadModel(spec, settings.batch);
  if (auto status = backend.CheckSupported(graph); !status.ok()) Fail(spec.name, status);

  ios::Schedule ios_schedule = SearchOrLoad(graph, spec, settings, backend, row);
  auto sequential = ios::SequentialSchedule(graph);
  if (!sequential.ok()) Fail(spec.name + " sequential", sequential.status());
  auto greedy = ios::GreedySchedule(graph, spec.s);
  if (!greedy.ok()) Fail(spec.name + " greedy", greedy.status());
  row.seq_stages = sequential->stages.size();
  row.greedy_stages = greedy->stages.size();
  row.ios_stages = ios_schedule.stages.size();

  if (settings.verify) {
    worker::RunOptions once;
    once.return_outputs = true;
    once.profile.warmup = 0;
    once.profile.min_repeats = 1;
    once.profile.max_repeats = 1;
    auto expected = backend.RunSchedule(graph, *sequential, once);
    if (!expected.ok()) Fail(spec.name + " verify", expected.status());
    for (const ios::Schedule* schedule : {&*greedy, &ios_schedule}) {
      auto got = backend.RunSchedule(graph, *schedule, once);
      if (!got.ok()) Fail(spec.name + " verify", got.status());
      if (auto status = worker::reference::CompareTensorLists(
              got->outputs, expected->outputs, settings.verify_rtol,
              StrCat(spec.name, " ", schedule == &ios_schedule ? "IOS" : "greedy",
                     " output vs sequential"));
          !status.ok()) {
        Fail(spec.name + " verify", status);
      }
    }
    row.verified = "yes";
    std::printf("%s: greedy and IOS outputs match the sequential schedule (rtol %g)\n",
                spec.name.c_str(), settings.verify_rtol);
  }

  worker::RunOptions run;
  run.profile.warmup = settings.warmup;
  run.profile.min_repeats = settings.repeats;
  run.profile.max_repeats = settings.repeats;
  run.profile.max_seconds = 1e9;  // exactly `repeats` timed runs
  const ios::Schedule* schedules[kNumConfigs] = {&*sequential, &*greedy, &ios_schedule,
                                                 &*sequential, &ios_schedule};
  std::vector<Config> configs = {kSequential, kGreedy, kIos};
  if (cuda_graph_rows) {
    configs.push_back(kSequentialGraph);
    configs.push_back(kIosGraph);
  }
  const int n = static_cast<int>(configs.size());
  row.loadavg_before = LoadAvg();
  for (int round = 0; round < settings.rounds; ++round) {
    double round_median[kNumConfigs] = {};
    for (int k = 0; k < n; ++k) {
      const Config which = configs[(k + round) % n];
      run.cuda_graph = which == kSequentialGraph || which == kIosGraph;
      auto result = backend.RunSchedule(graph, *schedules[which], run);
      if (!result.ok()) Fail(StrCat(spec.name, " ", kConfigTitles[which]), result.status());
      Measured& measured = row.measured[which];
      measured.medians.push_back(result->latency.median_ms);
      measured.p10s.push_back(result->latency.p10_ms);
      measured.p90s.push_back(result->latency.p90_ms);
      round_median[which] = result->latency.median_ms;
    }
    row.wins_vs_seq += round_median[kIos] < round_median[kSequential] ? 1 : 0;
    row.wins_vs_greedy += round_median[kIos] < round_median[kGreedy] ? 1 : 0;
    std::string line = StrCat("  ", spec.name, " round ", round + 1, ":");
    for (const Config c : configs) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), " %s %.3f", kConfigTitles[c], round_median[c]);
      line += buf;
    }
    std::printf("%s ms (load %s)\n", line.c_str(), LoadAvg().c_str());
    std::fflush(stdout);
  }
  row.loadavg_after = LoadAvg();
  return row;
}

void PrintHeader(bool cuda_graph_rows) {
  std::printf(
      "| model | r,s (block) | search | stages seq / greedy / IOS | sequential ms (p10-p90) "
      "| greedy ms (p10-p90) | IOS ms (p10-p90) |%s IOS/seq | IOS/greedy |%s IOS wins vs seq, "
      "greedy | predicted seq / greedy / IOS ms | load before / after |\n"
      "| --- | --- | --- | --- | --- | --- | --- |%s --- | --- |%s --- | --- | --- |\n",
      cuda_graph_rows ? " sequential CUDA graph ms (p10-p90) | IOS CUDA graph ms (p10-p90) |" : "",
      cuda_graph_rows ? " IOS graph/seq |" : "", cuda_graph_rows ? " --- | --- |" : "",
      cuda_graph_rows ? " --- |" : "");
}

std::string Cell(const Measured& m) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f (%.2f-%.2f)", Median(m.medians), Median(m.p10s),
                Median(m.p90s));
  return buf;
}

void PrintRow(const Row& row, int rounds, bool cuda_graph_rows) {
  const double seq = Median(row.measured[kSequential].medians),
               greedy = Median(row.measured[kGreedy].medians),
               ios_ms = Median(row.measured[kIos].medians);
  std::string graph_cells, graph_ratio;
  if (cuda_graph_rows) {
    graph_cells = StrCat(" ", Cell(row.measured[kSequentialGraph]), " | ",
                         Cell(row.measured[kIosGraph]), " |");
    char buf[32];
    std::snprintf(buf, sizeof(buf), " %.3f |", Median(row.measured[kIosGraph].medians) / seq);
    graph_ratio = buf;
  }
  std::printf(
      "| %s | %d,%d (%d) | %s | %zu / %zu / %zu | %s | %s | %s |%s %.3f | %.3f |%s %d/%d, %d/%d "
      "| %.2f / %.2f / %.2f | %s / %s |\n",
      row.model.c_str(), row.r, row.s, row.block_size, row.search.c_str(), row.seq_stages,
      row.greedy_stages, row.ios_stages, Cell(row.measured[kSequential]).c_str(),
      Cell(row.measured[kGreedy]).c_str(), Cell(row.measured[kIos]).c_str(), graph_cells.c_str(),
      ios_ms / seq, ios_ms / greedy, graph_ratio.c_str(), row.wins_vs_seq, rounds,
      row.wins_vs_greedy, rounds, row.pred_seq, row.pred_greedy, row.pred_ios,
      row.loadavg_before.c_str(), row.loadavg_after.c_str());
}

nlohmann::json RowJson(const Row& row, int batch, bool cuda_graph_rows) {
  nlohmann::json measured = nlohmann::json::object();
  for (int c = 0; c < kNumConfigs; ++c) {
    if (!cuda_graph_rows && (c == kSequentialGraph || c == kIosGraph)) continue;
    const Measured& m = row.measured[c];
    measured[kConfigKeys[c]] = {{"median", Median(m.medians)},
                                {"p10", Median(m.p10s)},
                                {"p90", Median(m.p90s)},
                                {"round_medians", m.medians}};
  }
  const double seq = Median(row.measured[kSequential].medians);
  nlohmann::json j = {
      {"model", row.model},
      {"source", row.source},
      {"path", row.path},
      {"batch", batch},
      {"r", row.r},
      {"s", row.s},
      {"block_size", row.block_size},
      {"search",
       {{"text", row.search},
        {"seconds", row.search_seconds},
        {"stages_measured", row.stages_measured},
        {"stages_cached", row.stages_cached},
        {"reused", row.search_reused}}},
      {"stages",
       {{"sequential", row.seq_stages}, {"greedy", row.greedy_stages}, {"ios", row.ios_stages}}},
      {"predicted_ms",
       {{"sequential", row.pred_seq}, {"greedy", row.pred_greedy}, {"ios", row.pred_ios}}},
      {"measured_ms", measured},
      {"ios_over_sequential", Median(row.measured[kIos].medians) / seq},
      {"ios_over_greedy",
       Median(row.measured[kIos].medians) / Median(row.measured[kGreedy].medians)},
      {"ios_wins", {{"vs_sequential", row.wins_vs_seq}, {"vs_greedy", row.wins_vs_greedy}}},
      {"verified", row.verified},
      {"load_before", row.loadavg_before},
      {"load_after", row.loadavg_after},
  };
  if (cuda_graph_rows) {
    j["ios_cuda_graph_over_sequential"] = Median(row.measured[kIosGraph].medians) / seq;
  }
  return j;
}

void WriteJson(const std::string& path, const nlohmann::json& header, const std::vector<Row>& rows,
               int batch, bool cuda_graph_rows) {
  nlohmann::json doc = header;
  doc["models"] = nlohmann::json::array();
  for (const Row& row : rows) doc["models"].push_back(RowJson(row, batch, cuda_graph_rows));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp);
    file << doc.dump(2) << "\n";
    if (!file.good()) {
      std::fprintf(stderr, "warning: cannot write %s\n", tmp.c_str());
      return;
    }
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) std::fprintf(stderr, "warning: cannot write %s: %s\n", path.c_str(),
                          error.message().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> model_args = {"squeezenet", "resnet50",        "inception_v3",
                                         "randwire",   "nasnet_a_mobile", "nasnet_a"};
  Settings settings;
  // Stage profiling during the search: a lighter protocol than the default
  // (first stop after 10 samples, at most 0.5 s a stage) so that thousands of
  // stages fit in minutes on 2 cores.
  settings.search_profile.warmup = 2;
  settings.search_profile.min_repeats = 5;
  settings.search_profile.max_repeats = 40;
  settings.search_profile.max_seconds = 0.5;
  std::string models_text;
  CLI::App app{"schedule_bench: sequential, greedy and IOS schedules run end to end on a "
               "backend, per model (docs/benchmarks.md)", "schedule_bench"};
  app.add_option("--backend", settings.backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--cuda-device", settings.cuda_device, "CUDA device index")
      ->check(CLI::Range(0, 1024));
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
  app.add_option("--schedule-dir", settings.schedule_dir, "keep (and reuse) schedules here");
  app.add_option("--latency-cache", settings.latency_cache, "stage latency cache file");
  app.add_flag("--verify", settings.verify, "compare every schedule's outputs with the reference");
  app.add_option("--verify-rtol", settings.verify_rtol, "relative tolerance of --verify")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--json", settings.json_path, "also write the results as JSON");
  if (std::optional<int> exit = iosfarm::ParseFlags(app, argc, argv, std::cerr)) return *exit;
  if (!models_text.empty()) model_args = Split(models_text, ',');
  const bool cuda = settings.backend == "cuda";
  if (settings.repeats == 0) settings.repeats = cuda ? 50 : 10;
  if (settings.warmup < 0) settings.warmup = cuda ? 5 : 2;
  if (model_args.empty()) {
    std::fprintf(stderr, "schedule_bench: --models: no model given\n");
    return 2;
  }
  if (auto status = worker::ValidateProfileOptions(settings.search_profile); !status.ok()) {
    Fail("search profile options", status);
  }
  if (!settings.schedule_dir.empty()) mkdir(settings.schedule_dir.c_str(), 0755);

  std::vector<ModelSpec> specs;
  for (const std::string& arg : model_args) {
    const std::vector<std::string> parts = Split(arg, ':');
    ModelSpec spec;
    spec.arg = parts[0];
    if (IsZooModel(spec.arg)) {
      spec.name = spec.arg;
    } else {
      std::error_code error;
      if (!std::filesystem::is_regular_file(spec.arg, error)) {
        std::fprintf(stderr,
                     "model '%s' is neither a zoo model (see `iosfarm models`) nor an existing "
                     "file\n",
                     spec.arg.c_str());
        return 2;
      }
      spec.onnx = true;
      spec.name = std::filesystem::path(spec.arg).stem().string() + ".onnx";
    }
    DefaultBounds(spec.onnx ? std::filesystem::path(spec.arg).stem().string() : spec.name, &spec.r,
                  &spec.s);
    if (settings.global_r > 0) spec.r = settings.global_r;
    if (settings.global_s > 0) spec.s = settings.global_s;
    spec.block_size = settings.global_block_size > 0 ? settings.global_block_size : 50;
    if (parts.size() >= 2 && std::sscanf(parts[1].c_str(), "%dx%d", &spec.r, &spec.s) != 2) {
      std::fprintf(stderr, "bad bound '%s' (want RxS)\n", parts[1].c_str());
      return 2;
    }
    if (parts.size() >= 3) {
      char* end = nullptr;
      const long block = std::strtol(parts[2].c_str(), &end, 10);
      if (*end != '\0' || block < 1 || block > 100000) {
        std::fprintf(stderr, "bad block size '%s' in '%s' (want 1..100000)\n", parts[2].c_str(),
                     arg.c_str());
        return 2;
      }
      spec.block_size = static_cast<int>(block);
    }
    specs.push_back(spec);
  }

  worker::BackendConfig config;
  config.cpu_threads = settings.threads;
  config.cuda_device = settings.cuda_device;
  auto backend = worker::CreateBackend(settings.backend, config);
  if (!backend.ok()) Fail(settings.backend + " backend", backend.status());
  const bool cuda_graph_rows = (*backend)->name() == "cuda";
  settings.device = (*backend)->device_description();
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M", std::localtime(&now));
  std::printf("%s backend: %s; batch %d; %d rounds x %d timed runs (%d warm-up) per schedule; %s\n",
              settings.backend.c_str(), (*backend)->device_description().c_str(), settings.batch,
              settings.rounds, settings.repeats, settings.warmup, date);
  std::fflush(stdout);
  const nlohmann::json header = {
      {"tool", "schedule_bench"},
      {"backend", settings.backend},
      {"device", (*backend)->device_description()},
      {"date", date},
      {"batch", settings.batch},
      {"rounds", settings.rounds},
      {"repeats", settings.repeats},
      {"warmup", settings.warmup},
  };

  std::vector<Row> rows;
  for (const ModelSpec& spec : specs) {
    rows.push_back(RunModel(spec, settings, **backend, cuda_graph_rows));
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
  return 0;
}
