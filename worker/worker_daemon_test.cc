#include "worker/worker_daemon.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "graph/models/zoo.h"
#include "gtest/gtest.h"
#include "iosfarm/v1/farm.grpc.pb.h"
#include "proto/rpc_util.h"
#include "scheduler/ios/testing/testing_util.h"
#include "worker/backends/sim/sim_backend.h"
#include "worker/backends/sim/sim_test_graphs.h"
#include "worker/wire_testing.h"

namespace iosfarm::worker {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Polls `condition` every 5 ms for up to `timeout`.
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A tiny WorkerService: records registrations, heartbeats and results, and
// lets the test send assignments on the live stream.
class FakeWorkerService final : public v1::WorkerService::Service {
 public:
  // Connect answers `refusal` right after RegisterWorker when it is not OK;
  // with `silent`, it never answers at all.
  grpc::Status refusal = grpc::Status::OK;
  bool silent = false;
  double heartbeat_interval_s = 0.05;

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* stream)
      override {
    v1::WorkerMessage first;
    if (!stream->Read(&first) || !first.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "RegisterWorker expected");
    }
    {
      absl::MutexLock lock(&mutex_);
      registrations_.push_back(first.register_());
      tokens_.push_back(rpc::BearerToken(*context));
    }
    if (!refusal.ok()) return refusal;
    if (silent) {
      while (!context->IsCancelled()) std::this_thread::sleep_for(5ms);
      return grpc::Status::CANCELLED;
    }
    v1::ServerMessage registered;
    registered.mutable_registered()->set_heartbeat_interval_s(heartbeat_interval_s);
    registered.mutable_registered()->set_server_version("fake");
    {
      absl::MutexLock lock(&mutex_);
      stream->Write(registered);
      stream_ = stream;
    }
    v1::WorkerMessage message;
    while (stream->Read(&message)) {
      absl::MutexLock lock(&mutex_);
      if (message.has_heartbeat()) ++heartbeats_;
      if (message.has_result()) results_.push_back(message.result());
    }
    absl::MutexLock lock(&mutex_);
    stream_ = nullptr;
    return grpc::Status::OK;
  }

  // Sends on the live stream; false when there is none.
  bool Send(const v1::ServerMessage& message) {
    absl::MutexLock lock(&mutex_);
    return stream_ != nullptr && stream_->Write(message);
  }
  bool Assign(const v1::PhaseAssignment& assignment) {
    v1::ServerMessage message;
    *message.mutable_assign() = assignment;
    return Send(message);
  }
  bool CancelPhase(int64_t phase_id) {
    v1::ServerMessage message;
    message.mutable_cancel()->set_phase_id(phase_id);
    return Send(message);
  }

  bool streaming() {
    absl::MutexLock lock(&mutex_);
    return stream_ != nullptr;
  }
  int registrations() {
    absl::MutexLock lock(&mutex_);
    return static_cast<int>(registrations_.size());
  }
  v1::RegisterWorker registration(int i) {
    absl::MutexLock lock(&mutex_);
    return registrations_.at(i);
  }
  std::string token(int i) {
    absl::MutexLock lock(&mutex_);
    return tokens_.at(i);
  }
  int heartbeats() {
    absl::MutexLock lock(&mutex_);
    return heartbeats_;
  }
  // The result of `phase_id`, waiting up to `timeout` for it.
  std::optional<v1::PhaseResult> WaitResult(int64_t phase_id,
                                            std::chrono::milliseconds timeout = 10s) {
    std::optional<v1::PhaseResult> found;
    WaitFor(
        [&] {
          absl::MutexLock lock(&mutex_);
          for (const auto& result : results_) {
            if (result.phase_id() == phase_id) found = result;
          }
          return found.has_value();
        },
        timeout);
    return found;
  }
  int num_results() {
    absl::MutexLock lock(&mutex_);
    return static_cast<int>(results_.size());
  }

 private:
  absl::Mutex mutex_;
  grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* stream_
      ABSL_GUARDED_BY(mutex_) = nullptr;
  std::vector<v1::RegisterWorker> registrations_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::string> tokens_ ABSL_GUARDED_BY(mutex_);
  std::vector<v1::PhaseResult> results_ ABSL_GUARDED_BY(mutex_);
  int heartbeats_ ABSL_GUARDED_BY(mutex_) = 0;
};

