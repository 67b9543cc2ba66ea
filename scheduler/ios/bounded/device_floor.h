// DeviceFloor: what a device never beats, for the bounded search's floor
// bound (BoundedSearchOptions::device_floor, bounded_block_search.h).
//
// A stage's groups run on one device whose kernels one host thread issues
// one after another. Whatever the device overlaps, a concurrent stage that
// launches K kernels doing work W (each op's FLOPs at the device's peak, or
// its bytes at its bandwidth, whichever takes longer) costs at least
//   stage_ms + max(K * launch_ms + t, launch_ms + W)
// (stage_ms + K * launch_ms + W where the device cannot overlap issue with
// work: issue_overlaps_work false). Unlike a stage's slowest group, this
// grows with every group added, which is what a stage of many small
// kernels costs: its launches, one after another. Where issue overlaps
// work, a kernel still starts only once issued: the stage lasts until its
// last kernel is issued and has run, at least t, as long as its fastest
// kernel alone (which the search knows from each op measured alone), and
// no work starts before the first launch (StageFloorMs). Where the backend
// issues a stage's kernels in a fixed order (issue_order: the sim's
// round-robin), each kernel's issue slot is known, and the stage lasts at
// least as long as its groups' kernels take one after another, each from
// its slot on at its time alone (IssuedChainsFloorMs): the bound that
// holds where kernels are too small to share the device, which the work
// term misses. Those two need each stage timed from an idle device; where
// the backend times a stage's runs back to back (back_to_back: the cuda
// backend), a run's kernels are issued while the run before it executes,
// and only stage_ms + max(K * launch_ms, W) holds.
//
// Who declares it: the device's model where latencies come from one (the
// sim backend's SimDeviceModel, the analytic oracle's AnalyticDeviceModel:
// exact lower bounds of those models), or a microbenchmark of the device
// (launch cost of an empty kernel, an empty stage's synchronisation, peak
// FLOP/s and bandwidth). A backend that fuses ops into one kernel must not
// declare launch_ms with these kernel counts: an op launches one kernel
// unless graph::LaunchesNoKernel says it launches none. A floor of all
// zeros (the default) bounds nothing.
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_DEVICE_FLOOR_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_DEVICE_FLOOR_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"
#include "common/strings.h"
#include "graph/graph.h"

