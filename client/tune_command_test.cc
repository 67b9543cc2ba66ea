// `iosfarm tune` end to end: embedded server + local sim worker in this
// process, plus the defaults of the embedded farm.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_testing.h"
#include "client/embedded_farm.h"

namespace iosfarm::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

EnvLookup FakeEnv(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

using Result = CliResult;

TEST(EmbeddedFarmTest, DatabasePathFollowsXdgThenHome) {
  EXPECT_EQ(*DefaultDatabasePath(FakeEnv({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}})),
            "/x/iosfarm/latency.db");
  EXPECT_EQ(*DefaultDatabasePath(FakeEnv({{"HOME", "/h"}})), "/h/.cache/iosfarm/latency.db");
  EXPECT_EQ(DefaultDatabasePath(FakeEnv({})).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(EmbeddedFarmTest, DeviceKeys) {
  EXPECT_EQ(DefaultDeviceKey("cpu", "oneDNN ..."), "local-cpu");
  EXPECT_EQ(DefaultDeviceKey("sim:h100", "sim"), "local-sim-h100");
  EXPECT_EQ(DefaultDeviceKey("cuda", "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, CUDA runtime 13)"),
            "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(DefaultDeviceKey("cuda", ""), "local-cuda");
}

TEST(TuneCommandTest, EmbeddedSimTunesAZooModelAndReusesTheDatabase) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("iosfarm_tune_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const std::string db = (dir / "sub" / "latency.db").string();  // directory is created
  const std::string schedule = (dir / "schedule.json").string();

  Result r = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--db", db, "-o", schedule,
                         "--log-level", "off"});
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  EXPECT_THAT(r.out, StartsWith("embedded farm: backend sim"));
  EXPECT_THAT(r.out, HasSubstr("device key local-sim"));
  EXPECT_THAT(r.out, HasSubstr("succeeded"));
  EXPECT_THAT(r.out, HasSubstr("x vs sequential"));
  EXPECT_TRUE(std::filesystem::exists(db));
  EXPECT_GT(std::filesystem::file_size(schedule), 0u);

  // Second run: same database, JSON; every stage comes from the cache.
  Result again = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--db", db, "--format",
                             "json", "--log-level", "off"});
  ASSERT_EQ(again.code, kExitOk) << again.err;
  auto j = nlohmann::json::parse(again.out);
  EXPECT_EQ(j["job"]["state"], "succeeded");
  EXPECT_EQ(j["result"]["stages_profiled"], 0);
  EXPECT_GT(j["result"]["cache_hits"].get<int64_t>(), 0);
  EXPECT_EQ(j["result"]["device_key"], "local-sim");
  std::filesystem::remove_all(dir);
}

TEST(TuneCommandTest, RemoteFlagsExcludeEmbeddedOnes) {
  EXPECT_EQ(RunIosfarm({"tune", "squeezenet", "--server", "127.0.0.1:1", "--db", "x"}).code,
            kExitUsage);
  Result r = RunIosfarm({"tune", "squeezenet", "--server", "127.0.0.1:1"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("--device"));
}

}  // namespace
}  // namespace iosfarm::client