// A gRPC server for `service` on 127.0.0.1:`port` (0: any free port).
struct FakeServer {
  FakeWorkerService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  explicit FakeServer(int wanted_port = 0) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(StrCat("127.0.0.1:", wanted_port), grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  ~FakeServer() { Stop(); }
  // Cancels the live streams (as a crashing server would) and stops.
  void Stop() {
    if (server == nullptr) return;
    server->Shutdown(std::chrono::system_clock::now() + 50ms);
    server->Wait();
    server.reset();
  }
  std::string address() const { return StrCat("127.0.0.1:", port); }
};

std::unique_ptr<Backend> SimBackend(double time_scale = 0) {
  sim::SimOptions options;
  options.time_scale = time_scale;
  auto backend = sim::SimBackend::Create(options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return *std::move(backend);
}

WorkerOptions Options(const std::string& address) {
  WorkerOptions options;
  options.server = address;
  options.token = "worker-secret";
  options.worker_id = "test-worker";
  options.device_key = "sim-v100";
  options.reconnect_initial_s = 0.02;
  options.reconnect_max_s = 0.1;
  return options;
}

// Runs daemon.Run() on a thread.
struct RunningDaemon {
  WorkerDaemon daemon;
  Status status;
  std::atomic<bool> returned{false};
  std::thread thread;

  RunningDaemon(WorkerOptions options, std::unique_ptr<Backend> backend)
      : daemon(std::move(options), std::move(backend)) {
    thread = std::thread([this] {
      status = daemon.Run();
      returned = true;
    });
  }
  ~RunningDaemon() { Stop(); }
  void Stop() {
    daemon.Shutdown();
    if (thread.joinable()) thread.join();
  }
};

TEST(WorkerDaemonTest, RegistersServesPhasesAndReconnectsToARestartedServer) {
  auto first = std::make_unique<FakeServer>();
  ASSERT_GT(first->port, 0);
  const int port = first->port;
  RunningDaemon worker(Options(first->address()), SimBackend());

  ASSERT_TRUE(WaitFor([&] { return first->service.streaming(); }));
  EXPECT_TRUE(WaitFor([&] { return worker.daemon.connected(); }));
  v1::RegisterWorker registration = first->service.registration(0);
  EXPECT_EQ(registration.worker_id(), "test-worker");
  EXPECT_EQ(registration.device_key(), "sim-v100");
  EXPECT_EQ(registration.backend(), "sim");
  EXPECT_FALSE(registration.device_description().empty());
  EXPECT_FALSE(registration.version().empty());
  EXPECT_EQ(first->service.token(0), "worker-secret");

  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  const auto stages = testing::GreedyStages(graph);
  const v1::PhaseAssignment build = testing::BuildAssignment(1, 7, "job7-b1", graph, stages);
  ASSERT_TRUE(first->service.Assign(build));
  std::optional<v1::PhaseResult> built = first->service.WaitResult(1);
  ASSERT_TRUE(built.has_value());
  ASSERT_TRUE(built->ok()) << built->error();
  EXPECT_EQ(built->plans_built(), static_cast<int>(stages.size()));

  ASSERT_TRUE(first->service.Assign(testing::ProfileAssignment(2, 7, "job7-b1")));
  std::optional<v1::PhaseResult> profiled = first->service.WaitResult(2);
  ASSERT_TRUE(profiled.has_value());
  ASSERT_TRUE(profiled->ok()) << profiled->error();
  ASSERT_EQ(profiled->latencies_size(), static_cast<int>(stages.size()));
  for (int i = 0; i < profiled->latencies_size(); ++i) {
    EXPECT_EQ(profiled->latencies(i).signature(), build.build().stages(i).signature());
    EXPECT_GT(profiled->latencies(i).median_ms(), 0);
  }

  // A failing phase is a result, not a broken daemon.
  ASSERT_TRUE(first->service.Assign(testing::ProfileAssignment(3, 8, "unknown")));
  std::optional<v1::PhaseResult> failed = first->service.WaitResult(3);
  ASSERT_TRUE(failed.has_value());
  EXPECT_FALSE(failed->ok());
  EXPECT_THAT(failed->error(), HasSubstr("unknown batch"));
  EXPECT_TRUE(WaitFor([&] { return first->service.heartbeats() >= 2; }));
  EXPECT_EQ(worker.daemon.phases_done(), 3);

  // The server goes away; the worker notices and keeps trying.
  first->Stop();
  EXPECT_TRUE(WaitFor([&] { return !worker.daemon.connected(); }));
  std::this_thread::sleep_for(200ms);  // a few failed attempts
  EXPECT_FALSE(worker.returned);

  // A new server on the same port: the worker registers again, and the plans
  // it built survive the reconnection.
  FakeServer second(port);
  ASSERT_EQ(second.port, port);
  ASSERT_TRUE(WaitFor([&] { return second.service.streaming(); }));
  EXPECT_EQ(second.service.registration(0).worker_id(), "test-worker");
  EXPECT_TRUE(WaitFor([&] { return worker.daemon.connected(); }));
  EXPECT_EQ(worker.daemon.registrations(), 2);
  ASSERT_TRUE(second.service.Assign(testing::ProfileAssignment(4, 7, "job7-b1")));
  std::optional<v1::PhaseResult> again = second.service.WaitResult(4);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->ok()) << again->error();

  worker.Stop();
  EXPECT_TRUE(worker.status.ok()) << worker.status;
  EXPECT_EQ(worker.daemon.phases_done(), 4);
}

TEST(WorkerDaemonTest, UnauthenticatedEndsRunWithThatError) {
  FakeServer server;
  server.service.refusal = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad worker token");
  WorkerDaemon daemon(Options(server.address()), SimBackend());
  const auto start = std::chrono::steady_clock::now();
  Status status = daemon.Run();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("bad worker token"));
  EXPECT_THAT(status.message(), HasSubstr("not retrying"));
  EXPECT_EQ(server.service.registrations(), 1);
  EXPECT_FALSE(daemon.connected());
}

