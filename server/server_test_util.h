// Test helpers for the server tests: a FarmServer on loopback with real
// stubs, a sim WorkerDaemon on a thread, a scriptable fake worker written
// with the WorkerService stub, and polling with deadlines. Header-only, used
// only by *_test.cc files.
#ifndef IOSFARM_SERVER_SERVER_TEST_UTIL_H_
#define IOSFARM_SERVER_SERVER_TEST_UTIL_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "iosfarm/v1/farm.grpc.pb.h"
#include "proto/rpc_util.h"
#include "server/farm_server.h"
#include "server/store_test_util.h"
#include "worker/backends/backend_factory.h"
#include "worker/worker_daemon.h"

namespace iosfarm::server::testing {

using namespace std::chrono_literals;

// Polls `done` every 20 ms until it holds or `timeout` passes.
template <typename Predicate>
bool WaitUntil(Predicate done, std::chrono::milliseconds timeout = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// A client context carrying `token`, with a 30 s deadline.
inline std::unique_ptr<grpc::ClientContext> Context(const std::string& token) {
  auto context = std::make_unique<grpc::ClientContext>();
  rpc::PrepareContext(*context, token, std::chrono::milliseconds(30s));
  return context;
}

// Options for a server on 127.0.0.1 (a free port) over `db_path`, with
// tokens only from files (never from the environment) and quick profiling.
inline ServerOptions LoopbackOptions(const std::string& db_path) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.db_path = db_path;
  options.tokens_from_env = false;
  options.profile_min_repeats = 1;
  options.profile_max_repeats = 3;
  return options;
}

// A started FarmServer and stubs over one channel to it.
struct TestFarm {
  std::unique_ptr<FarmServer> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::TuningService::Stub> tuning;
  std::unique_ptr<v1::WorkerService::Stub> workers;

  // Starts the server; check `ok()` (the failure is reported by gtest).
  explicit TestFarm(const ServerOptions& options) {
    auto started = FarmServer::Start(options);
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return;
    server = *std::move(started);
    rpc::ChannelOptions channel_options;
    // A server on every interface is dialled on loopback.
    channel_options.address = "127.0.0.1:" + std::to_string(server->port());
    auto made = rpc::MakeChannel(channel_options);
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return;
    channel = *made;
    tuning = v1::TuningService::NewStub(channel);
    workers = v1::WorkerService::NewStub(channel);
  }
  bool ok() const { return tuning != nullptr; }
  std::string address() const { return server->address(); }