namespace iosfarm::scheduler::ios {

struct DeviceFloor {
  double stage_ms = 0;   // every stage, at least (waiting for its groups)
  double launch_ms = 0;  // per kernel: its serial host issue
  // Never reached faster; 0: no bound from it.
  double peak_gflops = 0;     // GFLOP/s
  double bandwidth_gbps = 0;  // GB/s
  // Issue overlaps the device's work (a GPU: kernels run while later ones
  // are issued). False: they add up (the analytic oracle's model).
  bool issue_overlaps_work = true;
  // The order the backend issues a concurrent stage's kernels in, where it
  // is fixed: groups in the stage's order (Stage::groups, canonical), each
  // group's ops in its order. Then each kernel's issue slot is known, and a
  // stage lasts at least as long as its groups' kernels take run one after
  // another, each from its slot on and no faster than alone
  // (IssuedChainsFloorMs). kUnknown: only the bounds that hold whatever the
  // order.
  // The numbers are the stored and wire ones (schema v9, proto
  // DeviceFloor.IssueOrder).
  enum class IssueOrder : uint8_t {
    kUnknown = 0,
    kRoundRobin = 1,    // the first kernel of each group, then the second, ...
    kGroupByGroup = 2,  // every kernel of the first group, then of the second, ...
  };
  IssueOrder issue_order = IssueOrder::kUnknown;
  // How the backend times a stage. False (the sim: SimulateStageUs): a
  // sample starts on an idle device with the host issuing the stage's first
  // kernel, so the stage lasts until its last kernel is issued and has run,
  // and the issue order's chains hold. True (the cuda backend's StreamTimer,
  // which runs a stage several times back to back so that stage latencies
  // add up to a schedule's): the host issues one run while the run before
  // it still executes, so a run is bounded only by the issue's throughput
  // and by the device's: stage_ms + max(K * launch_ms, W), no last kernel
  // and no chains (ValidateDeviceFloor refuses an issue order with it).
  // Stored as schema v10's devices.floor_back_to_back, proto
  // DeviceFloor.timed_back_to_back.
  bool back_to_back = false;
  // The ops the floor counts no kernel for. kViews: those that launch none
  // on any backend (graph::LaunchesNoKernel). kViewsAndFusable: also Add and
  // Relu (fused into a convolution's residual and activation), Concat
  // (written in place by its producers) and Split (read as slices), which
  // the cuda backend runs without a kernel of their own where it can
  // (worker/backends/cuda/plan_builder.h). A floor that counted a kernel
  // the backend fuses away would overstate stages. The numbers are the
  // stored and wire ones (schema v10's devices.floor_free_ops, proto
  // DeviceFloor.FreeOps).
  enum class FreeOps : uint8_t {
    kViews = 0,
    kViewsAndFusable = 1,
  };
  FreeOps free_ops = FreeOps::kViews;
  // What concurrent groups cost each other beyond sharing the peak: a
  // stage of g groups does its work (W above) no faster than
  // (1 + contention * (g - 1)) * W. A model that charges it declares it
  // (the analytic oracle's AnalyticDeviceModel::contention); 0, the
  // default, claims none, which is all a device declares until a
  // microbenchmark has measured more. Stored as schema v11's
  // devices.floor_contention, proto DeviceFloor.contention.
  double contention = 0;

