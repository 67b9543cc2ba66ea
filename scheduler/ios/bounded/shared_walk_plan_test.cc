#include "scheduler/ios/bounded/shared_walk_plan.h"

#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace iosfarm::scheduler::ios {
namespace {

std::vector<size_t> Range(size_t begin, size_t end) {
  std::vector<size_t> indices(end - begin);
  std::iota(indices.begin(), indices.end(), begin);
  return indices;
}

std::vector<size_t> Sizes(const std::vector<std::vector<size_t>>& plan) {
  std::vector<size_t> sizes;
  for (const std::vector<size_t>& piece : plan) sizes.push_back(piece.size());
  return sizes;
}

// NASNet-A's cells of 146 k states: 13 of one shape, 3 of another, 2 alone.
std::vector<std::vector<size_t>> NasnetShapes() {
  return {Range(0, 13), Range(13, 16), {16}, {17}};
}

TEST(SharedWalkPlanTest, ASharedWalkCostsAShareMorePerBlock) {
  const std::vector<double> weight(4, 10.0);
  EXPECT_DOUBLE_EQ(SharedWalkCost({2}, weight), 10.0);
  EXPECT_DOUBLE_EQ(SharedWalkCost({0, 1, 2, 3}, weight), 10.0 * (1 + 3 * kSharedBoundShare));
}

TEST(SharedWalkPlanTest, MakespanHandsTheCostliestFirstToTheThreadFreeFirst) {
  EXPECT_DOUBLE_EQ(Makespan({3, 3, 2, 2, 2}, 2), 7);  // 3+2+2 and 3+2
  EXPECT_DOUBLE_EQ(Makespan({1, 5, 2}, 1), 8);
  EXPECT_DOUBLE_EQ(Makespan({1, 5, 2}, 8), 5);
}

TEST(SharedWalkPlanTest, OneThreadWalksEachShapeOnce) {
  const std::vector<double> weight(18, 146'000.0);
  EXPECT_EQ(Sizes(PlanSharedWalks(NasnetShapes(), weight, 1)), (std::vector<size_t>{13, 3, 1, 1}));
}

TEST(SharedWalkPlanTest, TwoThreadsKeepAShapeWholeWhereTheOthersFillTheSecond) {
  // 13 in one walk (4 walks) and 3 + 1 + 1 (3.5) on the other thread:
  // 4 + 7.5 / 2. Splitting the 13 into 6 and 7 (2.25 and 2.5 walks) adds
  // 0.75 walks and, the rest handed out after them, lengthens the longest
  // thread to 4.5.
  const std::vector<double> weight(18, 146'000.0);
  EXPECT_EQ(Sizes(PlanSharedWalks(NasnetShapes(), weight, 2)), (std::vector<size_t>{13, 3, 1, 1}));
}

TEST(SharedWalkPlanTest, AShapeAloneIsSplitForTheThreadsKeepingBlockOrder) {
  const std::vector<double> weight(16, 1.0);
  const std::vector<std::vector<size_t>> two = PlanSharedWalks({Range(0, 16)}, weight, 2);
  ASSERT_EQ(Sizes(two), (std::vector<size_t>{8, 8}));
  EXPECT_EQ(two[0], Range(0, 8));
  EXPECT_EQ(two[1], Range(8, 16));
  // Eight threads: pieces of two (1.25 walks each, 10 in all); pieces of
  // four wait longer (1.75), pieces of one put two on a thread and cost
  // more (16).
  EXPECT_EQ(Sizes(PlanSharedWalks({Range(0, 16)}, weight, 8)), std::vector<size_t>(8, 2));
}

TEST(SharedWalkPlanTest, EveryIndexIsInExactlyOnePiece) {
  std::vector<double> weight;
  for (size_t i = 0; i < 40; ++i) weight.push_back(1.0 + static_cast<double>(i % 5));
  for (int threads : {1, 2, 3, 5, 16}) {
    SCOPED_TRACE(threads);
    const std::vector<std::vector<size_t>> plan = PlanSharedWalks(
        {Range(0, 17), Range(17, 30), Range(30, 31), Range(31, 40)}, weight, threads);
    std::vector<int> seen(40, 0);
    for (const std::vector<size_t>& piece : plan) {
      ASSERT_FALSE(piece.empty());
      for (size_t i : piece) ++seen[i];
    }
    EXPECT_EQ(seen, std::vector<int>(40, 1));
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
