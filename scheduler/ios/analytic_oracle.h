// A deterministic analytic latency model of stages, for tests, benchmarks and
// simulation (the `sim` backend can reuse it). Not a measurement.
//
// Per op (graph/cost.h counts, fp32): work = max(flops / peak, bytes /
// bandwidth) is the time at full device; an op whose output has fewer
// elements than `saturation_elements` can use only that fraction u of the
// device, so alone it takes launch + work / u.
// Concurrent stage: stage_sync + max(longest group (sum of its ops' times),
// device-bound time = total work * (1 + contention * (groups - 1)) + issue *
// total ops). Merge stage: one convolution with the zero-padded merged
// kernel (merge.h), plus one channel-split kernel over its output when the
// batch is above 1 (at batch 1 the channel slices are contiguous views).
// Latencies are in milliseconds.
#ifndef IOSFARM_SCHEDULER_IOS_ANALYTIC_ORACLE_H_
#define IOSFARM_SCHEDULER_IOS_ANALYTIC_ORACLE_H_

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

// Defaults roughly model a V100-class GPU at batch 1.
struct AnalyticDeviceModel {
  double peak_gflops = 14000.0;          // fp32 GFLOP/s
  double bandwidth_gbps = 800.0;         // GB/s
  double kernel_launch_us = 4.0;         // per kernel, on its stream
  double issue_us = 1.0;                 // per kernel, serial host issue
  double stage_sync_us = 2.0;            // per stage
  double saturation_elements = 65536.0;  // outputs needed to fill the device
  double contention = 0.05;              // per extra concurrent group
};

// Latency in ms of `stage` of `graph` (shapes inferred). InvalidArgument for
// an empty stage, ops out of range, a merge stage without its merged conv,
// or a single-core stage (the model has no cores).
StatusOr<double> AnalyticStageLatency(const graph::Graph& graph, const Stage& stage,
                                      const AnalyticDeviceModel& model = {});

// The model's exact floor (device_floor.h): stage_sync_us per stage,
// issue_us per kernel added to the work at peak and bandwidth, and its
// contention per extra concurrent group.
DeviceFloor AnalyticDeviceFloor(const AnalyticDeviceModel& model = {});

// An oracle over AnalyticStageLatency with per-op costs precomputed. Keeps a
// reference to `graph`, which must outlive it. Thread-compatible (const).
StageLatencyFn MakeAnalyticOracle(const graph::Graph& graph,
                                  const AnalyticDeviceModel& model = {});

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_ANALYTIC_ORACLE_H_