TEST(WorkerDaemonTest, PermanentRefusals) {
  EXPECT_TRUE(IsPermanentRefusal(absl::StatusCode::kUnauthenticated, false));
  EXPECT_TRUE(IsPermanentRefusal(absl::StatusCode::kPermissionDenied, true));
  EXPECT_TRUE(IsPermanentRefusal(absl::StatusCode::kInvalidArgument, false));
  EXPECT_TRUE(IsPermanentRefusal(absl::StatusCode::kAlreadyExists, false));
  // After a registration, the server may still hold the stream that broke.
  EXPECT_FALSE(IsPermanentRefusal(absl::StatusCode::kAlreadyExists, true));
  EXPECT_FALSE(IsPermanentRefusal(absl::StatusCode::kUnavailable, false));
  EXPECT_FALSE(IsPermanentRefusal(absl::StatusCode::kInternal, false));
}

TEST(WorkerDaemonTest, ShutdownStopsRetriesAgainstAnAbsentServer) {
  int port = 0;
  {
    FakeServer probe;  // find a free port, then free it
    port = probe.port;
  }
  RunningDaemon worker(Options(StrCat("127.0.0.1:", port)), SimBackend());
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(worker.returned);
  EXPECT_FALSE(worker.daemon.connected());
  const auto start = std::chrono::steady_clock::now();
  worker.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_TRUE(worker.status.ok()) << worker.status;
}

TEST(WorkerDaemonTest, ShutdownEndsALiveStreamPromptly) {
  FakeServer server;
  RunningDaemon worker(Options(server.address()), SimBackend());
  ASSERT_TRUE(WaitFor([&] { return worker.daemon.connected(); }));
  const auto start = std::chrono::steady_clock::now();
  worker.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_TRUE(worker.status.ok()) << worker.status;
  EXPECT_FALSE(worker.daemon.connected());
}

TEST(WorkerDaemonTest, RetriesWhenTheServerNeverAnswersRegistration) {
  FakeServer server;
  server.service.silent = true;
  WorkerOptions options = Options(server.address());
  options.register_timeout_s = 0.1;
  RunningDaemon worker(options, SimBackend());
  EXPECT_TRUE(WaitFor([&] { return server.service.registrations() >= 2; }));
  EXPECT_FALSE(worker.returned);
  worker.Stop();
  EXPECT_TRUE(worker.status.ok());
}

