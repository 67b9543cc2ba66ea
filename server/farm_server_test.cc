// FarmServer over real gRPC on loopback: bad requests, a whole job with a
// sim WorkerDaemon, the end-to-end choice, workers that answer garbage.
// (Cancel, worker ids, sharing, heartbeats, health:
// farm_server_workers_test.cc.)
#include "server/farm_server.h"

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "graph/models/zoo.h"
#include "graph/onnx/onnx_test_util.h"
#include "nlohmann/json.hpp"
#include "scheduler/ios/baselines.h"
#include "server/farm_database.h"
#include "server/farm_server_test_util.h"
#include "server/server_test_util.h"

namespace iosfarm::server {
namespace {

using namespace std::chrono_literals;


// ---------------------------------------------------------------- bad input

TEST_F(FarmServerTest, BadRequestsGetClearErrorsAndChangeNothing) {
  ServerOptions options = Options();
  options.max_model_bytes = 4096;
  options.max_ops = 20;
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  const std::string onnx = TwoBranchOnnx();
  ASSERT_LT(onnx.size(), 4096u);

  struct Case {
    std::string what;
    v1::SubmitJobRequest request;
    grpc::StatusCode code;
    std::vector<std::string> message_parts;
  };
  std::vector<Case> cases;
  {
    v1::SubmitJobRequest r;
    r.set_device_key("sim-test");
    cases.push_back({"no model", r, grpc::StatusCode::INVALID_ARGUMENT, {"a model is required"}});
  }
  {
    v1::SubmitJobRequest r;
    r.set_zoo_name("squeezenet");
    cases.push_back({"no device key", r, grpc::StatusCode::INVALID_ARGUMENT, {"device_key"}});
  }
  {
    v1::SubmitJobRequest r = OnnxRequest("this is not an onnx file", "sim-test");
    r.set_model_name("broken.onnx");
    cases.push_back({"malformed onnx", r, grpc::StatusCode::INVALID_ARGUMENT,
                     {"broken.onnx", "not a valid ONNX model"}});
  }
  cases.push_back({"unknown zoo model", ZooRequest("nosuchnet", "sim-test"),
                   grpc::StatusCode::NOT_FOUND, {"nosuchnet", "squeezenet"}});
  cases.push_back({"oversized model", OnnxRequest(std::string(5000, 'x'), "sim-test"),
                   grpc::StatusCode::RESOURCE_EXHAUSTED, {"5000 bytes", "4096"}});
  cases.push_back({"too many ops", ZooRequest("squeezenet", "sim-test"),
                   grpc::StatusCode::RESOURCE_EXHAUSTED, {"squeezenet", "at most 20"}});
  {
    v1::SubmitJobRequest r = OnnxRequest(onnx, "sim-test");
    r.mutable_options()->set_r(100);
    cases.push_back({"r out of range", r, grpc::StatusCode::INVALID_ARGUMENT,
                     {"options.r", "100"}});
  }
  {
    v1::SubmitJobRequest r = OnnxRequest(onnx, "sim-test");
    r.mutable_options()->set_s(-2);
    cases.push_back({"negative s", r, grpc::StatusCode::INVALID_ARGUMENT, {"options.s", "-2"}});
  }
  {
    v1::SubmitJobRequest r = OnnxRequest(onnx, "sim-test");
    r.set_batch(-1);
    cases.push_back({"negative batch", r, grpc::StatusCode::INVALID_ARGUMENT, {"batch", "-1"}});
  }
  // No worker has registered any key yet.
  cases.push_back({"unknown device key", OnnxRequest(onnx, "sim-test"),
                   grpc::StatusCode::NOT_FOUND, {"unknown device key 'sim-test'"}});

  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    v1::Job job;
    grpc::Status status = farm.Submit(c.request, job);
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    for (const std::string& part : c.message_parts) {
      EXPECT_THAT(status.error_message(), HasSubstr(part));
    }
  }
  EXPECT_THAT(farm.ListJobs(), IsEmpty());
  v1::Job missing;
  EXPECT_EQ(farm.GetJob(12345, missing).error_code(), grpc::StatusCode::NOT_FOUND);

