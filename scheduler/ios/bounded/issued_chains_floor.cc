#include "scheduler/ios/bounded/issued_chains_floor.h"

#include <algorithm>

namespace iosfarm::scheduler::ios {

IssuedChainsFloor::IssuedChainsFloor(const DeviceFloor& floor) : floor_(floor) {
  // Slots of the fast path: at most kFastGroups * kFastRuns kernels.
  clock_.assign(kFastGroups * kFastRuns + 2, 0.0);
  for (size_t slot = 1; slot < clock_.size(); ++slot) {
    clock_[slot] = clock_[slot - 1] + floor_.launch_ms;
  }
}

void IssuedChainsFloor::AddGroup(int32_t rank, std::span<const double> runs) {
  Group group;
  group.kernels = static_cast<int32_t>(runs.size());
  group.runs_begin = static_cast<int32_t>(runs_.size());
  for (size_t i = 0; i < runs.size() && i < kFastRuns; ++i) group.runs[i] = runs[i];
  runs_.insert(runs_.end(), runs.begin(), runs.end());
  groups_.push_back(group);
  rank_of_.push_back(rank);
  if (rank >= 0 && rank < kFastRanks) {
    if (by_rank_.size() <= static_cast<size_t>(rank)) by_rank_.resize(rank + 1);
    by_rank_[rank] = group;
  } else {
    fast_ranks_ = false;
  }
}

double IssuedChainsFloor::FloorMs(const int32_t* ids, int count) {
  using Order = DeviceFloor::IssueOrder;
  if (floor_.issue_order == Order::kUnknown) return 0;
  if (count > kFastGroups || !fast_ranks_) return SortedFloorMs(ids, count);
  // The stage's groups in issue order: their ranks as bits, read lowest
  // first. On the way, the kernels of each round (round-robin's base).
  uint64_t ranks[kFastRanks / 64] = {};
  int round_kernels[kFastRuns] = {};
  bool fast = true;
  for (int a = 0; a < count; ++a) {
    const int32_t rank = rank_of_[ids[a]];
    ranks[rank >> 6] |= uint64_t{1} << (rank & 63);
    const int kernels = by_rank_[rank].kernels;
    fast = fast && kernels <= kFastRuns;
    for (int i = 0; i < kFastRuns; ++i) round_kernels[i] += kernels > i ? 1 : 0;
  }
  if (!fast) return SortedFloorMs(ids, count);
  // Slot of a group's i-th kernel: round-robin, the kernels of the rounds
  // before i and of the groups before it in round i; group by group, the
  // kernels of the groups before it and its own before i. Where it has no
  // i-th kernel it reads clock_[0] (0) and runs 0, which leave its finish
  // (>= 0) as it is.
  const bool round_robin = floor_.issue_order == Order::kRoundRobin;
  int slot[kFastRuns];
  for (int i = 0, base = 0; i < kFastRuns; ++i) {
    slot[i] = round_robin ? base : i;
    base += round_robin ? round_kernels[i] : 0;
  }
  double end = 0;
  for (int word = 0; word < kFastRanks / 64; ++word) {
    for (uint64_t bits = ranks[word]; bits != 0; bits &= bits - 1) {
      const Group& group = by_rank_[word * 64 + __builtin_ctzll(bits)];
      double finish = 0;
#pragma GCC unroll 4
      for (int i = 0; i < kFastRuns; ++i) {
        const int has = i < group.kernels ? 1 : 0;
        slot[i] += has;
        finish = std::max(finish, clock_[has * slot[i]]) + group.runs[i];
      }
      if (!round_robin) {
#pragma GCC unroll 4
        for (int i = 0; i < kFastRuns; ++i) slot[i] += group.kernels - (i < group.kernels ? 1 : 0);
      }
      end = std::max(end, finish);
    }
  }
  return floor_.stage_ms + end;
}

double IssuedChainsFloor::SortedFloorMs(const int32_t* ids, int count) {
  sorted_.assign(ids, ids + count);
  std::sort(sorted_.begin(), sorted_.end(),
            [&](int32_t a, int32_t b) { return rank_of_[a] < rank_of_[b]; });
  chains_.clear();
  for (const int32_t id : sorted_) {
    const Group& group = groups_[id];
    chains_.emplace_back(runs_.data() + group.runs_begin, group.kernels);
  }
  return IssuedChainsFloorMs(floor_, chains_);
}

}  // namespace iosfarm::scheduler::ios
