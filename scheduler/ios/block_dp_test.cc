#include "scheduler/ios/block_dp.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

using testing::FnSource;

// Never knows anything.
class UnknownSource : public LatencySource {
 public:
  std::optional<double> Lookup(Signature signature, absl::FunctionRef<Stage()>) override {
    seen.push_back(signature);
    return std::nullopt;
  }
  Status status() const override { return absl::OkStatus(); }
  std::vector<Signature> seen;
};

Schedule ToSchedule(const BlockSolution& solution) {
  Schedule schedule;
  for (const PlannedStage& planned : solution.stages) {
    schedule.stages.push_back({planned.stage, 0, planned.signature, planned.latency_ms});
  }
  return schedule;
}

// The DP over a whole random graph (one block) equals the exhaustive
// optimum, for several r/s bounds and with the bounds lifted (r = s = n:
// then every schedule is allowed and the exhaustive search is the true
// optimum). The schedule read back is valid, within the bounds, and sums to
// the cost.
TEST(BlockDpTest, EqualsExhaustiveSearchOnRandomGraphs) {
  int compared = 0;
  int merge_stages_chosen = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const int n = 2 + static_cast<int>(seed % 11);  // 2..12 ops
    const graph::Graph graph = testing::RandomDag(seed * 7919, n);
    const OpDag dag = *BuildOpDag(graph);
    const BlockGraph block = *BlockGraph::Build(graph, dag.order);
    const StageLatencyFn oracle = testing::RandomOracle(graph, seed);
    std::vector<std::pair<int, int>> bounds = {{1, 1}, {1, 3}, {2, 2}, {3, 8}, {n, n}};
    if (seed % 3 != 0) bounds.resize(seed % 2 == 0 ? 5 : 3);
    for (auto [r, s] : bounds) {
      for (bool merge : {true, false}) {
        if (!merge && r != 3) continue;
        SCOPED_TRACE(::testing::Message() << "seed " << seed << " n " << n << " r " << r << " s "
                                        << s << " merge " << merge);
        DpOptions options;
        options.bounds = {r, s};
        options.enable_merge = merge;
        FnSource source(oracle);
        auto solution = SolveBlock(block, options, source);
        ASSERT_TRUE(solution.ok()) << solution.status();
        ASSERT_TRUE(solution->complete);
        auto exhaustive = testing::ExhaustiveOptimum(graph, r, s, merge, oracle);
        ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
        EXPECT_NEAR(solution->latency_ms, *exhaustive, 1e-9);
        const Schedule schedule = ToSchedule(*solution);
        EXPECT_TRUE(ValidateSchedule(graph, schedule).ok()) << ValidateSchedule(graph, schedule);
        double sum = 0;
        for (const PlannedStage& planned : solution->stages) {
          sum += planned.latency_ms;
          EXPECT_LE(static_cast<int>(planned.stage.groups.size()), s);
          for (const auto& group : planned.stage.groups) {
            EXPECT_LE(static_cast<int>(group.size()), r);
          }
          if (!merge) {
            EXPECT_EQ(planned.stage.strategy, Strategy::kConcurrent);
          }
          merge_stages_chosen += planned.stage.strategy == Strategy::kMerge ? 1 : 0;
          EXPECT_NEAR(*oracle(planned.stage), planned.latency_ms, 1e-12);
        }
        EXPECT_NEAR(sum, solution->latency_ms, 1e-9);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(merge_stages_chosen, 20);  // merges are exercised, not just legal
}

TEST(BlockDpTest, DeterministicAcrossRuns) {
  const graph::Graph graph = testing::RandomDag(99, 12);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  DpOptions options;
  std::vector<std::string> runs;
  for (int run = 0; run < 3; ++run) {
    FnSource source(testing::RandomOracle(graph, 5));
    auto solution = SolveBlock(block, options, source);
    ASSERT_TRUE(solution.ok());
    std::string text;
    for (const PlannedStage& planned : solution->stages) {
      text += StageToString(graph, planned.stage) + ";";
    }
    runs.push_back(text);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[1], runs[2]);
}

TEST(BlockDpTest, UnknownLatenciesStillVisitEveryStateOnce) {
  const graph::Graph graph = testing::RandomDag(3, 10);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  DpOptions options;
  UnknownSource unknown;
  auto pass1 = SolveBlock(block, options, unknown);
  ASSERT_TRUE(pass1.ok());
  EXPECT_FALSE(pass1->complete);
  EXPECT_TRUE(pass1->stages.empty());
  FnSource known(testing::RandomOracle(graph, 1));
  auto pass2 = SolveBlock(block, options, known);
  ASSERT_TRUE(pass2.ok());
  EXPECT_TRUE(pass2->complete);
  // Same state space and candidates either way; one lookup per distinct stage.
  EXPECT_EQ(pass1->stats.states, pass2->stats.states);
  EXPECT_EQ(pass1->stats.transitions, pass2->stats.transitions);
  EXPECT_EQ(static_cast<int64_t>(unknown.seen.size()), pass1->stats.distinct_stages);
}

TEST(BlockDpTest, StateCapAndBadBounds) {
  const graph::Graph graph = testing::RandomDag(4, 12);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  FnSource source(testing::RandomOracle(graph, 1));
  DpOptions options;
  options.max_states = 2;
  EXPECT_EQ(SolveBlock(block, options, source).status().code(),
            absl::StatusCode::kResourceExhausted);
  options.max_states = 0;
  options.bounds = {0, 8};
  EXPECT_EQ(SolveBlock(block, options, source).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BlockDpTest, OracleErrorsPropagate) {
  const graph::Graph graph = testing::RandomDag(5, 6);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  FnSource source([](const Stage&) -> StatusOr<double> {
    return absl::UnavailableError("device lost");
  });
  EXPECT_EQ(SolveBlock(block, DpOptions{}, source).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
