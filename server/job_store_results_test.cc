// JobStore results: the typed result in columns, and the results of a
// version-2 file after the upgrade (store_schema.cc, version 3), including
// the ones it could not read.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/strings.h"
#include "server/farm_database.h"
#include "server/job_store.h"
#include "server/sqlite_db.h"
#include "server/store_test_rows.h"
#include "server/store_test_util.h"

namespace iosfarm::server {
namespace {

using ::testing::HasSubstr;

class JobStoreResultsTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    store_ = std::move(OpenTestDatabase(PathOf("farm.db")).jobs);
    ASSERT_NE(store_, nullptr);
    ASSERT_TRUE(store_->PutModel(Model("d1", "m1")).ok());
  }

  std::unique_ptr<JobStore> store_;
};

TEST_F(JobStoreResultsTest, TypedResultRoundTripKeepsEveryFigure) {
  const int64_t id = *store_->CreateJob(Job("d1", "h100"));
  EXPECT_FALSE(store_->GetResult(id)->has_value());
  const ResultRow stored = FullResult(id);
  ASSERT_TRUE(store_->PutResult(stored).ok());
  auto result = store_->GetResult(id);
  ASSERT_TRUE(result.ok() && result->has_value()) << result.status();
  ExpectSameResult(**result, stored);
}

TEST_F(JobStoreResultsTest, ResultsReplace) {
  const int64_t id = *store_->CreateJob(Job("d1", "h100"));
  ASSERT_TRUE(store_->PutResult(FullResult(id)).ok());
  ResultRow second;
  second.job_id = id;
  second.schedule_json = "{\"stages\":[1]}";
  second.measured = {{"greedy", 4.0, 3.9, 4.2, 0.1, 5}};
  second.chosen = "greedy";
  second.predicted_ms = 4.0;
  ASSERT_TRUE(store_->PutResult(second).ok());
  auto result = store_->GetResult(id);
  ASSERT_TRUE(result.ok() && result->has_value());
  // Every figure is the second result's; the first one's measurements went.
  ExpectSameResult(**result, second);
  ResultRow unknown = second;
  unknown.job_id = id + 1;
  EXPECT_TRUE(absl::IsNotFound(store_->PutResult(unknown)));
}

TEST_F(JobStoreResultsTest, PutResultRefusesWhatCannotBeStoredAndWritesNothing) {
  const int64_t id = *store_->CreateJob(Job("d1", "h100"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Bad {
    const char* field;
    void (*spoil)(ResultRow&, double);
  };
  const Bad bad[] = {
      {"predicted_ms", [](ResultRow& r, double v) { r.predicted_ms = v; }},
      {"search_s", [](ResultRow& r, double v) { r.search_s = v; }},
      {"measured greedy median_ms", [](ResultRow& r, double v) { r.measured[2].median_ms = v; }},
      {"measured ios p10_ms", [](ResultRow& r, double v) { r.measured[0].p10_ms = v; }},
      {"measured sequential p90_ms", [](ResultRow& r, double v) { r.measured[1].p90_ms = v; }},
      {"measured ios cv", [](ResultRow& r, double v) { r.measured[0].cv = v; }},
  };
  for (const Bad& b : bad) {
    for (double value : {nan, inf}) {
      ResultRow result = FullResult(id);
      b.spoil(result, value);
      Status status = store_->PutResult(result);
      EXPECT_TRUE(absl::IsInvalidArgument(status)) << b.field << ": " << status;
      EXPECT_THAT(std::string(status.message()), HasSubstr(b.field));
      EXPECT_THAT(std::string(status.message()), HasSubstr(StrCat("job ", id)));
    }
  }
  ResultRow twice = FullResult(id);
  twice.measured[1].name = "ios";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->PutResult(twice)));
  ResultRow unnamed = FullResult(id);
  unnamed.measured[0].name = "";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->PutResult(unnamed)));
  EXPECT_FALSE(store_->GetResult(id)->has_value()) << "nothing was written";
}

// ------------------------------------------------------------ from version 2

class Version2ResultsTest : public TempDirTest {
 protected:
  // Upgrades the version-2 file at `path` and returns its job store.
  std::unique_ptr<JobStore> Upgrade(const std::string& path) {
    return std::move(OpenTestDatabase(path).jobs);
  }
};

