#include "runtime/first_use_tuning.h"

#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/local_farm.h"
#include "common/strings.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/search_session.h"
#include "server/farm_database.h"
#include "server/stored_latencies.h"

namespace iosfarm::runtime {
namespace {

namespace ios = scheduler::ios;

// Stages per round: wide enough that a database round trip and a Build call
// are amortised, small enough that an interrupted session loses little.
constexpr int kBatch = 64;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

StatusOr<server::FarmDatabase> OpenDatabase(const std::string& path) {
  RETURN_IF_ERROR(CreateDatabaseDirectory(path));
  return server::OpenFarmDatabase(path);
}

// Builds and profiles `stages` on `backend`, as a worker's build and profile
// phases do.
StatusOr<std::vector<worker::LatencyStats>> Measure(const graph::Graph& graph,
                                                    worker::Backend& backend,
                                                    const std::vector<ios::Stage>& stages) {
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<worker::StagePlan>> plans,
                   backend.Build(graph, stages));
  std::vector<const worker::StagePlan*> views;
  views.reserve(plans.size());
  for (const auto& plan : plans) views.push_back(plan.get());
  return backend.Profile(views, worker::ProfileOptions{});
}

}  // namespace

StatusOr<TunedSchedule> TuneOnFirstUse(const graph::Graph& graph, worker::Backend& backend,
                                       const FirstUseTuning& tuning,
                                       const std::string& schedule_path) {
  std::optional<server::FarmDatabase> db;
  if (!tuning.latency_db.empty()) {
    ASSIGN_OR_RETURN(db, OpenDatabase(tuning.latency_db));
    RETURN_IF_ERROR(db->latencies->UpsertDevice(tuning.device_key, backend.device_description(),
                                                tuning.backend, NowUnixMs(), backend.cores(),
                                                backend.device_floor()));
  }
  // The farm's options: its jobs bound stages by the cores and the device
  // floor their key's worker stated (Backend::cores(), the core bound;
  // Backend::device_floor()), so the stages `iosfarm tune` stored on this
  // backend are the ones this search asks for.
  ios::SearchOptions options;
  options.bounded.cores = backend.cores();
  options.bounded.device_floor = backend.device_floor();
  ASSIGN_OR_RETURN(std::unique_ptr<ios::SearchSession> session,
                   ios::SearchSession::Create(graph, options));
  TunedSchedule tuned;
  const std::string worker_id = StrCat("runtime-", tuning.backend);
  while (true) {
    ASSIGN_OR_RETURN(std::vector<ios::StageRequest> requests, session->NextUnknown(kBatch));
    if (requests.empty()) break;  // every latency is provided at once: done
    const int64_t asked = static_cast<int64_t>(requests.size());
    if (db) {
      ASSIGN_OR_RETURN(requests, server::ProvideStoredLatencies(*db->latencies, tuning.device_key,
                                                                std::move(requests), *session));
    }
    tuned.stages_from_database += asked - static_cast<int64_t>(requests.size());
    if (requests.empty()) continue;
    std::vector<ios::Signature> missing;
    std::vector<ios::Stage> stages;
    for (ios::StageRequest& request : requests) {
      missing.push_back(request.signature);
      stages.push_back(std::move(request.stage));
    }
    ASSIGN_OR_RETURN(std::vector<worker::LatencyStats> measured, Measure(graph, backend, stages));
    std::vector<std::pair<uint64_t, server::StoredLatency>> rows;
    const int64_t now = NowUnixMs();
    for (size_t i = 0; i < stages.size(); ++i) {
      const worker::LatencyStats& stats = measured[i];
      server::StoredLatency stored;
      stored.median_ms = stats.median_ms;
      stored.p10_ms = stats.p10_ms;
      stored.p90_ms = stats.p90_ms;
      stored.cv = stats.cv;
      stored.repeats = stats.repeats;
      stored.worker = worker_id;
      stored.backend = tuning.backend;
      stored.measured_unix_ms = now;
      rows.emplace_back(missing[i], stored);
    }
    if (db) RETURN_IF_ERROR(db->latencies->PutLatencies(tuning.device_key, rows).status());
    for (const auto& [signature, stored] : rows) {
      RETURN_IF_ERROR(session->Provide(signature, stored.median_ms));
    }
    tuned.stages_measured += static_cast<int64_t>(rows.size());
  }
  if (!session->Done()) {
    return absl::InternalError(
        StrCat("the search of ", graph.name(), " stopped with latencies still outstanding"));
  }
  ASSIGN_OR_RETURN(ios::SearchResult result, session->Result());
  RETURN_IF_ERROR(
      ios::WriteScheduleFile(schedule_path, graph, result.schedule,
                             ios::MakeScheduleMetadata(graph, tuning.device_key, "ios", &options)));
  tuned.schedule = std::move(result.schedule);
  return tuned;
}

}  // namespace iosfarm::runtime