  // The server keeps serving: once a worker registered the key, a valid job
  // (r = 0 meaning the default) is tuned to the end.
  SimWorker worker(farm.address(), "sim-1", "sim-test");
  ASSERT_TRUE(WaitUntil([&] { return farm.HasWorker("sim-1"); }));
  v1::SubmitJobRequest valid = OnnxRequest(onnx, "sim-test");
  valid.mutable_options()->set_r(0);
  v1::Job job;
  grpc::Status status = farm.Submit(valid, job);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(job.model_name(), "two_branch.onnx");
  EXPECT_EQ(job.options().r(), 3);
  EXPECT_EQ(job.options().s(), 8);
  EXPECT_EQ(job.batch(), 1);
  const v1::Job done = farm.WaitForFinalState(job.id());
  EXPECT_EQ(done.state(), v1::SUCCEEDED) << done.error();
  EXPECT_EQ(farm.ListJobs().size(), 1u);

  // A device key stays known after its workers leave.
  worker.Stop();
  ASSERT_TRUE(WaitUntil([&] { return !farm.HasWorker("sim-1"); }));
  v1::Job queued;
  status = farm.Submit(OnnxRequest(onnx, "sim-test"), queued);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// ---------------------------------------------------------------- full job

// --policy critical-path: jobs of different sizes and priorities, ordered by
// their estimated remaining chains, all finish.
TEST_F(FarmServerTest, CriticalPathPolicyRunsEveryJobToTheEnd) {
  ServerOptions options = Options();
  options.policy = "critical-path";
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  SimWorker worker(farm.address(), "sim-worker-1", "sim-test");
  ASSERT_TRUE(WaitUntil([&] { return farm.HasWorker("sim-worker-1"); }));
  std::vector<int64_t> ids;
  for (const auto& [model, batch, priority] : std::vector<std::tuple<std::string, int, int>>{
           {"squeezenet", 1, 0}, {"squeezenet", 2, 3}, {"resnet50", 1, -1}}) {
    v1::SubmitJobRequest request = ZooRequest(model, "sim-test");
    request.set_batch(batch);
    request.set_priority(priority);
    v1::Job job;
    grpc::Status status = farm.Submit(request, job);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ids.push_back(job.id());
  }
  for (int64_t id : ids) {
    grpc::Status status;
    std::vector<v1::JobEvent> events = Watch(farm, id, status);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().job().state(), v1::SUCCEEDED) << events.back().job().error();
  }
}

TEST_F(FarmServerTest, TunesSqueezeNetWithASimWorkerAndReusesItsMeasurements) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());
  SimWorker worker(farm.address(), "sim-worker-1", "sim-test");
  ASSERT_TRUE(WaitUntil([&] { return farm.HasWorker("sim-worker-1"); }));

  v1::Job job;
  grpc::Status status = farm.Submit(ZooRequest("squeezenet", "sim-test"), job);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(job.id(), 0);
  EXPECT_EQ(job.model_name(), "squeezenet");
  EXPECT_EQ(job.device_key(), "sim-test");
  EXPECT_EQ(job.batch(), 1);
  EXPECT_EQ(job.owner(), "anonymous");
  EXPECT_EQ(job.state(), v1::QUEUED);

  std::vector<v1::JobEvent> events = Watch(farm, job.id(), status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().job().state(), v1::SUCCEEDED) << events.back().job().error();
  for (const v1::JobEvent& event : events) EXPECT_EQ(event.job().id(), job.id());

  const v1::JobResult result = GetResult(farm, job.id());
  EXPECT_EQ(result.job_id(), job.id());
  std::vector<std::string> names;
  for (const v1::ScheduleLatency& measured : result.measured()) {
    names.push_back(measured.name());
    EXPECT_GT(measured.median_ms(), 0) << measured.name();
    EXPECT_GE(measured.repeats(), 1) << measured.name();
  }
  EXPECT_THAT(names, ElementsAre("ios", "sequential", "greedy"));
  const nlohmann::json schedule = nlohmann::json::parse(result.schedule_json(), nullptr, false);
  EXPECT_FALSE(schedule.is_discarded()) << result.schedule_json().substr(0, 200);
  EXPECT_TRUE(schedule.is_object());
  EXPECT_GT(result.stages_profiled(), 0);
  // Each signature the search asked for was a database hit or profiled (the
  // job was never resumed, so nothing was asked twice across restarts).
  EXPECT_GT(result.stages_measured(), 0);
  EXPECT_EQ(result.stages_measured(), result.stages_profiled() + result.cache_hits());
  EXPECT_LE(result.stages_measured(), result.unique_signatures());
  EXPECT_EQ(events.back().job().progress().stages_measured(), result.stages_measured());
  EXPECT_GT(result.stages(), 0);
  EXPECT_GT(result.predicted_ms(), 0);
  EXPECT_EQ(result.worker(), "sim-worker-1");
  EXPECT_EQ(result.backend(), "sim");
  EXPECT_EQ(result.device_key(), "sim-test");

  // The same model again: every stage is in the latency database.
  v1::Job again;
  status = farm.Submit(ZooRequest("squeezenet", "sim-test"), again);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::Job again_done = farm.WaitForFinalState(again.id());
  ASSERT_EQ(again_done.state(), v1::SUCCEEDED) << again_done.error();
  EXPECT_EQ(again_done.progress().stages_profiled(), 0);
  const v1::JobResult again_result = GetResult(farm, again.id());
  EXPECT_EQ(again_result.stages_profiled(), 0);
  EXPECT_GT(again_result.cache_hits(), 0);
  EXPECT_EQ(again_result.stages_measured(), again_result.cache_hits());
  EXPECT_EQ(again_done.progress().stages_measured(), again_result.stages_measured());

  // The timeline: each job's phases in order, all ok; the second job never
  // builds or profiles.
  const auto first_phases = Timeline(farm, job.id());
  ExpectWellFormedTimeline(first_phases, "sim-worker-1");
  int profiles = 0;
  for (const auto& p : first_phases) profiles += p.phase() == "profile";
  EXPECT_GT(profiles, 0);
  const auto second_phases = Timeline(farm, again.id());
  ExpectWellFormedTimeline(second_phases, "sim-worker-1");
  for (const auto& p : second_phases) {
    EXPECT_THAT(p.phase(), Not(::testing::AnyOf("build", "profile", "update")));
  }
  EXPECT_EQ(Timeline(farm, 0).size(), first_phases.size() + second_phases.size());

  const auto workers = farm.ListWorkers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].id(), "sim-worker-1");
  EXPECT_EQ(workers[0].device_key(), "sim-test");
  EXPECT_EQ(workers[0].backend(), "sim");
  EXPECT_GT(workers[0].phases_done(), 0);
  EXPECT_GT(workers[0].last_heartbeat_unix_ms(), 0);

  worker.Stop();
  EXPECT_TRUE(worker.status().ok()) << worker.status();
}

