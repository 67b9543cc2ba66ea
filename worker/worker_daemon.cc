#include "worker/worker_daemon.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <utility>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/strings.h"
#include "iosfarm/v1/farm.grpc.pb.h"
#include "proto/rpc_util.h"
#include "worker/wire_convert.h"

#ifndef IOSFARM_VERSION
#define IOSFARM_VERSION "dev"
#endif

namespace iosfarm::worker {
namespace {

std::string_view KindName(const v1::PhaseAssignment& assignment) {
  switch (assignment.kind_case()) {
    case v1::PhaseAssignment::kBuild:
      return "build";
    case v1::PhaseAssignment::kProfile:
      return "profile";
    case v1::PhaseAssignment::kMeasure:
      return "measure";
    case v1::PhaseAssignment::KIND_NOT_SET:
      break;
  }
  return "empty assignment";
}

}  // namespace

// One connection to the server. Every write goes through `mutex`; `closed`
// is set once the stream is over (or a write failed), after which nothing is
// written. The context is declared before the stream, which must die first.
struct WorkerDaemon::Session {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::ServerMessage>> stream;

  absl::Mutex mutex;
  bool registered ABSL_GUARDED_BY(mutex) = false;
  bool closed ABSL_GUARDED_BY(mutex) = false;
  double heartbeat_interval_s ABSL_GUARDED_BY(mutex) = 1;

  bool Write(const v1::WorkerMessage& message) {
    absl::MutexLock lock(&mutex);
    return WriteLocked(message);
  }
  bool WriteLocked(const v1::WorkerMessage& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex) {
    if (closed) return false;
    if (!stream->Write(message)) closed = true;
    return !closed;
  }
  void Close() {
    absl::MutexLock lock(&mutex);
    closed = true;
  }
  bool IsClosed() {
    absl::MutexLock lock(&mutex);
    return closed;
  }
};

std::string DefaultWorkerId(const std::string& backend_name, int cuda_device) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "worker");
  }
  std::string id = StrCat(host, "-", static_cast<int64_t>(getpid()));
  if (backend_name == "cuda") id += StrCat("-gpu", cuda_device);
  return id;
}

bool IsPermanentRefusal(absl::StatusCode code, bool registered_before) {
  switch (code) {
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kInvalidArgument:
      return true;
    case absl::StatusCode::kAlreadyExists:
      return !registered_before;
    default:
      return false;
  }
}

WorkerDaemon::WorkerDaemon(WorkerOptions options, std::unique_ptr<Backend> backend)
    : options_(std::move(options)), backend_(std::move(backend)), executor_(*backend_) {
  if (options_.worker_id.empty()) {
    options_.worker_id = DefaultWorkerId(backend_->name(), options_.cuda_device);
  }
  // A token read with its newline (a file, `echo`, an env var) is trimmed;
  // ValidateOptions rejects what is left if it cannot travel in a header.
  if (auto token = rpc::NormalizeToken(options_.token, "worker token"); token.ok()) {
    options_.token = *std::move(token);
  }
}

WorkerDaemon::~WorkerDaemon() {
  Shutdown();
  {
    absl::MutexLock lock(&mutex_);
    mutex_.Await(absl::Condition(
        +[](bool* running) { return !*running; }, &running_));
  }
  cpu_lane_.Stop();
  device_lane_.Stop();
}

void WorkerDaemon::Shutdown() {
  absl::MutexLock lock(&mutex_);
  if (!shutdown_ && running_) spdlog::info("worker {}: shutting down", options_.worker_id);
  shutdown_ = true;
  if (session_ != nullptr) session_->context.TryCancel();
}

bool WorkerDaemon::IsShutdown() const {
  absl::MutexLock lock(&mutex_);
  return shutdown_;
}

bool WorkerDaemon::SleepUnlessShutdown(double seconds) {
  absl::MutexLock lock(&mutex_);
  return mutex_.AwaitWithTimeout(absl::Condition(&shutdown_), absl::Seconds(seconds));
}

