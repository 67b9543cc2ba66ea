// The CLI's connection to a TuningService: one channel, the bearer token on
// every call, errors as Status values.
//
// Connect() waits (at most options.connect_timeout) until the channel is up; a
// server that cannot be reached is Unavailable with a message that names the
// address and points at --server / IOSFARM_SERVER. Errors the server answers
// are returned with the server's message unchanged (Unauthenticated adds a
// hint about --token / IOSFARM_TOKEN). Unary calls carry a deadline of
// options.call_timeout; WatchJob has none (it streams until the job ends).
//
// Thread-safe after Connect (gRPC stubs are).
#ifndef IOSFARM_CLIENT_FARM_CLIENT_H_
#define IOSFARM_CLIENT_FARM_CLIENT_H_

#include <functional>
#include <memory>

#include "client/job_format.h"
#include "client/remote_options.h"
#include "common/status.h"
#include "iosfarm/v1/farm.grpc.pb.h"

namespace iosfarm::client {

class FarmClient {
 public:
  // Creates the channel and waits for it to connect.
  static StatusOr<std::unique_ptr<FarmClient>> Connect(const RemoteOptions& options);

  StatusOr<v1::Job> SubmitJob(const v1::SubmitJobRequest& request);
  StatusOr<v1::Job> GetJob(int64_t job_id);
  StatusOr<v1::Job> CancelJob(int64_t job_id);
  StatusOr<v1::JobResult> GetResult(int64_t job_id);
  StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListJobsRequest& request);
  StatusOr<v1::ListWorkersResponse> ListWorkers();
  StatusOr<v1::RetuneResponse> Retune(const v1::RetuneRequest& request);
  StatusOr<v1::TimelineResponse> GetTimeline(int64_t job_id);
  StatusOr<v1::ForgetLatenciesResponse> ForgetLatencies(const v1::ForgetLatenciesRequest& request);

  // Streams the job's events to `on_event` until the job ends (the server
  // closes the stream) and returns the last snapshot. An error status if the
  // stream breaks before the job ended.
  StatusOr<v1::Job> WatchJob(int64_t job_id,
                             const std::function<void(const v1::JobEvent&)>& on_event);

  const RemoteOptions& options() const { return options_; }

 private:
  FarmClient(RemoteOptions options, std::shared_ptr<grpc::Channel> channel);

  // The context every call uses: token and (for unary calls) deadline.
  void Prepare(grpc::ClientContext& context, bool unary) const;
  // grpc::Status -> Status, with the connection and token hints.
  Status Convert(const grpc::Status& status) const;
  // One unary call of `method` (a Stub member) with deadline and token.
  template <typename Response, typename Request, typename Method>
  StatusOr<Response> Unary(Method method, const Request& request);

  RemoteOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::TuningService::Stub> stub_;
};

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_FARM_CLIENT_H_
