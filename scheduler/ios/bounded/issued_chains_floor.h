// IssuedChainsFloor: IssuedChainsFloorMs (device_floor.h) of a block's candidate
// stages, fast enough for the cost-to-go DP's walk.
//
// The walk takes the chains bound for hundreds of millions of endings (456 M
// for NASNet-A under sim:h100), where sorting each stage's groups into issue
// order and issuing its kernels one by one, with a branch on every group's
// length, cost 61 ns a stage (4-6 groups, mostly: a replay of 15 M stages
// of a NASNet-A cell's walk). Here each group is added once with its rank
// in the backend's issue order; a stage's groups are put in order as bits
// of their ranks (read lowest first), and each group's kernels are issued
// from a counter per round: under round-robin issue the i-th kernel of a
// group goes in slot (kernels of the rounds before i) + (groups before it
// with an i-th kernel) + 1, under group-by-group issue in slot (kernels of
// the groups before it) + i + 1, and a group's kernels run one after
// another, each from its slot on. No branch depends on a group's length:
// 32 ns a stage on the same replay. Stages of more than kFastGroups groups,
// groups of more than kFastRuns kernels and blocks of kFastRanks groups or
// more sort and call IssuedChainsFloorMs. Either way the result is
// IssuedChainsFloorMs's bit for bit: the same additions in the same order
// (the issue clock is the launch added once per slot, as it counts).
#ifndef IOSFARM_SCHEDULER_IOS_BOUNDED_ISSUED_CHAINS_FLOOR_H_
#define IOSFARM_SCHEDULER_IOS_BOUNDED_ISSUED_CHAINS_FLOOR_H_

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/ios/bounded/device_floor.h"

namespace iosfarm::scheduler::ios {

class IssuedChainsFloor {
 public:
  static constexpr int kFastGroups = 16;
  static constexpr int kFastRuns = 3;
  static constexpr int kFastRanks = 256;

  // `floor.issue_order` must not be kUnknown (FloorMs is then 0).
  explicit IssuedChainsFloor(const DeviceFloor& floor);

  // Adds the next group (index = groups added before it): its rank in the
  // issue order (ranks of one stage's groups are distinct) and the run
  // times of its kernels in the order they are issued.
  void AddGroup(int32_t rank, std::span<const double> runs);
  int32_t size() const { return static_cast<int32_t>(groups_.size()); }

  // IssuedChainsFloorMs of the stage of groups ids[0..count), issued in
  // order of rank. Not thread-safe (scratch for the long stages).
  double FloorMs(const int32_t* ids, int count);

 private:
  // A group's kernels and (the first kFastRuns, 0 past its kernels) run
  // times, together: one stage reads a few of these.
  struct Group {
    int32_t kernels = 0;
    int32_t runs_begin = 0;  // in runs_, all of its kernels
    std::array<double, kFastRuns> runs{};
  };

  double SortedFloorMs(const int32_t* ids, int count);

  DeviceFloor floor_;
  std::vector<Group> groups_;
  std::vector<int32_t> rank_of_;
  // The groups by rank, for ranks below kFastRanks; fast_ranks_: every
  // rank is.
  std::vector<Group> by_rank_;
  bool fast_ranks_ = true;
  std::vector<double> runs_;
  // clock_[j]: the issue clock after j launches, as IssuedChainsFloorMs
  // counts it (the launch added j times).
  std::vector<double> clock_;
  // SortedFloorMs's scratch.
  std::vector<int32_t> sorted_;
  std::vector<std::span<const double>> chains_;
};

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BOUNDED_ISSUED_CHAINS_FLOOR_H_
