// Where stage latencies come from.
//
// The IOS search never measures anything itself: it asks for the latency of
// stage signatures (signature.h). SearchSession (search_session.h) hands out
// StageRequests in batches and takes latencies back later, so a farm can run
// enumerate / build / profile / update phases; RunSearch (direct_search.h)
// drives a session with a StageLatencyFn in one call.
//
// Latencies are in milliseconds, finite and >= 0.
#ifndef IOSFARM_SCHEDULER_IOS_LATENCY_ORACLE_H_
#define IOSFARM_SCHEDULER_IOS_LATENCY_ORACLE_H_

#include <functional>
#include <utility>

#include "common/status.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

// Measures (or models) one stage of the graph the search runs on. The stage
// is in canonical order (CanonicalizeStage): groups and op order as the
// signature assumes. An error aborts the search with that error.
using StageLatencyFn = std::function<StatusOr<double>(const Stage&)>;

// The same, told the stage's signature, which the search and CostSchedule
// have computed anyway: a function that memoises or looks latencies up by
// signature need not canonicalise the stage again (for a simulated device
// that costs more than the simulation). `signature` is
// StageSignature(graph, stage).
using SignedLatencyFn = std::function<StatusOr<double>(Signature, const Stage&)>;

// A SignedLatencyFn that ignores the signature and asks `fn`.
inline SignedLatencyFn IgnoringSignature(StageLatencyFn fn) {
  return [fn = std::move(fn)](Signature, const Stage& stage) { return fn(stage); };
}

// A stage whose latency the search needs: its signature and a description of
// a stage with that signature (node ids of the session's graph, canonical
// order), enough to build and time it (see ExtractStageGraph in
// stage_graph.h for a standalone graph of it).
struct StageRequest {
  Signature signature = 0;
  Stage stage;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_LATENCY_ORACLE_H_
