// WorkerService: the one bidirectional stream each worker daemon keeps open
// (farm.proto). Authenticates with the worker token set, registers the
// worker with the FarmCoordinator, forwards heartbeats and phase results,
// and reports the worker lost when the stream ends. A stream that sends no
// registration within `registration_timeout_s` is cancelled (the worker sees
// CANCELLED; the server logs why): a stream that never registers would
// otherwise hold a server thread for good.
// Thread-safe.
#ifndef IOSFARM_SERVER_WORKER_SERVICE_H_
#define IOSFARM_SERVER_WORKER_SERVICE_H_

#include <chrono>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "iosfarm/v1/farm.grpc.pb.h"
#include "server/auth.h"
#include "server/worker_events.h"

namespace iosfarm::server {

class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  // `events` (the coordinator, or a wrapper of it) must outlive the service.
  WorkerServiceImpl(WorkerEvents* events, const TokenSet* tokens,
                    double heartbeat_interval_s, double registration_timeout_s);
  ~WorkerServiceImpl() override;  // stops the watchdog

  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::ServerMessage, v1::WorkerMessage>* stream) override;

 private:
  // Cancels streams that have not registered by their deadline.
  void WatchdogLoop();
  void AwaitRegistration(grpc::ServerContext* context);
  void Registered(grpc::ServerContext* context);

  WorkerEvents* const coordinator_;
  const TokenSet* const tokens_;
  const double heartbeat_interval_s_;
  const double registration_timeout_s_;

  absl::Mutex mu_;
  std::map<grpc::ServerContext*, std::chrono::steady_clock::time_point> unregistered_
      ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_WORKER_SERVICE_H_
