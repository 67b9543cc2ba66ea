// WorkerService: the one bidirectional stream each worker daemon keeps open
// (farm.proto). Authenticates with the worker token set, registers the
// worker with the FarmCoordinator, forwards heartbeats and phase results,
// and reports the worker lost when the stream ends. Thread-safe.
#ifndef IOSFARM_SERVER_WORKER_SERVICE_H_
#define IOSFARM_SERVER_WORKER_SERVICE_H_

#include "iosfarm/v1/farm.grpc.pb.h"
#include "server/auth.h"
#include "server/farm_coordinator.h"

namespace iosfarm::server {

class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  WorkerServiceImpl(FarmCoordinator* coordinator, const TokenSet* tokens,
                    double heartbeat_interval_s)
      : coordinator_(coordinator), tokens_(tokens), heartbeat_interval_s_(heartbeat_interval_s) {}

  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* stream) override;

 private:
  FarmCoordinator* const coordinator_;
  const TokenSet* const tokens_;
  const double heartbeat_interval_s_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_WORKER_SERVICE_H_
