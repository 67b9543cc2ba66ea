#include "server/latency_db.h"

#include <bit>
#include <cmath>

#include "common/strings.h"

namespace iosfarm::server {
namespace {

int64_t ToStored(uint64_t signature) { return std::bit_cast<int64_t>(signature); }

// InvalidArgument naming the first row whose figures cannot be stored.
Status CheckLatencyRows(const std::string& device_key,
                        const std::vector<std::pair<uint64_t, StoredLatency>>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const StoredLatency& latency = rows[i].second;
    const auto bad = [&](std::string_view field, double value) {
      return absl::InvalidArgumentError(
          StrCat("PutLatencies: row ", i, " (signature ", rows[i].first, ") of device '",
                 device_key, "' has ", field, " = ", value, "; nothing was written"));
    };
    if (!std::isfinite(latency.median_ms) || latency.median_ms < 0) {
      return bad("median_ms", latency.median_ms);
    }
    if (!std::isfinite(latency.p10_ms)) return bad("p10_ms", latency.p10_ms);
    if (!std::isfinite(latency.p90_ms)) return bad("p90_ms", latency.p90_ms);
    if (!std::isfinite(latency.cv)) return bad("cv", latency.cv);
  }
  return absl::OkStatus();
}

// The floor's integer columns (floor_issue_adds 0/1, floor_issue_order 0..2,
// floor_back_to_back 0/1, floor_free_ops 0/1: the schema's CHECKs).
struct FloorFlags {
  int64_t issue_adds = 0, issue_order = 0, back_to_back = 0, free_ops = 0;

  void Into(scheduler::ios::DeviceFloor& floor) const {
    floor.issue_overlaps_work = issue_adds == 0;
    floor.issue_order = scheduler::ios::IssueOrderFromNumber(issue_order);
    floor.back_to_back = back_to_back != 0;
    floor.free_ops = scheduler::ios::FreeOpsFromNumber(free_ops);
  }
};

}  // namespace

// ---------------------------------------------------------------- devices

Status LatencyDb::UpsertDevice(const std::string& key, const std::string& description,
                               const std::string& backend, int64_t now_unix_ms, int cores,
                               const scheduler::ios::DeviceFloor& device_floor) {
  if (key.empty()) return absl::InvalidArgumentError("UpsertDevice: device key is empty");
  if (cores < 0) {
    return absl::InvalidArgumentError(
        StrCat("UpsertDevice: device key '", key, "' with ", cores, " cores"));
  }
  if (Status floor = scheduler::ios::ValidateDeviceFloor(device_floor); !floor.ok()) {
    return absl::InvalidArgumentError(
        StrCat("UpsertDevice: device key '", key, "': ", floor.message()));
  }
  Session session(*connection_);
  ASSIGN_OR_RETURN(
      CachedStatement stmt,
      session.Prepare("INSERT INTO devices (key, description, backend, first_seen_unix_ms, "
                      "last_seen_unix_ms, cores, floor_stage_ms, floor_launch_ms, "
                      "floor_peak_gflops, floor_bandwidth_gbps, floor_issue_adds, "
                      "floor_issue_order, floor_back_to_back, floor_free_ops, "
                      "floor_contention) "
                      "VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
                      "ON CONFLICT (key) DO UPDATE SET "
                      "description = CASE WHEN excluded.description <> '' "
                      "THEN excluded.description ELSE description END, "
                      "backend = CASE WHEN excluded.backend <> '' "
                      "THEN excluded.backend ELSE backend END, "
                      "last_seen_unix_ms = max(last_seen_unix_ms, excluded.last_seen_unix_ms), "
                      "cores = excluded.cores, floor_stage_ms = excluded.floor_stage_ms, "
                      "floor_launch_ms = excluded.floor_launch_ms, "
                      "floor_peak_gflops = excluded.floor_peak_gflops, "
                      "floor_bandwidth_gbps = excluded.floor_bandwidth_gbps, "
                      "floor_issue_adds = excluded.floor_issue_adds, "
                      "floor_issue_order = excluded.floor_issue_order, "
                      "floor_back_to_back = excluded.floor_back_to_back, "
                      "floor_free_ops = excluded.floor_free_ops, "
                      "floor_contention = excluded.floor_contention"));
  RETURN_IF_ERROR(stmt.Bind(
      key, description, backend, now_unix_ms, cores, device_floor.stage_ms, device_floor.launch_ms,
      device_floor.peak_gflops, device_floor.bandwidth_gbps,
      int64_t{device_floor.issue_overlaps_work ? 0 : 1},
      static_cast<int64_t>(device_floor.issue_order), int64_t{device_floor.back_to_back ? 1 : 0},
      static_cast<int64_t>(device_floor.free_ops), device_floor.contention));
  return stmt->Step().status();
}

