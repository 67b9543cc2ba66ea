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
#include "client/farm_client.h"
#include "client/interrupt_notice.h"
#include "server/farm_server.h"
#include "tuned_model/tuned_model_file.h"

namespace iosfarm::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
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
  // Graph-timed latencies get a key of their own (the runtime's CUDA-graph
  // sessions and `iosfarm tune --cuda-graph-stages` share it).
  EXPECT_EQ(
      DefaultDeviceKey("cuda", "NVIDIA H200 (sm_90, 132 SMs, stages timed as CUDA graphs)", true),
      "nvidia-h200-graph-stages");
  EXPECT_EQ(DefaultDeviceKey("cuda", "", true), "local-cuda-graph-stages");
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
  EXPECT_THAT(r.err, HasSubstr("succeeded"));  // the progress line, on stderr
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

// What an interrupted `tune` leaves behind: a queued job in the database,
// submitted to a server with no worker that then stops. Returns its id.
int64_t LeaveUnfinishedJob(const std::string& db, const std::string& model) {
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.db_path = db;
  options.tokens_from_env = false;
  auto server = server::FarmServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return 0;
  RemoteOptions remote;
  remote.server = (*server)->address();
  auto client = FarmClient::Connect(remote);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return 0;
  v1::SubmitJobRequest request;
  request.set_zoo_name(model);
  request.set_model_name(model);
  request.set_device_key("local-sim");
  auto job = (*client)->SubmitJob(request);
  EXPECT_TRUE(job.ok()) << job.status();
  client->reset();
  (*server)->Shutdown();
  return job.ok() ? job->id() : 0;
}

TEST(TuneCommandTest, ResumesTheJobAnInterruptedTuneLeftOrStartsAfreshWithFresh) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("iosfarm_resume_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "latency.db").string();
  // A first tune makes the device key local-sim known to the database.
  Result first = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--db", db, "--log-level",
                             "off"});
  ASSERT_EQ(first.code, kExitOk) << first.err;
  EXPECT_THAT(first.err, Not(HasSubstr("resuming")));

  const int64_t left = LeaveUnfinishedJob(db, "squeezenet");
  ASSERT_GT(left, 0);
  Result resumed = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--db", db,
                               "--log-level", "off"});
  ASSERT_EQ(resumed.code, kExitOk) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("iosfarm: resuming job " + std::to_string(left) +
                                     " (squeezenet, batch "));
  EXPECT_THAT(resumed.err, HasSubstr("--fresh"));
  EXPECT_THAT(resumed.out, Not(HasSubstr("submitted")));  // no second job
  EXPECT_THAT(resumed.out, HasSubstr("job " + std::to_string(left) + ": device local-sim"));

  const int64_t again = LeaveUnfinishedJob(db, "squeezenet");
  ASSERT_GT(again, left);
  Result fresh = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--db", db, "--fresh",
                             "--log-level", "off"});
  ASSERT_EQ(fresh.code, kExitOk) << fresh.err;
  EXPECT_THAT(fresh.err, HasSubstr("iosfarm: cancelled job " + std::to_string(again)));
  EXPECT_THAT(fresh.out, HasSubstr("job " + std::to_string(again + 1) + " submitted"));

  // An unfinished job of another model is named, and resumes alongside.
  const int64_t other = LeaveUnfinishedJob(db, "resnet50");
  Result note = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--db", db, "--log-level",
                            "off"});
  ASSERT_EQ(note.code, kExitOk) << note.err;
  EXPECT_THAT(note.err, HasSubstr("note: job " + std::to_string(other) + " (resnet50"));
  std::filesystem::remove_all(dir);
}

TEST(InterruptNoticeTest, CtrlCPrintsWhatBecomesOfTheJobAndExits130) {
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";  // gRPC threads may exist
  EXPECT_EXIT(
      {
        ScopedInterruptNotice notice("\niosfarm: interrupted; job 7 stays unfinished");
        raise(SIGINT);
      },
      ::testing::ExitedWithCode(kExitInterrupted), "iosfarm: interrupted; job 7 stays unfinished");
}

TEST(InterruptNoticeTest, PreviousHandlerComesBack) {
  struct sigaction before {};
  sigaction(SIGINT, nullptr, &before);
  { ScopedInterruptNotice notice("x"); }
  struct sigaction after {};
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(before.sa_handler, after.sa_handler);
}

std::vector<int64_t> Batches(const v1::TunedModel& model) {
  std::vector<int64_t> batches;
  for (const v1::TunedBatch& entry : model.batches()) batches.push_back(entry.batch());
  return batches;
}