// What ResultToProto made of a stored JSON result before version 3, now
// done once by the upgrade: measurements in the order ios, sequential,
// greedy; missing figures read as 0; a missing `chosen` reads as 'ios'.
TEST_F(Version2ResultsTest, FiguresAreReadAsTheVersion2ServerReadThem) {
  const std::string path = PathOf("v2.db");
  const std::vector<int64_t> ids = WriteVersion2Results(path, {R"({
    "measured": {
      "ios": {"median_ms": 0.7, "p10_ms": 0.69, "p90_ms": 0.72, "cv": 0.01, "repeats": 20},
      "greedy": {"median_ms": 0.9, "p10_ms": 0.88, "p90_ms": 0.95, "cv": 0.03, "repeats": 22},
      "sequential": {"median_ms": 0.8}
    },
    "predicted_ms": 0.65, "search_s": 1.25, "stages_profiled": 120, "cache_hits": 30,
    "candidates": 900, "unique_signatures": 150, "stages": 11,
    "worker": "w1", "backend": "sim", "device_key": "sim-test"
  })"});
  ASSERT_EQ(ids.size(), 1u);
  auto store = Upgrade(path);
  ASSERT_NE(store, nullptr);
  auto result = store->GetResult(ids[0]);
  ASSERT_TRUE(result.ok() && result->has_value()) << result.status();
  ResultRow want = FullResult(ids[0]);  // the figures of the text above
  want.schedule_json = "{\"job\": 0}";
  // Always in the order ios, sequential, greedy; missing figures read as 0.
  want.measured[1] = {"sequential", 0.8, 0, 0, 0, 0};
  want.chosen = "ios";  // results stored before the choice existed
  ClearFiguresAfterVersion3(want);
  ExpectSameResult(**result, want);
}

// A result the version-2 server could not read (GetResult answered DataLoss)
// still answers DataLoss after the upgrade; its job and its text are kept,
// and the readable results beside it are converted.
TEST_F(Version2ResultsTest, UnreadableResultsKeepTheirJobAndTextAndStayDataLoss) {
  const std::string path = PathOf("v2.db");
  const std::vector<std::string> corrupt = {
      "not json", "[1, 2]", "42", R"({"measured": {"ios": {"median_ms": "fast"}}})",
      R"({"stages": "many"})", R"({"search_s": null})", R"({"measured": {"greedy": 3}})",
      R"({"worker": 7})"};
  std::vector<std::string> texts = corrupt;
  texts.push_back(R"({"measured": [1, 2], "chosen": "greedy", "stages": 2.7, "extra": "x"})");
  const std::vector<int64_t> ids = WriteVersion2Results(path, texts);
  ASSERT_EQ(ids.size(), texts.size());
  auto store = Upgrade(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->CountUnreadableResults(), static_cast<int64_t>(corrupt.size()));
  for (size_t i = 0; i < corrupt.size(); ++i) {
    auto result = store->GetResult(ids[i]);
    ASSERT_FALSE(result.ok()) << corrupt[i];
    EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss) << corrupt[i];
    EXPECT_THAT(result.status().message(), HasSubstr(StrCat("job ", ids[i]))) << corrupt[i];
    EXPECT_THAT(result.status().message(), HasSubstr("results_unreadable")) << corrupt[i];
    auto job = store->GetJob(ids[i]);
    ASSERT_TRUE(job.ok() && job->has_value()) << corrupt[i];
    EXPECT_EQ((*job)->state, JobState::kSucceeded);
  }
  // The texts are kept as they were.
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  auto kept = (*db)->Prepare("SELECT result_json, reason FROM results_unreadable ORDER BY job_id");
  ASSERT_TRUE(kept.ok());
  for (const std::string& text : corrupt) {
    ASSERT_TRUE(*kept->Step());
    EXPECT_EQ(kept->ColumnText(0), text);
    EXPECT_FALSE(kept->ColumnText(1).empty());
  }
  // A measured value that is not an object is ignored, numbers truncate to
  // integers, unknown figures are ignored (as the version-2 server did).
  auto readable = store->GetResult(ids.back());
  ASSERT_TRUE(readable.ok() && readable->has_value()) << readable.status();
  EXPECT_TRUE((*readable)->measured.empty());
  EXPECT_EQ((*readable)->chosen, "greedy");
  EXPECT_EQ((*readable)->stages, 2);
  // A new result replaces an unreadable one.
  ASSERT_TRUE(store->PutResult(FullResult(ids[0])).ok());
  EXPECT_TRUE(store->GetResult(ids[0]).ok());
  EXPECT_EQ(*store->CountUnreadableResults(), static_cast<int64_t>(corrupt.size()) - 1);
}

}  // namespace
}  // namespace iosfarm::server
