// The operator cases of the conformance suite: small graphs, each exercising
// one op of the IR with one attribute combination (several per op), plus a
// few short chains that cross layouts. Weights have shapes only (the
// deterministic values of worker/backends/weights.h), except where a case
// needs specific values (positive divisors, scaled activations).
#ifndef IOSFARM_TESTS_CONFORMANCE_OP_CASES_H_
#define IOSFARM_TESTS_CONFORMANCE_OP_CASES_H_

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::conformance {

struct GraphCase {
  std::string name;  // test-name friendly: [A-Za-z0-9_]
  std::function<StatusOr<graph::Graph>()> build;
};

const std::vector<GraphCase>& OpCases();

}  // namespace iosfarm::conformance

#endif  // IOSFARM_TESTS_CONFORMANCE_OP_CASES_H_
