#include "scheduler/ios/stage_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/cost.h"

namespace iosfarm::scheduler::ios {
namespace {

// A nominal device for the roofline feature only (its scale is fitted):
// FLOP per byte at the ridge point of a current GPU.
constexpr double kRidgeFlopsPerByte = 16.0;

// Refits on the samples nearest the envelope (towards the lower hull).
constexpr int kHullRounds = 4;

// Least squares of y on the columns `use` of x (plus the constant), with a
// small ridge; false when the normal equations are singular.
bool LeastSquares(const std::vector<StageFloor::Features>& x, const std::vector<double>& y,
                  const std::vector<int>& use, StageFloor::Features* beta) {
  std::vector<int> cols = {0};
  cols.insert(cols.end(), use.begin(), use.end());
  const int m = static_cast<int>(cols.size());
  // Scale columns to unit RMS so that the ridge and pivots mean the same
  // for GFLOP and kernel counts.
  std::vector<double> scale(m, 0.0);
  for (int c = 0; c < m; ++c) {
    for (const auto& row : x) scale[c] += row[cols[c]] * row[cols[c]];
    scale[c] = std::sqrt(scale[c] / static_cast<double>(x.size()));
    if (scale[c] <= 0) scale[c] = 1;
  }
  std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
  for (size_t i = 0; i < x.size(); ++i) {
    for (int r = 0; r < m; ++r) {
      const double xr = x[i][cols[r]] / scale[r];
      for (int c = 0; c < m; ++c) a[r][c] += xr * x[i][cols[c]] / scale[c];
      a[r][m] += xr * y[i];
    }
  }
  for (int r = 0; r < m; ++r) a[r][r] += 1e-9 * static_cast<double>(x.size());
  for (int p = 0; p < m; ++p) {  // Gauss-Jordan with partial pivoting
    int best = p;
    for (int r = p + 1; r < m; ++r) {
      if (std::abs(a[r][p]) > std::abs(a[best][p])) best = r;
    }
    if (std::abs(a[best][p]) < 1e-12) return false;
    std::swap(a[p], a[best]);
    for (int r = 0; r < m; ++r) {
      if (r == p) continue;
      const double factor = a[r][p] / a[p][p];
      for (int c = p; c <= m; ++c) a[r][c] -= factor * a[p][c];
    }
  }
  beta->fill(0.0);
  for (int r = 0; r < m; ++r) (*beta)[cols[r]] = a[r][m] / a[r][r] / scale[r];
  return true;
}

double Dot(const StageFloor::Features& beta, const StageFloor::Features& x) {
  double sum = 0;
  for (int i = 0; i < StageFloor::kFeatures; ++i) sum += beta[i] * x[i];
  return sum;
}

}  // namespace

OpFeatures ComputeOpFeatures(const graph::Graph& graph, const graph::Node& node) {
  OpFeatures features;
  if (graph::LaunchesNoKernel(node.type)) return features;
  const graph::OpCost cost = graph::ComputeOpCost(graph, node);
  const double bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  const double flops = static_cast<double>(cost.flops);
  features.kernels = 1;
  features.gflops = flops * 1e-9;
  features.mbytes = bytes * 1e-6;
  // ms at 1 TB/s and kRidgeFlopsPerByte TFLOP/s.
  features.roofline_ms = std::max(flops / kRidgeFlopsPerByte, bytes) * 1e-9;
  return features;
}

void StageFloor::Fit(const std::vector<Features>& x, const std::vector<double>& y) {
  fitted_ = false;
  if (x.size() != y.size() || x.size() < static_cast<size_t>(kFeatures) + 2) return;
  std::vector<Features> active_x = x;
  std::vector<double> active_y = y;
  for (int round = 0; round < kHullRounds && active_x.size() >= static_cast<size_t>(kFeatures);
       ++round) {
    // Non-negative slopes (more work never makes a stage faster): drop the
    // most negative feature and refit until none is.
    std::vector<int> kept;
    for (int f = 1; f < kFeatures; ++f) kept.push_back(f);
    Features beta;
    while (true) {
      if (!LeastSquares(active_x, active_y, kept, &beta)) return;
      auto worst = kept.end();
      for (auto f = kept.begin(); f != kept.end(); ++f) {
        if (beta[*f] < 0 && (worst == kept.end() || beta[*f] < beta[*worst])) worst = f;
      }
      if (worst == kept.end()) break;
      kept.erase(worst);
    }
    // Lowered below every sample.
    std::vector<double> residual(x.size());
    double lowest = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < x.size(); ++i) {
      residual[i] = y[i] - Dot(beta, x[i]);
      lowest = std::min(lowest, residual[i]);
    }
    beta[0] += lowest;
    beta_ = beta;
    fitted_ = true;
    // The next round fits the half of the samples nearest the envelope.
    std::vector<double> sorted = residual;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double median = sorted[sorted.size() / 2];
    active_x.clear();
    active_y.clear();
    for (size_t i = 0; i < x.size(); ++i) {
      if (residual[i] <= median) {
        active_x.push_back(x[i]);
        active_y.push_back(y[i]);
      }
    }
  }
}

double StageFloor::operator()(const Features& x) const {
  return fitted_ ? std::max(0.0, Dot(beta_, x)) : 0.0;
}

}  // namespace iosfarm::scheduler::ios
