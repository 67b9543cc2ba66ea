#include "tests/conformance/conformance_backends.h"

#include <map>

#include "common/strings.h"
#include "worker/backends/cpu/cpu_backend.h"

#ifdef IOSFARM_CONFORMANCE_FACTORY
#include "worker/backends/backend_factory.h"
#endif

namespace iosfarm::conformance {

const std::vector<ConformanceBackend>& ConformanceBackends() {
  static const auto* const kBackends = new std::vector<ConformanceBackend>([] {
    std::vector<ConformanceBackend> backends;
    backends.push_back({"cpu",
                        []() -> StatusOr<std::unique_ptr<worker::Backend>> {
                          ASSIGN_OR_RETURN(auto cpu, worker::cpu::CpuBackend::Create());
                          return std::unique_ptr<worker::Backend>(std::move(cpu));
                        },
                        true});
    // The cpu backend's other activation layouts and its one-core path
    // (concurrent groups run one after another).
    const auto cpu_variant = [](worker::cpu::ActivationLayout layout, int threads) {
      return [layout, threads]() -> StatusOr<std::unique_ptr<worker::Backend>> {
        worker::cpu::CpuBackendOptions options;
        options.layout = layout;
        options.num_threads = threads;
        ASSIGN_OR_RETURN(auto cpu, worker::cpu::CpuBackend::Create(options));
        return std::unique_ptr<worker::Backend>(std::move(cpu));
      };
    };
    backends.push_back(
        {"cpu_nChw8c", cpu_variant(worker::cpu::ActivationLayout::kBlocked8, 0), true});
    backends.push_back(
        {"cpu_plain_1thread", cpu_variant(worker::cpu::ActivationLayout::kPlain, 1), true});
#ifdef IOSFARM_CONFORMANCE_FACTORY
    backends.push_back({"sim", [] { return worker::CreateBackend("sim"); }, false});
#ifdef IOSFARM_HAVE_CUDA
    backends.push_back({"cuda", [] { return worker::CreateBackend("cuda"); }, true});
#endif
#endif
    return backends;
  }());
  return *kBackends;
}

std::vector<std::string> ConformanceBackendNames() {
  std::vector<std::string> names;
  for (const ConformanceBackend& backend : ConformanceBackends()) names.push_back(backend.name);
  return names;
}

StatusOr<worker::Backend*> GetConformanceBackend(const std::string& name) {
  static auto* const instances =
      new std::map<std::string, StatusOr<std::unique_ptr<worker::Backend>>>();
  auto it = instances->find(name);
  if (it == instances->end()) {
    StatusOr<std::unique_ptr<worker::Backend>> created =
        absl::NotFoundError(StrCat("no conformance backend named '", name, "'"));
    for (const ConformanceBackend& backend : ConformanceBackends()) {
      if (backend.name == name) created = backend.create();
    }
    it = instances->emplace(name, std::move(created)).first;
  }
  if (!it->second.ok()) return it->second.status();
  return it->second->get();
}

bool ComputesValues(const std::string& name) {
  for (const ConformanceBackend& backend : ConformanceBackends()) {
    if (backend.name == name) return backend.computes_values;
  }
  return false;
}

}  // namespace iosfarm::conformance
