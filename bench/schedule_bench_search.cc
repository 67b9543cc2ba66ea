#include "bench/schedule_bench_search.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_set.h"
#include "bench/bench_status.h"
#include "common/strings.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/search_report.h"
#include "scheduler/ios/stages/signature.h"
#include "worker/backends/backend_oracle.h"

namespace iosfarm::bench {

namespace {

namespace ios = scheduler::ios;

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// DIR/<model>[_<backend>[_graphstages]]_b<batch>_r<R>_s<S>_bs<B>. cpu
// schedules keep the names of cpu_schedule_bench's; other backends name
// themselves so that a cpu schedule is never reused on a GPU, nor one searched
// with eager stage timings for graph-timed ones.
std::string ScheduleStem(const ModelSpec& spec, const Settings& settings) {
  std::string backend_part = settings.backend == "cpu" ? "" : "_" + settings.backend;
  if (settings.cuda_graph_stages) backend_part += "_graphstages";
  if (settings.cuda_flush_l2) backend_part += "_flushl2";
  if (settings.exhaustive) backend_part += "_exhaustive";
  if (settings.no_core_bound) backend_part += "_nocorebound";
  if (settings.no_sub_stage_bound) backend_part += "_nosubstage";
  return StrCat(settings.schedule_dir, "/", spec.name, backend_part, "_b", settings.batch, "_r",
                spec.r, "_s", spec.s, "_bs", spec.block_size);
}

// The schedule saved at `stem`.json by an earlier run, with its search
// report's figures in `row`; nullopt when there is none.
StatusOr<std::optional<ios::Schedule>> LoadSaved(const graph::Graph& graph, const ModelSpec& spec,
                                                 const std::string& stem, Row& row) {
  const std::optional<std::string> text = ReadFile(stem + ".json");
  if (!text) return std::nullopt;
  StatusOr<ios::ParsedSchedule> parsed = ios::ParseScheduleJson(*text, graph);
  if (!parsed.ok()) return Prefixed(stem + ".json", parsed.status());
  row.search = "reused";
  row.search_reused = true;
  if (const std::optional<std::string> report_text = ReadFile(stem + ".search.json")) {
    const nlohmann::json report = nlohmann::json::parse(*report_text, nullptr, false);
    if (!report.is_discarded()) {
      row.pred_seq = report.value("/latency_ms/sequential"_json_pointer, 0.0);
      row.pred_greedy = report.value("/latency_ms/greedy"_json_pointer, 0.0);
      row.pred_ios = report.value("/latency_ms/ios"_json_pointer, 0.0);
      row.search_seconds = report.value("search_seconds", 0.0);
      row.stages_measured = report.value("/stats/unique_signatures"_json_pointer, 0LL);
      row.bound_misses = report.value("/stats/lower_bound_misses"_json_pointer, 0LL);
      row.largest_bound_miss_ms = report.value("/stats/largest_bound_miss_ms"_json_pointer, 0.0);
      char buf[96];
      std::snprintf(buf, sizeof(buf), "%.0f s, %lld stages (earlier run)", row.search_seconds,
                    row.stages_measured);
      row.search = buf;
    }
  }
  std::printf("%s: loaded %s.json (%s)\n", spec.name.c_str(), stem.c_str(), row.search.c_str());
  std::fflush(stdout);
  return std::move(parsed->schedule);
}

// Counts the distinct signatures asked for (search and both baselines): one
// per stage the backend oracle builds and profiles, unless the latency
// database has it.
class CountingOracle {
 public:
  CountingOracle(const graph::Graph& graph, const ModelSpec& spec, const Settings& settings,
                 worker::Backend& backend, BenchLatencyCache* latencies)
      : spec_(spec),
        budget_s_(settings.search_budget_s),
        latencies_(latencies),
        inner_(worker::MakeBackendOracle(graph, backend, settings.search_profile)),
        start_(std::chrono::steady_clock::now()) {}

  StatusOr<double> operator()(ios::Signature signature, const ios::Stage& stage) {
    if (latencies_ != nullptr) {
      ASSIGN_OR_RETURN(const std::optional<double> stored, latencies_->Find(signature));
      if (stored) {
        if (seen_.insert(signature).second) ++cached_;
        return *stored;
      }
    }
    if (!seen_.insert(signature).second) return inner_(signature, stage);  // memoised
    ++measured_;
    if (budget_s_ > 0 && Elapsed() > budget_s_) {
      return absl::DeadlineExceededError(StrCat("search budget of ", budget_s_,
                                                " s exceeded after ", measured_ - 1,
                                                " stages measured; lower r/s or raise "
                                                "--search-budget-s"));
    }
    if (measured_ % 500 == 0) {
      std::fprintf(stderr, "  %s: %lld stages measured, %.0f s\n", spec_.name.c_str(), measured_,
                   Elapsed());
    }
    ASSIGN_OR_RETURN(const double ms, inner_(signature, stage));
    if (latencies_ != nullptr) RETURN_IF_ERROR(latencies_->Add(signature, ms));
    return ms;
  }

