// Comparing the outputs of two executions (conformance tests, `--verify`).
#ifndef IOSFARM_WORKER_BACKENDS_REFERENCE_COMPARE_H_
#define IOSFARM_WORKER_BACKENDS_REFERENCE_COMPARE_H_

#include <string_view>
#include <vector>

#include "common/status.h"
#include "graph/tensor.h"

namespace iosfarm::worker::reference {

// OK when `actual` and `expected` have the same shape and every element
// satisfies |a - e| <= rtol * max(|e|, rms(expected)): relative error, with
// the tensor's root mean square as the floor of the scale so that values
// near zero (cancellation) are judged against the tensor's typical magnitude.
// NaN or infinity in either fails. Otherwise Internal naming `what`, the
// number of mismatches and the worst element (index, both values).
Status CompareTensors(const graph::Tensor& actual, const graph::Tensor& expected, double rtol,
                      std::string_view what);

// CompareTensors on each pair, `what` suffixed with the index ("what[i]").
Status CompareTensorLists(const std::vector<graph::Tensor>& actual,
                          const std::vector<graph::Tensor>& expected, double rtol,
                          std::string_view what);

}  // namespace iosfarm::worker::reference

#endif  // IOSFARM_WORKER_BACKENDS_REFERENCE_COMPARE_H_