StatusOr<std::vector<DeviceRow>> LatencyDb::ListDevices() {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("SELECT key, description, backend, first_seen_unix_ms, "
                                   "last_seen_unix_ms, latency_count, ignored_measurements, "
                                   "cores, floor_stage_ms, floor_launch_ms, floor_peak_gflops, "
                                   "floor_bandwidth_gbps, floor_issue_adds, floor_issue_order, "
                                   "floor_back_to_back, floor_free_ops, floor_contention "
                                   "FROM devices ORDER BY key"));
  std::vector<DeviceRow> devices;
  for (DeviceRow d;;) {
    FloorFlags flags;
    scheduler::ios::DeviceFloor& f = d.device_floor;
    ASSIGN_OR_RETURN(
        bool row,
        stmt.StepAndRead(d.key, d.description, d.backend, d.first_seen_unix_ms, d.last_seen_unix_ms,
                         d.latencies, d.ignored_measurements, d.cores, f.stage_ms, f.launch_ms,
                         f.peak_gflops, f.bandwidth_gbps, flags.issue_adds, flags.issue_order,
                         flags.back_to_back, flags.free_ops, f.contention));
    if (!row) break;
    flags.Into(f);
    devices.push_back(std::move(d));
  }
  return devices;
}

StatusOr<scheduler::ios::DeviceFloor> LatencyDb::DeviceFloorOf(const std::string& key) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(
      CachedStatement stmt,
      session.Prepare("SELECT floor_stage_ms, floor_launch_ms, floor_peak_gflops, "
                      "floor_bandwidth_gbps, floor_issue_adds, floor_issue_order, "
                      "floor_back_to_back, floor_free_ops, floor_contention FROM devices "
                      "WHERE key = ?1"));
  RETURN_IF_ERROR(stmt.Bind(key));
  scheduler::ios::DeviceFloor floor;
  FloorFlags flags;
  ASSIGN_OR_RETURN(bool row,
                   stmt.StepAndRead(floor.stage_ms, floor.launch_ms, floor.peak_gflops,
                                    floor.bandwidth_gbps, flags.issue_adds, flags.issue_order,
                                    flags.back_to_back, flags.free_ops, floor.contention));
  if (!row) return scheduler::ios::DeviceFloor{};
  flags.Into(floor);
  return floor;
}

StatusOr<int> LatencyDb::DeviceCores(const std::string& key) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("SELECT cores FROM devices WHERE key = ?1"));
  RETURN_IF_ERROR(stmt.Bind(key));
  int cores = 0;
  ASSIGN_OR_RETURN(bool row, stmt.StepAndRead(cores));
  return row ? cores : 0;
}

StatusOr<bool> LatencyDb::HasDevice(const std::string& key) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt, session.Prepare("SELECT 1 FROM devices WHERE key = ?1"));
  RETURN_IF_ERROR(stmt.Bind(key));
  return stmt->Step();
}

// ---------------------------------------------------------------- latencies