  long long measured() const { return measured_; }
  long long cached() const { return cached_; }

 private:
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  const ModelSpec& spec_;
  const double budget_s_;
  BenchLatencyCache* const latencies_;
  const ios::SignedLatencyFn inner_;
  const std::chrono::steady_clock::time_point start_;
  long long measured_ = 0, cached_ = 0;
  absl::flat_hash_set<ios::Signature> seen_;
};

void SaveSchedule(const graph::Graph& graph, const ios::SearchOptions& options,
                  const Settings& settings, const ios::SearchReport& report,
                  const std::string& stem) {
  const ios::ScheduleMetadata metadata =
      ios::MakeScheduleMetadata(graph, settings.backend, "ios", &options);
  std::ofstream file(stem + ".json");
  file << ios::ScheduleToJson(graph, report.ios.schedule, metadata).dump(2) << "\n";
  std::ofstream side(stem + ".search.json");
  side << ios::SearchReportJson(graph, report, metadata).dump(2) << "\n";
  if (!file.good() || !side.good()) {
    std::fprintf(stderr, "warning: cannot write %s.json\n", stem.c_str());
  }
}

}  // namespace

StatusOr<ios::Schedule> SearchOrLoad(const graph::Graph& graph, const ModelSpec& spec,
                                     const Settings& settings, worker::Backend& backend,
                                     BenchLatencyCache* latencies, Row& row) {
  ios::SearchOptions options;
  options.max_group_ops = spec.r;
  options.max_groups = spec.s;
  options.max_block_ops = spec.block_size;
  options.bounded.cores = settings.no_core_bound ? 0 : backend.cores();  // the cpu's core bound
  options.bounded.device_floor = backend.device_floor();  // the sim backend's
  options.exhaustive = settings.exhaustive;
  options.bounded.sub_stage_bound = !settings.no_sub_stage_bound;
  RETURN_IF_ERROR(Prefixed(spec.name, ios::ValidateSearchOptions(options)));
  row.search_exhaustive = settings.exhaustive;
  const std::string stem = settings.schedule_dir.empty() ? "" : ScheduleStem(spec, settings);
  if (!stem.empty()) {
    ASSIGN_OR_RETURN(std::optional<ios::Schedule> saved, LoadSaved(graph, spec, stem, row));
    if (saved) return std::move(*saved);
  }
  if (latencies != nullptr) {
    ASSIGN_OR_RETURN(const int64_t stored, latencies->Count());
    std::printf("%s: latency database %s: %lld stages of this device\n", spec.name.c_str(),
                latencies->path().c_str(), static_cast<long long>(stored));
  }
  CountingOracle oracle(graph, spec, settings, backend, latencies);
  const ios::SignedLatencyFn counting = [&oracle](ios::Signature signature,
                                                  const ios::Stage& stage) {
    return oracle(signature, stage);
  };
  std::printf("%s: searching (%s) r=%d s=%d block %d on the %s backend (load %s)\n",
              spec.name.c_str(), settings.exhaustive ? "exhaustive" : "bounded", spec.r, spec.s,
              spec.block_size, settings.backend.c_str(), LoadAvg().c_str());
  std::fflush(stdout);
  StatusOr<ios::SearchReport> report = ios::SearchWithBaselines(graph, options, counting);
  if (!report.ok()) return Prefixed(spec.name + " search", report.status());
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.0f s, %lld stages", report->search_seconds,
                oracle.measured());
  row.search = buf;
  if (oracle.cached() > 0) row.search += StrCat(" (+", oracle.cached(), " cached)");
  row.search_seconds = report->search_seconds;
  row.stages_measured = oracle.measured();
  row.stages_cached = oracle.cached();
  row.pred_seq = report->sequential.latency_ms;
  row.pred_greedy = report->greedy.latency_ms;
  row.pred_ios = report->ios.schedule.latency_ms;
  row.bound_misses = report->ios.stats.lower_bound_misses;
  row.largest_bound_miss_ms = report->ios.stats.largest_bound_miss_ms;
  std::printf(
      "%s: search %.1f s wall, %lld stages measured, %lld from the latency database (IOS "
      "search: %lld unique signatures, %lld below their lower bound, by at most %.4f ms), %d "
      "blocks; predicted ms: sequential %.3f, greedy %.3f, IOS %.3f\n",
      spec.name.c_str(), report->search_seconds, oracle.measured(), oracle.cached(),
      static_cast<long long>(report->ios.stats.unique_signatures), row.bound_misses,
      row.largest_bound_miss_ms, report->ios.stats.blocks, row.pred_seq, row.pred_greedy,
      row.pred_ios);
  std::fflush(stdout);
  if (!stem.empty()) SaveSchedule(graph, options, settings, *report, stem);
  return std::move(report->ios.schedule);
}

}  // namespace iosfarm::bench
