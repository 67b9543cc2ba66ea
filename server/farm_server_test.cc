// FarmServer over real gRPC on loopback: bad requests, a whole job with a
// sim WorkerDaemon, workers that answer garbage, go silent or collide,
// cancellation and the health service.
#include "server/farm_server.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <gtest/gtest.h>

#include "graph/models/zoo.h"
#include "graph/onnx/onnx_test_util.h"
#include "nlohmann/json.hpp"
#include "scheduler/ios/baselines.h"
#include "server/farm_store.h"
#include "server/server_test_util.h"

namespace iosfarm::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::BuiltAll;
using testing::Context;
using testing::FakeWorker;
using testing::LoopbackOptions;
using testing::SimWorker;
using testing::TestFarm;
using testing::WaitUntil;
using testing::ZooRequest;
using namespace std::chrono_literals;

// A small valid ONNX model: two 1x1 convolutions of one input, added, then
// ReLU (4 ops, well under 4 KiB).
std::string TwoBranchOnnx() {
  graph::onnx_import::testing::OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y").Weight("Wa", {4, 3, 1, 1}).Weight("Wb", {4, 3, 1, 1});
  b.Node("Conv", {"x", "Wa"}, {"a"});
  b.Node("Conv", {"x", "Wb"}, {"b"});
  b.Node("Add", {"a", "b"}, {"s"});
  b.Node("Relu", {"s"}, {"y"});
  return b.Serialize();
}

v1::SubmitJobRequest OnnxRequest(const std::string& bytes, const std::string& device_key) {
  v1::SubmitJobRequest request;
  request.set_onnx(bytes);
  request.set_model_name("two_branch.onnx");
  request.set_device_key(device_key);
  return request;
}

