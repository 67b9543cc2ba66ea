// TuningService: the clients' API (farm.proto). Authenticates every call
// with the client token set, converts at the edge and delegates to the
// FarmCoordinator, the JobStore and the LatencyDb. Thread-safe (stateless beyond them).
#ifndef IOSFARM_SERVER_TUNING_SERVICE_H_
#define IOSFARM_SERVER_TUNING_SERVICE_H_

#include <string>
#include <vector>

#include "iosfarm/v1/farm.grpc.pb.h"
#include "server/auth.h"
#include "server/farm_coordinator.h"
#include "server/job_store.h"
#include "server/latency_db.h"

namespace iosfarm::server {

struct RequestLimits {
  int64_t max_model_bytes = 256LL << 20;
  int64_t max_ops = 20000;
  // Client names (from the token files) that may cancel any job and forget
  // measurements. Everyone else cancels only the jobs it submitted
  // (docs/farm.md, "Who may do what"); reading jobs, results, workers and
  // timelines is open to every authenticated client. A server without client
  // tokens (loopback only) treats its one anonymous caller as an admin.
  std::vector<std::string> admin_clients;
};

class TuningServiceImpl final : public v1::TuningService::Service {
 public:
  TuningServiceImpl(FarmCoordinator* coordinator, JobStore* jobs, LatencyDb* latencies,
                    const TokenSet* tokens, RequestLimits limits)
      : coordinator_(coordinator),
        job_store_(jobs),
        latency_db_(latencies),
        tokens_(tokens),
        limits_(limits) {}

  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest* request,
                         v1::Job* response) override;
  grpc::Status GetJob(grpc::ServerContext* context, const v1::JobRequest* request,
                      v1::Job* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context, const v1::JobRequest* request,
                        grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const v1::JobRequest* request,
                         v1::Job* response) override;
  grpc::Status GetResult(grpc::ServerContext* context, const v1::JobRequest* request,
                         v1::JobResult* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context, const v1::ListWorkersRequest* request,
                           v1::ListWorkersResponse* response) override;
  grpc::Status Retune(grpc::ServerContext* context, const v1::RetuneRequest* request,
                      v1::RetuneResponse* response) override;
  grpc::Status GetTimeline(grpc::ServerContext* context, const v1::TimelineRequest* request,
                           v1::TimelineResponse* response) override;
  // Admins only (PermissionDenied otherwise).
  grpc::Status ForgetLatencies(grpc::ServerContext* context,
                               const v1::ForgetLatenciesRequest* request,
                               v1::ForgetLatenciesResponse* response) override;

 private:
  StatusOr<std::string> Authenticate(const grpc::ServerContext& context) const;
  Status Submit(const std::string& owner, const v1::SubmitJobRequest& request, v1::Job& response);
  bool IsAdmin(const std::string& caller) const;

  FarmCoordinator* const coordinator_;
  JobStore* const job_store_;
  LatencyDb* const latency_db_;
  const TokenSet* const tokens_;
  const RequestLimits limits_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_TUNING_SERVICE_H_