StatusOr<absl::flat_hash_map<uint64_t, StoredLatency>> LatencyDb::LookupLatencies(
    const std::string& device_key, const std::vector<uint64_t>& signatures) {
  absl::flat_hash_map<uint64_t, StoredLatency> found;
  if (signatures.empty()) return found;
  Session session(*connection_);
  ASSIGN_OR_RETURN(Transaction snapshot, Transaction::BeginRead(session.db()));
  for (uint64_t signature : signatures) {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("SELECT median_ms, p10_ms, p90_ms, cv, repeats, worker, "
                                     "backend, measured_unix_ms FROM latencies "
                                     "WHERE device_key = ?1 AND signature = ?2"));
    RETURN_IF_ERROR(stmt.Bind(device_key, ToStored(signature)));
    StoredLatency l;
    ASSIGN_OR_RETURN(bool row, stmt.StepAndRead(l.median_ms, l.p10_ms, l.p90_ms, l.cv,
                                                l.repeats, l.worker, l.backend,
                                                l.measured_unix_ms));
    if (row) found[signature] = std::move(l);
  }
  RETURN_IF_ERROR(snapshot.Commit());
  return found;
}

StatusOr<int64_t> LatencyDb::PutLatencies(
    const std::string& device_key, const std::vector<std::pair<uint64_t, StoredLatency>>& rows) {
  if (device_key.empty()) return absl::InvalidArgumentError("PutLatencies: device key is empty");
  RETURN_IF_ERROR(CheckLatencyRows(device_key, rows));
  if (rows.empty()) return 0;

  Session session(*connection_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(session.db()));
  {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("INSERT INTO devices (key, backend, first_seen_unix_ms, "
                                     "last_seen_unix_ms) VALUES (?1, ?2, ?3, ?3) "
                                     "ON CONFLICT (key) DO NOTHING"));
    RETURN_IF_ERROR(stmt.Bind(device_key, rows.front().second.backend,
                              rows.front().second.measured_unix_ms));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  int64_t added = 0;
  for (const auto& [signature, latency] : rows) {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("INSERT INTO latencies (device_key, signature, median_ms, "
                                     "p10_ms, p90_ms, cv, repeats, worker, backend, "
                                     "measured_unix_ms) "
                                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
                                     "ON CONFLICT (device_key, signature) DO NOTHING"));
    RETURN_IF_ERROR(stmt.Bind(device_key, ToStored(signature), latency.median_ms, latency.p10_ms,
                              latency.p90_ms, latency.cv, latency.repeats, latency.worker,
                              latency.backend, latency.measured_unix_ms));
    RETURN_IF_ERROR(stmt->Step().status());
    added += session.db().Changes();
  }
  {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("UPDATE devices SET latency_count = latency_count + ?2, "
                                     "ignored_measurements = ignored_measurements + ?3 "
                                     "WHERE key = ?1"));
    RETURN_IF_ERROR(stmt.Bind(device_key, added, static_cast<int64_t>(rows.size()) - added));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  RETURN_IF_ERROR(tx.Commit());
  return added;
}

StatusOr<int64_t> LatencyDb::DeleteLatencies(const std::string& device_key,
                                             const std::string& worker) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(session.db()));
  {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("SELECT 1 FROM devices WHERE key = ?1"));
    RETURN_IF_ERROR(stmt.Bind(device_key));
    ASSIGN_OR_RETURN(bool known, stmt->Step());
    if (!known) {
      return absl::NotFoundError(StrCat("unknown device key '", device_key, "'"));
    }
  }
  int64_t deleted = 0;
  {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare(worker.empty() ? "DELETE FROM latencies WHERE device_key = ?1"
                                                    : "DELETE FROM latencies WHERE device_key = "
                                                      "?1 AND worker = ?2"));
    RETURN_IF_ERROR(worker.empty() ? stmt.Bind(device_key) : stmt.Bind(device_key, worker));
    RETURN_IF_ERROR(stmt->Step().status());
    deleted = session.db().Changes();
  }
  {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("UPDATE devices SET latency_count = "
                                     "(SELECT COUNT(*) FROM latencies WHERE device_key = ?1) "
                                     "WHERE key = ?1"));
    RETURN_IF_ERROR(stmt.Bind(device_key));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  RETURN_IF_ERROR(tx.Commit());
  return deleted;
}

StatusOr<int64_t> LatencyDb::CountLatencies(const std::string& device_key) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("SELECT COUNT(*) FROM latencies WHERE device_key = ?1"));
  RETURN_IF_ERROR(stmt.Bind(device_key));
  RETURN_IF_ERROR(stmt->Step().status());
  return stmt->ColumnInt64(0);
}

}  // namespace iosfarm::server
