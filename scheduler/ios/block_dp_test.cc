#include "scheduler/ios/block_dp.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"
#include "scheduler/ios/block_solution_checks.h"
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

using testing::ToSchedule;

// The DP over a whole random graph (one block) equals the exhaustive
// optimum, for several r/s bounds and with the bounds lifted (r = s = n:
// then every schedule is allowed and the exhaustive search is the true
// optimum). The schedule read back is valid, within the bounds, and sums to
// the cost.
TEST(BlockDpTest, EqualsExhaustiveSearchOnRandomGraphs) {
  int compared = 0;
  int merge_stages_chosen = 0;
  testing::ForEachRandomBlockCase([&](const testing::RandomBlockCase& c) {
    SCOPED_TRACE(c.Describe());
    const StageLatencyFn oracle = testing::RandomOracle(*c.graph, c.seed);
    FnSource source(oracle);
    auto solution = SolveBlock(*c.block, c.options, source);
    ASSERT_TRUE(solution.ok()) << solution.status();
    ASSERT_TRUE(solution->complete);
    auto exhaustive =
        testing::ExhaustiveOptimum(*c.graph, c.options.bounds.max_group_ops,
                                   c.options.bounds.max_groups, c.options.enable_merge, oracle);
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    EXPECT_NEAR(solution->latency_ms, *exhaustive, 1e-9);
    merge_stages_chosen += testing::ExpectWellFormed(*c.graph, *solution, c.options, oracle);
    ++compared;
  });
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
