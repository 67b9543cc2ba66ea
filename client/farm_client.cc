#include "client/farm_client.h"

#include <chrono>
#include <utility>

#include "common/strings.h"
#include "proto/rpc_util.h"

namespace iosfarm::client {
namespace {

std::string UnreachableMessage(const RemoteOptions& options, std::string_view why) {
  std::string message = StrCat("cannot connect to the iosfarm server at ", options.server);
  if (!options.tls_ca_file.empty()) message += StrCat(" (TLS, CA ", options.tls_ca_file, ")");
  if (!why.empty()) message += StrCat(": ", why);
  message += "; is it running? Set the address with --server or IOSFARM_SERVER";
  return message;
}

// Waits for READY; gives up at the first TRANSIENT_FAILURE (connection refused,
// unknown host, TLS handshake failure) or when `timeout` passes.
Status WaitUntilReady(grpc::Channel& channel, const RemoteOptions& options) {
  const auto deadline = std::chrono::system_clock::now() + options.connect_timeout;
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      return absl::UnavailableError(UnreachableMessage(options, "connection failed"));
    }
    if (state == GRPC_CHANNEL_SHUTDOWN) {
      return absl::UnavailableError(UnreachableMessage(options, "channel shut down"));
    }
    if (!channel.WaitForStateChange(state, deadline)) {
      return absl::UnavailableError(UnreachableMessage(
          options, StrCat("no answer within ", options.connect_timeout.count() / 1000.0, " s")));
    }
    state = channel.GetState(/*try_to_connect=*/true);
  }
  return absl::OkStatus();
}

}  // namespace

FarmClient::FarmClient(RemoteOptions options, std::shared_ptr<grpc::Channel> channel)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      stub_(v1::TuningService::NewStub(channel_)) {}

StatusOr<std::unique_ptr<FarmClient>> FarmClient::Connect(const RemoteOptions& given) {
  RemoteOptions options = given;
  ASSIGN_OR_RETURN(options.token, rpc::NormalizeToken(given.token, "--token / IOSFARM_TOKEN"));
  rpc::ChannelOptions channel_options;
  channel_options.address = options.server;
  channel_options.tls_ca_file = options.tls_ca_file;
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, rpc::MakeChannel(channel_options));
  RETURN_IF_ERROR(WaitUntilReady(*channel, options));
  return std::unique_ptr<FarmClient>(new FarmClient(options, std::move(channel)));
}

void FarmClient::Prepare(grpc::ClientContext& context, bool unary) const {
  std::optional<std::chrono::milliseconds> timeout;
  if (unary) timeout = options_.call_timeout;
  rpc::PrepareContext(context, options_.token, timeout);
}

Status FarmClient::Convert(const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  if (status.error_message().find("Received http2 header") != std::string::npos) {
    // Something answered HTTP/2 that is not a gRPC server (a proxy, a web server).
    return absl::UnavailableError(StrCat("the server at ", options_.server,
                                         " is not an iosfarm server (", status.error_message(),
                                         "); check --server / IOSFARM_SERVER"));
  }
  switch (status.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::UnauthenticatedError(
          StrCat(status.error_message(),
                 options_.token.empty() ? " (no token given: set --token or IOSFARM_TOKEN)"
                                        : " (check --token / IOSFARM_TOKEN)"));
    case grpc::StatusCode::UNAVAILABLE:
      // The server went away after we connected (or never answered).
      if (channel_->GetState(false) != GRPC_CHANNEL_READY) {
        return absl::UnavailableError(UnreachableMessage(options_, status.error_message()));
      }
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::DeadlineExceededError(
          StrCat("the server at ", options_.server, " did not answer within ",
                 options_.call_timeout.count() / 1000.0, " s"));
    default:
      break;
  }
  return rpc::FromGrpcStatus(status);
}

template <typename Response, typename Request, typename Method>
StatusOr<Response> FarmClient::Unary(Method method, const Request& request) {
  grpc::ClientContext context;
  Prepare(context, /*unary=*/true);
  Response response;
  RETURN_IF_ERROR(Convert((stub_.get()->*method)(&context, request, &response)));
  return response;
}

StatusOr<v1::Job> FarmClient::SubmitJob(const v1::SubmitJobRequest& request) {
  return Unary<v1::Job>(&v1::TuningService::Stub::SubmitJob, request);
}

StatusOr<v1::Job> FarmClient::GetJob(int64_t job_id) {
  v1::JobRequest request;
  request.set_job_id(job_id);
  return Unary<v1::Job>(&v1::TuningService::Stub::GetJob, request);
}

StatusOr<v1::Job> FarmClient::CancelJob(int64_t job_id) {
  v1::JobRequest request;
  request.set_job_id(job_id);
  return Unary<v1::Job>(&v1::TuningService::Stub::CancelJob, request);
}

StatusOr<v1::JobResult> FarmClient::GetResult(int64_t job_id) {
  v1::JobRequest request;
  request.set_job_id(job_id);
  return Unary<v1::JobResult>(&v1::TuningService::Stub::GetResult, request);
}

StatusOr<v1::ListJobsResponse> FarmClient::ListJobs(const v1::ListJobsRequest& request) {
  return Unary<v1::ListJobsResponse>(&v1::TuningService::Stub::ListJobs, request);
}

StatusOr<v1::ListWorkersResponse> FarmClient::ListWorkers() {
  return Unary<v1::ListWorkersResponse>(&v1::TuningService::Stub::ListWorkers,
                                        v1::ListWorkersRequest());
}

StatusOr<v1::RetuneResponse> FarmClient::Retune(const v1::RetuneRequest& request) {
  return Unary<v1::RetuneResponse>(&v1::TuningService::Stub::Retune, request);
}

StatusOr<v1::TimelineResponse> FarmClient::GetTimeline(int64_t job_id) {
  v1::TimelineRequest request;
  request.set_job_id(job_id);
  return Unary<v1::TimelineResponse>(&v1::TuningService::Stub::GetTimeline, request);
}

StatusOr<v1::ForgetLatenciesResponse> FarmClient::ForgetLatencies(
    const v1::ForgetLatenciesRequest& request) {
  return Unary<v1::ForgetLatenciesResponse>(&v1::TuningService::Stub::ForgetLatencies, request);
}

StatusOr<v1::Job> FarmClient::WatchJob(
    int64_t job_id, const std::function<void(const v1::JobEvent&)>& on_event) {
  grpc::ClientContext context;
  Prepare(context, /*unary=*/false);
  v1::JobRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader = stub_->WatchJob(&context, request);
  v1::JobEvent event;
  std::optional<v1::Job> last;
  while (reader->Read(&event)) {
    last = event.job();
    if (on_event) on_event(event);
  }
  RETURN_IF_ERROR(Convert(reader->Finish()));
  if (!last) {
    return absl::InternalError(StrCat("the server closed the watch of job ", job_id,
                                      " without sending its state"));
  }
  if (!IsFinal(last->state())) {
    return absl::UnavailableError(
        StrCat("the watch of job ", job_id, " ended before the job did; run `iosfarm watch ",
               job_id, "` again"));
  }
  return *last;
}

}  // namespace iosfarm::client
