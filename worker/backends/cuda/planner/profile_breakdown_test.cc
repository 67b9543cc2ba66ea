#include "worker/backends/cuda/planner/profile_breakdown.h"

#include <gtest/gtest.h>

namespace iosfarm::worker::cuda {
namespace {

TEST(ProfileBreakdownTest, MeansPerStageAndASummaryEveryKLogEveryStages) {
  ProfileBreakdown breakdown;
  EXPECT_EQ(breakdown.Summary(),
            "cuda profile breakdown: 0 stages, ms per stage: instantiate 0.000 capture 0.000 "
            "sizing 0.000 samples 0.000 release 0.000 total 0.000");
  int due = 0;
  for (int64_t i = 0; i < 2 * ProfileBreakdown::kLogEvery; ++i) {
    breakdown.Add(ProfileBreakdown::kInstantiate, 0.002);
    breakdown.Add(ProfileBreakdown::kSamples, 0.0015);
    breakdown.Add(ProfileBreakdown::kRelease, 0.0005);
    due += breakdown.StageDone() ? 1 : 0;
  }
  EXPECT_EQ(due, 2);
  EXPECT_EQ(breakdown.stages(), 2 * ProfileBreakdown::kLogEvery);
  EXPECT_EQ(breakdown.Summary(),
            "cuda profile breakdown: 512 stages, ms per stage: instantiate 2.000 capture 0.000 "
            "sizing 0.000 samples 1.500 release 0.500 total 4.000");
}

}  // namespace
}  // namespace iosfarm::worker::cuda
