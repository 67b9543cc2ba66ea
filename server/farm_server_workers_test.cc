// FarmServer over real gRPC on loopback, the worker side: cancel, worker
// ids and registrations, sharing the server between jobs, heartbeats,
// health. (Requests, whole jobs and bad answers: farm_server_test.cc.)
#include <algorithm>

#include "graph/onnx/onnx_importer.h"
#include "scheduler/ios/stages/signature.h"
#include "server/farm_server.h"
#include "server/farm_server_test_util.h"
#include "worker/backends/sim/device_model.h"

namespace iosfarm::server {
namespace {

using namespace std::chrono_literals;

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
  {
    auto store = OpenFarmDatabase(DbPath());
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_FALSE(*store->latencies->HasDevice("other-key")) << "the refused worker's key is stored";
  }

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
  auto store = OpenFarmDatabase(DbPath());
  ASSERT_TRUE(store.ok()) << store.status();
  auto devices = store->latencies->ListDevices();
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
  auto store = OpenFarmDatabase(DbPath());
  ASSERT_TRUE(store.ok()) << store.status();
  auto row = store->jobs->GetJob(job.id());
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_LT((*row)->error.size(), 8192u);
}

// ---------------------------------------------------------------- cores

// The latency `device_key` holds for each Conv of `onnx` alone, on one core
// (single_core) or on all: the signatures a core-bound search asks for.
std::vector<bool> StoredConvLatencies(const std::string& db_path, const std::string& device_key,
                                      const std::string& onnx, bool single_core) {
  auto graph = graph::onnx_import::ImportOnnxBytes(onnx, "two_branch.onnx");
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  std::vector<uint64_t> signatures;
  for (graph::NodeId id = 0; id < static_cast<graph::NodeId>(graph->nodes().size()); ++id) {
    if (graph->nodes()[id].type != graph::OpType::kConv) continue;
    scheduler::ios::Stage stage;
    stage.groups = {{id}};
    stage.single_core = single_core;
    auto signature = scheduler::ios::StageSignature(*graph, stage);
    EXPECT_TRUE(signature.ok()) << signature.status();
    if (signature.ok()) signatures.push_back(*signature);
  }
  auto store = OpenFarmDatabase(db_path);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return {};
  auto found = store->latencies->LookupLatencies(device_key, signatures);
  EXPECT_TRUE(found.ok()) << found.status();
  std::vector<bool> stored;
  for (const uint64_t signature : signatures) {
    stored.push_back(found.ok() && found->contains(signature) &&
                     found->at(signature).median_ms > 0);
  }
  return stored;
}

// A cpu worker states its cores when it registers; they are stored with its
// key, and a job for that key searches with the core bound: each group is
// also profiled on one core. A sim worker states none, and its jobs time no
// group on one core.
TEST_F(FarmServerTest, ACpuWorkersCoresAreStoredWithItsKeyAndBoundItsJobsSearch) {
  TestFarm farm(Options());
  ASSERT_TRUE(farm.ok());
  worker::BackendConfig two_threads;
  two_threads.cpu_threads = 2;
  testing::BackendWorker cpu("cpu", two_threads, farm.address(), "cpu-worker", "cpu-test");
  SimWorker sim(farm.address(), "sim-worker", "sim-test");
  testing::BackendWorker timed("sim:v100:back-to-back", {}, farm.address(), "b2b-worker",
                               "sim-b2b-test");
  ASSERT_TRUE(WaitUntil([&] {
    return farm.HasWorker("cpu-worker") && farm.HasWorker("sim-worker") &&
           farm.HasWorker("b2b-worker");
  }));
  {
    auto store = OpenFarmDatabase(DbPath());
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ(*store->latencies->DeviceCores("cpu-test"), 2);
    EXPECT_EQ(*store->latencies->DeviceCores("sim-test"), 0);
    // The sim states its model's device floor, which bounds its key's
    // searches too; the cpu backend none.
    EXPECT_FALSE(store->latencies->DeviceFloorOf("cpu-test")->bounds_anything());
    auto floor = store->latencies->DeviceFloorOf("sim-test");
    ASSERT_TRUE(floor.ok()) << floor.status();
    EXPECT_DOUBLE_EQ(floor->launch_ms,
                     worker::sim::SimDevicePreset("v100")->kernel_launch_us / 1e3);
    EXPECT_FALSE(floor->back_to_back);
    // A floor timed back to back travels in RegisterWorker.device_floor_v10
    // and is stored as it was declared.
    auto timed_floor = store->latencies->DeviceFloorOf("sim-b2b-test");
    ASSERT_TRUE(timed_floor.ok()) << timed_floor.status();
    EXPECT_TRUE(timed_floor->back_to_back);
    EXPECT_EQ(timed_floor->issue_order, scheduler::ios::DeviceFloor::IssueOrder::kUnknown);
    EXPECT_DOUBLE_EQ(timed_floor->launch_ms, floor->launch_ms);
  }

  const std::string onnx = TwoBranchOnnx();
  // (The back-to-back sim's job searches under the floor it declared.)
  for (const std::string key : {"cpu-test", "sim-test", "sim-b2b-test"}) {
    v1::Job job;
    grpc::Status status = farm.Submit(OnnxRequest(onnx, key), job);
    ASSERT_TRUE(status.ok()) << status.error_message();
    const v1::Job done = farm.WaitForFinalState(job.id(), 120s);
    ASSERT_EQ(done.state(), v1::SUCCEEDED) << key << ": " << done.error();
    const v1::JobResult result = GetResult(farm, job.id());
    EXPECT_EQ(result.search_cores(), key == "cpu-test" ? 2 : 0) << key;
    EXPECT_GE(result.lower_bound_misses(), 0) << key;
    EXPECT_EQ(result.largest_bound_miss_ms() > 0, result.lower_bound_misses() > 0) << key;
  }
  EXPECT_THAT(StoredConvLatencies(DbPath(), "cpu-test", onnx, /*single_core=*/true),
              ElementsAre(true, true));
  EXPECT_THAT(StoredConvLatencies(DbPath(), "cpu-test", onnx, /*single_core=*/false),
              ElementsAre(true, true));
  EXPECT_THAT(StoredConvLatencies(DbPath(), "sim-test", onnx, /*single_core=*/true),
              ElementsAre(false, false));
  EXPECT_THAT(StoredConvLatencies(DbPath(), "sim-test", onnx, /*single_core=*/false),
              ElementsAre(true, true));
  cpu.Stop();
  sim.Stop();
  timed.Stop();
  EXPECT_TRUE(cpu.status().ok()) << cpu.status();
}

// ---------------------------------------------------------------- sharing the server

TEST_F(FarmServerTest, ALongSearchGivesItsServerSlotToOtherJobsBetweenPasses) {
  ServerOptions options = Options();
  options.server_slots = 1;
  options.enumerate_slice_s = 1e-6;  // one DP pass per enumerate phase
  // Each enumerate lasts at least 20 ms (benchmark padding), so the long
  // search is still running when the second job arrives, however fast this
  // machine runs a pass and however slowly it answers the second submit.
  options.synthetic_phase_seconds = "enumerate=0.02";
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
  // search at a time (each far shorter than a minimum turn: none yields)
  // those spans never overlap. The order is the line's (search_admission.h):
  // the squeezenet jobs expect fewer stages than resnet50.
  std::map<int64_t, std::pair<double, double>> span;  // job -> (first start, last end)
  for (const v1::PhaseEntry& p : Timeline(farm, 0)) {
    if (p.phase() != "enumerate") continue;
    auto [it, inserted] = span.try_emplace(p.job_id(), p.start_s(), p.end_s());
    it->second.first = std::min(it->second.first, p.start_s());
    it->second.second = std::max(it->second.second, p.end_s());
  }
  ASSERT_EQ(span.size(), 3u);
  std::vector<std::pair<double, double>> by_start;
  for (const auto& [job, times] : span) by_start.push_back(times);
  std::sort(by_start.begin(), by_start.end());
  for (size_t i = 0; i + 1 < by_start.size(); ++i) {
    EXPECT_LE(by_start[i].second, by_start[i + 1].first) << "two searches ran at once";
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
