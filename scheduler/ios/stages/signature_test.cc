#include "scheduler/ios/stages/signature.h"

#include <algorithm>
#include <mutex>
#include <random>

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/search_report.h"
#include "scheduler/ios/stages/stable_hash.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

using graph::ConvSpec;
using graph::GraphBuilder;
using graph::NodeId;

constexpr char kGoldenSignature[] = "deb878b51f663219";

NodeId Node(const graph::Graph& graph, const std::string& name) {
  const NodeId id = graph::testing::NodeNamed(graph, name);
  if (id != graph::kNoNode) return id;
  ADD_FAILURE() << "no node " << name;
  return graph::kNoNode;
}

struct Variant {
  int64_t batch = 1;
  int64_t channels = 16;
  std::array<int64_t, 2> kernel = {3, 3};
  bool swap_add_inputs = false;
  bool separate_inputs = false;  // the two convs read different tensors
  bool reverse_build_order = false;
  std::string prefix = "";
};

// x -> conv_a(k) -> relu_a --.
//                           add -> out      conv_b 1x1 (reads x or y)
// x -> conv_c 1x1 ---------/
graph::Graph Build(const Variant& v) {
  GraphBuilder b("sig");
  auto x = b.Input("x", {v.batch, 8, 10, 10});
  auto y = b.Input("y", {v.batch, 8, 10, 10});
  ConvSpec a;
  a.out_channels = v.channels;
  a.kernel = v.kernel;
  a.padding = {v.kernel[0] / 2, v.kernel[1] / 2};
  ConvSpec one;
  one.out_channels = v.channels;
  const std::string p = v.prefix;
  graph::ValueId relu_a, conv_c, conv_b;
  if (!v.reverse_build_order) {
    relu_a = b.Relu(b.Conv(x, a, p + "conv_a"), p + "relu_a");
    conv_c = b.Conv(x, one, p + "conv_c");
    conv_b = b.Conv(v.separate_inputs ? y : x, one, p + "conv_b");
  } else {
    conv_b = b.Conv(v.separate_inputs ? y : x, one, p + "conv_b");
    conv_c = b.Conv(x, one, p + "conv_c");
    relu_a = b.Relu(b.Conv(x, a, p + "conv_a"), p + "relu_a");
  }
  b.Output(v.swap_add_inputs ? b.Add(conv_c, relu_a, p + "add") : b.Add(relu_a, conv_c, p + "add"));
  b.Output(conv_b);
  return *std::move(b).Finish();
}

// The stage {conv_a, relu_a, conv_c, add} as one group and {conv_b} as
// another.
Stage TheStage(const graph::Graph& graph, const std::string& p = "") {
  Stage stage;
  stage.groups = {{Node(graph, p + "conv_a"), Node(graph, p + "relu_a"), Node(graph, p + "conv_c"),
                   Node(graph, p + "add")},
                  {Node(graph, p + "conv_b")}};
  return stage;
}

Signature Sig(const graph::Graph& graph, const Stage& stage) {
  auto sig = StageSignature(graph, stage);
  EXPECT_TRUE(sig.ok()) << sig.status();
  return sig.ok() ? *sig : 0;
}

TEST(SignatureTest, IndependentOfNamesIdsAndListingOrder) {
  const graph::Graph base = Build({});
  const Signature expected = Sig(base, TheStage(base));
  // Renamed nodes, other node ids (built in another order).
  Variant renamed;
  renamed.prefix = "other/";
  renamed.reverse_build_order = true;
  const graph::Graph other = Build(renamed);
  EXPECT_EQ(Sig(other, TheStage(other, "other/")), expected);
  // Groups and ops listed in any order.
  Stage shuffled = TheStage(base);
  std::reverse(shuffled.groups.begin(), shuffled.groups.end());
  std::mt19937 rng(1);
  for (int i = 0; i < 10; ++i) {
    for (auto& group : shuffled.groups) std::shuffle(group.begin(), group.end(), rng);
    EXPECT_EQ(Sig(base, shuffled), expected);
  }
}

