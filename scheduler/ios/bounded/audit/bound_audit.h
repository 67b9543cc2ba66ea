// AuditBounds: the bounded search's bounds (block_bounds.h) checked on every
// candidate stage of a block, not only on those a search evaluates: how
// often and by how much a latency source breaks the search's assumption
// (bounded_block_search.h), by kind (a concurrent stage, a merge), and
// whether the cost to go stays consistent where it holds.
//
// Why: a search counts a miss only for a stage it evaluates below its
// bound, which says little about the stages it skipped. The tests audit
// models that keep the assumption (block_bounds_test.cc) and the sim
// (sim_device_floor_test.cc); bench/bound_audit_bench audits a real
// backend's measurements.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_AUDIT_BOUND_AUDIT_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_AUDIT_BOUND_AUDIT_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/block_graph.h"
#include "scheduler/ios/bounded/bounded_block_search.h"
#include "scheduler/ios/latency_oracle.h"

namespace iosfarm::scheduler::ios {

struct BoundAudit {
  int64_t endings = 0;
  // Endings whose bound is above their slowest group alone (the floors or
  // the core bound raised it).
  int64_t raised = 0;
  // Endings whose concurrent stage is faster than their bound: the
  // assumption broken by a concurrent stage; the largest shortfall, in ms
  // and as a share of the bound.
  int64_t below = 0;
  double largest_below_ms = 0;
  double largest_below_share = 0;
  // Mergeable endings whose merged convolution is faster than their bound
  // (the slowest branch alone): the assumption broken by a merge; the
  // largest shortfall, in ms and as a share of the bound.
  int64_t merge_below = 0;
  double largest_merge_shortfall_ms = 0;
  double largest_merge_shortfall_share = 0;
  // Concurrent endings that take the sub-stage bound (block_stages.h,
  // TakesSubStageBound: three or more groups, not mergeable where merges are
  // on) faster than a stage of all but one of their groups, both timed
  // concurrently: the assumption broken by adding a group, which the
  // search's sub-stage bound relies on; the largest
  // shortfall, in ms and as a share of the sub-stage's latency. A stage of
  // all but one group of an ending is itself an ending of the same state
  // (groups share no edge), so a remembering oracle measures nothing more.
  // Checking all but one group covers every smaller subset of stages that
  // do not merge: a break there breaks some chain of one-group steps.
  int64_t sub_below = 0;
  double largest_sub_shortfall_ms = 0;
  double largest_sub_shortfall_share = 0;
  // Endings E of a state S, of latencies that keep their bound, where the
  // cost to go without the cost-to-go DP is not consistent over E's latency (the
  // cheaper strategy's): h(S) > latency(E) + h(S - E). A* closes a state
  // the first time it takes it only where this is 0.
  int64_t inconsistent = 0;
  // The same over E's bound instead of its latency, a stronger property
  // that the bounds do not promise: a merge's bound is its slowest branch,
  // while the cost to go weighs the merged kernel's share of the floor.
  int64_t bound_inconsistent = 0;
  std::string first_failure;  // the first below, sub-below or inconsistent one, described

  // Adds another block's audit: counts summed, largest shortfalls kept,
  // the first failure kept (`other`'s prefixed with `context` where this
  // has none).
  void Add(const BoundAudit& other, const std::string& context = "");
};

// BlockBounds (block_bounds.h) of `block` (at most 64 ops) under `options`
// (bounds, merge, device floor, cores), its groups
// measured by `measure` (signature, stage), checked on every ending E of
// every state S: its bound against its concurrent and merged latencies,
// its concurrent latency against its sub-stages' (sub_below), and the
// consistency of the cost to go without the cost-to-go DP
// (BlockBounds::PathCostToGo). Relative tolerance 1e-9. Asks for a
// concurrent stage once per signature, a merged one once for every state it
// ends, so a backend oracle should remember signatures (MakeBackendOracle
// does). Walks every state of the block: keep
// blocks small. InvalidArgument for a larger block;
// the oracle's errors are returned.
StatusOr<BoundAudit> AuditBounds(const BlockGraph& block, const BoundedSearchOptions& options,
                                 const SignedLatencyFn& measure);

// AuditBounds on every block of `graph` cut at `max_block_ops` ops (at most
// 64), summed (BoundAudit::Add; a failure names its block's first op).
// Identical blocks repeat their endings; a remembering oracle measures
// them once.
StatusOr<BoundAudit> AuditGraphBounds(const graph::Graph& graph, int max_block_ops,
                                      const BoundedSearchOptions& options,
                                      const SignedLatencyFn& measure);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_AUDIT_BOUND_AUDIT_H_
