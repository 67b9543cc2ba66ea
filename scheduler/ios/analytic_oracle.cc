#include "scheduler/ios/analytic_oracle.h"

#include <algorithm>
#include <memory>

#include "common/strings.h"
#include "graph/cost.h"
#include "scheduler/ios/op_dag.h"

namespace iosfarm::scheduler::ios {
namespace {

struct OpTime {
  double work_us = 0;   // at full device
  double alone_us = 0;  // launch + work / utilisation
};

OpTime TimeOf(double flops, double bytes, double output_elements,
              const AnalyticDeviceModel& m) {
  OpTime t;
  t.work_us = std::max(flops / (m.peak_gflops * 1e3), bytes / (m.bandwidth_gbps * 1e3));
  const double u = std::clamp(output_elements / m.saturation_elements, 1e-3, 1.0);
  t.alone_us = m.kernel_launch_us + t.work_us / u;
  return t;
}

OpTime NodeTime(const graph::Graph& graph, const graph::Node& node,
                const AnalyticDeviceModel& m) {
  const graph::OpCost cost = graph::ComputeOpCost(graph, node);
  double outputs = 0;
  for (graph::ValueId v : node.outputs) {
    outputs += static_cast<double>(graph::NumElements(graph.value(v).shape));
  }
  return TimeOf(static_cast<double>(cost.flops),
                static_cast<double>(cost.bytes_read + cost.bytes_written), outputs, m);
}

// Time of the merged convolution plus its channel split, in us. At batch 1
// the channel slices of an NCHW output are contiguous, so consumers read them
// in place; larger batches need a split kernel.
double MergedTime(const graph::Graph& graph, const MergedConv& merged,
                  const AnalyticDeviceModel& m) {
  const graph::Shape& in = graph.value(merged.input).shape;
  const graph::Node& first = graph.node(merged.branches.front().op);
  graph::Shape out = graph.value(first.outputs[0]).shape;
  out[1] = merged.attrs.out_channels;
  const double out_elements = static_cast<double>(graph::NumElements(out));
  const double macs = out_elements * static_cast<double>(in[1]) *
                      static_cast<double>(merged.attrs.kernel[0] * merged.attrs.kernel[1]);
  const double weights = static_cast<double>(merged.attrs.out_channels * in[1] *
                                             merged.attrs.kernel[0] * merged.attrs.kernel[1]);
  const double bytes =
      4.0 * (static_cast<double>(graph::NumElements(in)) + weights + out_elements);
  const double flops = 2.0 * macs + 2.0 * out_elements;
  const OpTime conv = TimeOf(flops, bytes, out_elements, m);
  if (out[0] == 1) return conv.alone_us + m.issue_us;
  const OpTime split = TimeOf(0.0, 8.0 * out_elements, out_elements, m);
  return conv.alone_us + split.alone_us + 2.0 * m.issue_us;
}

Status CheckStage(const graph::Graph& graph, const Stage& stage) {
  if (stage.num_ops() == 0) return absl::InvalidArgumentError("empty stage");
  if (stage.single_core) {
    return absl::InvalidArgumentError(
        "the analytic model has no cores: it cannot time a single-core stage (a measurement for "
        "cpu devices, SearchOptions::cores)");
  }
  for (const auto& group : stage.groups) {
    for (graph::NodeId id : group) {
      if (id < 0 || id >= graph.num_nodes()) {
        return absl::InvalidArgumentError(StrCat("stage node id ", id, " out of range"));
      }
    }
  }
  if (stage.strategy == Strategy::kMerge &&
      (!stage.merged || stage.merged->branches.empty())) {
    return absl::InvalidArgumentError("merge stage without its merged convolution");
  }
  return absl::OkStatus();
}

template <typename TimeFn>
double StageTime(const graph::Graph& graph, const Stage& stage, const AnalyticDeviceModel& m,
                 TimeFn&& time_of) {
  if (stage.strategy == Strategy::kMerge) {
    return (m.stage_sync_us + MergedTime(graph, *stage.merged, m)) / 1e3;
  }
  double longest = 0, total_work = 0;
  int ops = 0;
  for (const auto& group : stage.groups) {
    double group_time = 0;
    for (graph::NodeId id : group) {
      const OpTime t = time_of(id);
      group_time += t.alone_us;
      total_work += t.work_us;
      ++ops;
    }
    longest = std::max(longest, group_time);
  }
  const double groups = static_cast<double>(stage.groups.size());
  const double device_bound =
      total_work * (1.0 + m.contention * (groups - 1.0)) + m.issue_us * ops;
  return (m.stage_sync_us + std::max(longest + m.issue_us, device_bound)) / 1e3;
}

}  // namespace

DeviceFloor AnalyticDeviceFloor(const AnalyticDeviceModel& model) {
  DeviceFloor floor;
  floor.stage_ms = model.stage_sync_us / 1e3;
  floor.launch_ms = model.issue_us / 1e3;
  floor.peak_gflops = model.peak_gflops;
  floor.bandwidth_gbps = model.bandwidth_gbps;
  floor.issue_overlaps_work = false;  // device_bound adds them
  floor.contention = model.contention;
  return floor;
}

StatusOr<double> AnalyticStageLatency(const graph::Graph& graph, const Stage& stage,
                                      const AnalyticDeviceModel& model) {
  RETURN_IF_ERROR(CheckStage(graph, stage));
  return StageTime(graph, stage, model, [&](graph::NodeId id) {
    return NodeTime(graph, graph.node(id), model);
  });
}

StageLatencyFn MakeAnalyticOracle(const graph::Graph& graph, const AnalyticDeviceModel& model) {
  auto times = std::make_shared<std::vector<OpTime>>();
  times->reserve(graph.num_nodes());
  for (const graph::Node& node : graph.nodes()) {
    times->push_back(IsFreeNode(node) ? OpTime{} : NodeTime(graph, node, model));
  }
  return [&graph, model, times](const Stage& stage) -> StatusOr<double> {
    RETURN_IF_ERROR(CheckStage(graph, stage));
    return StageTime(graph, stage, model, [&](graph::NodeId id) { return (*times)[id]; });
  };
}

}  // namespace iosfarm::scheduler::ios
