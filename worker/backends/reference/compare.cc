#include "worker/backends/reference/compare.h"

#include <cmath>

#include "common/strings.h"

namespace iosfarm::worker::reference {

Status CompareTensors(const graph::Tensor& actual, const graph::Tensor& expected, double rtol,
                      std::string_view what) {
  if (actual.shape != expected.shape || actual.data.size() != expected.data.size()) {
    return absl::InternalError(StrCat(what, ": shape ", graph::ShapeToString(actual.shape),
                                      " (", actual.data.size(), " values), expected ",
                                      graph::ShapeToString(expected.shape), " (",
                                      expected.data.size(), " values)"));
  }
  double sum_squares = 0;
  for (float e : expected.data) sum_squares += static_cast<double>(e) * e;
  const double rms =
      expected.data.empty() ? 0 : std::sqrt(sum_squares / static_cast<double>(expected.data.size()));
  size_t mismatches = 0, worst = 0;
  double worst_ratio = -1;
  for (size_t i = 0; i < expected.data.size(); ++i) {
    const double a = actual.data[i], e = expected.data[i];
    const double scale = std::max(std::abs(e), rms);
    double ratio;
    if (!std::isfinite(a) || !std::isfinite(e)) {
      ratio = INFINITY;
    } else {
      ratio = scale > 0 ? std::abs(a - e) / scale : std::abs(a - e) > 0 ? INFINITY : 0.0;
    }
    if (!(ratio <= rtol)) ++mismatches;
    if (!(ratio <= worst_ratio)) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (mismatches == 0) return absl::OkStatus();
  return absl::InternalError(StrCat(what, ": ", mismatches, " of ", expected.data.size(),
                                    " values differ by more than ", rtol, " (relative); worst at ",
                                    worst, ": ", actual.data[worst], " vs expected ",
                                    expected.data[worst], " (rms ", rms, ")"));
}

Status CompareTensorLists(const std::vector<graph::Tensor>& actual,
                          const std::vector<graph::Tensor>& expected, double rtol,
                          std::string_view what) {
  if (actual.size() != expected.size()) {
    return absl::InternalError(
        StrCat(what, ": ", actual.size(), " tensors, expected ", expected.size()));
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    RETURN_IF_ERROR(CompareTensors(actual[i], expected[i], rtol, StrCat(what, "[", i, "]")));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::reference
