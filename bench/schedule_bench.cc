// cpu_schedule_bench: sequential vs greedy vs IOS schedules on the cpu
// (oneDNN) backend, searched and measured in one process.
//
//   cpu_schedule_bench [--models a,b:RxS[:B],...] [--r R] [--s S] [--block-size B]
//                      [--batch N] [--threads T] [--rounds K] [--repeats N]
//                      [--search-min-repeats N] [--search-max-repeats N]
//                      [--schedule-dir DIR] [--verify]
//
// For each model:
//  1. Search. The IOS search (SearchWithBaselines) runs with a BackendOracle
//     over the cpu backend: every unique stage signature is built and
//     profiled once on this CPU. Prints search wall time, stages measured
//     and the oracle's predicted (sum of stage medians) latencies. With
//     --schedule-dir the IOS schedule is saved as DIR/<model>_b<batch>_r<R>_
//     s<S>_bs<B>.json (schedule format, docs/schedule-format.md) with a
//     sidecar .search.json (search report); a later run with the same
//     settings loads it (the model digest is checked) and skips the search.
//  2. Measure. The sequential, greedy (at most S groups per stage, as
//     SearchWithBaselines costs it) and IOS schedules run end to end with
//     RunSchedule, round-robin for K rounds (the order rotates each round),
//     each call `--repeats` timed runs after 2 warm-up runs, so that machine
//     noise hits all three alike. Per schedule: median over rounds of the
//     round medians, median over rounds of the round p10 / p90, and the
//     ratios IOS/sequential and IOS/greedy of those medians; "IOS wins" counts
//     the rounds where IOS's round median beat the other schedule's.
//
// Per-model bounds: "randwire:1x3" or "nasnet_a:1x3:35" overrides --r/--s
// (and --block-size) for that model. Defaults: r=3, s=8 for squeezenet,
// resnet50 and inception_v3; r=1, s=3 for randwire and the NASNets (the
// measured search at r=3, s=8 would profile 1-8 M unique stages there).
// Prints one markdown table at the end (and each row as it is done).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_set.h"

#include "common/strings.h"
#include "graph/models/zoo.h"
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
  std::string name;
  int r = 0, s = 0, block_size = 0;  // 0: the global default
};

struct Settings {
  int batch = 1;
  int threads = 0;
  int rounds = 5;
  int repeats = 10;
  int global_r = 0, global_s = 0, global_block_size = 0;  // 0: per-model default
  worker::ProfileOptions search_profile;
  std::string schedule_dir;
  bool verify = false;
};

struct Measured {
  std::vector<double> medians, p10s, p90s;
};

