#include "client/job_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/strings.h"
#include "common/text.h"

namespace iosfarm::client {
namespace {

std::string Fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

std::string Ms(double ms) { return Fixed(ms, 4); }

// a / b as "1.234x"; "-" when either is unknown.
std::string Speedup(double a, double b) {
  if (a <= 0 || b <= 0) return "-";
  return Fixed(a / b, 3) + "x";
}

const v1::ScheduleLatency* FindMeasured(const v1::JobResult& result, std::string_view name) {
  for (const v1::ScheduleLatency& latency : result.measured()) {
    if (latency.name() == name) return &latency;
  }
  return nullptr;
}

// The schedule the result holds (results of older servers: the IOS one).
std::string ChosenName(const v1::JobResult& result) {
  return result.chosen().empty() ? "ios" : result.chosen();
}

double MedianOf(const v1::JobResult& result, std::string_view name) {
  const v1::ScheduleLatency* latency = FindMeasured(result, name);
  return latency == nullptr ? 0.0 : latency->median_ms();
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string BlocksDone(const v1::JobProgress& p) {
  if (p.blocks_total() <= 0) return "-";
  return StrCat(p.blocks_done(), "/", p.blocks_total());
}

nlohmann::json OptionsJson(const v1::SearchOptions& o) {
  return {{"r", o.r()},
          {"s", o.s()},
          {"block_size", o.block_size()},
          {"batch_size", o.batch_size()},
          {"max_parallel_batches", o.max_parallel_batches()}};
}

nlohmann::json ProgressJson(const v1::JobProgress& p) {
  return {{"phase", p.phase()},
          {"blocks_total", p.blocks_total()},
          {"blocks_done", p.blocks_done()},
          {"stages_profiled", p.stages_profiled()},
          {"cache_hits", p.cache_hits()},
          {"candidates", p.candidates()},
          {"unique_signatures", p.unique_signatures()},
          {"stages_measured", p.stages_measured()},
          {"estimated_stages", p.has_estimated_stages() ? nlohmann::json(p.estimated_stages())
                                                        : nlohmann::json(nullptr)},
          {"elapsed_s", p.elapsed_s()},
          {"eta_s", p.eta_s() < 0 ? nlohmann::json(nullptr) : nlohmann::json(p.eta_s())},
          {"batches_out", p.batches_out()},
          {"max_parallel_batches", p.max_parallel_batches()},
          {"workers", std::vector<std::string>(p.workers().begin(), p.workers().end())}};
}

nlohmann::json LatencyJson(const v1::ScheduleLatency& l) {
  return {{"name", l.name()}, {"median_ms", l.median_ms()}, {"p10_ms", l.p10_ms()},
          {"p90_ms", l.p90_ms()}, {"cv", l.cv()},           {"repeats", l.repeats()}};
}

}  // namespace

std::vector<std::string> NoisyMeasurements(const v1::JobResult& result) {
  std::vector<std::string> noisy;
  for (const v1::ScheduleLatency& l : result.measured()) {
    if (l.cv() > kNoisyCv) noisy.push_back(l.name());
  }
  return noisy;
}

std::string NoisyRunWarning(const std::string& name, double cv) {
  if (!(cv > kNoisyCv)) return "";
  return StrCat("warning: noisy measurement (cv > ", Fixed(kNoisyCv, 1), "): ", name, " cv ",
                Fixed(cv, 3), "; the median of this schedule is uncertain, measure again on a "
                "quieter machine\n");
}

bool IsFinal(v1::JobState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

std::string JobStateName(v1::JobState state) {
  switch (state) {
    case v1::QUEUED:
      return "queued";
    case v1::RUNNING:
      return "running";
    case v1::SUCCEEDED:
      return "succeeded";
    case v1::FAILED:
      return "failed";
    case v1::CANCELLED:
      return "cancelled";
    default:
      return "unspecified";
  }
}

std::string FormatSeconds(double seconds) {
  if (!(seconds >= 0)) return "-";
  if (seconds < 1) return StrCat(static_cast<int64_t>(std::lround(seconds * 1000)), "ms");
  if (seconds < 60) return Fixed(seconds, 1) + "s";
  const int64_t total = std::llround(seconds);
  char buffer[48];
  if (total < 3600) {
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm", static_cast<long long>(total / 3600),
                  static_cast<long long>(total % 3600 / 60));
  }
  return buffer;
}

std::string FormatUnixMs(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%SZ", &tm);
  return buffer;
}

nlohmann::json JobJson(const v1::Job& job) {
  return {{"id", job.id()},
          {"model_name", job.model_name()},
          {"model_digest", job.model_digest()},
          {"device_key", job.device_key()},
          {"batch", job.batch()},
          {"options", OptionsJson(job.options())},
          {"priority", job.priority()},
          {"owner", job.owner()},
          {"state", JobStateName(job.state())},
          {"error", job.error()},
          {"submitted_unix_ms", job.submitted_unix_ms()},
          {"started_unix_ms", job.started_unix_ms()},
          {"finished_unix_ms", job.finished_unix_ms()},
          {"progress", ProgressJson(job.progress())},
          {"retune_batch", job.retune_batch()}};
}

nlohmann::json JobResultJson(const v1::JobResult& result) {
  nlohmann::json measured = nlohmann::json::array();
  for (const v1::ScheduleLatency& l : result.measured()) measured.push_back(LatencyJson(l));
  const double ios = MedianOf(result, "ios");
  const double sequential = MedianOf(result, "sequential");
  const double greedy = MedianOf(result, "greedy");
  auto ratio = [](double a, double b) {
    return a > 0 && b > 0 ? nlohmann::json(a / b) : nlohmann::json(nullptr);
  };
  nlohmann::json schedule = nlohmann::json::parse(result.schedule_json(), nullptr,
                                                  /*allow_exceptions=*/false);
  if (schedule.is_discarded()) schedule = result.schedule_json();
  return {{"job_id", result.job_id()},
          {"device_key", result.device_key()},
          {"backend", result.backend()},
          {"worker", result.worker()},
          {"chosen", ChosenName(result)},
          {"stages", result.stages()},
          {"measured", measured},
          {"speedup_vs_sequential", ratio(sequential, ios)},
          {"speedup_vs_greedy", ratio(greedy, ios)},
          {"predicted_ms", result.predicted_ms()},
          {"search_s", result.search_s()},
          {"stages_profiled", result.stages_profiled()},
          {"cache_hits", result.cache_hits()},
          {"candidates", result.candidates()},
          {"unique_signatures", result.unique_signatures()},
          {"stages_measured", result.stages_measured()},
          {"lower_bound_misses", result.lower_bound_misses()},
          {"largest_bound_miss_ms", result.largest_bound_miss_ms()},
          {"search_cores", result.search_cores()},
          {"noisy", NoisyMeasurements(result)},
          {"choice_uncertain", !NoisyMeasurements(result).empty()},
          {"schedule", schedule}};
}

nlohmann::json WorkerJson(const v1::WorkerInfo& w) {
  return {{"id", w.id()},
          {"device_key", w.device_key()},
          {"backend", w.backend()},
          {"description", w.description()},
          {"state", w.state()},
          {"job_id", w.job_id()},
          {"connected_unix_ms", w.connected_unix_ms()},
          {"last_heartbeat_unix_ms", w.last_heartbeat_unix_ms()},
          {"phases_done", w.phases_done()},
          {"build_job_id", w.build_job_id()}};
}

nlohmann::json PhaseJson(const v1::PhaseEntry& p) {
  return {{"job_id", p.job_id()}, {"phase", p.phase()},       {"resource", p.resource()},
          {"worker", p.worker()}, {"queued_s", p.queued_s()}, {"start_s", p.start_s()},
          {"end_s", p.end_s()},   {"outcome", p.outcome()},   {"stages", p.stages()},
          {"detail", p.detail()}, {"batch", p.batch()}};
}

std::string FormatTable(const std::vector<std::vector<std::string>>& raw_rows) {
  // Cells come from the server and from model files: a model name holding a
  // newline or a terminal escape must not break or redraw the table.
  std::vector<std::vector<std::string>> rows = raw_rows;
  for (auto& row : rows) {
    for (std::string& cell : row) cell = Printable(cell);
  }
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string EstimateText(const v1::Job& job) {
  const v1::JobProgress& p = job.progress();
  if (!p.has_estimated_stages()) return "-";
  const int64_t estimated = p.estimated_stages();
  std::string text = StrCat(estimated, " stages to profile (estimated at submit)");
  if (job.state() == v1::SUCCEEDED) {
    const int64_t profiled = p.stages_profiled();
    text += StrCat("; profiled ", profiled);
    if (profiled > 0) {
      text += StrCat(", estimate off by ",
                     Fixed(static_cast<double>(estimated) / static_cast<double>(profiled), 2), "x");
    }
  }
  return text;
}

std::string JobText(const v1::Job& job) {
  const v1::JobProgress& p = job.progress();
  const v1::SearchOptions& o = job.options();
  auto or_default = [](int32_t v) { return v > 0 ? std::to_string(v) : std::string("default"); };
  std::vector<std::vector<std::string>> rows = {
      {"job", std::to_string(job.id())},
      {"state", JobStateName(job.state())},
      {"model", StrCat(job.model_name(), job.model_digest().empty() ? "" : " (digest ",
                       job.model_digest().substr(0, 16), job.model_digest().empty() ? "" : ")")},
      {"device", job.device_key()},
      {"batch", job.batch() > 0 ? std::to_string(job.batch()) : std::string("model's own")},
      {"options", StrCat("r ", or_default(o.r()), ", s ", or_default(o.s()), ", block size ",
                         or_default(o.block_size()))},
      {"priority", std::to_string(job.priority())},
      {"owner", OrDash(job.owner())},
      {"submitted", FormatUnixMs(job.submitted_unix_ms())},
      {"started", FormatUnixMs(job.started_unix_ms())},
      {"finished", FormatUnixMs(job.finished_unix_ms())},
      {"phase", OrDash(p.phase())},
      {"blocks", BlocksDone(p)},
      {"stages", StrCat(p.stages_profiled(), " profiled, ", p.cache_hits(), " cache hits, ",
                        p.candidates(), " candidates -> ", p.unique_signatures(),
                        " unique signatures, ", p.stages_measured(), " stages measured")},
      {"elapsed", FormatSeconds(p.elapsed_s())},
  };
  if (p.has_estimated_stages()) rows.push_back({"estimate", EstimateText(job)});
  if (!IsFinal(job.state())) rows.push_back({"eta", FormatSeconds(p.eta_s())});
  if (!job.retune_batch().empty()) rows.push_back({"retune", job.retune_batch()});
  if (!job.error().empty()) rows.push_back({"error", job.error()});
  std::string out;
  for (auto& row : rows) {
    out += StrCat(row[0], std::string(11 - row[0].size(), ' '), Printable(row[1]), "\n");
  }
  return out;
}

std::string JobsTable(const std::vector<v1::Job>& jobs) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "STATE", "MODEL", "DEVICE", "BATCH", "PHASE", "BLOCKS", "PROFILED", "CACHED",
       "ELAPSED", "SUBMITTED", "OWNER"}};
  for (const v1::Job& job : jobs) {
    const v1::JobProgress& p = job.progress();
    rows.push_back({std::to_string(job.id()), JobStateName(job.state()), job.model_name(),
                    job.device_key(), job.batch() > 0 ? std::to_string(job.batch()) : "-",
                    OrDash(p.phase()), BlocksDone(p), std::to_string(p.stages_profiled()),
                    std::to_string(p.cache_hits()), FormatSeconds(p.elapsed_s()),
                    FormatUnixMs(job.submitted_unix_ms()), OrDash(job.owner())});
  }
  return FormatTable(rows);
}

