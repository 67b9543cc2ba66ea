#include "scheduler/ios/bounded/shared_walk_plan.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>

namespace iosfarm::scheduler::ios {

double SharedWalkCost(const std::vector<size_t>& piece, const std::vector<double>& weight) {
  if (piece.empty()) return 0;
  return weight[piece[0]] * (1 + kSharedBoundShare * static_cast<double>(piece.size() - 1));
}

double Makespan(std::vector<double> costs, int threads) {
  std::sort(costs.begin(), costs.end(), std::greater<>());
  std::vector<double> load(static_cast<size_t>(std::max(threads, 1)), 0.0);
  for (double cost : costs) *std::min_element(load.begin(), load.end()) += cost;
  return *std::max_element(load.begin(), load.end());
}

std::vector<std::vector<size_t>> PlanSharedWalks(std::vector<std::vector<size_t>> shapes,
                                                 const std::vector<double>& weight, int threads) {
  std::vector<std::vector<size_t>> plan = std::move(shapes);
  auto costs = [&]() {
    std::vector<double> each;
    for (const std::vector<size_t>& piece : plan) each.push_back(SharedWalkCost(piece, weight));
    return each;
  };
  // The longest thread plus a thread's share of the whole: a split must
  // shorten the wait by more than the CPU it adds per thread.
  auto score = [&]() {
    const std::vector<double> each = costs();
    return Makespan(each, threads) +
           std::accumulate(each.begin(), each.end(), 0.0) / std::max(threads, 1);
  };
  std::vector<std::vector<size_t>> best = plan;
  double best_score = score();
  for (;;) {
    const std::vector<double> each = costs();
    size_t costliest = plan.size();
    for (size_t p = 0; p < plan.size(); ++p) {
      if (plan[p].size() > 1 && (costliest == plan.size() || each[p] > each[costliest])) {
        costliest = p;
      }
    }
    if (costliest == plan.size()) break;
    const double share = std::accumulate(each.begin(), each.end(), 0.0) / std::max(threads, 1);
    if (each[costliest] <= share) break;
    std::vector<size_t>& whole = plan[costliest];
    std::vector<size_t> back(whole.begin() + static_cast<std::ptrdiff_t>(whole.size() / 2),
                             whole.end());
    whole.resize(whole.size() / 2);
    plan.push_back(std::move(back));
    const double split_score = score();
    if (split_score < best_score) {
      best = plan;
      best_score = split_score;
    }
  }
  return best;
}

}  // namespace iosfarm::scheduler::ios