struct Row {
  std::string model;
  int r = 0, s = 0, block_size = 0;
  std::string search;  // "123.4 s, 4613 stages" or "reused"
  size_t seq_stages = 0, greedy_stages = 0, ios_stages = 0;
  double pred_seq = 0, pred_greedy = 0, pred_ios = 0;
  Measured seq, greedy, ios;
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
    stem = StrCat(settings.schedule_dir, "/", spec.name, "_b", settings.batch, "_r", spec.r, "_s",
                  spec.s, "_bs", spec.block_size);
    bool found = false;
    const std::string text = ReadFile(stem + ".json", &found);
    if (found) {
      auto parsed = ios::ParseScheduleJson(text, graph);
      if (!parsed.ok()) Fail(stem + ".json", parsed.status());
      bool have_report = false;
      const std::string report_text = ReadFile(stem + ".search.json", &have_report);
      row.search = "reused";
      if (have_report) {
        const nlohmann::json report = nlohmann::json::parse(report_text, nullptr, false);
        if (!report.is_discarded()) {
          row.pred_seq = report.value("/latency_ms/sequential"_json_pointer, 0.0);
          row.pred_greedy = report.value("/latency_ms/greedy"_json_pointer, 0.0);
          row.pred_ios = report.value("/latency_ms/ios"_json_pointer, 0.0);
          char buf[96];
          std::snprintf(buf, sizeof(buf), "%.0f s, %lld stages (earlier run)",
                        report.value("search_seconds", 0.0),
                        report.value("/stats/unique_signatures"_json_pointer, 0LL));
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
  // per stage the backend oracle builds and profiles.
  long long measured = 0;
  absl::flat_hash_set<ios::Signature> seen;
  const ios::StageLatencyFn inner =
      worker::MakeBackendOracle(graph, backend, settings.search_profile);
  const auto start = std::chrono::steady_clock::now();
  const ios::StageLatencyFn counting = [&](const ios::Stage& stage) -> iosfarm::StatusOr<double> {
    auto signature = ios::StageSignature(graph, stage);
    if (!signature.ok()) return signature.status();
    if (!seen.insert(*signature).second) return inner(stage);  // memoised
    ++measured;
    if (measured % 500 == 0) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "  %s: %lld stages measured, %.0f s\n", spec.name.c_str(), measured,
                   elapsed);
    }
    return inner(stage);
  };
  std::printf("%s: searching r=%d s=%d block %d on the cpu backend (load %s)\n",
              spec.name.c_str(), spec.r, spec.s, spec.block_size, LoadAvg().c_str());
  std::fflush(stdout);
  auto report = ios::SearchWithBaselines(graph, options, counting);
  if (!report.ok()) Fail(spec.name + " search", report.status());
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.0f s, %lld stages", report->search_seconds, measured);
  row.search = buf;
  row.pred_seq = report->sequential.latency_ms;
  row.pred_greedy = report->greedy.latency_ms;
  row.pred_ios = report->ios.schedule.latency_ms;
  std::printf(
      "%s: search %.1f s wall, %lld stages measured (IOS search: %lld unique signatures), "
      "%d blocks; "
      "predicted ms: sequential %.3f, greedy %.3f, IOS %.3f\n",
      spec.name.c_str(), report->search_seconds, measured,
      static_cast<long long>(report->ios.stats.unique_signatures), report->ios.stats.blocks,
      row.pred_seq, row.pred_greedy, row.pred_ios);
  std::fflush(stdout);
  if (!stem.empty()) {
    const ios::ScheduleMetadata metadata = ios::MakeScheduleMetadata(graph, "cpu", "ios", &options);
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

Row RunModel(const ModelSpec& spec, const Settings& settings, worker::Backend& backend) {
  Row row;
  row.model = spec.name;
  row.r = spec.r;
  row.s = spec.s;
  row.block_size = spec.block_size;
  auto graph = iosfarm::graph::models::BuildZooModel(spec.name, settings.batch);
  if (!graph.ok()) Fail(spec.name, graph.status());
  if (auto status = backend.CheckSupported(*graph); !status.ok()) Fail(spec.name, status);

  ios::Schedule ios_schedule = SearchOrLoad(*graph, spec, settings, backend, row);
  auto sequential = ios::SequentialSchedule(*graph);
  if (!sequential.ok()) Fail(spec.name + " sequential", sequential.status());
  auto greedy = ios::GreedySchedule(*graph, spec.s);
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
    auto expected = backend.RunSchedule(*graph, *sequential, once);
    if (!expected.ok()) Fail(spec.name + " verify", expected.status());
    for (const ios::Schedule* schedule : {&*greedy, &ios_schedule}) {
      auto got = backend.RunSchedule(*graph, *schedule, once);
      if (!got.ok()) Fail(spec.name + " verify", got.status());
      if (auto status = worker::reference::CompareTensorLists(
              got->outputs, expected->outputs, 1e-3,
              StrCat(spec.name, " ", schedule == &ios_schedule ? "IOS" : "greedy",
                     " output vs sequential"));
          !status.ok()) {
        Fail(spec.name + " verify", status);
      }
    }
    row.verified = "yes";
    std::printf("%s: greedy and IOS outputs match the sequential schedule (rtol 1e-3)\n",
                spec.name.c_str());
  }

  worker::RunOptions run;
  run.profile.warmup = 2;
  run.profile.min_repeats = settings.repeats;
  run.profile.max_repeats = settings.repeats;
  run.profile.max_seconds = 1e9;  // exactly `repeats` timed runs
  const ios::Schedule* schedules[3] = {&*sequential, &*greedy, &ios_schedule};
  Measured* measured[3] = {&row.seq, &row.greedy, &row.ios};
  const char* names[3] = {"sequential", "greedy", "ios"};
  row.loadavg_before = LoadAvg();
  for (int round = 0; round < settings.rounds; ++round) {
    double round_median[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      const int which = (k + round) % 3;
      auto result = backend.RunSchedule(*graph, *schedules[which], run);
      if (!result.ok()) Fail(StrCat(spec.name, " ", names[which]), result.status());
      measured[which]->medians.push_back(result->latency.median_ms);
      measured[which]->p10s.push_back(result->latency.p10_ms);
      measured[which]->p90s.push_back(result->latency.p90_ms);
      round_median[which] = result->latency.median_ms;
    }
    row.wins_vs_seq += round_median[2] < round_median[0] ? 1 : 0;
    row.wins_vs_greedy += round_median[2] < round_median[1] ? 1 : 0;
    std::printf("  %s round %d: sequential %.3f  greedy %.3f  IOS %.3f ms (load %s)\n",
                spec.name.c_str(), round + 1, round_median[0], round_median[1], round_median[2],
                LoadAvg().c_str());
    std::fflush(stdout);
  }
  row.loadavg_after = LoadAvg();
  return row;
}

void PrintHeader() {
  std::printf(
      "| model | r,s (block) | search | stages seq / greedy / IOS | sequential ms (p10-p90) "
      "| greedy ms (p10-p90) | IOS ms (p10-p90) | IOS/seq | IOS/greedy | IOS wins vs seq, greedy "
      "| predicted seq / greedy / IOS ms | load before / after |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
}

void PrintRow(const Row& row, int rounds) {
  auto cell = [](const Measured& m) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.2f (%.2f-%.2f)", Median(m.medians), Median(m.p10s),
                  Median(m.p90s));
    return std::string(buf);
  };
  const double seq = Median(row.seq.medians), greedy = Median(row.greedy.medians),
               ios_ms = Median(row.ios.medians);
  std::printf(
      "| %s | %d,%d (%d) | %s | %zu / %zu / %zu | %s | %s | %s | %.3f | %.3f | %d/%d, %d/%d "
      "| %.2f / %.2f / %.2f | %s / %s |\n",
      row.model.c_str(), row.r, row.s, row.block_size, row.search.c_str(), row.seq_stages,
      row.greedy_stages, row.ios_stages, cell(row.seq).c_str(), cell(row.greedy).c_str(),
      cell(row.ios).c_str(), ios_ms / seq, ios_ms / greedy, row.wins_vs_seq, rounds,
      row.wins_vs_greedy, rounds, row.pred_seq, row.pred_greedy, row.pred_ios,
      row.loadavg_before.c_str(), row.loadavg_after.c_str());
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: cpu_schedule_bench [--models a,b:RxS[:B],...] [--r R] [--s S] "
               "[--block-size B] [--batch N] [--threads T] [--rounds K] [--repeats N] "
               "[--search-min-repeats N] [--search-max-repeats N] [--schedule-dir DIR] "
               "[--verify]\n");
  std::exit(2);
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
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    auto next_int = [&]() { return std::atoi(next().c_str()); };
    if (arg == "--models") {
      model_args = Split(next(), ',');
    } else if (arg == "--r") {
      settings.global_r = next_int();
    } else if (arg == "--s") {
      settings.global_s = next_int();
    } else if (arg == "--block-size") {
      settings.global_block_size = next_int();
    } else if (arg == "--batch") {
      settings.batch = next_int();
    } else if (arg == "--threads") {
      settings.threads = next_int();
    } else if (arg == "--rounds") {
      settings.rounds = next_int();
    } else if (arg == "--repeats") {
      settings.repeats = next_int();
    } else if (arg == "--search-min-repeats") {
      settings.search_profile.min_repeats = next_int();
    } else if (arg == "--search-max-repeats") {
      settings.search_profile.max_repeats = next_int();
    } else if (arg == "--schedule-dir") {
      settings.schedule_dir = next();
    } else if (arg == "--verify") {
      settings.verify = true;
    } else {
      Usage();
    }
  }
  if (settings.rounds < 1 || settings.repeats < 1 || settings.batch < 1) Usage();
  if (auto status = worker::ValidateProfileOptions(settings.search_profile); !status.ok()) {
    Fail("search profile options", status);
  }
  if (!settings.schedule_dir.empty()) mkdir(settings.schedule_dir.c_str(), 0755);

  std::vector<ModelSpec> specs;
  for (const std::string& arg : model_args) {
    const std::vector<std::string> parts = Split(arg, ':');
    ModelSpec spec;
    spec.name = parts[0];
    DefaultBounds(spec.name, &spec.r, &spec.s);
    if (settings.global_r > 0) spec.r = settings.global_r;
    if (settings.global_s > 0) spec.s = settings.global_s;
    spec.block_size = settings.global_block_size > 0 ? settings.global_block_size : 50;
    if (parts.size() >= 2 && std::sscanf(parts[1].c_str(), "%dx%d", &spec.r, &spec.s) != 2) {
      std::fprintf(stderr, "bad bound '%s' (want RxS)\n", parts[1].c_str());
      return 2;
    }
    if (parts.size() >= 3) spec.block_size = std::atoi(parts[2].c_str());
    specs.push_back(spec);
  }

  worker::BackendConfig config;
  config.cpu_threads = settings.threads;
  auto backend = worker::CreateBackend("cpu", config);
  if (!backend.ok()) Fail("cpu backend", backend.status());
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M", std::localtime(&now));
  std::printf("cpu backend: %s; batch %d; %d rounds x %d timed runs per schedule; %s\n",
              (*backend)->device_description().c_str(), settings.batch, settings.rounds,
              settings.repeats, date);
  std::fflush(stdout);

  std::vector<Row> rows;
  for (const ModelSpec& spec : specs) {
    rows.push_back(RunModel(spec, settings, **backend));
    PrintHeader();
    PrintRow(rows.back(), settings.rounds);
    std::fflush(stdout);
  }
  std::printf("\n");
  PrintHeader();
  for (const Row& row : rows) PrintRow(row, settings.rounds);
  return 0;
}