TEST(SignatureTest, CanonicalOrderIsAValidExecutionOrder) {
  const graph::Graph graph = Build({});
  Stage stage = TheStage(graph);
  std::reverse(stage.groups[0].begin(), stage.groups[0].end());
  ASSERT_TRUE(CanonicalizeStage(graph, stage).ok());
  ASSERT_EQ(stage.groups.size(), 2u);
  // The four-op group comes first or second, but is topologically ordered.
  const auto& big = stage.groups[0].size() == 4 ? stage.groups[0] : stage.groups[1];
  auto pos = [&](const std::string& name) {
    return std::find(big.begin(), big.end(), Node(graph, name)) - big.begin();
  };
  EXPECT_LT(pos("conv_a"), pos("relu_a"));
  EXPECT_LT(pos("relu_a"), pos("add"));
  EXPECT_LT(pos("conv_c"), pos("add"));
}

TEST(SignatureTest, ChangesWithAnythingThatAffectsExecution) {
  const graph::Graph base = Build({});
  const Signature expected = Sig(base, TheStage(base));
  std::vector<Variant> variants(5);
  variants[0].batch = 2;
  variants[1].channels = 32;
  variants[2].kernel = {5, 5};
  variants[3].swap_add_inputs = true;  // edge into another input port
  variants[4].separate_inputs = true;  // conv_b no longer shares x
  for (const Variant& v : variants) {
    const graph::Graph graph = Build(v);
    EXPECT_NE(Sig(graph, TheStage(graph)), expected);
  }
  // Different grouping of the same ops.
  Stage split = TheStage(base);
  split.groups = {{Node(base, "conv_a"), Node(base, "relu_a"), Node(base, "conv_c"),
                   Node(base, "add"), Node(base, "conv_b")}};
  EXPECT_NE(Sig(base, split), expected);
  // Fewer ops.
  Stage smaller;
  smaller.groups = {{Node(base, "conv_c")}, {Node(base, "conv_b")}};
  Stage merged = smaller;
  merged.strategy = Strategy::kMerge;
  EXPECT_NE(Sig(base, smaller), expected);
  // Strategy.
  EXPECT_NE(Sig(base, smaller), Sig(base, merged));
}

TEST(SignatureTest, StableAcrossBuildsAndRuns) {
  // A golden value: if this changes, every stored latency is orphaned; bump
  // kSignatureVersion deliberately and update it.
  const graph::Graph graph = Build({});
  EXPECT_EQ(Hex64(Sig(graph, TheStage(graph))), kGoldenSignature);
}

TEST(SignatureTest, RejectsMalformedStages) {
  const graph::Graph graph = Build({});
  Stage twice;
  twice.groups = {{Node(graph, "conv_b")}, {Node(graph, "conv_b")}};
  EXPECT_EQ(StageSignature(graph, twice).status().code(), absl::StatusCode::kInvalidArgument);
  Stage across;
  across.groups = {{Node(graph, "conv_a")}, {Node(graph, "relu_a")}};
  EXPECT_EQ(StageSignature(graph, across).status().code(), absl::StatusCode::kInvalidArgument);
  Stage out_of_range;
  out_of_range.groups = {{999}};
  EXPECT_EQ(StageSignature(graph, out_of_range).status().code(),
            absl::StatusCode::kInvalidArgument);
  Stage bad_merge;
  bad_merge.strategy = Strategy::kMerge;
  bad_merge.groups = {{Node(graph, "add")}, {Node(graph, "conv_b")}};  // Add is no conv
  EXPECT_FALSE(StageSignature(graph, bad_merge).ok());
}