std::string JobResultText(const v1::JobResult& result) {
  std::string out = StrCat("job ", result.job_id(), ": device ",
                           Printable(OrDash(result.device_key())), ", backend ",
                           Printable(OrDash(result.backend())), ", worker ",
                           Printable(OrDash(result.worker())), ", ", result.stages(), " stages\n");
  std::vector<std::vector<std::string>> rows = {
      {"schedule", "median ms", "p10 ms", "p90 ms", "cv", "runs"}};
  for (const v1::ScheduleLatency& l : result.measured()) {
    rows.push_back({l.name(), Ms(l.median_ms()), Ms(l.p10_ms()), Ms(l.p90_ms()), Fixed(l.cv(), 3),
                    std::to_string(l.repeats())});
  }
  out += FormatTable(rows);
  const double ios = MedianOf(result, "ios");
  out += StrCat("speedup:   ", Speedup(MedianOf(result, "sequential"), ios), " vs sequential, ",
                Speedup(MedianOf(result, "greedy"), ios), " vs greedy\n");
  if (const std::string chosen = ChosenName(result); chosen != "ios") {
    out += StrCat("schedule:  ", chosen, ", not the IOS schedule: it ran faster end to end (",
                  Ms(MedianOf(result, chosen)), " vs ", Ms(ios),
                  " ms median)\n");
  }
  if (const std::vector<std::string> noisy = NoisyMeasurements(result); !noisy.empty()) {
    std::string figures;
    for (const std::string& name : noisy) {
      const v1::ScheduleLatency* l = FindMeasured(result, name);
      figures += StrCat(figures.empty() ? "" : ", ", name, " cv ", Fixed(l->cv(), 3));
    }
    out += StrCat("warning:   noisy measurement (cv > ", Fixed(kNoisyCv, 1), "): ", figures,
                  "; the choice of the ", ChosenName(result),
                  " schedule is uncertain, measure again on a quieter machine\n");
  }
  out += StrCat("predicted: ", Ms(result.predicted_ms()),
                " ms (sum of the schedule's stage latencies)\n");
  out += StrCat("search:    ", FormatSeconds(result.search_s()), ", ", result.stages_profiled(),
                " stages profiled, ", result.cache_hits(), " cache hits, ", result.candidates(),
                " candidates -> ", result.unique_signatures(), " unique signatures, ",
                result.stages_measured(), " stages measured\n");
  if (result.search_cores() >= 2 || result.lower_bound_misses() > 0) {
    out += StrCat("bounds:    ",
                  result.search_cores() >= 2
                      ? StrCat("core bound over ", result.search_cores(), " cores; ")
                      : "",
                  result.lower_bound_misses(), " measured stages under their lower bound",
                  result.lower_bound_misses() > 0
                      ? StrCat(" (largest by ", Ms(result.largest_bound_miss_ms()), " ms)")
                      : "",
                  "\n");
  }
  return out;
}