// ---------------------------------------------------------------- end-to-end choice

// A responder that builds every stage it is given and answers each later
// phase with `answer`, passing the build of the phase's batch (empty for a
// measure phase).
FakeWorker::Respond AfterBuilding(
    std::function<v1::PhaseResult(const v1::PhaseAssignment&, const v1::BuildAssignment&)>
        answer) {
  auto builds = std::make_shared<std::map<std::string, v1::BuildAssignment>>();
  return [builds, answer](const v1::PhaseAssignment& a) -> std::optional<v1::PhaseResult> {
    if (a.has_build()) {
      (*builds)[a.batch_id()] = a.build();
      return BuiltAll(a);
    }
    return answer(a, (*builds)[a.batch_id()]);
  };
}

// A profile answer for every stage of `build`: 0.1 ms each, quiet.
void AddPlausibleLatencies(const v1::BuildAssignment& build, v1::PhaseResult& result) {
  for (const v1::StageSpec& stage : build.stages()) {
    v1::StageLatency* l = result.add_latencies();
    l->set_signature(stage.signature());
    l->set_median_ms(0.1);
    l->set_p10_ms(0.09);
    l->set_p90_ms(0.11);
    l->set_cv(0.01);
    l->set_repeats(3);
  }
}

// Builds and profiles every stage as 0.1 ms, then measures the schedules end
// to end as given by name (ms), as a CPU does where stage timings do not add
// up.
FakeWorker::Respond EndToEndResponder(std::map<std::string, double> medians) {
  return AfterBuilding([medians](const v1::PhaseAssignment& a, const v1::BuildAssignment& build) {
    v1::PhaseResult result;
    result.set_ok(true);
    if (a.has_profile()) {
      AddPlausibleLatencies(build, result);
      return result;
    }
    for (const v1::NamedSchedule& schedule : a.measure().schedules()) {
      const double median = medians.at(schedule.name());
      v1::ScheduleLatency* l = result.add_schedules();
      l->set_name(schedule.name());
      l->set_median_ms(median);
      l->set_p10_ms(0.98 * median);
      l->set_p90_ms(1.02 * median);
      l->set_cv(0.01);
      l->set_repeats(10);
    }
    return result;
  });
}

