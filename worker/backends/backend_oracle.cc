#include "worker/backends/backend_oracle.h"

#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "scheduler/ios/stages/signature.h"

namespace iosfarm::worker {

scheduler::ios::SignedLatencyFn MakeBackendOracle(const graph::Graph& graph, Backend& backend,
                                                  const ProfileOptions& options) {
  struct Memo {
    std::mutex mu;
    absl::flat_hash_map<scheduler::ios::Signature, double> latencies;
  };
  auto memo = std::make_shared<Memo>();
  return [&graph, &backend, options, memo](scheduler::ios::Signature signature,
                                           const scheduler::ios::Stage& stage) -> StatusOr<double> {
    {
      std::lock_guard<std::mutex> lock(memo->mu);
      if (auto it = memo->latencies.find(signature); it != memo->latencies.end()) {
        return it->second;
      }
    }
    // Build runs concurrently; the backend serialises Profile (backend.h).
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<StagePlan>> plans, backend.Build(graph, {stage}));
    ASSIGN_OR_RETURN(std::vector<LatencyStats> stats, backend.Profile({plans[0].get()}, options));
    std::lock_guard<std::mutex> lock(memo->mu);
    // A signature measured twice at once keeps its first latency.
    return memo->latencies.emplace(signature, stats[0].median_ms).first->second;
  };
}

}  // namespace iosfarm::worker