Status WorkerDaemon::ValidateOptions() const {
  if (options_.server.empty()) return absl::InvalidArgumentError("no server address given");
  if (options_.device_key.empty()) return absl::InvalidArgumentError("no device key given");
  if (!(options_.reconnect_initial_s > 0) || !(options_.reconnect_max_s >= options_.reconnect_initial_s)) {
    return absl::InvalidArgumentError(StrCat(
        "reconnect backoff must satisfy 0 < initial <= max (got initial ",
        options_.reconnect_initial_s, " s, max ", options_.reconnect_max_s, " s)"));
  }
  if (!(options_.heartbeat_interval_s > 0)) {
    return absl::InvalidArgumentError(
        StrCat("heartbeat interval must be > 0 (got ", options_.heartbeat_interval_s, " s)"));
  }
  if (!(options_.register_timeout_s > 0)) {
    return absl::InvalidArgumentError(
        StrCat("register timeout must be > 0 (got ", options_.register_timeout_s, " s)"));
  }
  if (auto token = rpc::NormalizeToken(options_.token, "worker token (--token, --token-file "
                                                      "or IOSFARM_WORKER_TOKEN)");
      !token.ok()) {
    return token.status();
  }
  if (!options_.tls_ca_file.empty()) {
    StatusOr<std::string> ca = rpc::ReadFileToString(options_.tls_ca_file);
    if (!ca.ok()) {
      return absl::InvalidArgumentError(
          StrCat("TLS CA file: ", ToStd(ca.status().message())));
    }
  }
  return absl::OkStatus();
}

Status WorkerDaemon::Run() {
  RETURN_IF_ERROR(ValidateOptions());
  {
    absl::MutexLock lock(&mutex_);
    if (running_) return absl::FailedPreconditionError("WorkerDaemon::Run is already running");
    if (shutdown_) return absl::OkStatus();
    running_ = true;
  }
  struct RunningGuard {
    WorkerDaemon* daemon;
    ~RunningGuard() {
      absl::MutexLock lock(&daemon->mutex_);
      daemon->running_ = false;
    }
  } guard{this};

  spdlog::info("worker {}: backend {} ({}), device key {}, server {}", options_.worker_id,
               backend_->name(), backend_->device_description(), options_.device_key,
               options_.server);
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  double delay_s = options_.reconnect_initial_s;
  int attempt = 0;
  bool registered_before = false;
  while (!IsShutdown()) {
    ++attempt;
    spdlog::info("worker {}: connecting to {} (attempt {})", options_.worker_id, options_.server,
                 attempt);
    bool registered = false;
    const Status status = RunSession(&registered);
    if (IsShutdown()) break;
    if (registered) {
      registered_before = true;
      attempt = 0;
      delay_s = options_.reconnect_initial_s;
    } else if (IsPermanentRefusal(status.code(), registered_before)) {
      const std::string message =
          StrCat("the server at ", options_.server, " refused worker '", options_.worker_id,
                 "' for good (", absl::StatusCodeToString(status.code()), ": ",
                 ToStd(status.message()), "); not retrying");
      spdlog::error("{}", message);
      return Status(status.code(), message);
    }
    const double wait_s = std::min(options_.reconnect_max_s, delay_s * jitter(random));
    spdlog::warn("worker {}: {} {}: {}; reconnecting in {:.2f} s", options_.worker_id,
                 registered ? "lost the connection to" : "cannot register with", options_.server,
                 ToStd(status.message()), wait_s);
    if (SleepUnlessShutdown(wait_s)) break;
    if (!registered) delay_s = std::min(options_.reconnect_max_s, delay_s * 2);
  }
  spdlog::info("worker {}: stopped after {} phases", options_.worker_id, phases_done());
  return absl::OkStatus();
}