TEST(WorkerDaemonTest, BuildOverlapsProfileAndCancelDropsAResult) {
  // A profile slow enough (sim time scale) to build and cancel meanwhile.
  sim::testing::TwoConvs two = sim::testing::MakeTwoConvs(64, 56, 3);
  const std::vector<scheduler::ios::Stage> stages = {
      scheduler::ios::testing::ConcurrentStage({{two.a}, {two.b}})};
  auto probe = sim::SimBackend::Create({});
  const double stage_ms = *(*probe)->StageLatencyMs(two.graph, stages[0]);
  // 1 warm-up + 3 timed samples ~ 0.6 s of wall time.
  const double time_scale = 600.0 / (4 * stage_ms);

  FakeServer server;
  RunningDaemon worker(Options(server.address()), SimBackend(time_scale));
  ASSERT_TRUE(WaitFor([&] { return server.service.streaming(); }));
  ASSERT_TRUE(server.service.Assign(testing::BuildAssignment(1, 1, "a", two.graph, stages)));
  ASSERT_TRUE(server.service.WaitResult(1).has_value());

  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(server.service.Assign(testing::ProfileAssignment(2, 1, "a")));
  ASSERT_TRUE(server.service.Assign(testing::ProfileAssignment(3, 2, "a")));  // queued behind 2
  ASSERT_TRUE(server.service.Assign(testing::BuildAssignment(4, 3, "b", two.graph, stages)));
  std::optional<v1::PhaseResult> built = server.service.WaitResult(4);
  ASSERT_TRUE(built.has_value());
  EXPECT_TRUE(built->ok());
  // The build did not wait for the profile.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 400ms);
  EXPECT_FALSE(server.service.WaitResult(2, 1ms).has_value());
  ASSERT_TRUE(server.service.CancelPhase(3));
  ASSERT_TRUE(server.service.CancelPhase(2));

  // Both profiles are dropped: 2 was running, 3 never starts.
  EXPECT_TRUE(WaitFor([&] { return worker.daemon.phases_done() >= 3; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(server.service.WaitResult(2, 1ms).has_value());
  EXPECT_FALSE(server.service.WaitResult(3, 1ms).has_value());
  EXPECT_EQ(worker.daemon.phases_done(), 3);
  EXPECT_EQ(server.service.num_results(), 2);
  worker.Stop();
}

TEST(WorkerDaemonTest, AnAssignmentThatDoesNotDecodeIsAnsweredAsAFailedPhase) {
  sim::testing::TwoConvs two = sim::testing::MakeTwoConvs(8, 8, 3);
  const std::vector<scheduler::ios::Stage> stages = {
      scheduler::ios::testing::ConcurrentStage({{two.a}, {two.b}})};
  FakeServer server;
  RunningDaemon worker(Options(server.address()), SimBackend());
  ASSERT_TRUE(WaitFor([&] { return server.service.streaming(); }));
  v1::PhaseAssignment bad = testing::BuildAssignment(1, 1, "a", two.graph, stages);
  bad.mutable_build()->mutable_stages(0)->set_signature(
      bad.build().stages(0).signature() ^ 1);
  ASSERT_TRUE(server.service.Assign(bad));
  std::optional<v1::PhaseResult> refused = server.service.WaitResult(1);
  ASSERT_TRUE(refused.has_value());
  EXPECT_FALSE(refused->ok());
  EXPECT_THAT(refused->error(), HasSubstr("build: FAILED_PRECONDITION: stage 0: signature mismatch"));
  v1::PhaseAssignment empty;
  empty.set_phase_id(2);
  ASSERT_TRUE(server.service.Assign(empty));
  std::optional<v1::PhaseResult> no_kind = server.service.WaitResult(2);
  ASSERT_TRUE(no_kind.has_value());
  EXPECT_THAT(no_kind->error(), HasSubstr("assignment: INVALID_ARGUMENT: no build, profile"));
  EXPECT_EQ(worker.daemon.phases_done(), 2);

  // The daemon goes on: a good build and its profile.
  ASSERT_TRUE(server.service.Assign(testing::BuildAssignment(3, 1, "a", two.graph, stages)));
  std::optional<v1::PhaseResult> built = server.service.WaitResult(3);
  ASSERT_TRUE(built.has_value());
  EXPECT_TRUE(built->ok()) << built->error();
  ASSERT_TRUE(server.service.Assign(testing::ProfileAssignment(4, 1, "a")));
  std::optional<v1::PhaseResult> profiled = server.service.WaitResult(4);
  ASSERT_TRUE(profiled.has_value());
  EXPECT_TRUE(profiled->ok()) << profiled->error();
  EXPECT_EQ(profiled->latencies_size(), 1);
  worker.Stop();
}

TEST(WorkerDaemonTest, RunRejectsBadOptions) {
  WorkerOptions options = Options("127.0.0.1:1");
  options.device_key.clear();
  WorkerDaemon no_key(options, SimBackend());
  EXPECT_EQ(no_key.Run().code(), absl::StatusCode::kInvalidArgument);

  options = Options("");
  WorkerDaemon no_server(options, SimBackend());
  EXPECT_EQ(no_server.Run().code(), absl::StatusCode::kInvalidArgument);

  options = Options("127.0.0.1:1");
  options.tls_ca_file = "/nonexistent/ca.pem";
  WorkerDaemon bad_ca(options, SimBackend());
  Status status = bad_ca.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/ca.pem"));
}

TEST(WorkerDaemonTest, DefaultWorkerIdIsHostAndPid) {
  WorkerOptions options = Options("127.0.0.1:1");
  options.worker_id.clear();
  WorkerDaemon daemon(options, SimBackend());
  EXPECT_THAT(daemon.worker_id(), HasSubstr(StrCat("-", static_cast<int64_t>(getpid()))));
  EXPECT_THAT(DefaultWorkerId("cuda", 3), ::testing::EndsWith("-gpu3"));
  EXPECT_THAT(DefaultWorkerId("cpu", 3), ::testing::Not(HasSubstr("-gpu")));
}

}  // namespace
}  // namespace iosfarm::worker
