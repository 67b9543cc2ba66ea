// The runtime's tune on first use (SessionOptions::tune_if_missing): the IOS
// search on the session's own backend, with its latencies from and into the
// latency database that `iosfarm tune` keeps on this machine
// (common/local_farm.h: the same file and device key), so that a stage either
// of them measured is never measured again by the other.
//
// The search hands out unknown stages in batches (SearchSession); each batch
// is looked up in the database, what it lacks is built and profiled on the
// backend, and the new latencies are stored (one transaction per batch)
// before the search goes on: a session killed while tuning keeps every batch
// it finished, and the next one resumes from the database.
#ifndef IOSFARM_RUNTIME_FIRST_USE_TUNING_H_
#define IOSFARM_RUNTIME_FIRST_USE_TUNING_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/schedule.h"
#include "worker/backends/backend.h"

namespace iosfarm::runtime {

struct FirstUseTuning {
  std::string latency_db;  // the database file; empty: none (every stage measured)
  std::string device_key;  // the latencies' key in it
  std::string backend;     // "cpu" or "cuda", stored with each latency
};

struct TunedSchedule {
  scheduler::ios::Schedule schedule;
  int64_t stages_from_database = 0;
  int64_t stages_measured = 0;
};

// Searches `graph` (default SearchOptions with the core bound over
// `backend.cores()`, as `iosfarm tune` on that backend) and writes the
// schedule to `schedule_path` (metadata: the device key). Errors: the
// database's (a file that is not an iosfarm database, a newer schema, ...,
// naming the file), the backend's Build/Profile errors, the search's.
StatusOr<TunedSchedule> TuneOnFirstUse(const graph::Graph& graph, worker::Backend& backend,
                                       const FirstUseTuning& tuning,
                                       const std::string& schedule_path);

}  // namespace iosfarm::runtime

#endif  // IOSFARM_RUNTIME_FIRST_USE_TUNING_H_
