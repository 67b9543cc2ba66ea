// LatencyDb: the latency database — the device keys the farm has seen and
// the measured latency of every stage signature per device key. Tables:
// devices, latencies (docs/database.md). Opened together with the JobStore
// by OpenFarmDatabase (farm_database.h), over one shared StoreConnection.
//
// Contract highlights:
//  - Every write is one transaction: a crash (even SIGKILL) leaves each call
//    either fully applied or not at all, and committed data survives a
//    process crash (WAL, synchronous=NORMAL).
//  - Bad input returns InvalidArgument naming the field and writes nothing.
//  - The first measurement of (device key, signature) wins.
//
// Thread safety: all methods may be called from any thread; each call holds
// the shared connection (StoreConnection::Session). Several processes may
// open the same file (SQLite locking; a busy database waits up to 5 s, then
// returns an error).
#ifndef IOSFARM_SERVER_LATENCY_DB_H_
#define IOSFARM_SERVER_LATENCY_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/status.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "server/store_connection.h"

namespace iosfarm::server {

struct StoredLatency {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, cv = 0;
  int repeats = 0;
  std::string worker, backend;
  int64_t measured_unix_ms = 0;
};

struct DeviceRow {
  std::string key, description, backend;
  int64_t first_seen_unix_ms = 0, last_seen_unix_ms = 0;
  int64_t latencies = 0;  // stored latencies for this key
  // Measurements of an already-stored signature that PutLatencies ignored.
  int64_t ignored_measurements = 0;
  // Cores its latest worker shares a stage's groups over (RegisterWorker.cores;
  // 0: GPUs, the sim).
  int cores = 0;
  // What its latest worker's device never beats (RegisterWorker.device_floor;
  // all zeros: none).
  scheduler::ios::DeviceFloor device_floor;
};

class LatencyDb {
 public:
  // `connection` is an open, migrated database (StoreConnection::Open).
  explicit LatencyDb(std::shared_ptr<StoreConnection> connection)
      : connection_(std::move(connection)) {}
  LatencyDb(const LatencyDb&) = delete;
  LatencyDb& operator=(const LatencyDb&) = delete;

  // --- devices
  // Inserts or updates (description, backend, last seen, cores, device
  // floor) the device key; first_seen is kept from the first call, and the
  // cores and floor are the latest call's (a worker registering states its
  // own). InvalidArgument for an empty key, negative cores or a floor
  // ValidateDeviceFloor refuses.
  Status UpsertDevice(const std::string& key, const std::string& description,
                      const std::string& backend, int64_t now_unix_ms, int cores = 0,
                      const scheduler::ios::DeviceFloor& device_floor = {});
  StatusOr<std::vector<DeviceRow>> ListDevices();  // by key
  StatusOr<bool> HasDevice(const std::string& key);
  // The key's DeviceRow::cores; 0 for a key no worker registered.
  StatusOr<int> DeviceCores(const std::string& key);
  // The key's DeviceRow::device_floor; all zeros for a key no worker
  // registered.
  StatusOr<scheduler::ios::DeviceFloor> DeviceFloorOf(const std::string& key);

  // --- latencies (signature = uint64 stage signature, stored bit-cast to int64)
  // Latencies stored for `device_key` among `signatures` (missing ones are
  // absent from the map). One read snapshot; any number of signatures.
  StatusOr<absl::flat_hash_map<uint64_t, StoredLatency>> LookupLatencies(
      const std::string& device_key, const std::vector<uint64_t>& signatures);
  // One transaction. The first measurement of (key, signature) wins (later
  // ones, also within `rows`, are ignored and counted in
  // DeviceRow::ignored_measurements); returns how many rows were new.
  // InvalidArgument (nothing written) for an empty key, a non-finite or
  // negative median, or non-finite p10/p90/cv. An unknown device key is
  // registered on the fly (empty description, backend of the first row).
  StatusOr<int64_t> PutLatencies(const std::string& device_key,
                                 const std::vector<std::pair<uint64_t, StoredLatency>>& rows);
  StatusOr<int64_t> CountLatencies(const std::string& device_key);
  // Forgets measurements (an operator's remedy for a bad worker): deletes the
  // latencies of `device_key`, all of them or only those `worker` measured
  // when it is not empty, in one transaction, and returns how many went (the
  // device's latency count follows). Later jobs measure those stages again;
  // stored jobs and results are kept. NotFound for an unknown device key.
  StatusOr<int64_t> DeleteLatencies(const std::string& device_key, const std::string& worker);

  const std::string& path() const { return connection_->path(); }

 private:
  using Session = StoreConnection::Session;
  const std::shared_ptr<StoreConnection> connection_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_LATENCY_DB_H_
