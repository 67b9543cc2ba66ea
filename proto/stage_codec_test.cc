#include "proto/stage_codec.h"

#include "common/strings.h"
#include "gmock/gmock.h"
#include "graph/graph_builder.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/testing/testing_util.h"
#include "worker/backends/sim/sim_test_graphs.h"

namespace iosfarm::proto {
namespace {

using ::testing::HasSubstr;
using scheduler::ios::Stage;
using scheduler::ios::Strategy;

// `stage` as the server sends it: with the signature it computes.
v1::StageSpec SpecOf(const graph::Graph& graph, const Stage& stage) {
  auto signature = scheduler::ios::StageSignature(graph, stage);
  EXPECT_TRUE(signature.ok()) << signature.status();
  return EncodeStage(stage, signature.ok() ? *signature : 0);
}

google::protobuf::RepeatedPtrField<v1::StageSpec> SpecsOf(const graph::Graph& graph,
                                                       const std::vector<Stage>& stages) {
  google::protobuf::RepeatedPtrField<v1::StageSpec> specs;
  for (const Stage& stage : stages) *specs.Add() = SpecOf(graph, stage);
  return specs;
}

std::vector<Stage> GreedyStages(const graph::Graph& graph) {
  std::vector<Stage> stages;
  auto schedule = scheduler::ios::GreedySchedule(graph, 8);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  if (schedule.ok()) {
    for (auto& scheduled : schedule->stages) stages.push_back(std::move(scheduled.stage));
  }
  return stages;
}

TEST(SignatureHexTest, SixteenLowerCaseDigits) {
  EXPECT_EQ(SignatureHex(0), "0000000000000000");
  EXPECT_EQ(SignatureHex(0xABCDEF0123456789ull), "abcdef0123456789");
}

TEST(EncodeStageTest, WritesStrategyGroupsInTheirOrderAndTheSignature) {
  const Stage stage = scheduler::ios::testing::ConcurrentStage({{4, 2}, {7}});
  const v1::StageSpec spec = EncodeStage(stage, 0x0123456789abcdefull);
  EXPECT_EQ(spec.strategy(), "concurrent");
  EXPECT_EQ(spec.signature(), 0x0123456789abcdefull);
  ASSERT_EQ(spec.groups_size(), 2);
  EXPECT_THAT(spec.groups(0).ops(), ::testing::ElementsAre(4, 2));
  EXPECT_THAT(spec.groups(1).ops(), ::testing::ElementsAre(7));
}

TEST(StageCodecTest, EveryStageOfAScheduleRoundTrips) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const std::vector<Stage> stages = GreedyStages(graph);
  ASSERT_GE(stages.size(), 2u);
  google::protobuf::RepeatedPtrField<v1::StageSpec> specs = SpecsOf(graph, stages);
  auto decoded = StagesFromSpecs(graph, specs);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->size(), stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    Stage canonical = stages[i];
    ASSERT_TRUE(scheduler::ios::CanonicalizeStage(graph, canonical).ok());
    EXPECT_EQ((*decoded)[i].strategy, canonical.strategy) << "stage " << i;
    EXPECT_EQ((*decoded)[i].groups, canonical.groups) << "stage " << i;
    // Encoding the decoded stage gives the same spec back.
    EXPECT_EQ(EncodeStage((*decoded)[i], specs.Get(i).signature()).SerializeAsString(),
              SpecOf(graph, canonical).SerializeAsString())
        << "stage " << i;
  }
}

TEST(StageFromSpecTest, AcceptsAnyListingOrderAndCanonicalises) {
  worker::sim::testing::TwoConvs two = worker::sim::testing::MakeTwoConvs(8, 8, 3);
  const Stage forward = scheduler::ios::testing::ConcurrentStage({{two.a}, {two.b}});
  const Stage backward = scheduler::ios::testing::ConcurrentStage({{two.b}, {two.a}});
  v1::StageSpec spec = SpecOf(two.graph, forward);
  auto a = StageFromSpec(two.graph, spec, 0);
  auto b = StageFromSpec(two.graph, SpecOf(two.graph, backward), 0);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->groups, b->groups);
  EXPECT_EQ(a->strategy, Strategy::kConcurrent);
  EXPECT_FALSE(a->merged.has_value());
}

TEST(StageFromSpecTest, MergeStagesGetTheirMergedConv) {
  worker::sim::testing::TwoConvs two = worker::sim::testing::MakeTwoConvs(8, 8, 3);
  auto merge = scheduler::ios::testing::MergeStage(two.graph, {two.a, two.b});
  ASSERT_TRUE(merge.ok()) << merge.status();
  const v1::StageSpec spec = SpecOf(two.graph, *merge);
  // The merged description is the receiver's to compute; the wire has none.
  EXPECT_EQ(spec.strategy(), "merge");
  auto stage = StageFromSpec(two.graph, spec, 4);
  ASSERT_TRUE(stage.ok()) << stage.status();
  EXPECT_EQ(stage->strategy, Strategy::kMerge);
  ASSERT_TRUE(stage->merged.has_value());
  EXPECT_EQ(stage->merged->branches.size(), 2u);
}

