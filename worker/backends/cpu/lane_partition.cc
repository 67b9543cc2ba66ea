#include "worker/backends/cpu/lane_partition.h"

#include <algorithm>
#include <numeric>

namespace iosfarm::worker::cpu {

std::vector<LanePlan> PartitionLanes(const std::vector<double>& group_costs, int cores) {
  const int groups = static_cast<int>(group_costs.size());
  cores = std::max(cores, 1);
  if (groups <= 1 || cores == 1) {
    LanePlan lane;
    lane.groups.resize(static_cast<size_t>(groups));
    std::iota(lane.groups.begin(), lane.groups.end(), 0);
    lane.threads = cores;
    return {lane};
  }
  const int num_lanes = std::min(groups, cores);
  std::vector<int> order(static_cast<size_t>(groups));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return group_costs[a] > group_costs[b]; });
  std::vector<LanePlan> lanes(static_cast<size_t>(num_lanes));
  std::vector<double> load(static_cast<size_t>(num_lanes), 0.0);
  for (int g : order) {
    const size_t lightest =
        static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    lanes[lightest].groups.push_back(g);
    load[lightest] += std::max(group_costs[g], 0.0);
  }
  for (LanePlan& lane : lanes) std::sort(lane.groups.begin(), lane.groups.end());
  // Threads: an even split, the remainder to the most loaded lanes.
  std::vector<int> by_load(static_cast<size_t>(num_lanes));
  std::iota(by_load.begin(), by_load.end(), 0);
  std::stable_sort(by_load.begin(), by_load.end(),
                   [&](int a, int b) { return load[a] > load[b]; });
  for (int i = 0; i < num_lanes; ++i) {
    lanes[by_load[i]].threads = cores / num_lanes + (i < cores % num_lanes ? 1 : 0);
  }
  // Lane 0 runs on the calling thread: make it the one holding group 0 so
  // that a stage's first group never waits for a worker to wake up.
  std::stable_sort(lanes.begin(), lanes.end(),
                   [](const LanePlan& a, const LanePlan& b) { return a.groups[0] < b.groups[0]; });
  return lanes;
}

}  // namespace iosfarm::worker::cpu
