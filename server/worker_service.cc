#include "server/worker_service.h"

#include <algorithm>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/strings.h"
#include "proto/rpc_util.h"
#include "server/proto_convert.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace {

constexpr char kServerVersion[] = "iosfarm 0.1.0";

// The coordinator's handle on one stream: writes are serialised (gRPC allows
// one outstanding write), Close cancels the call so the reading side ends.
// The Registered answer is the stream's first message: it is written by
// Open() or by the first Send (an assignment dispatched while the worker
// joins), whichever comes first, so a refused registration never sees it.
class StreamLink final : public WorkerLink {
 public:
  StreamLink(grpc::ServerContext* context,
             grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* stream,
             v1::ServerMessage registered)
      : context_(context), stream_(stream), registered_(std::move(registered)) {}

  bool Send(const WorkerCommand& command) override {
    const v1::ServerMessage message = WorkerCommandToProto(command);
    absl::MutexLock lock(&mu_);
    return WriteRegisteredLocked() && WriteLocked(message);
  }

  // Writes Registered unless a Send did already; false when the stream is gone.
  bool Open() {
    absl::MutexLock lock(&mu_);
    return WriteRegisteredLocked();
  }

  void Close() override {
    absl::MutexLock lock(&mu_);
    if (!closed_) context_->TryCancel();
    closed_ = true;
  }

  // The handler is returning: the stream must not be touched any more.
  void Detach() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

 private:
  bool WriteLocked(const v1::ServerMessage& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) return false;
    if (!stream_->Write(message)) {
      closed_ = true;
      return false;
    }
    return true;
  }
  bool WriteRegisteredLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (registered_sent_) return !closed_;
    registered_sent_ = true;
    return WriteLocked(registered_);
  }

  absl::Mutex mu_;
  grpc::ServerContext* const context_;
  grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* const stream_;
  const v1::ServerMessage registered_;
  bool registered_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(WorkerEvents* events, const TokenSet* tokens,
                                     double heartbeat_interval_s, double registration_timeout_s)
    : coordinator_(events),
      tokens_(tokens),
      heartbeat_interval_s_(heartbeat_interval_s),
      registration_timeout_s_(registration_timeout_s) {
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

WorkerServiceImpl::~WorkerServiceImpl() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  watchdog_.join();
}

void WorkerServiceImpl::AwaitRegistration(grpc::ServerContext* context) {
  const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(registration_timeout_s_));
  absl::MutexLock lock(&mu_);
  unregistered_[context] = std::chrono::steady_clock::now() + timeout;
}

void WorkerServiceImpl::Registered(grpc::ServerContext* context) {
  absl::MutexLock lock(&mu_);
  unregistered_.erase(context);
}

void WorkerServiceImpl::WatchdogLoop() {
  const absl::Duration tick =
      absl::Seconds(std::clamp(registration_timeout_s_ / 4, 0.01, 0.5));
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), tick);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = unregistered_.begin(); it != unregistered_.end();) {
      if (it->second > now) {
        ++it;
        continue;
      }
      // The handler is blocked in its first Read; cancelling ends that read.
      // The entry goes now so the context is cancelled once; the handler
      // removes nothing else (Registered of an absent entry is a no-op).
      spdlog::warn("closing the worker stream from {}: no registration within {} s",
                   it->first->peer(), registration_timeout_s_);
      it->first->TryCancel();
      it = unregistered_.erase(it);
    }
  }
}

grpc::Status WorkerServiceImpl::Connect(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* stream) {
  auto name = tokens_->Authenticate(rpc::BearerToken(*context), "worker");
  if (!name.ok()) return rpc::ToGrpcStatus(name.status());
  v1::WorkerMessage first;
  AwaitRegistration(context);
  const bool read = stream->Read(&first);
  Registered(context);
  if (!read || context->IsCancelled()) {
    // Cancelled by the watchdog (the client sees CANCELLED) or by the worker.
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        StrCat("no registration within ", registration_timeout_s_,
                               " s of opening the worker stream"));
  }
  if (!first.has_register_()) {
    return rpc::ToGrpcStatus(
        absl::InvalidArgumentError("the first message on a worker stream must be 'register'"));
  }
  const v1::RegisterWorker& registration = first.register_();
  v1::ServerMessage registered;
  registered.mutable_registered()->set_heartbeat_interval_s(heartbeat_interval_s_);
  registered.mutable_registered()->set_server_version(kServerVersion);
  auto link = std::make_shared<StreamLink>(context, stream, std::move(registered));
  // Join first: a refused worker (e.g. ALREADY_EXISTS) must get the error
  // instead of Registered, or it would take the refusal for a broken stream.
  Status joined = coordinator_->WorkerJoined(RegistrationFromProto(registration), link);
  if (!joined.ok()) {
    link->Detach();
    return rpc::ToGrpcStatus(joined);
  }
  const std::string worker = registration.worker_id();
  if (!link->Open()) {
    link->Detach();
    coordinator_->WorkerLost(worker, "stream closed during registration");
    return grpc::Status(grpc::StatusCode::CANCELLED, "stream closed");
  }
  v1::WorkerMessage message;
  std::string reason = "stream closed";
  while (stream->Read(&message)) {
    if (message.has_heartbeat()) {
      coordinator_->WorkerHeartbeat(worker);
    } else if (message.has_result()) {
      coordinator_->WorkerHeartbeat(worker);
      coordinator_->PhaseResult(worker, PhaseReportFromProto(message.result()));
    } else {
      reason = "protocol error: unexpected message after registration";
      break;
    }
  }
  link->Detach();
  coordinator_->WorkerLost(worker, reason);
  if (reason != "stream closed") {
    return rpc::ToGrpcStatus(absl::InvalidArgumentError(reason));
  }
  return grpc::Status::OK;
}

}  // namespace iosfarm::server
