// Every op case (op_cases.h) on every backend, compared with the reference
// executor; plus Build/Profile of every case's stages.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/conformance/conformance_backends.h"
#include "tests/conformance/conformance_util.h"
#include "tests/conformance/op_cases.h"

namespace iosfarm::conformance {
namespace {

class OpConformanceTest : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {
 protected:
  const std::string& backend_name() const { return std::get<0>(GetParam()); }
  const GraphCase& op_case() const { return OpCases()[std::get<1>(GetParam())]; }
};

TEST_P(OpConformanceTest, MatchesReference) {
  IOSFARM_BACKEND_OR_SKIP(backend, backend_name(), /*needs_values=*/true);
  auto graph = op_case().build();
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto schedule = OneOpPerStage(*graph);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  Status status = RunAndCompare(*backend, *graph, *schedule, op_case().name);
  EXPECT_TRUE(status.ok()) << status;
}

TEST_P(OpConformanceTest, BuildsAndProfilesEveryStage) {
  IOSFARM_BACKEND_OR_SKIP(backend, backend_name(), /*needs_values=*/false);
  auto graph = op_case().build();
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto schedule = OneOpPerStage(*graph);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  std::vector<scheduler::ios::Stage> stages;
  for (const auto& s : schedule->stages) stages.push_back(s.stage);
  auto plans = backend->Build(*graph, stages);
  ASSERT_TRUE(plans.ok()) << plans.status();
  ASSERT_EQ(plans->size(), stages.size());
  std::vector<const worker::StagePlan*> views;
  for (const auto& plan : *plans) views.push_back(plan.get());
  const worker::ProfileOptions options = QuickProfile();
  auto stats = backend->Profile(views, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), stages.size());
  for (const worker::LatencyStats& s : *stats) {
    EXPECT_GT(s.median_ms, 0);
    EXPECT_LE(s.p10_ms, s.median_ms);
    EXPECT_LE(s.median_ms, s.p90_ms);
    EXPECT_GE(s.repeats, options.min_repeats);
    EXPECT_LE(s.repeats, options.max_repeats);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, OpConformanceTest,
    BackendsTimesCaseIndices(OpCases().size()),
    [](const ::testing::TestParamInfo<OpConformanceTest::ParamType>& info) {
      return std::get<0>(info.param) + "_" + OpCases()[std::get<1>(info.param)].name;
    });

}  // namespace
}  // namespace iosfarm::conformance
