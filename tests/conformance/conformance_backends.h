// The backends the conformance suite runs against, in this build.
//
// `cpu` always (its default, plus two variants: `cpu_nChw8c`, the blocked
// activation layout, and `cpu_plain_1thread`, plain layout on one core, where
// concurrent groups run one after another). `sim` and `cuda` come from the backend factory
// (worker/backends/backend_factory.h) when this build has it: `cuda` is
// listed whenever CUDA was compiled in, and its creation fails (the tests
// then skip, printing why) when no device answers. A new backend registers
// by adding one entry to ConformanceBackends().
#ifndef IOSFARM_TESTS_CONFORMANCE_CONFORMANCE_BACKENDS_H_
#define IOSFARM_TESTS_CONFORMANCE_CONFORMANCE_BACKENDS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/backends/backend.h"

namespace iosfarm::conformance {

struct ConformanceBackend {
  std::string name;  // "cpu", "sim", "cuda"
  // Creates an instance; an error means "not usable here" (tests skip).
  std::function<StatusOr<std::unique_ptr<worker::Backend>>()> create;
  // False for backends that time without computing (sim): the tests that
  // compare values skip them.
  bool computes_values = true;
};

const std::vector<ConformanceBackend>& ConformanceBackends();

// Names of ConformanceBackends(), for test parameters.
std::vector<std::string> ConformanceBackendNames();

// The shared instance of the named backend (created once per process), or
// the error its creation gave. Not thread-safe (tests run on one thread).
StatusOr<worker::Backend*> GetConformanceBackend(const std::string& name);

// Whether the named backend computes values (see above).
bool ComputesValues(const std::string& name);

}  // namespace iosfarm::conformance

#endif  // IOSFARM_TESTS_CONFORMANCE_CONFORMANCE_BACKENDS_H_