struct EndToEndCase {
  std::string name;
  double ios_ms = 0;
  std::string chosen;
};

void PrintTo(const EndToEndCase& c, std::ostream* os) { *os << c.name; }

class EndToEndChoiceTest : public FarmServerTest,
                           public ::testing::WithParamInterface<EndToEndCase> {};

TEST_P(EndToEndChoiceTest, ReturnsTheIosScheduleUnlessABaselineRanFaster) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());
  FakeWorker worker(*farm.workers, "", "e2e-1", "e2e",
                    EndToEndResponder({{"ios", GetParam().ios_ms},
                                       {"sequential", 1.0},
                                       {"greedy", 1.5}}));
  grpc::Status connected = worker.Connect();
  ASSERT_TRUE(connected.ok()) << connected.error_message();

  v1::Job job;
  grpc::Status status = farm.Submit(ZooRequest("squeezenet", "e2e"), job);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::Job done = farm.WaitForFinalState(job.id());
  ASSERT_EQ(done.state(), v1::SUCCEEDED) << done.error();

  const v1::JobResult result = GetResult(farm, job.id());
  EXPECT_EQ(result.chosen(), GetParam().chosen);
  std::vector<std::string> names;
  for (const v1::ScheduleLatency& measured : result.measured()) names.push_back(measured.name());
  EXPECT_THAT(names, ElementsAre("ios", "sequential", "greedy"));
  const nlohmann::json schedule = nlohmann::json::parse(result.schedule_json(), nullptr, false);
  ASSERT_TRUE(schedule.is_object()) << result.schedule_json().substr(0, 200);
  EXPECT_EQ(schedule["search"]["kind"], GetParam().chosen);
  // The result's stage count is the chosen schedule's: squeezenet's
  // sequential schedule has one stage per op, IOS's fewer.
  auto graph = graph::models::BuildZooModel("squeezenet", 1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto sequential = scheduler::ios::SequentialSchedule(*graph);
  ASSERT_TRUE(sequential.ok()) << sequential.status();
  const int sequential_stages = static_cast<int>(sequential->stages.size());
  if (GetParam().chosen == "sequential") {
    EXPECT_EQ(result.stages(), sequential_stages);
  } else {
    EXPECT_LT(result.stages(), sequential_stages);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Margins, EndToEndChoiceTest,
    ::testing::Values(EndToEndCase{"IosSlowerKeepsSequential", 2.0, "sequential"},
                      EndToEndCase{"IosWithinTheMarginStays", 1.02, "ios"},
                      EndToEndCase{"IosFasterStays", 0.8, "ios"}),
    [](const ::testing::TestParamInfo<EndToEndCase>& info) { return info.param.name; });

// ---------------------------------------------------------------- garbage worker

enum class Garbage {
  kWrongCount,
  kNaN,
  kWrongSignature,
  kAbsurd,         // finite but 1e308 ms: poisoned a device key before
  kInverted,       // p10 > median
  kNoRepeats,      // repeats 0
  kNegative,       // -1 ms
  kInfiniteCv,
};

struct GarbageCase {
  Garbage garbage;
  std::string name;
  std::string expected_error;
};

void PrintTo(const GarbageCase& c, std::ostream* os) { *os << c.name; }

class GarbageWorkerTest : public FarmServerTest,
                          public ::testing::WithParamInterface<GarbageCase> {};

// Builds fine, then answers each profile with plausible latencies spoiled as
// the case says (always in the last stage, so earlier ones look valid).
FakeWorker::Respond GarbageResponder(Garbage garbage) {
  return AfterBuilding([garbage](const v1::PhaseAssignment& a, const v1::BuildAssignment& build) {
    v1::PhaseResult result;
    if (!a.has_profile()) {
      result.set_ok(false);
      result.set_error("garbage worker: does not measure");
      return result;
    }
    result.set_ok(true);
    AddPlausibleLatencies(build, result);
    const int last = result.latencies_size() - 1;
    switch (garbage) {
      case Garbage::kWrongCount:
        *result.add_latencies() = result.latencies(0);
        break;
      case Garbage::kNaN:
        result.mutable_latencies(last)->set_median_ms(std::nan(""));
        break;
      case Garbage::kWrongSignature:
        result.mutable_latencies(last)->set_signature(result.latencies(last).signature() ^ 1);
        break;
      case Garbage::kAbsurd:
        result.mutable_latencies(last)->set_median_ms(1e308);
        result.mutable_latencies(last)->set_p90_ms(1e308);
        break;
      case Garbage::kInverted:
        result.mutable_latencies(last)->set_p10_ms(result.latencies(last).median_ms() * 2);
        break;
      case Garbage::kNoRepeats:
        result.mutable_latencies(last)->set_repeats(0);
        break;
      case Garbage::kNegative:
        result.mutable_latencies(last)->set_p10_ms(-1);
        break;
      case Garbage::kInfiniteCv:
        result.mutable_latencies(last)->set_cv(std::numeric_limits<double>::infinity());
        break;
    }
    return result;
  });
}

TEST_P(GarbageWorkerTest, JobFailsAfterTheRetryLimitAndNothingIsStored) {
  ServerOptions options = Options();
  options.max_attempts = 2;
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  FakeWorker garbage(*farm.workers, "", "garbage-1", "garbage",
                     GarbageResponder(GetParam().garbage));
  grpc::Status connected = garbage.Connect();
  ASSERT_TRUE(connected.ok()) << connected.error_message();

  v1::Job job;
  grpc::Status status = farm.Submit(ZooRequest("squeezenet", "garbage"), job);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::Job failed = farm.WaitForFinalState(job.id());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_THAT(failed.error(), HasSubstr("gave up after 2 failed worker phases"));
  EXPECT_THAT(failed.error(), HasSubstr("garbage-1"));
  EXPECT_THAT(failed.error(), HasSubstr(GetParam().expected_error));
  EXPECT_EQ(failed.progress().stages_profiled(), 0);

  int profiles = 0;
  for (const auto& a : garbage.assignments()) profiles += a.has_profile();
  EXPECT_EQ(profiles, 2);
  int failed_updates = 0;
  for (const auto& p : Timeline(farm, job.id())) {
    failed_updates += p.phase() == "update" && p.outcome() == "failed";
  }
  EXPECT_EQ(failed_updates, 2);

  grpc::Status no_result;
  GetResult(farm, job.id(), &no_result);
  EXPECT_EQ(no_result.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(no_result.error_message(), HasSubstr("failed"));

  // Not a single latency of the garbage worker reached the database.
  {
    auto store = OpenFarmDatabase(DbPath());
    ASSERT_TRUE(store.ok()) << store.status();
    auto count = store->latencies->CountLatencies("garbage");
    ASSERT_TRUE(count.ok()) << count.status();
    EXPECT_EQ(*count, 0);
  }

  // The server keeps serving: a real worker of that key tunes the model,
  // measuring every stage itself.
  garbage.Close();
  ASSERT_TRUE(WaitUntil([&] { return !farm.HasWorker("garbage-1"); }));
  SimWorker worker(farm.address(), "sim-1", "garbage");
  v1::Job good;
  status = farm.Submit(ZooRequest("squeezenet", "garbage"), good);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::Job done = farm.WaitForFinalState(good.id());
  EXPECT_EQ(done.state(), v1::SUCCEEDED) << done.error();
  EXPECT_GT(done.progress().stages_profiled(), 0);
  EXPECT_EQ(done.progress().cache_hits(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, GarbageWorkerTest,
    ::testing::Values(GarbageCase{Garbage::kWrongCount, "WrongCount", "latencies for"},
                      GarbageCase{Garbage::kNaN, "NaN", "latencies must be finite and > 0"},
                      GarbageCase{Garbage::kWrongSignature, "WrongSignature", ", expected "},
                      GarbageCase{Garbage::kAbsurd, "Absurd", "latencies must be below 60000 ms"},
                      GarbageCase{Garbage::kInverted, "Inverted", "p10 <= median <= p90 fails"},
                      GarbageCase{Garbage::kNoRepeats, "NoRepeats", "repeats must be in [1, "},
                      GarbageCase{Garbage::kNegative, "Negative", "latencies must be finite and > 0"},
                      GarbageCase{Garbage::kInfiniteCv, "InfiniteCv", "cv must be in [0, 100]"}),
    [](const ::testing::TestParamInfo<GarbageCase>& info) { return info.param.name; });

}  // namespace
}  // namespace iosfarm::server
