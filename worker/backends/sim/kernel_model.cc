#include "worker/backends/sim/kernel_model.h"

#include <algorithm>
#include <cmath>

#include "graph/cost.h"

namespace iosfarm::worker::sim {
namespace {

constexpr double kBytesPerElement = 4.0;  // fp32

double Elements(const graph::Graph& graph, graph::ValueId value) {
  return static_cast<double>(graph::NumElements(graph.value(value).shape));
}

// As graph::ComputeOpCost counts a fused activation.
double ActivationFlopsPerOutput(graph::Activation activation) {
  switch (activation) {
    case graph::Activation::kNone:
      return 0;
    case graph::Activation::kRelu:
    case graph::Activation::kClip:
      return 1;
    case graph::Activation::kSigmoid:
    case graph::Activation::kTanh:
      return 4;
  }
  return 0;
}

}  // namespace

double SimKernel::AloneUs(const SimDeviceModel& model) const {
  return work_us * static_cast<double>(model.sm_count) / static_cast<double>(sm_demand);
}

SimKernel KernelFromCounts(double flops, double bytes, double elements_read,
                           double output_elements, const SimDeviceModel& model) {
  // GFLOP/s * 1e3 = FLOP/us; GB/s * 1e3 = bytes/us.
  const double compute_us = flops / (model.efficiency * model.peak_gflops * 1e3);
  const double memory_us = bytes / (model.efficiency * model.bandwidth_gbps * 1e3);
  const double items = std::max(output_elements, elements_read / model.reads_per_item);
  SimKernel kernel;
  kernel.work_us = std::max(compute_us, memory_us);
  kernel.sm_demand = static_cast<int>(std::clamp(std::ceil(items / model.items_per_sm), 1.0,
                                                 static_cast<double>(model.sm_count)));
  return kernel;
}

std::optional<SimKernel> OpKernel(const graph::Graph& graph, const graph::Node& node,
                                  const SimDeviceModel& model) {
  if (graph::LaunchesNoKernel(node.type)) return std::nullopt;
  const graph::OpCost cost = graph::ComputeOpCost(graph, node);
  double outputs = 0;
  for (graph::ValueId v : node.outputs) outputs += Elements(graph, v);
  return KernelFromCounts(static_cast<double>(cost.flops),
                          static_cast<double>(cost.bytes_read + cost.bytes_written),
                          static_cast<double>(cost.bytes_read) / kBytesPerElement, outputs,
                          model);
}

scheduler::ios::DeviceFloor SimDeviceFloor(const SimDeviceModel& model, double scale) {
  scheduler::ios::DeviceFloor floor;
  floor.stage_ms = scale * model.stage_sync_us / 1e3;
  floor.launch_ms = scale * model.kernel_launch_us / 1e3;
  floor.peak_gflops = model.efficiency * model.peak_gflops / scale;
  floor.bandwidth_gbps = model.efficiency * model.bandwidth_gbps / scale;
  if (model.back_to_back) {
    floor.back_to_back = true;  // stage + max(K * launch, work): SimulateStageUs's terms
  } else {
    floor.issue_order = scheduler::ios::DeviceFloor::IssueOrder::kRoundRobin;  // IssueKernels
  }
  return floor;
}

SimKernel MergedConvKernel(const graph::Graph& graph, const scheduler::ios::MergedConv& merged,
                           const SimDeviceModel& model) {
  const graph::ConvAttrs& a = merged.attrs;
  const double input = Elements(graph, merged.input);
  const double in_channels = static_cast<double>(graph.value(merged.input).shape[1]);
  const double taps = static_cast<double>(a.kernel[0] * a.kernel[1]);
  // Every branch has the merged output's spatial size.
  double outputs = 0;
  for (const scheduler::ios::MergedBranch& branch : merged.branches) {
    outputs += Elements(graph, graph.node(branch.op).outputs[0]);
  }
  const double channels = static_cast<double>(a.out_channels);
  const double weights = channels * in_channels * taps + (a.has_bias ? channels : 0.0);
  const double macs = outputs * in_channels * taps;
  const double flops = 2 * macs + (a.has_bias ? outputs : 0.0) +
                       ActivationFlopsPerOutput(a.activation) * outputs;
  const double read = input + weights;
  return KernelFromCounts(flops, kBytesPerElement * (read + outputs), read, outputs, model);
}

}  // namespace iosfarm::worker::sim