  bool bounds_anything() const {
    return stage_ms > 0 || launch_ms > 0 || peak_gflops > 0 || bandwidth_gbps > 0;
  }
};

// InvalidArgument naming the field for a negative or non-finite value.
// Inline: the latency store, below the search's library, checks floors too.
inline Status ValidateDeviceFloor(const DeviceFloor& floor) {
  const struct {
    const char* name;
    double value;
  } fields[] = {{"stage_ms", floor.stage_ms},
                {"launch_ms", floor.launch_ms},
                {"peak_gflops", floor.peak_gflops},
                {"bandwidth_gbps", floor.bandwidth_gbps},
                {"contention", floor.contention}};
  for (const auto& field : fields) {
    if (!(field.value >= 0 && std::isfinite(field.value))) {
      return absl::InvalidArgumentError(
          StrCat("device floor: ", field.name, " must be finite and >= 0, got ", field.value));
    }
  }
  if (floor.back_to_back && !floor.issue_overlaps_work) {
    return absl::InvalidArgumentError(
        "device floor: back_to_back needs issue_overlaps_work (a run is issued while the one "
        "before it executes)");
  }
  if (floor.back_to_back && floor.issue_order != DeviceFloor::IssueOrder::kUnknown) {
    return absl::InvalidArgumentError(
        "device floor: back_to_back excludes an issue order (its chains need each run issued "
        "from an idle device)");
  }
  return absl::OkStatus();
}

// "stage 2.5 us, launch 3 us, 26.8 TFLOP/s, 1340 GB/s, issue overlaps work".
std::string DescribeDeviceFloor(const DeviceFloor& floor);

// One op's share of a stage's floor: its kernels, and the time its FLOPs
// take at peak and its bytes at the bandwidth; its work is the larger.
struct OpFloor {
  double kernels = 0;
  double compute_ms = 0;
  double memory_ms = 0;
  double work_ms() const { return compute_ms > memory_ms ? compute_ms : memory_ms; }
};

// The op's kernels (0 or 1: graph::LaunchesNoKernel, and with
// floor.free_ops kViewsAndFusable also Add, Relu, Concat and Split launch
// none) and the least time its
// FLOPs and bytes take on the device (0 for an op that launches none).
// With merge_width m > 1 (a convolution that a merge stage may run as one
// kernel with up to m - 1 others of the same input): its share of that
// kernel, 1 / m, of the input read once, and of the multiply-accumulates
// and weights only. The merged kernel's work is at least the sum of its
// convolutions' compute_ms shares, and at least the sum of their memory_ms
// shares (not the sum of their work_ms: one may be compute-bound, another
// memory-bound); a cost to go summed over ops takes one of the two for all
// convolutions of one input, so that it stays a lower bound through merge
// stages.
OpFloor ComputeOpFloor(const graph::Graph& graph, const graph::Node& node, const DeviceFloor& floor,
                       int merge_width = 1);

// The floor of one stage of `kernels` kernels and `work_ms` of work whose
// last kernel issued runs for at least `last_kernel_ms` once issued (a
// kernel never runs faster than alone, so the least time alone of the
// stage's kernels). Where issue overlaps work, a kernel still starts only
// once issued: the kernels issued j-th or later start no sooner than
// j * launch_ms and the device does their work no faster than its peak, so
// the stage lasts at least j * launch_ms plus their work, for every j. The
// order of issue is not known, and the least such bound over the orders
// issues the kernels of least work last; as a function of j that is convex
// (each step back adds a launch and drops a kernel of less work than the
// one before), so it is largest at j = K (the last launch and the last
// kernel) or at j = 1 (one launch, then the whole work): the two terms.
// Timed back to back (floor.back_to_back), a run's kernels are issued while
// the run before it executes: stage_ms + max(K * launch_ms, work), and
// `last_kernel_ms` is not taken. A stage of `groups` groups does its work at
// the floor's contention (1 + contention * (groups - 1) times it); a caller
// that does not know its groups passes 1, which bounds every stage.
// Always inlined: the cost-to-go DP's walk takes it for hundreds of millions of
// endings.
[[gnu::always_inline]] inline double StageFloorMs(const DeviceFloor& floor, double kernels,
                                                  double work_ms, double last_kernel_ms = 0,
                                                  int groups = 1) {
  work_ms *= 1 + floor.contention * (groups - 1);
  const double issue = kernels * floor.launch_ms;
  if (!floor.issue_overlaps_work) return floor.stage_ms + issue + work_ms;
  if (floor.back_to_back) return floor.stage_ms + std::max(issue, work_ms);
  const double first = kernels > 0 ? floor.launch_ms : 0.0;
  return floor.stage_ms + std::max(issue + last_kernel_ms, first + work_ms);
}

// The floor of a concurrent stage from the order its kernels are issued in
// (floor.issue_order, not kUnknown): `chains[g]` holds the least time each
// kernel of the stage's g-th group runs once issued (its time alone less
// its launch and the stage), in the group's order. The i-th kernel issued
// is issued at i * launch_ms at the earliest; a kernel starts once issued
// and once the one before it in its group has finished, and runs no faster
// than alone: stage_ms + the last kernel's end. At most 64 groups.
double IssuedChainsFloorMs(const DeviceFloor& floor,
                           std::span<const std::span<const double>> chains);

// "round-robin", "group by group" or "unknown".
std::string_view IssueOrderName(DeviceFloor::IssueOrder order);

// The free ops of a stored or wire number; kViewsAndFusable (the fewest
// kernels, the lowest floor) for one this build does not know.
inline DeviceFloor::FreeOps FreeOpsFromNumber(int64_t number) {
  return number == 0 ? DeviceFloor::FreeOps::kViews : DeviceFloor::FreeOps::kViewsAndFusable;
}

// The order of a stored or wire number; kUnknown for one this build does not
// know (its bound is then left out).
inline DeviceFloor::IssueOrder IssueOrderFromNumber(int64_t number) {
  using Order = DeviceFloor::IssueOrder;
  return number == 1 ? Order::kRoundRobin : number == 2 ? Order::kGroupByGroup : Order::kUnknown;
}

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_DEVICE_FLOOR_H_
