// Test helpers for scheduler/ios: random small graphs, random latency
// oracles and an exhaustive reference search. Test-only.
#ifndef IOSFARM_SCHEDULER_IOS_TESTING_TESTING_UTIL_H_
#define IOSFARM_SCHEDULER_IOS_TESTING_TESTING_UTIL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/block_dp.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/bounded/audit/bound_audit.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/search_session.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios::testing {

// A random DAG of exactly `num_ops` operators over [1, C, spatial, spatial]
// tensors (C in {4, 8}): convolutions (1x1, 3x3, 1x3, 3x1, "same" padding,
// often several reading one tensor so that merges are legal), Relu, MaxPool,
// Add and Concat, wired to random earlier tensors. Deterministic in `seed`;
// graphs of one seed and different `spatial` have the same structure and
// different op contents.
graph::Graph RandomDag(uint64_t seed, int num_ops, int spatial = 8);

// `cells` copies of RandomDag(seed, ops_per_cell)'s structure in a chain
// (each behind a 1x1 conv to 8 channels, its loose ends concatenated),
// the spatial size halved every second cell from 32: NASNet's pattern of
// cells of one shape at several sizes (and some identical ones).
graph::Graph RepeatedCells(uint64_t seed, int cells, int ops_per_cell);

// RepeatedCells and a Concat of the last cell's output and its first op's
// (no articulation point between them): with cells >= 4 the last block is
// the last cell, identical to the one before, and one op more (NASNet-A's
// block of a cell and the next cell's first op).
graph::Graph RepeatedCellsWithTail(uint64_t seed, int cells, int ops_per_cell);

// One input [1, 4, 4, 4] feeding `branches` parallel chains of `depth` Relu
// ops, joined by one Concat: the widest graphs there are (a hostile model's
// shape: the DP's state space is 2^branches per block).
graph::Graph WideGraph(int branches, int depth);

// A latency oracle giving every signature a pseudo-random latency in
// [0.1, 10.1) ms (a function of the signature and `seed` only, so stages
// with one signature get one latency, as in a real search).
StageLatencyFn RandomOracle(const graph::Graph& graph, uint64_t seed);

// An oracle that keeps the bounded search's assumption
// (bounded_block_search.h): every group gets a pseudo-random latency alone
// in [0.1, 10.1) ms and an extra cost in [0, 2); a concurrent stage costs
// its slowest group plus the extras of all its groups when it has two or
// more (so adding a group never makes it faster), a merge stage its slowest
// conv plus [0, 3) ms. A function of signatures and `seed` only.
StageLatencyFn GroupMonotoneOracle(const graph::Graph& graph, uint64_t seed);

// An oracle of a device of `cores` cores (>= 2) that keeps the bounded
// search's assumption with its core bound: every group takes a
// pseudo-random w in [0.1, 10.1) ms on one core, and alone on the device
// between w / cores and w; a single-core stage costs its groups' w added; a
// merge stage the larger of its slowest group alone and its groups' w added
// over the cores, a concurrent stage of k >= 2 groups also at least its
// largest w over ceil(cores / k), plus extras as in GroupMonotoneOracle. A
// function of signatures and `seed`.
StageLatencyFn CoresOracle(const graph::Graph& graph, uint64_t seed, int cores);

// The analytic oracle (analytic_oracle.h), except that a merged
// convolution costs at least its slowest branch alone (the bounded search's
// assumption; the analytic model runs a merged convolution at the
// utilisation of its larger output, which can be faster). Keeps a reference
// to `graph`.
StageLatencyFn AnalyticMergeKeepingOracle(const graph::Graph& graph,
                                          const AnalyticDeviceModel& model = {});

// A LatencySource over a StageLatencyFn that measures each signature once
// (a memo) and counts the measurements.
class FnSource : public LatencySource {
 public:
  explicit FnSource(StageLatencyFn fn) : fn_(std::move(fn)) {}
  std::optional<double> Lookup(Signature signature, absl::FunctionRef<Stage()> stage) override;
  Status status() const override { return status_; }
  int64_t measured() const { return measured_; }

 private:
  StageLatencyFn fn_;
  absl::flat_hash_map<Signature, double> memo_;
  Status status_;
  int64_t measured_ = 0;
};

// One case of the random-block sweep the DP and bounded-search tests share:
// a random DAG of n ops (2..12) as one block, with pruning bounds and merge.
struct RandomBlockCase {
  uint64_t seed = 0;
  int n = 0;
  const graph::Graph* graph = nullptr;
  const BlockGraph* block = nullptr;
  DpOptions options;  // bounds and enable_merge
  std::string Describe() const;
};

// Calls `fn` for every case of the sweep: 300 seeds, each with up to five
// (r, s) bounds (1x1, 1x3, 2x2, 3x8, nxn), merge on, and off at r=3.
void ForEachRandomBlockCase(const std::function<void(const RandomBlockCase&)>& fn);

// AuditBounds (bound_audit.h) on every case of the random sweep
// (ForEachRandomBlockCase), with `options` (device floor, cores) taking each
// case's bounds and merge, and the oracle oracle_of(case); the counts
// summed, the first failure prefixed with its case. The first error ends it.
StatusOr<BoundAudit> CheckSweepEndingsBound(
    const BoundedSearchOptions& options,
    const std::function<StageLatencyFn(const RandomBlockCase&)>& oracle_of);

// The cheapest schedule cost over *all* schedules of the graph whose stages
// have at most `max_groups` groups (connected components) of at most
// `max_group_ops` ops, each stage costed as the cheaper of concurrent and,
// when MergeConvs accepts its ops, merge. Forward search over done-sets with
// brute-force subset enumeration: independent of the DP's ending
// enumeration. Graphs up to ~14 ops.
StatusOr<double> ExhaustiveOptimum(const graph::Graph& graph, int max_group_ops,
                                   int max_groups, bool enable_merge,
                                   const StageLatencyFn& oracle);

// A concurrent stage with the given groups.
Stage ConcurrentStage(std::vector<std::vector<graph::NodeId>> groups);

// A merge stage of the convolutions `ops` (one group each); MergeConvs's
// error when they cannot be merged.
StatusOr<Stage> MergeStage(const graph::Graph& graph, const std::vector<graph::NodeId>& ops);

// A schedule of `stages` in order (block 0, no signatures or latencies).
Schedule ScheduleOf(std::vector<Stage> stages);

// Drives a search as a farm job does: NextUnknown(batch) until it hands out
// nothing, each request measured with `oracle` and provided. Appends each
// request's signature to *requested (and its latency to *latencies unless
// null). An error where a batch is wider than `batch`, a request's stage
// does not have its signature, or the session is not done with nothing
// outstanding at the end.
StatusOr<SearchResult> RunBatched(const graph::Graph& graph, const SearchOptions& options,
                                  const StageLatencyFn& oracle, int batch,
                                  std::vector<Signature>* requested,
                                  std::vector<double>* latencies = nullptr);

}  // namespace iosfarm::scheduler::ios::testing

#endif  // IOSFARM_SCHEDULER_IOS_TESTING_TESTING_UTIL_H_
