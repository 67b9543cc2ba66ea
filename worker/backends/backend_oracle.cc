#include "worker/backends/backend_oracle.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "scheduler/ios/signature.h"

namespace iosfarm::worker {

scheduler::ios::SignedLatencyFn MakeBackendOracle(const graph::Graph& graph, Backend& backend,
                                                  const ProfileOptions& options) {
  auto measured = std::make_shared<absl::flat_hash_map<scheduler::ios::Signature, double>>();
  return [&graph, &backend, options, measured](
             scheduler::ios::Signature signature,
             const scheduler::ios::Stage& stage) -> StatusOr<double> {
    if (auto it = measured->find(signature); it != measured->end()) return it->second;
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<StagePlan>> plans, backend.Build(graph, {stage}));
    ASSIGN_OR_RETURN(std::vector<LatencyStats> stats, backend.Profile({plans[0].get()}, options));
    measured->emplace(signature, stats[0].median_ms);
    return stats[0].median_ms;
  };
}

}  // namespace iosfarm::worker
