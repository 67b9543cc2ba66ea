#include "worker/stage_spec.h"

#include "gmock/gmock.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/testing_util.h"
#include "worker/backends/sim/sim_test_graphs.h"
#include "worker/worker_testing.h"

namespace iosfarm::worker {
namespace {

using ::testing::HasSubstr;
using scheduler::ios::Stage;
using scheduler::ios::Strategy;

TEST(SignatureHexTest, SixteenLowerCaseDigits) {
  EXPECT_EQ(SignatureHex(0), "0000000000000000");
  EXPECT_EQ(SignatureHex(0xABCDEF0123456789ull), "abcdef0123456789");
}

TEST(StageFromSpecTest, AcceptsAnyListingOrderAndCanonicalises) {
  sim::testing::TwoConvs two = sim::testing::MakeTwoConvs(8, 8, 3);
  const Stage forward = scheduler::ios::testing::ConcurrentStage({{two.a}, {two.b}});
  const Stage backward = scheduler::ios::testing::ConcurrentStage({{two.b}, {two.a}});
  v1::StageSpec spec = testing::SpecOf(two.graph, forward);
  auto a = StageFromSpec(two.graph, spec, 0);
  auto b = StageFromSpec(two.graph, testing::SpecOf(two.graph, backward), 0);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->groups, b->groups);
  EXPECT_EQ(a->strategy, Strategy::kConcurrent);
  EXPECT_FALSE(a->merged.has_value());
}

TEST(StageFromSpecTest, MergeStagesGetTheirMergedConv) {
  sim::testing::TwoConvs two = sim::testing::MakeTwoConvs(8, 8, 3);
  auto merge = scheduler::ios::testing::MergeStage(two.graph, {two.a, two.b});
  ASSERT_TRUE(merge.ok()) << merge.status();
  auto stage = StageFromSpec(two.graph, testing::SpecOf(two.graph, *merge), 4);
  ASSERT_TRUE(stage.ok()) << stage.status();
  EXPECT_EQ(stage->strategy, Strategy::kMerge);
  ASSERT_TRUE(stage->merged.has_value());
  EXPECT_EQ(stage->merged->branches.size(), 2u);
}

TEST(StageFromSpecTest, RejectsBadSpecsNamingTheStage) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const std::vector<Stage> stages = testing::GreedyStages(graph);
  ASSERT_GE(stages.size(), 2u);
  const v1::StageSpec good = testing::SpecOf(graph, stages[1]);

  v1::StageSpec spec = good;
  spec.clear_groups();
  EXPECT_THAT(StageFromSpec(graph, spec, 6).status().message(), HasSubstr("stage 6: no groups"));

  spec = good;
  spec.add_groups();
  EXPECT_THAT(StageFromSpec(graph, spec, 6).status().message(),
              HasSubstr("stage 6: group 1 is empty"));

  spec = good;
  spec.add_groups()->add_ops(good.groups(0).ops(0));
  auto twice = StageFromSpec(graph, spec, 6);
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(twice.status().message(), HasSubstr("is listed twice"));

  spec = good;
  spec.mutable_groups(0)->set_ops(0, -1);
  EXPECT_THAT(StageFromSpec(graph, spec, 6).status().message(),
              HasSubstr("stage 6: group 0: node id -1 out of range"));

  spec = good;
  spec.set_signature(good.signature() + 1);
  auto mismatch = StageFromSpec(graph, spec, 6);
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(mismatch.status().message(), HasSubstr("stage 6: signature mismatch"));
  EXPECT_THAT(mismatch.status().message(), HasSubstr(SignatureHex(good.signature() + 1)));
  EXPECT_THAT(mismatch.status().message(), HasSubstr(SignatureHex(good.signature())));
}

}  // namespace
}  // namespace iosfarm::worker