v1::JobResult GetResult(TestFarm& farm, int64_t id, grpc::Status* status_out = nullptr) {
  v1::JobRequest request;
  request.set_job_id(id);
  v1::JobResult result;
  grpc::Status status = farm.tuning->GetResult(Context("").get(), request, &result);
  if (status_out != nullptr) {
    *status_out = status;
  } else {
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  return result;
}

std::vector<v1::PhaseEntry> Timeline(TestFarm& farm, int64_t job_id) {
  v1::TimelineRequest request;
  request.set_job_id(job_id);
  v1::TimelineResponse response;
  grpc::Status status = farm.tuning->GetTimeline(Context("").get(), request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return {response.phases().begin(), response.phases().end()};
}

// Every event WatchJob streams for `id`, until the server ends the call.
std::vector<v1::JobEvent> Watch(TestFarm& farm, int64_t id, grpc::Status& status) {
  grpc::ClientContext context;
  rpc::PrepareContext(context, "", std::chrono::milliseconds(120s));
  v1::JobRequest request;
  request.set_job_id(id);
  auto reader = farm.tuning->WatchJob(&context, request);
  std::vector<v1::JobEvent> events;
  v1::JobEvent event;
  while (reader->Read(&event)) events.push_back(event);
  status = reader->Finish();
  return events;
}

// The phases of one job: in order, one at a time, following
// enumerate (build profile update enumerate)* measure.
void ExpectWellFormedTimeline(const std::vector<v1::PhaseEntry>& phases,
                              const std::string& worker) {
  ASSERT_FALSE(phases.empty());
  EXPECT_EQ(phases.front().phase(), "enumerate");
  EXPECT_EQ(phases.back().phase(), "measure");
  const std::map<std::string, std::vector<std::string>> may_follow = {
      {"enumerate", {"build", "measure"}},
      {"build", {"profile"}},
      {"profile", {"update"}},
      {"update", {"enumerate"}},
  };
  for (size_t i = 0; i < phases.size(); ++i) {
    const v1::PhaseEntry& p = phases[i];
    SCOPED_TRACE("phase " + std::to_string(i) + ": " + p.ShortDebugString());
    EXPECT_EQ(p.outcome(), "ok");
    EXPECT_LE(p.queued_s(), p.start_s());
    EXPECT_LE(p.start_s(), p.end_s());
    const bool on_worker = p.phase() == "build" || p.phase() == "profile" || p.phase() == "measure";
    EXPECT_EQ(p.worker(), on_worker ? worker : "");
    if (i == 0) continue;
    const v1::PhaseEntry& previous = phases[i - 1];
    EXPECT_GE(p.start_s(), previous.end_s());  // one phase at a time, in order
    auto allowed = may_follow.find(previous.phase());
    ASSERT_NE(allowed, may_follow.end()) << "nothing may follow " << previous.phase();
    EXPECT_THAT(allowed->second, ::testing::Contains(p.phase()));
  }
}

class FarmServerTest : public TempDirTest {
 protected:
  std::string DbPath() const { return PathOf("farm.db"); }
  ServerOptions Options() const { return LoopbackOptions(DbPath()); }
};

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
    auto store = FarmStore::Open(DbPath());
    ASSERT_TRUE(store.ok()) << store.status();
    auto count = (*store)->CountLatencies("garbage");
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

// ---------------------------------------------------------------- cancel

TEST_F(FarmServerTest, CancelsARunningJobAndTellsItsWorker) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());
  FakeWorker silent(*farm.workers, "", "silent-1", "sim-test");  // never answers
  grpc::Status connected = silent.Connect();
  ASSERT_TRUE(connected.ok()) << connected.error_message();

  v1::Job job;
  grpc::Status status = farm.Submit(ZooRequest("squeezenet", "sim-test"), job);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(WaitUntil([&] { return !silent.assignments().empty(); }));
  const v1::PhaseAssignment build = silent.assignments().front();
  EXPECT_TRUE(build.has_build());
  EXPECT_EQ(build.job_id(), job.id());
  EXPECT_GT(build.build().stages_size(), 0);
  v1::Job running;
  ASSERT_TRUE(farm.GetJob(job.id(), running).ok());
  EXPECT_EQ(running.state(), v1::RUNNING);
  EXPECT_EQ(running.progress().phase(), "build");

  v1::JobRequest request;
  request.set_job_id(job.id());
  v1::Job cancelled;
  status = farm.tuning->CancelJob(Context("").get(), request, &cancelled);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(cancelled.state(), v1::CANCELLED);
  EXPECT_THAT(cancelled.error(), HasSubstr("cancelled"));
  EXPECT_GT(cancelled.finished_unix_ms(), 0);

  v1::Job again;
  status = farm.tuning->CancelJob(Context("").get(), request, &again);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("already ended"));
  grpc::Status no_result;
  GetResult(farm, job.id(), &no_result);
  EXPECT_EQ(no_result.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(no_result.error_message(), HasSubstr("cancelled"));
  v1::JobRequest unknown;
  unknown.set_job_id(job.id() + 100);
  status = farm.tuning->CancelJob(Context("").get(), unknown, &again);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);

  ASSERT_TRUE(WaitUntil([&] { return !silent.cancelled_phases().empty(); }));
  EXPECT_THAT(silent.cancelled_phases(), ElementsAre(build.phase_id()));

  // Watching an ended job yields its final state at once.
  std::vector<v1::JobEvent> events = Watch(farm, job.id(), status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].job().state(), v1::CANCELLED);

  const auto phases = Timeline(farm, job.id());
  ASSERT_FALSE(phases.empty());
  EXPECT_EQ(phases.back().phase(), "build");
  EXPECT_EQ(phases.back().outcome(), "cancelled");

  // The worker's resources were freed: the next job is dispatched to it.
  v1::Job next;
  status = farm.Submit(ZooRequest("squeezenet", "sim-test"), next);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(WaitUntil([&] { return silent.assignments().size() >= 2; }));
  EXPECT_EQ(silent.assignments().back().job_id(), next.id());
}

// ---------------------------------------------------------------- worker ids