std::string WorkersTable(const std::vector<v1::WorkerInfo>& workers) {
  std::vector<std::vector<std::string>> rows = {{"ID", "DEVICE", "BACKEND", "STATE", "JOB",
                                                 "BUILDS FOR", "PHASES", "CONNECTED", "HEARTBEAT",
                                                 "DESCRIPTION"}};
  for (const v1::WorkerInfo& w : workers) {
    rows.push_back({w.id(), w.device_key(), w.backend(), OrDash(w.state()),
                    w.job_id() > 0 ? std::to_string(w.job_id()) : "-",
                    w.build_job_id() > 0 ? StrCat("job ", w.build_job_id()) : "-",
                    std::to_string(w.phases_done()), FormatUnixMs(w.connected_unix_ms()),
                    FormatUnixMs(w.last_heartbeat_unix_ms()), w.description()});
  }
  return FormatTable(rows);
}

std::string TimelineTable(const std::vector<v1::PhaseEntry>& input) {
  std::vector<v1::PhaseEntry> phases = input;
  std::stable_sort(phases.begin(), phases.end(), [](const auto& a, const auto& b) {
    return a.start_s() != b.start_s() ? a.start_s() < b.start_s() : a.queued_s() < b.queued_s();
  });
  double origin = 0;
  for (const v1::PhaseEntry& p : phases) {
    if (p.queued_s() > 0 && (origin == 0 || p.queued_s() < origin)) origin = p.queued_s();
    if (p.start_s() > 0 && (origin == 0 || p.start_s() < origin)) origin = p.start_s();
  }
  auto at = [origin](double t) { return t > 0 ? Fixed(t - origin, 3) : std::string("-"); };
  std::vector<std::vector<std::string>> rows = {{"JOB", "PHASE", "BATCH", "RESOURCE", "QUEUED",
                                                 "START", "END", "WAIT", "RUN", "OUTCOME", "STAGES",
                                                 "DETAIL"}};
  for (const v1::PhaseEntry& p : phases) {
    const bool started = p.start_s() > 0;
    const bool ended = p.end_s() > 0;
    rows.push_back(
        {std::to_string(p.job_id()), p.phase(), p.batch() > 0 ? std::to_string(p.batch()) : "-",
         p.resource(), at(p.queued_s()), at(p.start_s()), at(p.end_s()),
         started && p.queued_s() > 0 ? FormatSeconds(p.start_s() - p.queued_s()) : "-",
         started && ended ? FormatSeconds(p.end_s() - p.start_s()) : "-", OrDash(p.outcome()),
         p.stages() > 0 ? std::to_string(p.stages()) : "-", p.detail()});
  }
  std::string out = FormatTable(rows);
  if (!phases.empty()) {
    out += StrCat("times are seconds after ", FormatUnixMs(static_cast<int64_t>(origin * 1000)),
                  "\n");
  }
  return out;
}

