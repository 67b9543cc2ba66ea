#include "scheduler/ios/bounded/device_floor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <variant>

#include "common/strings.h"
#include "graph/cost.h"

namespace iosfarm::scheduler::ios {
namespace {

constexpr double kBytesPerElement = 4.0;  // fp32, as graph::ComputeOpCost counts

std::string Number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4g", x);
  return buffer;
}

}  // namespace

std::string DescribeDeviceFloor(const DeviceFloor& floor) {
  std::string text = StrCat("stage ", Number(floor.stage_ms * 1e3), " us, launch ",
                            Number(floor.launch_ms * 1e3), " us");
  if (floor.peak_gflops > 0) text += StrCat(", ", Number(floor.peak_gflops / 1e3), " TFLOP/s");
  if (floor.bandwidth_gbps > 0) text += StrCat(", ", Number(floor.bandwidth_gbps), " GB/s");
  text += floor.issue_overlaps_work ? ", issue overlaps work" : ", issue adds to work";
  if (floor.issue_order != DeviceFloor::IssueOrder::kUnknown) {
    text += StrCat(", ", IssueOrderName(floor.issue_order), " issue");
  }
  if (floor.back_to_back) text += ", timed back to back";
  if (floor.contention > 0) {
    text += StrCat(", work ", Number(floor.contention * 100), " % slower per extra group");
  }
  if (floor.free_ops == DeviceFloor::FreeOps::kViewsAndFusable) {
    text += ", Add, Relu, Concat and Split may launch no kernel";
  }
  return text;
}

std::string_view IssueOrderName(DeviceFloor::IssueOrder order) {
  switch (order) {
    case DeviceFloor::IssueOrder::kRoundRobin:
      return "round-robin";
    case DeviceFloor::IssueOrder::kGroupByGroup:
      return "group by group";
    case DeviceFloor::IssueOrder::kUnknown:
      break;
  }
  return "unknown";
}

double IssuedChainsFloorMs(const DeviceFloor& floor,
                           std::span<const std::span<const double>> chains) {
  // The cost-to-go DP's walk takes this for many of its endings: no more
  // zeroing or passes than the stage's groups need.
  constexpr size_t kMaxGroups = 64;
  double finish[kMaxGroups];
  const size_t groups = std::min(chains.size(), kMaxGroups);
  std::fill_n(finish, groups, 0.0);
  double clock = 0, end = 0;
  auto issue = [&](size_t g, size_t i) {
    clock += floor.launch_ms;
    finish[g] = std::max(finish[g], clock) + chains[g][i];
    end = std::max(end, finish[g]);
  };
  if (floor.issue_order == DeviceFloor::IssueOrder::kGroupByGroup) {
    for (size_t g = 0; g < groups; ++g) {
      for (size_t i = 0; i < chains[g].size(); ++i) issue(g, i);
    }
  } else if (floor.issue_order == DeviceFloor::IssueOrder::kRoundRobin) {
    size_t longest = 0;
    for (size_t g = 0; g < groups; ++g) longest = std::max(longest, chains[g].size());
    for (size_t i = 0; i < longest; ++i) {
      for (size_t g = 0; g < groups; ++g) {
        if (i < chains[g].size()) issue(g, i);
      }
    }
  } else {
    return 0;  // no order, no bound from it
  }
  return floor.stage_ms + end;
}

OpFloor ComputeOpFloor(const graph::Graph& graph, const graph::Node& node, const DeviceFloor& floor,
                       int merge_width) {
  OpFloor op;
  if (graph::LaunchesNoKernel(node.type)) return op;
  if (floor.free_ops == DeviceFloor::FreeOps::kViewsAndFusable &&
      (node.type == graph::OpType::kAdd || node.type == graph::OpType::kRelu ||
       node.type == graph::OpType::kConcat || node.type == graph::OpType::kSplit)) {
    return op;
  }
  const double width = std::max(merge_width, 1);
  op.kernels = 1 / width;
  if (floor.peak_gflops <= 0 && floor.bandwidth_gbps <= 0) return op;
  const graph::OpCost cost = graph::ComputeOpCost(graph, node);
  double flops = static_cast<double>(cost.flops);
  double bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  if (width > 1 && !node.inputs.empty()) {
    // Its share of a merged convolution: the input read once, and only the
    // multiply-accumulates and weights (a model may leave bias and
    // activation out of the merged kernel's count).
    flops = 2 * static_cast<double>(cost.macs);
    const double input = static_cast<double>(graph::NumElements(graph.value(node.inputs[0]).shape));
    double shared = input * (1 - 1 / width);
    if (const auto* conv = std::get_if<graph::ConvAttrs>(&node.attrs); conv && conv->has_bias) {
      shared += static_cast<double>(conv->out_channels);
    }
    bytes = std::max(0.0, bytes - kBytesPerElement * shared);
  }
  // GFLOP/s * 1e6 = FLOP/ms; GB/s * 1e6 = bytes/ms.
  if (floor.peak_gflops > 0) op.compute_ms = flops / (floor.peak_gflops * 1e6);
  if (floor.bandwidth_gbps > 0) op.memory_ms = bytes / (floor.bandwidth_gbps * 1e6);
  return op;
}

}  // namespace iosfarm::scheduler::ios