TEST(StageFromSpecTest, SingleCoreStagesRoundTripAndMustBeConcurrent) {
  worker::sim::testing::TwoConvs two = worker::sim::testing::MakeTwoConvs(8, 8, 3);
  Stage single = scheduler::ios::testing::ConcurrentStage({{two.a}, {two.b}});
  single.single_core = true;
  const v1::StageSpec spec = SpecOf(two.graph, single);
  EXPECT_TRUE(spec.single_core());
  auto decoded = StageFromSpec(two.graph, spec, 0);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->single_core);
  // Without the flag the signature is another stage's: the worker says so.
  v1::StageSpec plain = spec;
  plain.set_single_core(false);
  EXPECT_EQ(StageFromSpec(two.graph, plain, 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto merge = scheduler::ios::testing::MergeStage(two.graph, {two.a, two.b});
  ASSERT_TRUE(merge.ok()) << merge.status();
  v1::StageSpec merge_spec = SpecOf(two.graph, *merge);
  merge_spec.set_single_core(true);
  const Status refused = StageFromSpec(two.graph, merge_spec, 3).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(refused.message()).find("stage 3: a single-core stage"), std::string::npos);
}

TEST(StageFromSpecTest, RejectsBadSpecsNamingTheStage) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const std::vector<Stage> stages = GreedyStages(graph);
  ASSERT_GE(stages.size(), 2u);
  const v1::StageSpec good = SpecOf(graph, stages[1]);

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
  spec.set_strategy("parallel");
  auto strategy = StageFromSpec(graph, spec, 6);
  EXPECT_EQ(strategy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(strategy.status().message(),
              HasSubstr("stage 6: unknown strategy 'parallel' (expected concurrent or merge)"));

  spec = good;
  spec.set_signature(good.signature() + 1);
  auto mismatch = StageFromSpec(graph, spec, 6);
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(mismatch.status().message(), HasSubstr("stage 6: signature mismatch"));
  EXPECT_THAT(mismatch.status().message(), HasSubstr(SignatureHex(good.signature() + 1)));
  EXPECT_THAT(mismatch.status().message(), HasSubstr(SignatureHex(good.signature())));
}

TEST(StageFromSpecTest, RejectsAConstant) {
  graph::GraphBuilder b("with_constant");
  auto x = b.Input("x", {1, 8, 4, 4});
  auto scale = b.AddNode(graph::OpType::kConstant, graph::NoAttrs{}, {}, "scale",
                         {{"value", graph::Tensor{{1, 8, 1, 1}, {}}}})[0];
  b.Output(b.Mul(x, scale, "m"));
  graph::Graph graph = *std::move(b).Finish();
  const graph::NodeId constant = graph.value(scale).producer;
  v1::StageSpec spec;
  spec.set_strategy("concurrent");
  spec.add_groups()->add_ops(constant);
  auto stage = StageFromSpec(graph, spec, 2);
  EXPECT_EQ(stage.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(stage.status().message(),
              HasSubstr(StrCat("stage 2: group 0: node ", constant, " ('scale') is a Constant")));
}

TEST(StageFromSpecTest, MergeStagesNeedOneConvPerGroupThatCanMerge) {
  worker::sim::testing::TwoConvs two = worker::sim::testing::MakeTwoConvs(8, 8, 3);
  v1::StageSpec spec;
  spec.set_strategy("merge");
  v1::StageGroup* both = spec.add_groups();
  both->add_ops(two.a);
  both->add_ops(two.b);
  auto grouped = StageFromSpec(two.graph, spec, 3);
  EXPECT_EQ(grouped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(grouped.status().message(),
              HasSubstr("stage 3: merge stage has a group of 2 ops (each convolution must be "
                        "its own group)"));

  // One group: nothing to merge with; the merge check's error, named.
  spec.mutable_groups(0)->mutable_ops()->RemoveLast();
  auto alone = StageFromSpec(two.graph, spec, 3);
  EXPECT_FALSE(alone.ok());
  EXPECT_THAT(ToStd(alone.status().message()), ::testing::StartsWith("stage 3: "));
}

TEST(StagesFromSpecsTest, TheFirstErrorNamesItsIndex) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const std::vector<Stage> stages = GreedyStages(graph);
  ASSERT_GE(stages.size(), 3u);
  google::protobuf::RepeatedPtrField<v1::StageSpec> specs = SpecsOf(graph, stages);
  specs.Mutable(1)->set_signature(specs.Get(1).signature() ^ 1);
  specs.Mutable(2)->clear_groups();
  auto decoded = StagesFromSpecs(graph, specs);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(decoded.status().message(), HasSubstr("stage 1: signature mismatch"));
}

}  // namespace
}  // namespace iosfarm::proto
