// The stage latencies a benchmark measured, kept in a SQLite latency database
// (the server's latency database, server/latency_db.h) so that later searches (other
// models with the same stages, a retry with other bounds, a rerun after a
// kill) are answered from it instead of measuring again.
//
// Latencies are stored under the device key "<backend>|<device>|v<signature
// version>" (e.g. "cuda|NVIDIA H100 80GB HBM3 (sm_90)|v1"): measurements of
// another backend, device or signature version are never answered. The
// backend oracle of a benchmark reports only a stage's median, so the rows
// have p10 = p90 = median, cv 0 and repeats 0, worker "schedule_bench".
//
// This is the one place where bench/ uses the server's store: only
// bench_latency_cache.cc names it.
//
// Thread-compatible: one thread at a time. The file may be shared with other
// processes (SQLite locking).
#ifndef IOSFARM_BENCH_BENCH_LATENCY_CACHE_H_
#define IOSFARM_BENCH_BENCH_LATENCY_CACHE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "common/status.h"
#include "scheduler/ios/signature.h"

namespace iosfarm::server {
class LatencyDb;
}  // namespace iosfarm::server

namespace iosfarm::bench {

class BenchLatencyCache {
 public:
  // "<backend>|<device>|v<kSignatureVersion>".
  static std::string DeviceKey(const std::string& backend, const std::string& device);

  // Opens or creates the database at `path` and registers the device key.
  // The store's errors, naming the file (e.g. InvalidArgument for a file that
  // is not an iosfarm database, Unavailable when it cannot be opened).
  static StatusOr<std::unique_ptr<BenchLatencyCache>> Open(const std::string& path,
                                                           const std::string& backend,
                                                           const std::string& device);

  // Opens an existing database at `path` to answer from the latencies of
  // `device_key` alone, storing no latency (a replay of another machine's
  // measurements, e.g. a GPU machine's, here; a database of an older schema
  // is migrated, as by any open); an empty key takes the database's only
  // one. NotFound for a missing file, and for a key it does not hold or an
  // empty key where it holds several, naming those it holds;
  // FailedPrecondition for a key of another signature version (DeviceKey);
  // the store's errors otherwise.
  static StatusOr<std::unique_ptr<BenchLatencyCache>> OpenForReplay(const std::string& path,
                                                                    const std::string& device_key);

  BenchLatencyCache(const BenchLatencyCache&) = delete;
  BenchLatencyCache& operator=(const BenchLatencyCache&) = delete;
  ~BenchLatencyCache();

  const std::string& path() const { return path_; }
  const std::string& device_key() const { return device_key_; }

  // Latencies stored for this device key.
  StatusOr<int64_t> Count();

  // The stored median of `signature` in ms, nullopt when none is stored.
  // Remembers each answer: the database is read once per signature.
  StatusOr<std::optional<double>> Find(scheduler::ios::Signature signature);

  // Stores one measurement at once (its own transaction, so a killed run
  // keeps it). The first measurement of a signature wins, as in the store.
  // InvalidArgument for a non-finite or negative `ms`; FailedPrecondition
  // for a replay (OpenForReplay).
  Status Add(scheduler::ios::Signature signature, double ms);

 private:
  BenchLatencyCache(std::unique_ptr<server::LatencyDb> store, std::string path,
                    std::string backend, std::string device_key);

  std::unique_ptr<server::LatencyDb> store_;
  const std::string path_, backend_, device_key_;
  absl::flat_hash_map<scheduler::ios::Signature, std::optional<double>> answered_;
  bool replay_ = false;
};

}  // namespace iosfarm::bench

#endif  // IOSFARM_BENCH_BENCH_LATENCY_CACHE_H_