TEST_F(FarmServerTest, RefusesASecondWorkerWithALiveId) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());
  FakeWorker first(*farm.workers, "", "dup", "sim-test");
  grpc::Status status = first.Connect();
  ASSERT_TRUE(status.ok()) << status.error_message();

  FakeWorker second(*farm.workers, "", "dup", "other-key");
  status = second.Connect();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(status.error_message(), HasSubstr("'dup'"));
  EXPECT_THAT(second.received(), IsEmpty()) << "a refused worker must not see Registered";
  const auto workers = farm.ListWorkers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].device_key(), "sim-test");

  // A worker daemon refused that way stops instead of retrying forever.
  SimWorker daemon(farm.address(), "dup", "sim-test");
  ASSERT_TRUE(WaitUntil([&] { return daemon.returned(); }));
  EXPECT_EQ(daemon.status().code(), absl::StatusCode::kAlreadyExists) << daemon.status();

  // Once the first stream ends, the id is free again.
  first.Close();
  ASSERT_TRUE(WaitUntil([&] { return !farm.HasWorker("dup"); }));
  FakeWorker third(*farm.workers, "", "dup", "sim-test");
  status = third.Connect();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(FarmServerTest, RefusesARegistrationWithoutIdOrKey) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());
  FakeWorker no_key(*farm.workers, "", "w1", "");
  grpc::Status status = no_key.Connect();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("device_key"));
  EXPECT_THAT(farm.ListWorkers(), IsEmpty());
}

TEST_F(FarmServerTest, RefusesHugeOrControlCharacterIdsAndKeys) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());
  // A 200 KB key once was stored and then broke the unknown-key error.
  FakeWorker huge_key(*farm.workers, "", "w1", std::string(200000, 'k'));
  grpc::Status status = huge_key.Connect();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("device_key is 200000 bytes long; at most 256"));
  EXPECT_LT(status.error_message().size(), 300u);
  FakeWorker control_id(*farm.workers, "", "w\x1b[2J", "sim-test");
  status = control_id.Connect();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("worker_id 'w\\x1b[2J' holds a control character"));
  EXPECT_THAT(farm.ListWorkers(), IsEmpty());
  auto store = FarmStore::Open(DbPath());
  ASSERT_TRUE(store.ok()) << store.status();
  auto devices = (*store)->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_THAT(*devices, IsEmpty()) << "a refused registration stores no device";
}

TEST_F(FarmServerTest, AStreamThatNeverRegistersIsClosed) {
  ServerOptions options = Options();
  options.heartbeat_timeout_s = 0.5;
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  grpc::ClientContext context;
  auto stream = farm.workers->Connect(&context);
  const auto opened = std::chrono::steady_clock::now();
  v1::ServerMessage message;
  EXPECT_FALSE(stream->Read(&message)) << "the server closes the stream";
  EXPECT_LT(std::chrono::steady_clock::now() - opened, 10s);
  // The server cancels the call (the only way to end a blocked read), so the
  // client sees CANCELLED; the server log says why.
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  // A worker that does register in time is unaffected.
  FakeWorker prompt(*farm.workers, "", "prompt-1", "sim-test");
  ASSERT_TRUE(prompt.Connect().ok());
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(farm.HasWorker("prompt-1"));
}

TEST_F(FarmServerTest, AWorkersErrorTextIsStoredBounded) {
  ServerOptions options = Options();
  options.max_attempts = 1;
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  FakeWorker verbose(*farm.workers, "", "verbose-1", "sim-test",
                     [](const v1::PhaseAssignment&) -> std::optional<v1::PhaseResult> {
                       v1::PhaseResult result;
                       result.set_ok(false);
                       result.set_error("build failed:\n" + std::string(1 << 20, 'e'));
                       return result;
                     });
  ASSERT_TRUE(verbose.Connect().ok());
  v1::Job job;
  grpc::Status status = farm.Submit(ZooRequest("squeezenet", "sim-test"), job);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::Job failed = farm.WaitForFinalState(job.id());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_LT(failed.error().size(), 8192u);
  EXPECT_THAT(failed.error(), HasSubstr("build failed:\\x0aeee"));
  EXPECT_THAT(failed.error(), HasSubstr("more bytes)"));
  auto store = FarmStore::Open(DbPath());
  ASSERT_TRUE(store.ok()) << store.status();
  auto row = (*store)->GetJob(job.id());
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_LT((*row)->error.size(), 8192u);
}

