// Stage: a set of operators executed together, after every earlier stage.
//
// Strategy kConcurrent: the stage's ops are split into groups; groups run in
// parallel (one stream each), the ops of a group run in the listed order.
// Ops in different groups have no path between them inside the stage; in the
// schedules this library builds, the groups are exactly the connected
// components of the stage (IOS's definition).
// Strategy kMerge: every group is one Conv and all of them read the same
// tensor; they run as the single convolution `merged` (merge.h), whose output
// channels are split back into the original ops' outputs.
// single_core (concurrent stages only): a measurement, never part of a
// schedule: every group one after another on one core of a device that runs
// a stage's groups on cores of their own (the cpu backend). The bounded
// search measures each group so, to bound stages by their work over the
// device's cores (SearchOptions::cores).
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_STAGE_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_STAGE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/attributes.h"
#include "graph/graph.h"

namespace iosfarm::scheduler::ios {

enum class Strategy { kConcurrent, kMerge };

// "concurrent" / "merge".
std::string_view StrategyName(Strategy strategy);
// Inverse of StrategyName; nullopt for other text.
std::optional<Strategy> StrategyFromName(std::string_view name);

// One original convolution inside a merged one.
struct MergedBranch {
  graph::NodeId op = graph::kNoNode;
  int64_t channel_begin = 0;  // its output channels in the merged output:
  int64_t channel_end = 0;    // [channel_begin, channel_end)
  // Where its kernel sits in the merged kernel, {row, column} of its top-left
  // tap (the rest of the merged kernel is zero for this branch).
  std::array<int64_t, 2> kernel_offset = {0, 0};
};

// The single convolution a merge stage runs.
struct MergedConv {
  graph::ValueId input = -1;    // the tensor every branch reads
  graph::ConvAttrs attrs;       // kernel = largest, pads = common, channels = sum
  std::vector<MergedBranch> branches;  // in output channel order
};

struct Stage {
  Strategy strategy = Strategy::kConcurrent;
  std::vector<std::vector<graph::NodeId>> groups;
  std::optional<MergedConv> merged;  // set iff strategy == kMerge
  bool single_core = false;          // see above; only with kConcurrent

  int num_ops() const {
    int n = 0;
    for (const auto& g : groups) n += static_cast<int>(g.size());
    return n;
  }
};

// "concurrent[a,b | c]", "merge[a+b+c]" or "single-core[a,b | c]" with node
// names, for logs and tests.
std::string StageToString(const graph::Graph& graph, const Stage& stage);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_STAGE_H_
