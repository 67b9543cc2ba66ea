#include "server/stored_latencies.h"

#include <utility>

namespace iosfarm::server {

StatusOr<std::vector<scheduler::ios::StageRequest>> ProvideStoredLatencies(
    LatencyDb& store, const std::string& device_key,
    std::vector<scheduler::ios::StageRequest> requests, scheduler::ios::SearchSession& session) {
  if (requests.empty()) return requests;
  std::vector<uint64_t> signatures;
  signatures.reserve(requests.size());
  for (const auto& request : requests) signatures.push_back(request.signature);
  ASSIGN_OR_RETURN(auto known, store.LookupLatencies(device_key, signatures));
  std::vector<scheduler::ios::StageRequest> unknown;
  for (auto& request : requests) {
    if (auto it = known.find(request.signature); it != known.end()) {
      RETURN_IF_ERROR(session.Provide(request.signature, it->second.median_ms));
    } else {
      unknown.push_back(std::move(request));
    }
  }
  return unknown;
}

}  // namespace iosfarm::server
