#include "scheduler/ios/bounded/audit/bound_audit.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "scheduler/ios/blocks.h"
#include "scheduler/ios/bounded/block_bounds.h"
#include "scheduler/ios/endings.h"
#include "scheduler/ios/stages/block_stages.h"

namespace iosfarm::scheduler::ios {
namespace {

// Measures what it is asked for, on the spot.
class MeasuringSource : public LatencySource {
 public:
  explicit MeasuringSource(const SignedLatencyFn& measure) : measure_(measure) {}
  std::optional<double> Lookup(Signature signature, absl::FunctionRef<Stage()> stage) override {
    StatusOr<double> latency = measure_(signature, stage());
    if (!latency.ok()) {
      status_ = latency.status();
      return std::nullopt;
    }
    return *latency;
  }
  Status status() const override { return status_; }

 private:
  const SignedLatencyFn& measure_;
  Status status_;
};

// Counts one latency `ms` short of a bound `of`, keeping the largest
// shortfall in ms and as a share of the bound.
void Shortfall(double ms, double of, int64_t& count, double& largest_ms, double& largest_share) {
  ++count;
  largest_ms = std::max(largest_ms, ms);
  largest_share = std::max(largest_share, ms / of);
}

}  // namespace

void BoundAudit::Add(const BoundAudit& other, const std::string& context) {
  endings += other.endings;
  raised += other.raised;
  below += other.below;
  largest_below_ms = std::max(largest_below_ms, other.largest_below_ms);
  largest_below_share = std::max(largest_below_share, other.largest_below_share);
  merge_below += other.merge_below;
  largest_merge_shortfall_ms =
      std::max(largest_merge_shortfall_ms, other.largest_merge_shortfall_ms);
  largest_merge_shortfall_share =
      std::max(largest_merge_shortfall_share, other.largest_merge_shortfall_share);
  sub_below += other.sub_below;
  largest_sub_shortfall_ms = std::max(largest_sub_shortfall_ms, other.largest_sub_shortfall_ms);
  largest_sub_shortfall_share =
      std::max(largest_sub_shortfall_share, other.largest_sub_shortfall_share);
  inconsistent += other.inconsistent;
  bound_inconsistent += other.bound_inconsistent;
  if (first_failure.empty() && !other.first_failure.empty()) {
    first_failure =
        context.empty() ? other.first_failure : StrCat(context, ": ", other.first_failure);
  }
}

StatusOr<BoundAudit> AuditBounds(const BlockGraph& block, const BoundedSearchOptions& options,
                                 const SignedLatencyFn& measure) {
  if (block.words() != 1) return absl::InvalidArgumentError("blocks of at most 64 ops");
  MeasuringSource source(measure);
  BlockBounds<1> bounds(block, options);
  BlockStages<1> stages(block);
  if (!bounds.EnumerateGroups()) return absl::ResourceExhaustedError("too many groups");
  std::vector<Signature> waiting;
  RETURN_IF_ERROR(bounds.LookUpGroups(source, stages, &waiting));
  if (!waiting.empty()) return absl::InternalError("an inline source never waits");
  bounds.Prepare(stages);
  EndingEnumerator<1> enumerator(block, options.dp.bounds);
  std::vector<int32_t> ids(options.dp.bounds.max_groups);
  BoundAudit check;
  Status status;
  auto fail = [&](const char* what, const OpBits<1>& state, const OpBits<1>& ops, double lhs,
                  double rhs) {
    if (check.first_failure.empty()) {
      check.first_failure = StrCat(what, ": ending ", ops.words[0], " of state ", state.words[0],
                                   ": ", lhs, " > ", rhs);
    }
  };
  // The concurrent latency of a stage, measured once per signature: each
  // sub-stage looked up below is also an ending of the same state.
  absl::flat_hash_map<Signature, double> concurrent_ms;
  auto concurrent_of = [&](const OpBits<1>& ops) -> StatusOr<double> {
    const Signature signature = stages.HashStage(ops);
    if (auto it = concurrent_ms.find(signature); it != concurrent_ms.end()) return it->second;
    ASSIGN_OR_RETURN(double ms, measure(signature, stages.CanonicalStage(Strategy::kConcurrent)));
    concurrent_ms.emplace(signature, ms);
    return ms;
  };
  ForEachRemainingSet<1>(block, std::numeric_limits<int64_t>::max(), [&](const OpBits<1>& state) {
    const double h = bounds.PathCostToGo(state);
    enumerator.Enumerate(state, [&](const OpBits<1>& ops, EndingGroup<1>* groups, int num_groups) {
      if (!status.ok()) return;
      const int found = bounds.GroupIds(groups, num_groups, ids.data());
      if (found != num_groups) {
        status = absl::InternalError(StrCat("ending ", ops.words[0], ": a group not enumerated"));
        return;
      }
      const double bound = bounds.IdsBound(ops, ids.data(), found, num_groups,
                                           std::numeric_limits<double>::infinity());
      // With a cutoff of 0 IdsBound stops at the slowest group.
      check.raised +=
          bound > bounds.IdsBound(ops, ids.data(), found, num_groups, 0.0) * (1 + 1e-12);
      StatusOr<double> concurrent = concurrent_of(ops);
      if (!concurrent.ok()) {
        status = concurrent.status();
        return;
      }
      double latency = *concurrent;
      ++check.endings;
      bool kept = true;  // the latencies keep the bound
      if (bound > RoundingLimit(*concurrent)) {
        Shortfall(bound - *concurrent, bound, check.below, check.largest_below_ms,
                  check.largest_below_share);
        kept = false;
        fail("bound above the concurrent latency", state, ops, bound, *concurrent);
      }
      if (options.dp.enable_merge && stages.IsMergeable(ops)) {
        StatusOr<double> merged =
            measure(stages.MergeSignature(), stages.CanonicalStage(Strategy::kMerge));
        if (!merged.ok()) {
          status = merged.status();
          return;
        }
        latency = std::min(latency, *merged);
        if (bound > RoundingLimit(*merged)) {
          Shortfall(bound - *merged, bound, check.merge_below, check.largest_merge_shortfall_ms,
                    check.largest_merge_shortfall_share);
          kept = false;
        }
      }
      if (TakesSubStageBound(block, ops, num_groups, options.dp.enable_merge)) {
        double slowest_sub = 0;  // of the stages of all but one group
        for (int i = 0; i < num_groups; ++i) {
          StatusOr<double> sub = concurrent_of(ops.Minus(groups[i].ops));
          if (!sub.ok()) {
            status = sub.status();
            return;
          }
          slowest_sub = std::max(slowest_sub, *sub);
        }
        if (slowest_sub > RoundingLimit(*concurrent)) {
          Shortfall(slowest_sub - *concurrent, slowest_sub, check.sub_below,
                    check.largest_sub_shortfall_ms, check.largest_sub_shortfall_share);
          fail("a stage of all but one group above the concurrent latency", state, ops, slowest_sub,
               *concurrent);
        }
      }
      const double after = bounds.PathCostToGo(state.Minus(ops));
      if (kept && h > RoundingLimit(latency + after)) {
        ++check.inconsistent;
        fail("h(S) above latency(E) + h(S - E)", state, ops, h, latency + after);
      }
      check.bound_inconsistent += h > RoundingLimit(bound + after);
    });
  });
  RETURN_IF_ERROR(status);
  return check;
}

StatusOr<BoundAudit> AuditGraphBounds(const graph::Graph& graph, int max_block_ops,
                                      const BoundedSearchOptions& options,
                                      const SignedLatencyFn& measure) {
  BlockOptions block_options;
  block_options.max_block_ops = max_block_ops;
  ASSIGN_OR_RETURN(BlockPartition partition, PartitionIntoBlocks(graph, block_options));
  BoundAudit sum;
  for (const Block& block : partition.blocks) {
    ASSIGN_OR_RETURN(BlockGraph block_graph, BlockGraph::Build(graph, block.ops));
    ASSIGN_OR_RETURN(BoundAudit audit, AuditBounds(block_graph, options, measure));
    sum.Add(audit, StrCat("block starting at '", graph.node(block.ops[0]).name, "'"));
  }
  return sum;
}

}  // namespace iosfarm::scheduler::ios
