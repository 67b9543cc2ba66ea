// Helpers of the conformance tests.
#ifndef IOSFARM_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
#define IOSFARM_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/schedule.h"
#include "tests/conformance/conformance_backends.h"
#include "worker/backends/backend.h"

namespace iosfarm::conformance {

// Relative tolerance of every comparison (worker/backends/reference/compare.h).
inline constexpr double kTolerance = 1e-3;

// Few repeats: the suite checks values, not speed.
worker::ProfileOptions QuickProfile();

// The parameters of a suite that runs every case of a table of `num_cases`
// against every backend: (backend name, case index) for each pair.
inline auto BackendsTimesCaseIndices(size_t num_cases) {
  return ::testing::Combine(::testing::ValuesIn(ConformanceBackendNames()),
                            ::testing::Range(size_t{0}, num_cases));
}

// Runs `schedule` on `backend` (outputs requested, inputs from `seed`) and
// compares its outputs with the reference executor's on the same inputs.
// OK, or the first error / mismatch (naming `what`). With a non-empty
// `reference_key`, the reference outputs are computed once per process for
// (reference_key, seed) and reused (for big graphs run on several backends
// and schedules; the key must identify the graph).
Status RunAndCompare(worker::Backend& backend, const graph::Graph& graph,
                     const scheduler::ios::Schedule& schedule, const std::string& what,
                     uint64_t seed = 1, const std::string& reference_key = "");

// One op per stage, in topological order (no scheduler/ios search needed).
StatusOr<scheduler::ios::Schedule> OneOpPerStage(const graph::Graph& graph);

}  // namespace iosfarm::conformance

// In a test body: declares `var`, the backend named `name`, or skips the
// test with the reason it is not usable here (or computes no values when
// `needs_values`).
#define IOSFARM_BACKEND_OR_SKIP(var, name, needs_values)                             \
  ::iosfarm::worker::Backend* var = nullptr;                                         \
  do {                                                                               \
    auto acquired_ = ::iosfarm::conformance::GetConformanceBackend(name);            \
    if (!acquired_.ok()) GTEST_SKIP() << (name) << ": " << acquired_.status();       \
    if ((needs_values) && !::iosfarm::conformance::ComputesValues(name)) {           \
      GTEST_SKIP() << (name) << " computes no values";                               \
    }                                                                                \
    var = *acquired_;                                                                \
  } while (false)

#endif  // IOSFARM_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