// A single-core measurement of a stage has a signature of its own, derived
// from the concurrent one, and exists only for concurrent stages.
TEST(SignatureTest, SingleCoreStagesAreAMeasurementOfTheirOwn) {
  const graph::Graph graph = Build({});
  Stage single = TheStage(graph);
  single.single_core = true;
  const Signature concurrent = Sig(graph, TheStage(graph));
  EXPECT_NE(Sig(graph, single), concurrent);
  EXPECT_EQ(Sig(graph, single), SingleCoreSignature(concurrent));
  EXPECT_EQ(StageToString(graph, single).rfind("single-core[", 0), 0u);
  Stage merge;
  merge.strategy = Strategy::kMerge;
  merge.groups = {{Node(graph, "conv_b")}, {Node(graph, "conv_c")}};
  ASSERT_TRUE(StageSignature(graph, merge).ok());
  merge.single_core = true;
  EXPECT_EQ(StageSignature(graph, merge).status().code(), absl::StatusCode::kInvalidArgument);
  // Never part of a schedule.
  Schedule schedule;
  schedule.stages.push_back({single});
  const Status refused = ValidateSchedule(graph, schedule);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(refused.message()).find("single-core"), std::string::npos);
}

// The DP computes signatures through its own fast path; they must equal the
// public canonicaliser's for every stage it schedules.
TEST(SignatureTest, SearchSignaturesMatchCanonicalizeStage) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const graph::Graph graph = testing::RandomDag(seed, 12);
    SearchOptions options;
    auto result = RunSearch(graph, options, MakeAnalyticOracle(graph));
    ASSERT_TRUE(result.ok()) << result.status();
    for (const ScheduledStage& stage : result->schedule.stages) {
      EXPECT_EQ(Sig(graph, stage.stage), stage.signature) << StageToString(graph, stage.stage);
    }
  }
}

// An oracle that checks each stage it is given against its signature and
// its canonical order (thread-safe), counts the calls and answers the
// analytic latency.
SignedLatencyFn CheckingOracle(const graph::Graph& graph, std::mutex& mu, int& calls) {
  return [&graph, &mu, &calls, analytic = MakeAnalyticOracle(graph)](Signature signature,
                                                                     const Stage& stage) {
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    EXPECT_EQ(signature, Sig(graph, stage)) << StageToString(graph, stage);
    Stage canonical = stage;
    EXPECT_TRUE(CanonicalizeStage(graph, canonical).ok());
    EXPECT_EQ(canonical.groups, stage.groups) << StageToString(graph, stage);
    return analytic(stage);
  };
}

// A SignedLatencyFn is told each stage's signature, by the search and by
// CostSchedule alike, so that it need not canonicalise the stage itself; the
// stage it gets is already in canonical order.
TEST(SignatureTest, SignedOraclesAreToldTheStageSignature) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const graph::Graph graph = testing::RandomDag(seed, 12);
    const StageLatencyFn analytic = MakeAnalyticOracle(graph);
    std::mutex mu;
    int calls = 0;
    const SignedLatencyFn checked = CheckingOracle(graph, mu, calls);
    auto report = SearchWithBaselines(graph, SearchOptions{}, checked);
    ASSERT_TRUE(report.ok()) << report.status();
    auto unsigned_report = SearchWithBaselines(graph, SearchOptions{}, analytic);
    ASSERT_TRUE(unsigned_report.ok()) << unsigned_report.status();
    EXPECT_EQ(report->ios.schedule.latency_ms, unsigned_report->ios.schedule.latency_ms);
    EXPECT_EQ(report->sequential.latency_ms, unsigned_report->sequential.latency_ms);
    EXPECT_GT(calls, 0);
  }
}

// The same for the DP's shared walks (cells of one shape on two threads):
// every block of a walk gets its own signatures and canonical stages.
TEST(SignatureTest, SharedWalksTellEachBlocksStageSignature) {
  const graph::Graph graph = testing::RepeatedCells(3, 7, 7);
  std::mutex mu;
  int calls = 0;
  const SignedLatencyFn checked = CheckingOracle(graph, mu, calls);
  SearchOptions options;
  options.exhaustive = true;
  options.max_block_ops = 12;
  options.threads = 2;
  auto result = RunSearch(graph, options, checked);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->stats.shared_walk_blocks, 0);
  EXPECT_GT(calls, 0);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