Status WorkerDaemon::RunSession(bool* registered) {
  *registered = false;
  rpc::ChannelOptions channel_options;
  channel_options.address = options_.server;
  channel_options.tls_ca_file = options_.tls_ca_file;
  // A fresh channel per attempt: our backoff, not the channel's, decides
  // when to dial again.
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, rpc::MakeChannel(channel_options));
  std::unique_ptr<v1::WorkerService::Stub> stub = v1::WorkerService::NewStub(channel);

  auto session = std::make_shared<Session>();
  rpc::PrepareContext(session->context, options_.token);
  {
    absl::MutexLock lock(&mutex_);
    if (shutdown_) return absl::OkStatus();
    session_ = session;
  }
  session->stream = stub->Connect(&session->context);
  std::thread heartbeat([this, session] { HeartbeatLoop(session); });

  WorkerRegistration registration;
  registration.worker_id = options_.worker_id;
  registration.device_key = options_.device_key;
  registration.backend = backend_->name();
  registration.device_description = backend_->device_description();
  registration.version = IOSFARM_VERSION;
  registration.max_built_batches = PhaseExecutor::kMaxBatches;
  registration.cores = backend_->cores();
  registration.device_floor = backend_->device_floor();
  session->Write(RegisterMessage(registration));  // on failure, Read below returns false at once

  Status protocol_error;
  v1::ServerMessage message;
  while (session->stream->Read(&message)) {
    if (!*registered) {
      if (!message.has_registered()) {
        protocol_error = absl::InternalError(
            "protocol error: the server's first message is not Registered");
        session->context.TryCancel();
        continue;  // drain until Read fails
      }
      double interval_s = message.registered().heartbeat_interval_s();
      if (!(interval_s > 0)) interval_s = options_.heartbeat_interval_s;
      {
        absl::MutexLock lock(&session->mutex);
        session->registered = true;
        session->heartbeat_interval_s = interval_s;
      }
      *registered = true;
      ++registrations_;
      connected_ = true;
      spdlog::info("worker {}: registered with {} (server {}), heartbeat every {:.2f} s",
                   options_.worker_id, options_.server, message.registered().server_version(),
                   interval_s);
      continue;
    }
    switch (message.kind_case()) {
      case v1::ServerMessage::kAssign: {
        StatusOr<PhaseOrder> order = PhaseOrderFromProto(message.assign());
        if (order.ok()) {
          Dispatch(session, std::make_shared<const PhaseOrder>(*std::move(order)));
        } else if (AddPending(session.get(), message.assign().phase_id())) {
          // Answered at once: the server has at most one phase per lane
          // here, so nothing queued is overtaken.
          FinishPending(session.get(), message.assign().phase_id());
          ++phases_done_;
          Report(session, KindName(message.assign()),
                 RefusedAssignment(message.assign(), order.status()), 0);
        }
        break;
      }
      case v1::ServerMessage::kCancel:
        Cancel(session.get(), message.cancel().phase_id());
        break;
      case v1::ServerMessage::kRegistered:
        spdlog::warn("worker {}: ignoring a second Registered", options_.worker_id);
        break;
      case v1::ServerMessage::KIND_NOT_SET:
        spdlog::warn("worker {}: ignoring an empty server message", options_.worker_id);
        break;
    }
  }
  connected_ = false;
  session->Close();
  heartbeat.join();
  const grpc::Status end = session->stream->Finish();
  {
    absl::MutexLock lock(&mutex_);
    if (session_ == session) session_.reset();
  }
  if (!protocol_error.ok()) return protocol_error;
  if (!end.ok()) return rpc::FromGrpcStatus(end);
  return absl::UnavailableError("the server closed the stream");
}

void WorkerDaemon::HeartbeatLoop(const std::shared_ptr<Session>& session) {
  Session* s = session.get();
  absl::MutexLock lock(&s->mutex);
  const bool answered = s->mutex.AwaitWithTimeout(
      absl::Condition(+[](Session* x) ABSL_NO_THREAD_SAFETY_ANALYSIS { return x->registered || x->closed; }, s),
      absl::Seconds(options_.register_timeout_s));
  if (!answered) {
    spdlog::warn("worker {}: no answer to RegisterWorker within {:.1f} s; dropping the stream",
                 options_.worker_id, options_.register_timeout_s);
    s->context.TryCancel();
    return;
  }
  while (!s->closed) {
    if (s->mutex.AwaitWithTimeout(absl::Condition(&s->closed),
                                  absl::Seconds(s->heartbeat_interval_s))) {
      return;
    }
    if (!s->WriteLocked(HeartbeatMessage(NowUnixMs()))) return;
  }
}

