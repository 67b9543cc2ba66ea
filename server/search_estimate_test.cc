#include "server/search_estimate.h"

#include "gtest/gtest.h"

namespace iosfarm::server {
namespace {

TEST(SearchEstimateTest, TheSameSearchDoneHereMeasuresNothingAndElsewhereWhatItAskedFor) {
  SearchHistory history;
  history.done_on_this_key = true;
  history.stages_elsewhere = 500;
  EXPECT_EQ(EstimateSearchStages(100, history), 0);
  history.done_on_this_key = false;
  EXPECT_EQ(EstimateSearchStages(100, history), 500);
}

TEST(SearchEstimateTest, OtherwiseTheOperatorsTimesTheStoresStagesPerOperator) {
  SearchHistory history;
  EXPECT_EQ(EstimateSearchStages(100, history), static_cast<int64_t>(100 * kDefaultStagesPerOp));
  history.searched_stages = 3000;
  history.searched_ops = 200;
  EXPECT_EQ(EstimateSearchStages(100, history), 1500);
  EXPECT_EQ(EstimateSearchStages(-4, history), 0);
}

}  // namespace
}  // namespace iosfarm::server
