#include "bench/bench_latency_cache.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "common/strings.h"
#include "server/farm_database.h"
#include "server/latency_db.h"

namespace iosfarm::bench {

std::string BenchLatencyCache::DeviceKey(const std::string& backend, const std::string& device) {
  return StrCat(backend, "|", device, "|v", scheduler::ios::kSignatureVersion);
}

StatusOr<std::unique_ptr<BenchLatencyCache>> BenchLatencyCache::Open(const std::string& path,
                                                                     const std::string& backend,
                                                                     const std::string& device) {
  ASSIGN_OR_RETURN(server::FarmDatabase database, server::OpenFarmDatabase(path));
  // The latency database alone: it keeps the shared connection open.
  std::unique_ptr<server::LatencyDb> store = std::move(database.latencies);
  std::string key = DeviceKey(backend, device);
  RETURN_IF_ERROR(store->UpsertDevice(key, device, backend, NowUnixMs()));
  return std::unique_ptr<BenchLatencyCache>(
      new BenchLatencyCache(std::move(store), path, backend, std::move(key)));
}

StatusOr<std::unique_ptr<BenchLatencyCache>> BenchLatencyCache::OpenForReplay(
    const std::string& path, const std::string& device_key) {
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(StrCat("latency database ", path, ": no such file"));
  }
  ASSIGN_OR_RETURN(server::FarmDatabase database, server::OpenFarmDatabase(path));
  std::unique_ptr<server::LatencyDb> store = std::move(database.latencies);
  ASSIGN_OR_RETURN(std::vector<server::DeviceRow> devices, store->ListDevices());
  std::vector<std::string> keys;
  for (const server::DeviceRow& row : devices) keys.push_back(row.key);
  std::string key = device_key;
  if (key.empty() && keys.size() == 1) key = keys[0];
  // DeviceKey's last part: signatures of another version never match.
  const std::string version = StrCat("|v", scheduler::ios::kSignatureVersion);
  if (!key.empty() && !key.ends_with(version)) {
    return absl::FailedPreconditionError(
        StrCat("latency database ", path, ": device key '", key,
               "' is not of this build's stage signatures (keys end in '", version, "')"));
  }
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
    return absl::NotFoundError(StrCat(
        "latency database ", path, ": ",
        key.empty() ? "several device keys, name one" : StrCat("no device key '", key, "'"),
        "; it holds ", keys.empty() ? "none" : StrCat("'", absl::StrJoin(keys, "', '"), "'")));
  }
  auto cache = std::unique_ptr<BenchLatencyCache>(
      new BenchLatencyCache(std::move(store), path, "", std::move(key)));
  cache->replay_ = true;
  return cache;
}

BenchLatencyCache::BenchLatencyCache(std::unique_ptr<server::LatencyDb> store, std::string path,
                                     std::string backend, std::string device_key)
    : store_(std::move(store)),
      path_(std::move(path)),
      backend_(std::move(backend)),
      device_key_(std::move(device_key)) {}

BenchLatencyCache::~BenchLatencyCache() = default;

StatusOr<int64_t> BenchLatencyCache::Count() { return store_->CountLatencies(device_key_); }

StatusOr<std::optional<double>> BenchLatencyCache::Find(scheduler::ios::Signature signature) {
  if (auto it = answered_.find(signature); it != answered_.end()) return it->second;
  ASSIGN_OR_RETURN(auto stored, store_->LookupLatencies(device_key_, {signature}));
  std::optional<double> ms;
  if (auto it = stored.find(signature); it != stored.end()) ms = it->second.median_ms;
  answered_[signature] = ms;
  return ms;
}

Status BenchLatencyCache::Add(scheduler::ios::Signature signature, double ms) {
  if (replay_) {
    return absl::FailedPreconditionError(
        StrCat("latency database ", path_, ": opened for a replay, it stores nothing"));
  }
  server::StoredLatency latency;
  latency.median_ms = latency.p10_ms = latency.p90_ms = ms;
  latency.worker = "schedule_bench";
  latency.backend = backend_;
  latency.measured_unix_ms = NowUnixMs();
  RETURN_IF_ERROR(store_->PutLatencies(device_key_, {{signature, latency}}).status());
  // The first measurement wins: answer what is stored.
  answered_.erase(signature);
  return absl::OkStatus();
}

}  // namespace iosfarm::bench