  grpc::Status Submit(const v1::SubmitJobRequest& request, v1::Job& job,
                      const std::string& token = "") {
    return tuning->SubmitJob(Context(token).get(), request, &job);
  }
  grpc::Status GetJob(int64_t id, v1::Job& job, const std::string& token = "") {
    v1::JobRequest request;
    request.set_job_id(id);
    return tuning->GetJob(Context(token).get(), request, &job);
  }
  std::vector<v1::Job> ListJobs(const std::string& token = "") {
    v1::ListJobsResponse response;
    grpc::Status status = tuning->ListJobs(Context(token).get(), {}, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {response.jobs().begin(), response.jobs().end()};
  }
  std::vector<v1::WorkerInfo> ListWorkers(const std::string& token = "") {
    v1::ListWorkersResponse response;
    grpc::Status status = tuning->ListWorkers(Context(token).get(), {}, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {response.workers().begin(), response.workers().end()};
  }
  bool HasWorker(const std::string& id, const std::string& token = "") {
    for (const auto& worker : ListWorkers(token)) {
      if (worker.id() == id) return true;
    }
    return false;
  }
  // Polls GetJob until the job is in a final state (or `timeout` passes;
  // then the last snapshot is returned and a failure is reported).
  v1::Job WaitForFinalState(int64_t id, std::chrono::milliseconds timeout = 60s,
                            const std::string& token = "") {
    v1::Job job;
    const bool final = WaitUntil(
        [&] {
          grpc::Status status = GetJob(id, job, token);
          EXPECT_TRUE(status.ok()) << status.error_message();
          return !status.ok() || job.state() == v1::SUCCEEDED || job.state() == v1::FAILED ||
                 job.state() == v1::CANCELLED;
        },
        timeout);
    EXPECT_TRUE(final) << "job " << id << " did not end in time; last: "
                       << job.ShortDebugString();
    return job;
  }
};

inline v1::SubmitJobRequest ZooRequest(const std::string& zoo_name, const std::string& device_key) {
  v1::SubmitJobRequest request;
  request.set_zoo_name(zoo_name);
  request.set_device_key(device_key);
  return request;
}

// A WorkerDaemon of the named backend (CreateBackend with `config`)
// serving `address` on a thread.
class BackendWorker {
 public:
  BackendWorker(const std::string& backend_name, const worker::BackendConfig& config,
                const std::string& address, const std::string& worker_id,
                const std::string& device_key, const std::string& token = "") {
    worker::WorkerOptions options;
    options.server = address;
    options.token = token;
    options.worker_id = worker_id;
    options.device_key = device_key;
    options.reconnect_initial_s = 0.05;
    options.reconnect_max_s = 0.5;
    auto backend = worker::CreateBackend(backend_name, config);
    EXPECT_TRUE(backend.ok()) << backend.status();
    daemon_ = std::make_unique<worker::WorkerDaemon>(std::move(options), *std::move(backend));
    thread_ = std::thread([this] {
      status_ = daemon_->Run();
      returned_ = true;
    });
  }
  ~BackendWorker() { Stop(); }
  void Stop() {
    daemon_->Shutdown();
    if (thread_.joinable()) thread_.join();
  }
  worker::WorkerDaemon& daemon() { return *daemon_; }
  // Run() returned (refused for good, or shut down).
  bool returned() const { return returned_.load(); }
  // Run()'s status, once returned().
  const Status& status() const { return status_; }

 private:
  std::unique_ptr<worker::WorkerDaemon> daemon_;
  Status status_;
  std::atomic<bool> returned_{false};
  std::thread thread_;
};

// A sim-backend worker (the v100 preset).
class SimWorker : public BackendWorker {
 public:
  SimWorker(const std::string& address, const std::string& worker_id, const std::string& device_key,
            const std::string& token = "")
      : BackendWorker("sim", {}, address, worker_id, device_key, token) {}
};

// A worker written directly against WorkerService.Connect, answering each
// assignment with what `respond` returns (nothing: never answers). Reads on
// its own thread; heartbeats every 100 ms unless disabled.
class FakeWorker {
 public:
  using Respond = std::function<std::optional<v1::PhaseResult>(const v1::PhaseAssignment&)>;

  FakeWorker(v1::WorkerService::Stub& stub, std::string token, std::string worker_id,
             std::string device_key, Respond respond = nullptr, bool heartbeats = true)
      : stub_(stub),
        token_(std::move(token)),
        worker_id_(std::move(worker_id)),
        device_key_(std::move(device_key)),
        respond_(std::move(respond)),
        heartbeats_(heartbeats) {}
  ~FakeWorker() { Close(); }

  // Opens the stream and registers. OK once Registered arrived (then the
  // reader and heartbeat threads run); otherwise the stream's final status.
  grpc::Status Connect() {
    rpc::PrepareContext(context_, token_);
    stream_ = stub_.Connect(&context_);
    v1::WorkerMessage hello;
    v1::RegisterWorker* registration = hello.mutable_register_();
    registration->set_worker_id(worker_id_);
    registration->set_device_key(device_key_);
    registration->set_backend("fake");
    registration->set_device_description("a scripted test worker");
    registration->set_version("test");
    Write(hello);
    v1::ServerMessage first;
    if (!stream_->Read(&first)) return Finish();
    Record(first);
    if (!first.has_registered()) {
      ADD_FAILURE() << "first server message is not Registered: " << first.ShortDebugString();
      return Finish();
    }
    reader_ = std::thread([this] { ReadLoop(); });
    if (heartbeats_) heartbeat_ = std::thread([this] { HeartbeatLoop(); });
    return grpc::Status::OK;
  }

  // Cancels the stream and joins the threads. Idempotent.
  void Close() {
    if (stream_ == nullptr) return;
    stop_ = true;
    context_.TryCancel();
    if (reader_.joinable()) reader_.join();
    if (heartbeat_.joinable()) heartbeat_.join();
    if (!finished_) Finish();
    stream_.reset();
  }

  // The stream ended (the server closed it or Close was called).
  bool ended() const { return ended_.load(); }

  // Every message received so far, Registered included.
  std::vector<v1::ServerMessage> received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }
  std::vector<v1::PhaseAssignment> assignments() {
    std::vector<v1::PhaseAssignment> out;
    for (const auto& message : received()) {
      if (message.has_assign()) out.push_back(message.assign());
    }
    return out;
  }
  std::vector<int64_t> cancelled_phases() {
    std::vector<int64_t> out;
    for (const auto& message : received()) {
      if (message.has_cancel()) out.push_back(message.cancel().phase_id());
    }
    return out;
  }

 private:
  void Write(const v1::WorkerMessage& message) {
    absl::MutexLock lock(&write_mu_);
    stream_->Write(message);
  }
  void Record(const v1::ServerMessage& message) {
    absl::MutexLock lock(&mu_);
    received_.push_back(message);
  }
  grpc::Status Finish() {
    finished_ = true;
    return stream_->Finish();
  }
  void ReadLoop() {
    v1::ServerMessage message;
    while (stream_->Read(&message)) {
      Record(message);
      if (!message.has_assign() || !respond_) continue;
      std::optional<v1::PhaseResult> result = respond_(message.assign());
      if (!result) continue;
      result->set_phase_id(message.assign().phase_id());
      v1::WorkerMessage out;
      *out.mutable_result() = *std::move(result);
      Write(out);
    }
    ended_ = true;
  }
  void HeartbeatLoop() {
    while (!stop_ && !ended_) {
      v1::WorkerMessage beat;
      beat.mutable_heartbeat()->set_unix_ms(
          std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::system_clock::now().time_since_epoch())
              .count());
      Write(beat);
      for (int i = 0; i < 5 && !stop_; ++i) std::this_thread::sleep_for(20ms);
    }
  }

  v1::WorkerService::Stub& stub_;
  const std::string token_, worker_id_, device_key_;
  const Respond respond_;
  const bool heartbeats_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::ServerMessage>> stream_;
  std::thread reader_, heartbeat_;
  std::atomic<bool> stop_{false}, ended_{false};
  bool finished_ = false;
  absl::Mutex write_mu_;
  absl::Mutex mu_;
  std::vector<v1::ServerMessage> received_ ABSL_GUARDED_BY(mu_);
};

// A build answer: every stage of the assignment built.
inline v1::PhaseResult BuiltAll(const v1::PhaseAssignment& assignment) {
  v1::PhaseResult result;
  result.set_ok(true);
  result.set_plans_built(assignment.build().stages_size());
  return result;
}

}  // namespace iosfarm::server::testing

#endif  // IOSFARM_SERVER_SERVER_TEST_UTIL_H_
