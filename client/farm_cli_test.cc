// The remote commands against a real farm: an embedded server and a local sim
// worker in this process (client/embedded_farm.h).
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_testing.h"
#include "client/embedded_farm.h"

namespace iosfarm::client {
namespace {

using ::testing::ElementsAre;

class FarmCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iosfarm_farm_cli_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    EmbeddedFarmOptions options;
    options.backend = "sim";
    options.db_path = (dir_ / "farm.db").string();
    auto farm = EmbeddedFarm::Start(options);
    ASSERT_TRUE(farm.ok()) << farm.status();
    farm_ = *std::move(farm);
  }
  void TearDown() override {
    farm_.reset();
    std::filesystem::remove_all(dir_);
  }

  CliResult Run(std::vector<std::string> args) {
    args.push_back("--server");
    args.push_back(farm_->address());
    return RunIosfarm(std::move(args));
  }

  std::vector<int64_t> ListedIds(std::vector<std::string> args) {
    args.insert(args.begin(), "list");
    args.push_back("--format");
    args.push_back("json");
    CliResult r = Run(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    std::vector<int64_t> ids;
    const nlohmann::json listed = nlohmann::json::parse(r.out);
    for (const auto& job : listed["jobs"]) ids.push_back(job["id"]);
    return ids;
  }

  std::filesystem::path dir_;
  std::unique_ptr<EmbeddedFarm> farm_;
};

TEST_F(FarmCliTest, ListIsNewestFirstAndLimitKeepsTheNewest) {
  for (int i = 0; i < 3; ++i) {
    CliResult r = Run({"submit", "squeezenet", "--device", farm_->device_key()});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.out, std::to_string(i + 1) + "\n");
  }
  EXPECT_THAT(ListedIds({}), ElementsAre(3, 2, 1));
  EXPECT_THAT(ListedIds({"--limit", "2"}), ElementsAre(3, 2));
  EXPECT_THAT(ListedIds({"--limit", "1", "--device", farm_->device_key()}), ElementsAre(3));
}

TEST_F(FarmCliTest, ForgetDeletesAKeysMeasurementsAndTheNextJobMeasuresAgain) {
  CliResult tuned = Run({"submit", "squeezenet", "--device", farm_->device_key(), "--wait"});
  ASSERT_EQ(tuned.code, kExitOk) << tuned.err;
  CliResult forget = Run({"forget", "--device", farm_->device_key()});
  ASSERT_EQ(forget.code, kExitOk) << forget.err;
  EXPECT_THAT(forget.out, ::testing::MatchesRegex("forgot [1-9][0-9]* measurements of device "
                                                  ".*; 0 remain\n"));
  CliResult again = Run({"submit", "squeezenet", "--device", farm_->device_key(), "--wait",
                         "--format", "json"});
  ASSERT_EQ(again.code, kExitOk) << again.err;
  const nlohmann::json job = nlohmann::json::parse(again.out)["job"];
  EXPECT_GT(job["progress"]["stages_profiled"].get<int64_t>(), 0) << "measured again";
  EXPECT_EQ(job["progress"]["cache_hits"].get<int64_t>(), 0);
  CliResult unknown = Run({"forget", "--device", "no-such-key"});
  EXPECT_EQ(unknown.code, kExitFailure);
  EXPECT_THAT(unknown.err, ::testing::HasSubstr("unknown device key 'no-such-key'"));
  EXPECT_EQ(Run({"forget"}).code, kExitUsage) << "--device is required";
}

TEST_F(FarmCliTest, TimelineOfAnUnknownJobFailsLikeStatus) {
  CliResult status = Run({"status", "99"});
  CliResult timeline = Run({"timeline", "99"});
  EXPECT_EQ(status.code, kExitFailure);
  EXPECT_EQ(timeline.code, kExitFailure);
  EXPECT_EQ(timeline.err, "iosfarm: error: job 99 not found\n");
  EXPECT_EQ(timeline.err, status.err);
  EXPECT_EQ(timeline.out, "");
  // Without a job: every phase of the farm (none yet), no error.
  CliResult all = Run({"timeline"});
  EXPECT_EQ(all.code, kExitOk) << all.err;
}

}  // namespace
}  // namespace iosfarm::client
