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

}  // namespace
}  // namespace iosfarm::scheduler::ios