std::string JobProgressText(const v1::Job& job, double ticked_s) {
  const v1::JobProgress& p = job.progress();
  std::string line = StrCat("job ", job.id(), " ", JobStateName(job.state()));
  constexpr int kBarWidth = 20;
  if (p.blocks_total() > 0) {
    const int filled = static_cast<int>(
        std::clamp<int64_t>(int64_t{p.blocks_done()} * kBarWidth / p.blocks_total(), 0, kBarWidth));
    line += StrCat(" [", std::string(filled, '#'), std::string(kBarWidth - filled, '.'), "] ",
                   p.blocks_done(), "/", p.blocks_total(), " blocks");
  }
  // Times before the counters: a narrow terminal cuts the end of the line.
  line += StrCat(", ", FormatSeconds(p.elapsed_s() + std::max(0.0, ticked_s)));
  if (!IsFinal(job.state())) {
    line += StrCat(", ETA ", p.eta_s() < 0 ? std::string("?")
                                           : FormatSeconds(std::max(0.0, p.eta_s() - ticked_s)));
  }
  if (!p.phase().empty() && job.state() == v1::RUNNING) line += StrCat(", ", p.phase());
  if (job.state() == v1::RUNNING && p.max_parallel_batches() > 1) {
    line += StrCat(", ", p.batches_out(), " batches out (at most ", p.max_parallel_batches(),
                   " on workers)");
  }
  if (job.state() == v1::RUNNING && p.workers_size() > 0) {
    line += StrCat(" on ", p.workers_size(), p.workers_size() == 1 ? " worker" : " workers");
  }
  line += StrCat(", ", p.stages_profiled(), " stages profiled",
                 p.has_estimated_stages() ? StrCat(" (of ~", p.estimated_stages(), " estimated)")
                                          : std::string(),
                 ", ", p.cache_hits(), " cache hits");
  return line;
}

}  // namespace iosfarm::client