// ---------------------------------------------------------------- sharing the server

TEST_F(FarmServerTest, ALongSearchGivesItsServerSlotToOtherJobsBetweenPasses) {
  ServerOptions options = Options();
  options.server_slots = 1;
  options.enumerate_slice_s = 1e-6;  // one DP pass per enumerate phase
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  {
    // The key is registered; the worker leaves, so that no build can start
    // before both jobs are queued (however loaded this machine is).
    SimWorker worker(farm.address(), "sim-1", "sim-test");
    ASSERT_TRUE(WaitUntil([&] { return farm.HasWorker("sim-1"); }));
  }
  ASSERT_TRUE(WaitUntil([&] { return !farm.HasWorker("sim-1"); }));
  v1::SubmitJobRequest long_search = ZooRequest("inception_v3", "sim-test");
  long_search.mutable_options()->set_block_size(8);
  long_search.mutable_options()->set_batch_size(4096);  // many passes to fill one batch
  v1::Job first, second;
  ASSERT_TRUE(farm.Submit(long_search, first).ok());
  ASSERT_TRUE(farm.Submit(ZooRequest("squeezenet", "sim-test"), second).ok());
  SimWorker worker(farm.address(), "sim-2", "sim-test");
  EXPECT_EQ(farm.WaitForFinalState(first.id()).state(), v1::SUCCEEDED);
  EXPECT_EQ(farm.WaitForFinalState(second.id()).state(), v1::SUCCEEDED);

  // The first job's search ran in several enumerate phases before its first
  // build, and the second job's first enumerate ran between them: it did not
  // wait for the whole first batch of a long search (without slicing, all of
  // the first job's enumerates before its first build come before it).
  double first_build = 1e300, second_enumerate = 1e300;
  std::vector<double> first_enumerates;
  for (const v1::PhaseEntry& p : Timeline(farm, 0)) {
    if (p.job_id() == first.id() && p.phase() == "build") {
      first_build = std::min(first_build, p.start_s());
    }
    if (p.job_id() == first.id() && p.phase() == "enumerate") {
      first_enumerates.push_back(p.start_s());
    }
    if (p.job_id() == second.id() && p.phase() == "enumerate") {
      second_enumerate = std::min(second_enumerate, p.start_s());
    }
  }
  std::sort(first_enumerates.begin(), first_enumerates.end());
  ASSERT_GE(first_enumerates.size(), 2u);
  EXPECT_LT(first_enumerates[1], first_build) << "sliced before its first batch";
  EXPECT_GT(second_enumerate, first_enumerates[0]);
  EXPECT_LT(second_enumerate, first_build);
  const bool resumed_after_second =
      std::any_of(first_enumerates.begin(), first_enumerates.end(),
                  [&](double t) { return t > second_enumerate && t < first_build; });
  EXPECT_TRUE(resumed_after_second) << "the first search went on after the second job's turn";
}

