// The latency database as a source for an IOS search: the latencies it
// holds are handed to the search, the rest are left to measure. Shared by
// the farm's enumerate phase (JobRunner) and the runtime's tuning on first
// use (runtime/first_use_tuning.h).
#ifndef IOSFARM_SERVER_STORED_LATENCIES_H_
#define IOSFARM_SERVER_STORED_LATENCIES_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/search_session.h"
#include "server/latency_db.h"

namespace iosfarm::server {

// Looks `requests` up in `store` under `device_key` (one read), provides the
// latencies it holds to `session`, and returns the requests it does not
// hold, in their order. Errors: the store's, the session's Provide.
StatusOr<std::vector<scheduler::ios::StageRequest>> ProvideStoredLatencies(
    LatencyDb& store, const std::string& device_key,
    std::vector<scheduler::ios::StageRequest> requests, scheduler::ios::SearchSession& session);

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_STORED_LATENCIES_H_