bool WorkerDaemon::AddPending(const Session* session, int64_t phase_id) {
  absl::MutexLock lock(&mutex_);
  if (pending_.insert({session, phase_id}).second) return true;
  spdlog::warn("worker {}: phase {} is already here; duplicate assignment ignored",
               options_.worker_id, phase_id);
  return false;
}

void WorkerDaemon::Dispatch(const std::shared_ptr<Session>& session,
                            std::shared_ptr<const PhaseOrder> order) {
  const int64_t phase_id = order->phase_id;
  if (!AddPending(session.get(), phase_id)) return;
  SerialLane& lane = NeedsDevice(*order) ? device_lane_ : cpu_lane_;
  spdlog::info("worker {}: phase {} ({}, job {}, batch '{}') queued on the {} lane",
               options_.worker_id, phase_id, PhaseName(*order), order->job_id, order->batch_id,
               lane.name());
  if (!lane.Post([this, session, order] { RunPhase(session, *order); })) {
    FinishPending(session.get(), phase_id);  // shutting down
  }
}

void WorkerDaemon::RunPhase(const std::shared_ptr<Session>& session, const PhaseOrder& order) {
  const int64_t phase_id = order.phase_id;
  if (session->IsClosed()) {
    FinishPending(session.get(), phase_id);
    spdlog::info("worker {}: phase {} skipped: its connection is gone", options_.worker_id,
                 phase_id);
    return;
  }
  if (IsCancelled(session.get(), phase_id)) {
    FinishPending(session.get(), phase_id);
    spdlog::info("worker {}: phase {} cancelled before it started", options_.worker_id,
                 phase_id);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const PhaseReport report = executor_.Execute(order);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++phases_done_;
  if (FinishPending(session.get(), phase_id)) {
    spdlog::info("worker {}: phase {} cancelled while running; result dropped",
                 options_.worker_id, phase_id);
    return;
  }
  Report(session, PhaseName(order), report, seconds);
}

void WorkerDaemon::Report(const std::shared_ptr<Session>& session, std::string_view phase,
                          const PhaseReport& report, double seconds) {
  if (report.ok) {
    spdlog::info("worker {}: phase {} ({}) done in {:.3f} s", options_.worker_id,
                 report.phase_id, phase, seconds);
  } else {
    spdlog::warn("worker {}: phase {} ({}) failed in {:.3f} s: {}", options_.worker_id,
                 report.phase_id, phase, seconds, report.error);
  }
  if (!session->Write(ResultMessage(report))) {
    spdlog::warn("worker {}: phase {}: connection lost, result dropped (the server re-queues "
                 "phases of lost workers)",
                 options_.worker_id, report.phase_id);
  }
}

void WorkerDaemon::Cancel(const Session* session, int64_t phase_id) {
  absl::MutexLock lock(&mutex_);
  if (pending_.count({session, phase_id}) == 0) {
    spdlog::info("worker {}: cancel of phase {}: not here (already done)", options_.worker_id,
                 phase_id);
    return;
  }
  cancelled_.insert({session, phase_id});
  spdlog::info("worker {}: phase {} cancelled by the server", options_.worker_id, phase_id);
}

bool WorkerDaemon::FinishPending(const Session* session, int64_t phase_id) {
  absl::MutexLock lock(&mutex_);
  pending_.erase({session, phase_id});
  return cancelled_.erase({session, phase_id}) != 0;
}

bool WorkerDaemon::IsCancelled(const Session* session, int64_t phase_id) const {
  absl::MutexLock lock(&mutex_);
  return cancelled_.count({session, phase_id}) != 0;
}

}  // namespace iosfarm::worker