TEST_F(FarmServerTest, AtMostMaxSearchesHoldMemoryAndTheOthersWaitTheirTurn) {
  ServerOptions options = Options();
  options.max_searches = 1;
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  SimWorker worker(farm.address(), "sim-1", "sim-test");
  ASSERT_TRUE(WaitUntil([&] { return farm.HasWorker("sim-1"); }));
  std::vector<v1::Job> jobs(3);
  const char* models[] = {"squeezenet", "resnet50", "squeezenet"};
  for (int i = 0; i < 3; ++i) {
    v1::SubmitJobRequest request = ZooRequest(models[i], "sim-test");
    request.mutable_options()->set_batch_size(16);  // several enumerate phases each
    ASSERT_TRUE(farm.Submit(request, jobs[i]).ok());
  }
  for (const v1::Job& job : jobs) {
    EXPECT_EQ(farm.WaitForFinalState(job.id()).state(), v1::SUCCEEDED);
  }
  // A job's search runs from its first enumerate to its last; with one
  // search at a time those spans never overlap, in submission order.
  std::map<int64_t, std::pair<double, double>> span;  // job -> (first start, last end)
  for (const v1::PhaseEntry& p : Timeline(farm, 0)) {
    if (p.phase() != "enumerate") continue;
    auto [it, inserted] = span.try_emplace(p.job_id(), p.start_s(), p.end_s());
    it->second.first = std::min(it->second.first, p.start_s());
    it->second.second = std::max(it->second.second, p.end_s());
  }
  ASSERT_EQ(span.size(), 3u);
  for (int i = 0; i + 1 < 3; ++i) {
    const auto& before = span.at(jobs[i].id());
    const auto& after = span.at(jobs[i + 1].id());
    EXPECT_LE(before.second, after.first) << "job " << jobs[i + 1].id() << " searched while job "
                                          << jobs[i].id() << " did";
  }
}

// ---------------------------------------------------------------- heartbeats

TEST_F(FarmServerTest, SilentWorkerIsDroppedAndItsPhaseRequeued) {
  ServerOptions options = Options();
  options.heartbeat_interval_s = 0.1;
  options.heartbeat_timeout_s = 1;
  TestFarm farm(options);
  ASSERT_TRUE(farm.ok());
  FakeWorker mute(*farm.workers, "", "mute-1", "sim-test", nullptr, /*heartbeats=*/false);
  grpc::Status status = mute.Connect();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(mute.received().size(), 1u);
  EXPECT_DOUBLE_EQ(mute.received()[0].registered().heartbeat_interval_s(), 0.1);

  v1::Job job;
  status = farm.Submit(ZooRequest("squeezenet", "sim-test"), job);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(WaitUntil([&] { return !mute.assignments().empty(); }));

  ASSERT_TRUE(WaitUntil([&] { return !farm.HasWorker("mute-1"); }, 10s));
  EXPECT_TRUE(WaitUntil([&] { return mute.ended(); }, 10s)) << "the server ends the stream";
  v1::Job waiting;
  ASSERT_TRUE(farm.GetJob(job.id(), waiting).ok());
  EXPECT_EQ(waiting.state(), v1::RUNNING) << waiting.error();

  SimWorker worker(farm.address(), "sim-1", "sim-test");
  const v1::Job done = farm.WaitForFinalState(job.id());
  EXPECT_EQ(done.state(), v1::SUCCEEDED) << done.error();
  EXPECT_EQ(GetResult(farm, job.id()).worker(), "sim-1");
  bool lost = false;
  for (const auto& p : Timeline(farm, job.id())) {
    if (p.worker() == "mute-1") {
      EXPECT_EQ(p.phase(), "build");
      EXPECT_EQ(p.outcome(), "worker_lost");
      lost = true;
    }
  }
  EXPECT_TRUE(lost);
  // The real worker heartbeats often enough to stay.
  EXPECT_TRUE(farm.HasWorker("sim-1"));
}

// ---------------------------------------------------------------- health

TEST_F(FarmServerTest, AnswersTheGrpcHealthCheck) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());
  grpc::GenericStub stub(farm.channel);
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 30s);
  grpc::Slice empty("");  // HealthCheckRequest{service: ""} is zero bytes
  const grpc::ByteBuffer request(&empty, 1);
  auto call = stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &queue);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(queue.Next(&tag, &ok));
  EXPECT_TRUE(ok);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // HealthCheckResponse{status: SERVING}
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace iosfarm::server
