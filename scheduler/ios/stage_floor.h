// StageFloor: a lower envelope of concurrent stage latencies fitted to
// measured stages, for the bounded search's calibrated bound
// (BoundedSearchOptions::floor_samples, bounded_block_search.h).
//
// A stage is described by additive features of its ops (how many kernels
// it launches, its FLOPs, its bytes, a nominal roofline time), its number of
// groups, and groups times roofline (contention). The floor is a linear
// function of them with non-negative slopes (more work never makes a stage
// faster), fitted by least squares and then lowered until no sample lies
// below it; it is refitted a few times on the half of the samples nearest
// it, which moves it towards the lower hull of the samples (a stage ruled
// by its slowest group lies far above it and would tilt it). So on every
// sample the floor is at most the measured latency; on other stages it is a
// lower bound only as far as they behave like the samples: the search's
// stated assumption, with its misses counted (bounded_block_search.h).
// Measured on RandWire (analytic oracle, docs/benchmarks.md): one envelope
// over all features misses far less than the best of several envelopes over
// one or two features each, which are looser and yet cross more stages.
#ifndef IOSFARM_SCHEDULER_IOS_STAGE_FLOOR_H_
#define IOSFARM_SCHEDULER_IOS_STAGE_FLOOR_H_

#include <array>
#include <vector>

#include "graph/graph.h"

namespace iosfarm::scheduler::ios {

// Additive features of one op (GFLOP, MB, ms of a nominal roofline).
struct OpFeatures {
  double kernels = 0;
  double gflops = 0;
  double mbytes = 0;
  double roofline_ms = 0;
};

// The features of `node` of `graph` (shapes inferred).
OpFeatures ComputeOpFeatures(const graph::Graph& graph, const graph::Node& node);

class StageFloor {
 public:
  // 1, groups, kernels, GFLOP, MB, roofline ms, groups x roofline ms.
  static constexpr int kFeatures = 7;
  using Features = std::array<double, kFeatures>;

  static Features StageFeatures(const OpFeatures& sum, int groups) {
    const double k = static_cast<double>(groups);
    return {1.0, k, sum.kernels, sum.gflops, sum.mbytes, sum.roofline_ms, k * sum.roofline_ms};
  }

  // Fits the floor to (features, latency ms) samples; with fewer than
  // kFeatures + 2 samples (or sizes that differ) it stays unfitted.
  void Fit(const std::vector<Features>& x, const std::vector<double>& y);

  // The floor of a stage (at least 0); 0 while unfitted.
  double operator()(const Features& x) const;

  bool fitted() const { return fitted_; }
  const Features& coefficients() const { return beta_; }

 private:
  Features beta_{};
  bool fitted_ = false;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGE_FLOOR_H_
