#include "server/worker_service.h"

#include "absl/synchronization/mutex.h"
#include "common/strings.h"
#include "proto/rpc_util.h"
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

  bool Send(const v1::ServerMessage& message) override {
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

grpc::Status WorkerServiceImpl::Connect(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* stream) {
  auto name = tokens_->Authenticate(rpc::BearerToken(*context), "worker");
  if (!name.ok()) return rpc::ToGrpcStatus(name.status());
  v1::WorkerMessage first;
  if (!stream->Read(&first)) return grpc::Status(grpc::StatusCode::CANCELLED, "no registration");
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
  Status joined = coordinator_->WorkerJoined(registration, link);
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
      coordinator_->PhaseResult(worker, message.result());
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
