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
class StreamLink final : public WorkerLink {
 public:
  StreamLink(grpc::ServerContext* context,
             grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* stream)
      : context_(context), stream_(stream) {}

  bool Send(const v1::ServerMessage& message) override {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    if (!stream_->Write(message)) {
      closed_ = true;
      return false;
    }
    return true;
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
  absl::Mutex mu_;
  grpc::ServerContext* const context_;
  grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* const stream_;
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
  auto link = std::make_shared<StreamLink>(context, stream);
  {
    v1::ServerMessage registered;
    registered.mutable_registered()->set_heartbeat_interval_s(heartbeat_interval_s_);
    registered.mutable_registered()->set_server_version(kServerVersion);
    if (!link->Send(registered)) return grpc::Status(grpc::StatusCode::CANCELLED, "stream closed");
  }
  Status joined = coordinator_->WorkerJoined(registration, link);
  if (!joined.ok()) {
    link->Detach();
    return rpc::ToGrpcStatus(joined);
  }
  const std::string worker = registration.worker_id();
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