// --batch 1,2 tunes one job a batch side by side; --save writes them into
// one tuned model file, which `tune` takes again as MODEL (its batches by
// default, every stage from the database) and `run` runs at each batch.
TEST(TuneCommandTest, SeveralBatchesTuneSideBySideIntoOneTunedModelFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("iosfarm_batches_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "latency.db").string();
  const std::string file = (dir / "squeezenet.iosfarm").string();

  Result r = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--db", db, "--batch", "1,2",
                         "--save", file, "--log-level", "off"});
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("job 1 submitted"));
  EXPECT_THAT(r.out, HasSubstr("job 2 submitted"));
  EXPECT_THAT(r.out, HasSubstr("job 1: device local-sim"));
  EXPECT_THAT(r.out, HasSubstr("job 2: device local-sim"));
  EXPECT_THAT(r.out,
              HasSubstr("saved " + file + ": squeezenet, batches 1, 2, device key local-sim\n"));
  auto model = tuned_model::ReadTunedModelFile(file);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(Batches(*model), ElementsAre(1, 2));
  EXPECT_EQ(model->zoo_name(), "squeezenet");
  EXPECT_EQ(model->backend(), "sim");
  EXPECT_THAT(model->tuned_on(), HasSubstr("sim"));
  EXPECT_FALSE(model->iosfarm_version().empty());
  for (const v1::TunedBatch& entry : model->batches()) {
    EXPECT_GT(entry.predicted_ms(), 0) << entry.batch();
    EXPECT_FALSE(entry.measured().empty()) << entry.batch();
    EXPECT_EQ(nlohmann::json::parse(entry.schedule_json())["model"]["batch"], entry.batch());
  }

  Result inspect = RunIosfarm({"inspect", file});
  ASSERT_EQ(inspect.code, kExitOk) << inspect.err;
  EXPECT_THAT(inspect.out, HasSubstr("model        squeezenet (built-in zoo model)\n"));
  EXPECT_THAT(inspect.out, HasSubstr("device key   local-sim (backend sim)\n"));
  EXPECT_THAT(inspect.out, HasSubstr("predicted: the sum of the schedule's stage latencies"));
  Result inspect_json = RunIosfarm({"inspect", file, "--format", "json"});
  ASSERT_EQ(inspect_json.code, kExitOk) << inspect_json.err;
  const nlohmann::json report = nlohmann::json::parse(inspect_json.out);
  ASSERT_EQ(report["batches"].size(), 2u);
  EXPECT_EQ(report["batches"][1]["batch"], 2);
  EXPECT_GT(report["batches"][1]["measured"]["sequential"]["median_ms"].get<double>(), 0);
  EXPECT_GT(report["batches"][0]["stages"].get<int64_t>(), 0);
  Result graph = RunIosfarm({"inspect", file, "--batch", "2", "--format", "json"});
  ASSERT_EQ(graph.code, kExitOk) << graph.err;
  EXPECT_EQ(nlohmann::json::parse(graph.out)["model"], "squeezenet");

  // The file as MODEL: its batches, nothing measured again.
  const std::string again_file = (dir / "again.iosfarm").string();
  Result again = RunIosfarm(
      {"tune", file, "--backend", "sim", "--db", db, "--save", again_file, "--log-level", "off"});
  ASSERT_EQ(again.code, kExitOk) << again.err << again.out;
  EXPECT_THAT(again.out, HasSubstr("saved " + again_file + ": squeezenet, batches 1, 2"));
  // Both jobs' reports: every stage from the database.
  size_t reports = 0;
  for (size_t at = again.out.find("search:  "); at != std::string::npos;
       at = again.out.find("search:  ", at + 1)) {
    ++reports;
    EXPECT_THAT(again.out.substr(at, again.out.find('\n', at) - at),
                HasSubstr(", 0 stages profiled, "));
  }
  EXPECT_EQ(reports, 2u) << again.out;

  Result run = RunIosfarm({"run", file, "--backend", "sim", "--batch", "2", "--iterations", "2"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  EXPECT_THAT(run.out, HasSubstr("schedule  ios, "));
  EXPECT_THAT(run.err, Not(HasSubstr("tuned for device key")));
  Result sequential =
      RunIosfarm({"run", file, "--backend", "sim", "--sequential", "--iterations", "2"});
  ASSERT_EQ(sequential.code, kExitOk) << sequential.err;
  EXPECT_THAT(sequential.out, HasSubstr("schedule  sequential, "));
  Result missing = RunIosfarm({"run", file, "--backend", "sim", "--batch", "4"});
  EXPECT_EQ(missing.code, kExitFailure);
  EXPECT_THAT(missing.err,
              HasSubstr("tuned model file '" + file + "' holds batches 1, 2; none for batch 4"));
  Result elsewhere = RunIosfarm({"run", file, "--backend", "sim:h100", "--iterations", "1"});
  ASSERT_EQ(elsewhere.code, kExitOk) << elsewhere.err;
  EXPECT_THAT(elsewhere.err, HasSubstr("was tuned for device key local-sim; this backend's is "
                                       "local-sim-h100"));
  std::filesystem::remove_all(dir);
}

TEST(TuneCommandTest, BatchListsAreChecked) {
  Result twice = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--batch", "1,8,1"});
  EXPECT_EQ(twice.code, kExitUsage);
  EXPECT_THAT(twice.err, HasSubstr("--batch 1 is given twice"));
  Result output =
      RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--batch", "1,8", "-o", "x.json"});
  EXPECT_EQ(output.code, kExitUsage);
  EXPECT_THAT(output.err, HasSubstr("--save FILE writes them all"));
  Result json =
      RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--batch", "1,8", "--format", "json"});
  EXPECT_EQ(json.code, kExitUsage);
  EXPECT_THAT(json.err, HasSubstr("--format json reports one job"));
  EXPECT_EQ(RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--batch", "1,0"}).code,
            kExitUsage);
  Result junk = RunIosfarm({"tune", "squeezenet", "--backend", "sim", "--batch", "1,x"});
  EXPECT_EQ(junk.code, kExitUsage);
  EXPECT_THAT(junk.err, HasSubstr("--batch"));
}

TEST(TuneCommandTest, RemoteFlagsExcludeEmbeddedOnes) {
  EXPECT_EQ(RunIosfarm({"tune", "squeezenet", "--server", "127.0.0.1:1", "--db", "x"}).code,
            kExitUsage);
  Result r = RunIosfarm({"tune", "squeezenet", "--server", "127.0.0.1:1"});
  EXPECT_EQ(r.code, kExitUsage);  // a missing required flag, like any other
  EXPECT_THAT(r.err, HasSubstr("--device"));
}

}  // namespace
}  // namespace iosfarm::client
