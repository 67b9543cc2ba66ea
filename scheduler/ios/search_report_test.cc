#include "scheduler/ios/search_report.h"

#include "graph/models/zoo.h"
#include "gtest/gtest.h"
#include "scheduler/ios/analytic_oracle.h"

namespace iosfarm::scheduler::ios {
namespace {

TEST(SearchReportTest, TextAndJson) {
  const graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  SearchOptions options;
  auto report = SearchWithBaselines(graph, options, MakeAnalyticOracle(graph));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LE(report->ios.schedule.latency_ms, report->greedy.latency_ms);
  EXPECT_LE(report->ios.schedule.latency_ms, report->sequential.latency_ms);
  const std::string text = SearchReportText(graph, *report, true);
  for (const char* needle : {"sequential: ", "greedy: ", "ios: ", "speedup", "unique signatures",
                             "stage 0 (block 0"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
  EXPECT_EQ(SearchReportText(graph, *report, false).find("stage 0 (block"), std::string::npos);
  const auto metadata = MakeScheduleMetadata(graph, "sim", "ios", &options);
  const nlohmann::json json = SearchReportJson(graph, *report, metadata);
  EXPECT_EQ(json["latency_ms"]["ios"], report->ios.schedule.latency_ms);
  EXPECT_EQ(json["stats"]["blocks"], report->ios.stats.blocks);
  EXPECT_TRUE(ScheduleFromJson(json["schedule"], graph).ok());
}

// The JSON's "blocks": one per block, the solver each took, figures that
// add up to the search's.
TEST(SearchReportTest, JsonReportsEachBlock) {
  const graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  for (const bool exhaustive : {false, true}) {
    SCOPED_TRACE(exhaustive ? "exhaustive" : "bounded");
    SearchOptions options;
    options.max_block_ops = 6;  // small blocks: fire modules repeat (twins)
    options.exhaustive = exhaustive;
    auto report = SearchWithBaselines(graph, options, MakeAnalyticOracle(graph));
    ASSERT_TRUE(report.ok()) << report.status();
    const SearchStats& stats = report->ios.stats;
    const auto metadata = MakeScheduleMetadata(graph, "sim", "ios", &options);
    const nlohmann::json json = SearchReportJson(graph, *report, metadata);
    const nlohmann::json& blocks = json["blocks"];
    ASSERT_TRUE(blocks.is_array());
    ASSERT_EQ(static_cast<int>(blocks.size()), stats.blocks);
    int twins = 0, ops = 0;
    double latency = 0;
    for (size_t b = 0; b < blocks.size(); ++b) {
      const nlohmann::json& block = blocks[b];
      const std::string solver = block["solver"];
      EXPECT_GT(block["ops"].get<int>(), 0);
      EXPECT_GT(block["stages"].get<int>(), 0);
      ops += block["ops"].get<int>();
      latency += block["latency_ms"].get<double>();
      if (block["twin"].is_null()) {
        EXPECT_EQ(solver, exhaustive ? "exhaustive" : "bounded") << b;
        EXPECT_GT(block["states"].get<int64_t>(), 0) << b;
      } else {
        ++twins;
        EXPECT_EQ(solver, "twin") << b;
        EXPECT_LT(block["twin"].get<size_t>(), b);
        EXPECT_EQ(block["ops"], blocks[block["twin"].get<size_t>()]["ops"]);
      }
      if (!exhaustive) {
        EXPECT_GT(block["bound_groups"].get<int64_t>(), 0) << b;
      }
    }
    EXPECT_EQ(twins, stats.reused_blocks);
    EXPECT_GT(twins, 0);
    size_t scheduled_ops = 0;  // the blocks partition the scheduled ops
    for (const ScheduledStage& stage : report->ios.schedule.stages) {
      for (const auto& group : stage.stage.groups) scheduled_ops += group.size();
    }
    EXPECT_EQ(static_cast<size_t>(ops), scheduled_ops);
    // The schedule is the blocks' less what boundary windows saved.
    EXPECT_NEAR(latency - stats.window_gain_ms, report->ios.schedule.latency_ms, 1e-9);
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
