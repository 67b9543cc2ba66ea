// A backend as the latency oracle of an in-process IOS search.
//
// MakeBackendOracle returns a SignedLatencyFn that builds the stage on
// `backend`, profiles it with `options` and answers the median in ms. Each
// stage signature (as given: the caller's StageSignature of the stage) is
// measured once and remembered, so the IOS search and the
// baselines costed with the same function see the same latency for the same
// stage (measurement noise cannot make a baseline look better). Used by
// `iosfarm search --backend ...` (InlineSearch); the farm instead batches
// stages through build and profile phases. `graph` and `backend` must outlive
// the function. Errors of Build/Profile are returned unchanged. Thread-safe
// (a search on several threads calls it from each): stages build side by
// side and the backend profiles one at a time.
#ifndef IOSFARM_WORKER_BACKENDS_BACKEND_ORACLE_H_
#define IOSFARM_WORKER_BACKENDS_BACKEND_ORACLE_H_

#include "graph/graph.h"
#include "scheduler/ios/latency_oracle.h"
#include "worker/backends/backend.h"

namespace iosfarm::worker {

scheduler::ios::SignedLatencyFn MakeBackendOracle(const graph::Graph& graph, Backend& backend,
                                                  const ProfileOptions& options);

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_BACKENDS_BACKEND_ORACLE_H_
